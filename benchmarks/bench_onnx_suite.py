"""ONNX's shipped test data against polyopt.graph: how many models import, how many run
and match onnx's reference outputs, and why the others are refused. Counting, not timing.

Run: ``nice python benchmarks/bench_onnx_suite.py`` (writes ``benchmarks/results/
onnx_suite.md``); ``--refusals``: import only (no compile), print the refusal reasons
ranked by how many tests each blocks (what to add next); ``--kinds node``: only some
categories; ``--limit N``: the first N tests of each category, ``--match RE``: the tests
whose name matches (both a quick look, printed only).

Categories (``onnx.backend.test.loader``): the shipped models ``simple``,
``pytorch-operator``, ``pytorch-converted`` and ``real`` (the model-zoo networks, which
onnx downloads: counted as not imported when they are not on this machine), and the
``node`` tests (one-node models made by onnx's test-case code, every operator of the
standard, not only the ones polyopt supports). A test imports when polyopt's ONNX backend
(``PolyoptBackend.prepare(model).import_graph``) accepts it for its first data set; it
matches when its compiled model (one thread) reproduces every data set's outputs to the
test's rtol/atol.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

import numpy as np  # noqa: E402

KINDS = ("simple", "pytorch-operator", "pytorch-converted", "real", "node")


def test_cases(kind: str):
    """``(name, model or None, [(inputs, outputs)], rtol, atol)`` of a category."""
    import onnx
    from onnx import numpy_helper
    from onnx.backend.test.loader import load_model_tests

    for case in sorted(load_model_tests(kind=kind), key=lambda c: c.name):
        if kind == "node":
            sets = [([_array(t, numpy_helper) for t in i], [_array(t, numpy_helper) for t in o])
                    for i, o in (case.data_sets or [])]
            if not sets and case.model_dir:
                sets = _data_sets(case.model_dir, onnx, numpy_helper)
            model = case.model or onnx.load(os.path.join(case.model_dir, "model.onnx"))
            yield case.name, model, sets, case.rtol, case.atol
            continue
        path = os.path.join(case.model_dir or "", "model.onnx")
        if not case.model_dir or not os.path.exists(path):
            yield case.name, None, [], case.rtol, case.atol
            continue
        yield (case.name, onnx.load(path), _data_sets(case.model_dir, onnx, numpy_helper),
               case.rtol, case.atol)


def _array(value, numpy_helper):
    return value if isinstance(value, np.ndarray) else numpy_helper.to_array(value) \
        if hasattr(value, "raw_data") else np.asarray(value) if np.isscalar(value) or \
        isinstance(value, np.generic) else np.asarray(value, dtype=object)


def _data_sets(folder, onnx, numpy_helper):
    sets = []
    for data in sorted(glob.glob(os.path.join(folder, "test_data_set_*"))):
        arrays = []
        for prefix in ("input", "output"):
            files = sorted(glob.glob(os.path.join(data, f"{prefix}_*.pb")),
                           key=lambda p: int(re.findall(r"_(\d+)\.pb$", p)[0]))
            tensors = []
            for file in files:
                proto = onnx.TensorProto()
                with open(file, "rb") as f:
                    proto.ParseFromString(f.read())
                tensors.append(numpy_helper.to_array(proto))
            arrays.append(tensors)
        sets.append(tuple(arrays))
    return sets


def reason_of(err: BaseException) -> str:
    """A refusal's message without the node's name and values that vary per test."""
    text = str(err).split("; supported:")[0]
    match = re.search(r"the operator (\S+) is not supported", text)
    if match:
        return f"operator {match.group(1)}"
    text = re.sub(r"node '[^']*' ", "", text)
    text = re.sub(r"input '[^']*'", "an input", text)
    text = re.sub(r"\('[^']*'\)", "", text)
    text = re.sub(r"(got|shape|shapes) .*", r"\1 ...", text)
    return f"{type(err).__name__}: {text}"[:160]


def check(model, sets, rtol, atol, compile_too: bool):
    """``("imported" | "matched" | "wrong" | reason)`` of one test."""
    from polyopt.graph.backend import PolyoptBackend

    if model is None:
        return "not on this machine (onnx downloads the real models)"
    if not sets:
        return "no data set"
    try:
        rep = PolyoptBackend.prepare(model)
        rep.import_graph(sets[0][0])
    except Exception as err:  # noqa: BLE001  (every refusal is counted by its reason)
        return reason_of(err)
    if not compile_too:
        return "imported"
    try:
        for inputs, outputs in sets:
            got = rep.run(inputs)
            for want, have in zip(outputs, got):
                if not _close(np.asarray(have), want, rtol, atol):
                    return "wrong"
    except Exception as err:  # noqa: BLE001
        return "compile/run: " + reason_of(err)
    return "matched"


def _close(have, want, rtol, atol) -> bool:
    if have.shape != want.shape or have.dtype != want.dtype:
        return False
    if want.dtype.kind in "fc":
        return bool(np.allclose(have, want, rtol=rtol, atol=atol, equal_nan=True))
    return bool(np.array_equal(have, want))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--refusals", action="store_true",
                        help="import only; print the refusal reasons ranked")
    parser.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--match", default="", help="only tests whose name matches")
    args = parser.parse_args(argv)
    from testlib.onnx_conformance import node_test_pattern

    supported, conformance = re.compile(node_test_pattern()), collections.Counter()
    counts, reasons, started = {}, collections.Counter(), time.time()
    blocked = collections.defaultdict(list)
    for kind in args.kinds:
        results = collections.Counter()
        for index, (name, model, sets, rtol, atol) in enumerate(test_cases(kind)):
            if args.limit and index >= args.limit:
                break
            if args.match and not re.search(args.match, name):
                continue
            outcome = check(model, sets, rtol, atol, not args.refusals)
            if kind == "node" and supported.search(name + "_cpu"):
                conformance["total"] += 1
                conformance[outcome if outcome in ("matched", "wrong") else "refused"] += 1
            if outcome in ("imported", "matched", "wrong"):
                results["imported"] += 1
                results[outcome] += outcome != "imported"
                if outcome == "wrong":
                    blocked["wrong result"].append(name)
            else:
                reasons[outcome] += 1
                blocked[outcome].append(name)
            results["total"] += 1
        counts[kind] = results
        print(kind, dict(results), flush=True)
    for reason, n in reasons.most_common():
        print(f"{n:5d}  {reason}   e.g. {', '.join(blocked[reason][:3])}")
    if blocked.get("wrong result"):
        print("wrong:", ", ".join(blocked["wrong result"]))
    if conformance:
        print("node tests of the supported operators:", dict(conformance))
    if args.refusals or args.limit or args.match:
        return  # a partial count: printed, not written
    _write(counts, reasons, blocked, conformance, time.time() - started)


def _write(counts, reasons, blocked, conformance, seconds) -> None:
    from _env import write_results

    def row(kind):
        c = counts[kind]
        return f"| {kind} | {c['total']} | {c['imported']} | {c['matched']} | {c['wrong']} |"

    shipped = [k for k in counts if k != "node"]
    total = {key: sum(counts[k][key] for k in shipped) for key in ("total", "imported",
                                                                   "matched", "wrong")}
    lines = ["# ONNX's shipped test data (onnx.backend.test) through polyopt.graph", "",
             f"Counting, not timing (one thread; {seconds:.0f} s, load average "
             f"{os.getloadavg()[0]:.1f} at the end). Per category: tests, imported (`PolyoptBackend`'s import), "
             "compiled and matching onnx's reference outputs, compiled but not matching.",
             "", "| category | tests | import | match | wrong |", "|---|---|---|---|---|"]
    lines += [row(k) for k in counts]
    if shipped:
        lines.append(f"| shipped models | {total['total']} | {total['imported']} | "
                     f"{total['matched']} | {total['wrong']} |")
    if conformance:
        lines += ["", f"Node tests of the ONNX operators polyopt supports (the set "
                  "`tests/graph/test_onnx_backend_nodes.py` runs, `node_test_pattern`): "
                  f"{conformance['matched']} of {conformance['total']} match, "
                  f"{conformance['wrong']} wrong, {conformance['refused']} refused."]
    lines += ["", "## Why the others do not run (tests per reason)", ""]
    lines += [f"- {n}: {reason} (e.g. {', '.join(blocked[reason][:2])})"
              for reason, n in reasons.most_common(40)]
    if blocked.get("wrong result"):
        lines += ["", "Wrong results: " + ", ".join(blocked["wrong result"])]
    write_results("onnx_suite", "\n".join(lines) + "\n",
                  {**{kind: dict(c) for kind, c in counts.items()},
                   "node (supported operators)": dict(conformance)})


if __name__ == "__main__":
    main()
