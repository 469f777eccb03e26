"""Whole models: polyopt.graph vs onnxruntime and PyTorch, 1 and 2 threads, side by side.

Run: ``python benchmarks/bench_graph.py`` (``--quick``: reduced models, printed only;
``--only bert``: the models whose name contains a text, ``--only int8``: the int8
ResNet-18 (quantized by ``po.graph.quantize``) against the float one; ``--threads 1``: one thread
count; with ``--only`` or ``--threads`` the measured rows replace theirs in
``graph.json`` and the report is written again from all rows, each with its own date
and load average).  Writes ``benchmarks/results/graph.md`` and ``graph.json``.

Models are built in code with onnx.helper and random weights (``tests/testlib/
onnx_models.py``): ResNet-18 and MobileNetV2 at 224 x 224, one BERT-base encoder layer
(sequence 128), a 2-layer LSTM; batch 1, float32.  The three runtimes get the same model and inputs:

* polyopt: ``po.graph.compile(g, num_threads=N)`` (constant and batch-norm folding,
  fusion, templates, memory plan);
* onnxruntime: all graph optimizations, ``intra_op_num_threads=N``, one inter-op
  thread, ``session.intra_op.allow_spinning=0``;
* PyTorch (eager, ``torch.inference_mode``, ``torch.set_num_threads(N)``): the same
  graph run operator by operator with ``torch.nn.functional`` (a small interpreter
  below; conv + batch norm as PyTorch runs them, unfused; LSTM as ``torch.nn.LSTM``).

The 2-layer LSTM has 32 steps, batch 1, 256 inputs and 256 hidden units per layer.

``OMP_WAIT_POLICY=PASSIVE`` is set for the whole process (PyTorch's and polyopt's
OpenMP threads sleep when idle).  Latencies are medians of alternating timed blocks
(``_env.alternating_medians``).  Compile time: cold (first compile of the model, with
an empty on-disk kernel cache of its own) and from the cache (``po.graph.compile`` of
the same model in a new process, timed inside it: every kernel is loaded from the
on-disk cache, which the child's ``m.cache_stats`` confirms).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from _env import (alternating_medians, previous_results,  # noqa: E402
                  restart_with_clean_environment, write_results)

if __name__ == "__main__":
    restart_with_clean_environment(2)

import datetime  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.onnx_models import (bert_layer, lstm, mobilenet_v2, ort_session,  # noqa: E402
                                 random_inputs, resnet18)

THREADS = (1, 2)


def models(quick: bool):
    if quick:
        return {"resnet18": resnet18(width=16, resolution=64),
                "mobilenet_v2": mobilenet_v2(width=0.5, resolution=64),
                "bert_layer": bert_layer(hidden=256, heads=4, seq=64, ffn=1024),
                "lstm_2layer": lstm(seq=8, width=64, hidden=64)}
    return {"resnet18": resnet18(), "mobilenet_v2": mobilenet_v2(), "bert_layer": bert_layer(),
            "lstm_2layer": lstm(seq=32, width=256, hidden=256)}


def torch_runner(g, threads: int):
    """A function running graph ``g`` with PyTorch's eager operators, or None without
    PyTorch."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return None
    torch.set_num_threads(threads)
    consts = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in g.constants.items()}

    def conv(node, x, w, b=None):
        a = node.attrs
        pads = a.get("pads", [0, 0, 0, 0])
        if pads[0] != pads[2] or pads[1] != pads[3]:
            x = F.pad(x, (pads[1], pads[3], pads[0], pads[2]))
            pads = [0, 0]
        return F.conv2d(x, w, b, stride=a.get("strides", 1), padding=pads[:2],
                        dilation=a.get("dilations", 1), groups=a.get("group", 1))

    def pool(node, x):
        a = node.attrs
        pads = a.get("pads", [0, 0, 0, 0])[:2]
        if node.op_type == "MaxPool":
            return F.max_pool2d(x, a["kernel_shape"], a.get("strides"), pads)
        return F.avg_pool2d(x, a["kernel_shape"], a.get("strides"), pads,
                            count_include_pad=bool(a.get("count_include_pad", 0)))

    def gemm(node, a, b, c=None):
        a = a.T if node.attrs.get("transA") else a
        b = b.T if node.attrs.get("transB") else b
        out = torch.matmul(a, b) * node.attrs.get("alpha", 1.0)
        return out if c is None else out + node.attrs.get("beta", 1.0) * c

    lstms = {}

    def lstm_op(node, x, w, r, b=None, *rest):
        if node.name not in lstms:  # torch.nn.LSTM with the ONNX weights (gates i, o, f, c)
            hidden = r.shape[-1]
            order = torch.cat([torch.arange(k * hidden, (k + 1) * hidden) for k in (0, 2, 3, 1)])
            cell = torch.nn.LSTM(x.shape[-1], hidden)
            with torch.no_grad():
                cell.weight_ih_l0.copy_(w[0][order])
                cell.weight_hh_l0.copy_(r[0][order])
                cell.bias_ih_l0.copy_(b[0][:4 * hidden][order])
                cell.bias_hh_l0.copy_(b[0][4 * hidden:][order])
            lstms[node.name] = cell.eval()
        return lstms[node.name](x)[0].unsqueeze(1)

    ops = {
        "LSTM": lstm_op,
        "Squeeze": lambda n, x, axes: x.squeeze(tuple(int(a) for a in axes)),
        "Conv": conv, "MaxPool": pool, "AveragePool": pool, "Gemm": gemm,
        "Relu": lambda n, x: torch.relu(x), "Add": lambda n, a, b: a + b,
        "Sub": lambda n, a, b: a - b, "Mul": lambda n, a, b: a * b,
        "Div": lambda n, a, b: a / b, "Erf": lambda n, x: torch.erf(x),
        "Sigmoid": lambda n, x: torch.sigmoid(x), "Tanh": lambda n, x: torch.tanh(x),
        "Clip": lambda n, x, lo=None, hi=None: torch.clamp(x, lo, hi),
        "MatMul": lambda n, a, b: torch.matmul(a, b),
        "BatchNormalization": lambda n, x, s, b, m, v: F.batch_norm(
            x, m, v, s, b, False, 0.0, n.attrs.get("epsilon", 1e-5)),
        "GlobalAveragePool": lambda n, x: x.mean((2, 3), keepdim=True),
        "Flatten": lambda n, x: x.reshape(int(np.prod(x.shape[:n.attrs.get("axis", 1)])), -1),
        "Reshape": lambda n, x, s: x.reshape(tuple(int(d) for d in s)),
        "Transpose": lambda n, x: x.permute(*n.attrs["perm"]),
        "Softmax": lambda n, x: torch.softmax(x, n.attrs.get("axis", -1)),
        "LayerNormalization": lambda n, x, s, b: F.layer_norm(
            x, (x.shape[-1],), s, b, n.attrs.get("epsilon", 1e-5)),
    }

    def run(feeds):
        with torch.inference_mode():
            values = dict(consts)
            values.update({k: torch.from_numpy(v) for k, v in feeds.items()})
            for node in g.nodes:
                args = [values[n] if n else None for n in node.inputs]
                if node.op_type == "Clip":
                    args = [args[0]] + [None if a is None else float(a) for a in args[1:]]
                values[node.outputs[0]] = ops[node.op_type](node, *args)
            return {name: values[name].numpy() for name in g.outputs}
    return run


CHILD = """
import json, sys, time, onnx, polyopt as po
g = po.graph.from_onnx(onnx.load(sys.argv[1]))
start = time.perf_counter()
m = po.graph.compile(g, num_threads=int(sys.argv[2]))
print(json.dumps({"seconds": time.perf_counter() - start, **m.cache_stats}))
"""


def compile_in_new_process(model, threads: int, cache: str) -> dict:
    """``{"seconds", "loaded", "built"}`` of compiling ``model`` in a fresh process."""
    import onnx

    path = os.path.join(cache, "model.onnx")
    onnx.save(model, path)
    env = dict(os.environ, POLYOPT_CACHE=cache,
               PYTHONPATH=os.pathsep.join([os.path.dirname(HERE), os.environ.get(
                   "PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CHILD, path, str(threads)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(name: str, model, quick: bool, threads_list=THREADS) -> list[dict]:
    feeds = random_inputs(model)
    g = po.graph.from_onnx(model)
    rows = []
    cache = tempfile.mkdtemp(prefix="polyopt-bench-cache-")
    os.environ["POLYOPT_CACHE"] = cache  # empty: the first compile is cold
    for threads in threads_list:
        load = os.getloadavg()[0]
        start = time.perf_counter()
        compiled = po.graph.compile(g, num_threads=threads)
        cold = time.perf_counter() - start
        warm = compile_in_new_process(model, threads, cache)
        session = ort_session(model, threads)
        ort_names = [o.name for o in session.get_outputs()]
        expected = dict(zip(ort_names, session.run(ort_names, feeds)))
        ours = compiled.run(feeds)
        error = max(float(np.max(np.abs(ours[k] - v)) / max(1.0, float(np.max(np.abs(v)))))
                    for k, v in expected.items())
        calls = [lambda: compiled.run(feeds), lambda: session.run(ort_names, feeds)]
        torch_run = torch_runner(g, threads)
        if torch_run is not None:
            torch_error = max(float(np.max(np.abs(torch_run(feeds)[k] - v)))
                              for k, v in expected.items())
            calls.append(lambda: torch_run(feeds))
        times = alternating_medians(calls, repeat=3 if quick else 10)
        plan = compiled.plan
        top = compiled.profile(feeds, repeat=3)[:3]
        rows.append({
            "model": name, "threads": threads, "polyopt_ms": 1e3 * times[0],
            "onnxruntime_ms": 1e3 * times[1],
            "torch_ms": 1e3 * times[2] if torch_run is not None else None,
            "vs_onnxruntime": times[1] / times[0],
            "vs_torch": times[2] / times[0] if torch_run is not None else None,
            "compile_cold_s": cold, "compile_again_s": warm["seconds"],
            "cache_loaded": warm["loaded"], "cache_built": warm["built"],
            "date": str(datetime.datetime.now().replace(microsecond=0)),
            "load_before": load, "load_after": os.getloadavg()[0],
            "arena_mib": plan.arena_bytes / 2**20, "lower_bound_mib": plan.lower_bound / 2**20,
            "naive_mib": plan.naive_bytes / 2**20, "in_place": len(compiled.in_place),
            "arena_vs_bound": plan.arena_bytes / max(plan.lower_bound, 1),
            "kernels": sum(1 for s in compiled.steps if s.kernel is not None),
            "operators": len(g.nodes), "max_rel_error": error,
            "torch_max_error": torch_error if torch_run is not None else None,
            "slowest_groups": [f"{r['group']} ({r['ops']}, {r['template']}) {r['ms']:.2f} ms"
                               for r in top]})
        print(rows[-1], flush=True)
    shutil.rmtree(cache, ignore_errors=True)  # the kernels are loaded; leave no folder behind
    return rows


INT8 = "resnet18_int8"


def measure_int8(quick: bool, threads_list=THREADS, inputs: int = 100,
                 calibration: int = 10) -> list[dict]:
    """ResNet-18 quantized by ``po.graph.quantize`` (``calibration`` random inputs):
    top-1 agreement with the float model (onnxruntime's outputs) on ``inputs`` other
    random inputs, and its latency next to the float model compiled by polyopt and
    onnxruntime's, side by side."""
    model = resnet18(width=16, resolution=64) if quick else resnet18()
    g = po.graph.from_onnx(model)
    shape = g.tensors[g.inputs[0]].shape

    def sample(seed):
        return {g.inputs[0]: np.random.default_rng(seed).standard_normal(shape).astype(
            np.float32)}

    rows = []
    for threads in threads_list:
        load = os.getloadavg()[0]
        start = time.perf_counter()
        quantized = po.graph.quantize(g, [sample(100 + k) for k in range(calibration)],
                                      num_threads=threads)
        int8 = po.graph.compile(quantized, num_threads=threads)
        seconds = time.perf_counter() - start
        fp32 = po.graph.compile(g, num_threads=threads)
        session = ort_session(model, threads)
        out = session.get_outputs()[0].name
        agree = 0
        for k in range(inputs):
            feeds = sample(1000 + k)
            agree += int(int8.run(feeds)[g.outputs[0]].argmax()
                         == session.run([out], feeds)[0].argmax())
        feeds = sample(1)
        times = alternating_medians([lambda: int8.run(feeds), lambda: fp32.run(feeds),
                                     lambda: session.run([out], feeds)],
                                    repeat=3 if quick else 10)
        top = int8.profile(feeds, repeat=3)[:3]
        rows.append({
            "model": INT8, "threads": threads, "int8_ms": 1e3 * times[0],
            "fp32_ms": 1e3 * times[1], "onnxruntime_ms": 1e3 * times[2],
            "vs_fp32": times[1] / times[0], "vs_onnxruntime": times[2] / times[0],
            "agreement": agree / inputs, "inputs": inputs, "calibration": calibration,
            "quantize_compile_s": seconds,
            "int8_kernels": sum(1 for st in int8.steps if st.template.startswith("int8_")),
            "kernels": sum(1 for st in int8.steps if st.kernel is not None),
            "date": str(datetime.datetime.now().replace(microsecond=0)),
            "load_before": load, "load_after": os.getloadavg()[0],
            "slowest_groups": [f"{r['group']} ({r['ops']}, {r['template']}) {r['ms']:.2f} ms"
                               for r in top]})
        print(rows[-1], flush=True)
    return rows


def int8_report(rows) -> list[str]:
    if not rows:
        return [INT8_MISSING]
    lines = ["", "## int8 ResNet-18 (po.graph.quantize)", "",
             f"Calibrated on {rows[0]['calibration']} random inputs; top-1 agreement with "
             f"the float model (onnxruntime's outputs) on {rows[0]['inputs']} other random "
             "inputs; latency side by side with the float model compiled by polyopt and "
             "with onnxruntime (float).", "",
             "| threads | int8 ms | fp32 ms | onnxruntime fp32 ms | int8 vs fp32 | "
             "int8 vs onnxruntime | top-1 agreement | int8 kernels / kernels | "
             "quantize + compile s | measured (load) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['threads']} | {r['int8_ms']:.2f} | {r['fp32_ms']:.2f} | "
                     f"{r['onnxruntime_ms']:.2f} | {r['vs_fp32']:.2f}x | "
                     f"{r['vs_onnxruntime']:.2f}x | {100 * r['agreement']:.0f}% | "
                     f"{r['int8_kernels']} / {r['kernels']} | {r['quantize_compile_s']:.1f} | "
                     f"{r['date']} ({r['load_before']:.1f} / {r['load_after']:.1f}) |")
    lines += ["", "Slowest int8 groups: " + "; ".join(
        f"{r['threads']} thread(s): " + ", ".join(r["slowest_groups"]) for r in rows)]
    return lines


def int8_targets(rows) -> list[str]:
    return [f"| int8 ResNet-18 {r['threads']} thread(s): top-1 agreement >= 99% on "
            f"{r['inputs']} inputs, >= 2x fp32 | "
            f"{'PASS' if r['agreement'] >= 0.99 and r['vs_fp32'] >= 2.0 else 'FAIL'} "
            f"({100 * r['agreement']:.0f}%, {r['vs_fp32']:.2f}x) |" for r in rows] \
        or [INT8_MISSING_TARGET]


def report(all_rows) -> str:
    import onnxruntime

    rows = [r for r in all_rows if r["model"] != INT8]
    int8_rows = [r for r in all_rows if r["model"] == INT8]

    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch_version = "not installed"
    lines = ["# Whole models: polyopt.graph vs onnxruntime and PyTorch", "",
             f"{os.cpu_count()} CPUs · float32, batch 1 · onnxruntime {onnxruntime.__version__}"
             f" · PyTorch {torch_version} · the machine is shared: each row gives the time it "
             "was measured and the 1-minute load average before and after it", "",
             "Latency: medians of alternating blocks; speed = peer time / polyopt time "
             "(above 1: polyopt is faster). Spinning off in the peers "
             "(onnxruntime allow_spinning=0, OMP_WAIT_POLICY=PASSIVE).", "",
             "| model | threads | polyopt ms | onnxruntime ms | PyTorch ms | vs onnxruntime | "
             "vs PyTorch | kernels / operators | max error (rel.) | measured (load) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        torch_ms = f"{r['torch_ms']:.2f}" if r["torch_ms"] is not None else "-"
        vs_torch = f"{r['vs_torch']:.2f}x" if r["vs_torch"] is not None else "-"
        when = (f"{r['date']} ({r['load_before']:.1f} / {r['load_after']:.1f})"
                if "date" in r else "earlier run")
        lines.append(f"| {r['model']} | {r['threads']} | {r['polyopt_ms']:.2f} | "
                     f"{r['onnxruntime_ms']:.2f} | {torch_ms} | {r['vs_onnxruntime']:.2f}x | "
                     f"{vs_torch} | {r['kernels']} / {r['operators']} | "
                     f"{r['max_rel_error']:.1e} | {when} |")
    lines += ["", "Memory of the intermediate tensors and compile time (per thread count; "
              "from the cache: a new process, kernels loaded / built):", "",
              "| model | threads | arena MiB | lower bound MiB | naive sum MiB | arena / bound "
              "| in place | compile cold s | compile from the cache s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        loaded = (f" ({r['cache_loaded']} / {r['cache_built']})" if "cache_loaded" in r
                  else " (in-process)")
        lines.append(f"| {r['model']} | {r['threads']} | {r['arena_mib']:.2f} | "
                     f"{r['lower_bound_mib']:.2f} | {r['naive_mib']:.2f} | "
                     f"{r['arena_vs_bound']:.3f} | {r.get('in_place', '-')} | "
                     f"{r['compile_cold_s']:.1f} | {r['compile_again_s']:.2f}{loaded} |")
    lines += ["", "Slowest fused groups (polyopt's profile):", ""]
    for r in rows:
        lines.append(f"- {r['model']}, {r['threads']} thread(s): " + "; ".join(r["slowest_groups"]))
    lines += ["", "## Targets (issue 16)", "", "| target | result |", "|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} {r['threads']} thread(s): latency >= 1.0x onnxruntime | "
                     f"{'PASS' if r['vs_onnxruntime'] >= 1.0 else 'FAIL'} "
                     f"({r['vs_onnxruntime']:.2f}x) |")
    for r in rows:
        lines.append(f"| {r['model']} {r['threads']} thread(s): arena <= 1.05x lower bound | "
                     f"{'PASS' if r['arena_vs_bound'] <= 1.05 else 'FAIL'} "
                     f"({r['arena_vs_bound']:.3f}x) |")
    for r in rows:
        if r["model"] == "resnet18" and r["threads"] == min(x["threads"] for x in rows
                                                              if x["model"] == "resnet18"):
            lines.append(f"| ResNet-18 compile cold < 60 s | "
                         f"{'PASS' if r['compile_cold_s'] < 60 else 'FAIL'} "
                         f"({r['compile_cold_s']:.1f} s) |")
            from_disk = "cache_loaded" in r and r["cache_built"] == 0
            lines.append("| ResNet-18 compile from the cache < 2 s | "
                         f"{'PASS' if from_disk and r['compile_again_s'] < 2 else 'FAIL'} "
                         f"({r['compile_again_s']:.2f} s"
                         + (f", {r['cache_loaded']} kernels loaded)" if from_disk else
                            ", not from the on-disk cache)") + " |")
    lines += int8_targets(int8_rows)
    lines += int8_report(int8_rows)
    return "\n".join(lines) + "\n"


INT8_MISSING = "(int8 ResNet-18 not measured in this run: `--only int8`)"
INT8_MISSING_TARGET = "| int8 ResNet-18: 1% top-1 agreement, >= 2x fp32 | not measured |"


def merged_rows(measured: list[dict]) -> list[dict]:
    """The rows of this machine's last full run, with the rows measured now in place of
    theirs."""
    previous = previous_results("graph") or []
    fresh = {(r["model"], r["threads"]): r for r in measured}
    rows = [fresh.pop((r["model"], r["threads"]), r) for r in previous]
    return rows + list(fresh.values())


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="reduced models, printed only")
    parser.add_argument("--only", default=None,
                        help="the models whose name contains this text (int8: the int8 "
                             "ResNet-18); their rows replace theirs in graph.json")
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts (default 1,2)")
    parser.add_argument("--print-only", action="store_true",
                        help="full-size models, the report printed, no results file written")
    opts = parser.parse_args()
    quick, only = opts.quick, opts.only
    threads = (tuple(int(t) for t in opts.threads.split(",")) if opts.threads
               else THREADS)
    rows = []
    for name, model in models(quick).items():
        if only is None or only in name:
            rows.extend(measure(name, model, quick, threads))
    if only is None or only in ("int8", INT8):
        rows.extend(measure_int8(quick, threads, inputs=10 if quick else 100))
    if not (quick or opts.print_only):
        rows = merged_rows(rows) if only is not None or threads != THREADS else rows
        write_results("graph", report(rows), rows)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
