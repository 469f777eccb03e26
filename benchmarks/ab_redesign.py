"""A/B of issue 38's redesign: the code before it (commit 0533491, the parent of merge
3ab0ca7) against a later commit (default HEAD), side by side in one run.

Run: ``python benchmarks/ab_redesign.py`` (``--commit X``: another new side; ``--quick``:
small sizes, few repeats; ``--rounds N``).  Writes ``benchmarks/results/redesign_ab.md``
and ``redesign_ab.json`` (this machine's section, see ``_env.write_results``).

Both commits are checked out as throwaway git worktrees in a ``mkdtemp`` folder (removed at
the end).  Every measurement runs in a subprocess whose ``PYTHONPATH`` is one side's
worktree, so ``polyopt`` comes from that side (checked: every loaded ``polyopt`` module's
file is inside it); the harness (this file, ``bench_templates``, ``bench_graph``,
``bench_polybench``, ``tests/testlib``) is this checkout's for both sides, so the two
sides differ only in the library (``bench_templates.py`` does not exist at 0533491; the
functions used call only API present at both commits).  The children get the same
environment: OpenBLAS's slow-down variables removed, its thread counts pinned to 2,
spinning off (``OMP_WAIT_POLICY=PASSIVE``, ``POLYOPT_SPIN``, ``POLYOPT_SESSION_SPIN`` and
``POLYOPT_DRAIN_SPIN`` 0), an empty kernel cache folder of their own.

Cases:

* templates: ``bench_templates.Case`` (matmul 1024 and ResNet-18's five conv layers,
  fp32), polyopt's call only, 1 and 2 threads;
* models: ``bench_graph.models`` (ResNet-18, MobileNetV2, a BERT layer, a 2-layer LSTM)
  compiled by ``po.graph.compile`` (``cache=False``), ``m.run`` latency, 1 and 2 threads;
* overhead: one call of a built 16-element add kernel, one ``m.run`` of a one-Relu model;
* compile: in a fresh process per sample (empty in-memory caches): ``import polyopt``,
  ``po.build`` of the matmul template and of an elementwise add, ``po.auto_schedule`` and
  ``po.build`` of some of ``bench_polybench``'s kernels, ``po.graph.compile`` of ResNet-18
  cold (``cache=False``, empty cache folder).

Run times: one long-lived worker per side keeps the case built; the parent asks the two
workers in turn for a timed block (``_env.alternating_samples`` with one round: a pause,
a warm-up, then at least ``repeat`` calls and 50 ms), the side going first alternating
between rounds.  Compile times: one fresh process per side and round, in the same
alternation.

No slowdown, the rule: a case passes when new / old <= 1.03, where new / old is the
median over the rounds of the round's ratio (the new side's block median over the old
side's, measured back to back under the same load; a ratio of pooled samples would
weigh blocks by their number of calls, which differs with the load).  The spread printed
beside it is the range of the per-round ratios; a case above 1.03 whose per-round ratios
straddle 1.0 is marked "within noise", but still fails: noise does not show that there
is no slowdown (measure again at idle).  The whole A/B passes when every case passes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
BASE = "0533491"  # the parent of merge 3ab0ca7 "Merge redesign: the policy package ..."
LIMIT = 1.03  # largest new / old time ratio that counts as no slowdown
SPIN_OFF = {"OMP_WAIT_POLICY": "PASSIVE", "POLYOPT_SPIN": "0", "POLYOPT_SESSION_SPIN": "0",
            "POLYOPT_DRAIN_SPIN": "0"}
THREADS = (1, 2)
POLYBENCH = ("gemm", "2mm", "jacobi-2d", "lu")
POLYBENCH_QUICK = ("gemm", "jacobi-2d")
# the child's first lines: load this file by path, hand it the arguments
BOOT = ("import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('ab_redesign_child', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "module.child(sys.argv[2], sys.argv[3], sys.argv[4])\n")


# ---- the worktrees ------------------------------------------------------------------

@contextlib.contextmanager
def throwaway_worktrees(commits: dict[str, str], repo: str = TREE):
    """``{label: folder}``: each commit checked out (detached) as a git worktree of
    ``repo`` in one ``mkdtemp`` folder; the worktrees and the folder are removed at the
    end, also on an error.

    >>> with throwaway_worktrees({"old": "HEAD"}) as trees:
    ...     os.path.exists(os.path.join(trees["old"], "polyopt", "__init__.py"))
    True
    """
    scratch = tempfile.mkdtemp(prefix="polyopt-ab-redesign-")
    made = []
    try:
        trees = {}
        for label, commit in commits.items():
            folder = os.path.join(scratch, label)
            subprocess.run(["git", "-C", repo, "worktree", "add", "--detach", "--quiet",
                            folder, commit], check=True)
            made.append(folder)
            trees[label] = folder
        yield trees
    finally:
        for folder in made:
            subprocess.run(["git", "-C", repo, "worktree", "remove", "--force", folder],
                           check=False, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def child_environment(tree: str, cache: str) -> dict:
    """The environment of a child measuring ``tree``'s polyopt (same for both sides)."""
    sys.path.insert(0, HERE)
    from _env import PINNED_VARS, SLOW_OPENBLAS_VARS

    env = {k: v for k, v in os.environ.items() if k not in SLOW_OPENBLAS_VARS}
    env.update({name: str(max(THREADS)) for name in PINNED_VARS}, **SPIN_OFF)
    env.update(PYTHONPATH=tree, POLYOPT_CACHE=cache, PYTHONDONTWRITEBYTECODE="1")
    return env


def _start(tree: str, scratch: str, mode: str, argument: str, **options):
    """A child process of ``tree``; what it prints to stderr (LLVM's remarks, errors) goes
    to ``process.log``, a file in ``scratch``."""
    cache = tempfile.mkdtemp(prefix="cache-", dir=scratch)
    log = os.path.join(cache, "stderr.txt")
    with open(log, "w") as errors:
        process = subprocess.Popen([sys.executable, "-c", BOOT, os.path.abspath(__file__),
                                    tree, mode, argument], env=child_environment(tree, cache),
                                   cwd=cache, text=True, stderr=errors, **options)
    process.log = log
    return process


def _tail(process, lines: int = 20) -> str:
    """The last ``lines`` lines the child wrote to stderr, LLVM's remarks left out."""
    with open(process.log, errors="replace") as file:
        kept = [line for line in file if not line.startswith("remark: ")]
    return "".join(kept[-lines:])


# ---- the children ---------------------------------------------------------------------

def child(tree: str, mode: str, argument: str) -> None:
    """A child process: ``worker`` (serves timed blocks) or ``compile`` (one sample)."""
    out = os.fdopen(os.dup(1), "w")  # answers; whatever the library prints goes to stderr
    os.dup2(2, 1)
    start = time.perf_counter()
    import polyopt  # noqa: F401  (first: from the side's worktree, PYTHONPATH)
    imported = time.perf_counter() - start
    sys.path += [HERE, os.path.join(TREE, "tests")]
    if mode == "compile":
        found = compile_sample(json.loads(argument))
        _check_origin(tree)
        out.write(json.dumps({"import polyopt": imported, **found}) + "\n")
        return
    serve(tree, sys.stdin, out)


def _check_origin(tree: str) -> None:
    root = os.path.realpath(tree) + os.sep
    strays = sorted(name for name, module in list(sys.modules.items())
                    if name.split(".")[0] == "polyopt" and getattr(module, "__file__", None)
                    and not os.path.realpath(module.__file__).startswith(root))
    if strays:
        raise SystemExit(f"polyopt modules loaded from outside {tree}: {strays[:5]}")


def serve(tree: str, commands, out) -> None:
    """Answer the parent's commands, one JSON line each: ``setup`` a case, time a
    ``block``, ``quit``."""
    from _env import alternating_samples

    call = None
    for line in commands:
        command = json.loads(line)
        try:
            if command["op"] == "quit":
                return
            if command["op"] == "setup":
                call, info = None, None
                call, info = setup(command["case"])
                _check_origin(tree)
                answer = {"info": info}
            else:
                answer = {"times": alternating_samples([call], command["repeat"], 1)[0]}
        except Exception as error:  # reported to the parent, which goes on with the others
            call, answer = None, {"error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


_MODELS: dict = {}


def setup(case: dict):
    """``(call, info)`` of a run-time case: the call to time, what to print about it."""
    import numpy as np

    import polyopt as po
    from testlib.onnx_models import ort_session, random_inputs, single_op

    kind, threads = case["kind"], case.get("threads", 1)
    if kind == "template":
        import bench_templates

        built = bench_templates.Case(case["name"], threads)
        if built.errors[0] > 1e-4:
            raise ValueError(f"polyopt's result differs from NumPy's by {built.errors[0]:.1e}")
        return built.calls[0], {"template": built.template, "error": built.errors[0]}
    if kind == "kernel call":
        A = po.placeholder((16,), name="A")
        B = po.placeholder((16,), name="B")
        C = po.compute((16,), lambda i: A[i] + B[i], name="C")
        kernel = po.build(po.create_schedule(C), [A, B, C])
        a, b, c = (np.ones(16, np.float32) for _ in range(3))
        return (lambda: kernel(a, b, c)), {}
    if kind == "model":
        import bench_graph

        models = _MODELS.setdefault(case["quick"], bench_graph.models(case["quick"]))
        model = models[case["name"]]
    else:  # "run call": a one-Relu model
        model = single_op("Relu", [(1, 16)])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=threads, cache=False)
    feeds = random_inputs(model)
    session = ort_session(model, threads)
    names = [o.name for o in session.get_outputs()]
    ours = compiled.run(feeds)
    error = max(float(np.max(np.abs(ours[k] - v)) / max(1.0, float(np.max(np.abs(v)))))
                for k, v in zip(names, session.run(names, feeds)))
    if error > 1e-3:
        raise ValueError(f"polyopt's outputs differ from onnxruntime's by {error:.1e}")
    return (lambda: compiled.run(feeds)), {"error": error}


def compile_sample(plan: dict) -> dict:
    """``{case: seconds}`` of the compile cases, in this fresh process."""
    import polyopt as po

    found = {}

    def timed(name, work):
        start = time.perf_counter()
        result = work()
        found[name] = time.perf_counter() - start
        return result

    n = plan["matmul"]
    A, B = po.placeholder((n, n), name="A"), po.placeholder((n, n), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    timed(f"po.build matmul_template {n}", lambda: po.build(s, [A, B, C], num_threads=1))
    X = po.placeholder((n, n), name="X")
    Y = po.compute((n, n), lambda i, j: X[i, j] * 2.0 + 1.0, name="Y")
    timed(f"po.build elementwise {n}x{n}",
          lambda: po.build(po.create_schedule(Y), [X, Y], num_threads=1))
    import bench_polybench

    sources = {name: (text, function) for name, text, function, _ in
               bench_polybench.kernel_sources(None)}
    for name in plan["polybench"]:
        kernel = po.from_c(*sources[name])
        schedule = timed(f"auto_schedule {name}", lambda: po.auto_schedule(kernel))
        timed(f"po.build {name} (auto)", lambda: po.build(schedule, num_threads=1))
    import bench_graph

    model = bench_graph.models(plan["quick"])["resnet18"]
    g = po.graph.from_onnx(model)
    timed("po.graph.compile resnet18 cold",
          lambda: po.graph.compile(g, num_threads=1, cache=False))
    return found


# ---- the parent ---------------------------------------------------------------------

class Worker:
    """A child of one side serving timed blocks."""

    def __init__(self, tree: str, scratch: str):
        self.process = _start(tree, scratch, "worker", "-", stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)

    def ask(self, **command) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"a worker ended (exit status {self.process.wait()}):\n"
                             f"{_tail(self.process)}")
        return json.loads(line)

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.stdin.write(json.dumps({"op": "quit"}) + "\n")
            self.process.stdin.close()
        self.process.wait(timeout=60)


def run_cases(cases: list[dict], trees: dict, scratch: str, rounds: int,
              repeat: int) -> list[dict]:
    workers = {label: Worker(tree, scratch) for label, tree in trees.items()}
    rows = []
    try:
        for case in cases:
            row = {"case": case["title"], "group": case["group"]}
            answers = {label: w.ask(op="setup", case=case) for label, w in workers.items()}
            errors = {k: a["error"] for k, a in answers.items() if "error" in a}
            if errors:
                row["error"] = errors
            else:
                row["info"] = {k: a["info"] for k, a in answers.items()}
                blocks = {label: [] for label in workers}
                for number in range(rounds):
                    for label in _order(list(workers), number):
                        answer = workers[label].ask(op="block", repeat=repeat)
                        if "error" in answer:
                            raise SystemExit(f"{case['title']} ({label}): {answer['error']}")
                        blocks[label].append(answer["times"])
                row.update(verdict(blocks))
            rows.append(row)
            print(_line(row), flush=True)
    finally:
        for w in workers.values():
            w.close()
    return rows


def run_compile(plan: dict, trees: dict, scratch: str, rounds: int) -> list[dict]:
    """The compile cases: per round, a fresh process of each side (alternating first)."""
    samples = {label: [] for label in trees}
    for number in range(rounds):
        for label in _order(list(trees), number):
            process = _start(trees[label], scratch, "compile", json.dumps(plan),
                             stdout=subprocess.PIPE)
            out, _ = process.communicate()
            if process.returncode:
                raise SystemExit(f"the compile sample of {label} failed:\n{_tail(process)}")
            samples[label].append(json.loads(out.strip().splitlines()[-1]))
    rows = []
    for name in samples["new"][0]:
        blocks = {label: [[s[name]] for s in found] for label, found in samples.items()}
        rows.append({"case": name, "group": "compile", **verdict(blocks)})
        print(_line(rows[-1]), flush=True)
    return rows


def _order(labels: list[str], number: int) -> list[str]:
    return labels if number % 2 == 0 else labels[::-1]


def verdict(blocks: dict[str, list[list[float]]]) -> dict:
    """The sides' times (the median of their block medians), the new / old ratio (the
    median of the per-round ratios), the per-round ratios and PASS/FAIL (see the
    module's docstring for the rule)."""
    medians = {side: [statistics.median(block) for block in found]
               for side, found in blocks.items()}
    old, new = (statistics.median(medians[side]) for side in ("old", "new"))
    per_round = [n / o for o, n in zip(medians["old"], medians["new"])]
    ratio = statistics.median(per_round)
    return {"old_ms": 1e3 * old, "new_ms": 1e3 * new, "ratio": ratio,
            "round_ratios": per_round, "samples": {k: sum(map(len, v))
                                                   for k, v in blocks.items()},
            "passed": ratio <= LIMIT,
            "within_noise": ratio > LIMIT and min(per_round) <= 1.0}


def _line(row: dict) -> str:
    if "error" in row:
        return f"{row['case']}: not measured ({row['error']})"
    return (f"{row['case']}: old {row['old_ms']:.3f} ms, new {row['new_ms']:.3f} ms, "
            f"new/old {row['ratio']:.3f} ({_verdict_text(row)})")


def _verdict_text(row: dict) -> str:
    if row["passed"]:
        return "PASS"
    return "FAIL (within noise)" if row["within_noise"] else "FAIL"


def plan_cases(quick: bool) -> tuple[list[dict], dict]:
    """The run-time cases and the compile plan of a full or quick run."""
    sys.path[:0] = [HERE, os.path.join(TREE, "tests")]
    import bench_templates

    templates = ["conv 512x7x7 3x3", "conv 64x56x56->128 1x1/2"] if quick else \
        [bench_templates.MATMUL, *bench_templates.CONVS]
    models = ("resnet18", "lstm_2layer") if quick else \
        ("resnet18", "mobilenet_v2", "bert_layer", "lstm_2layer")
    cases = [{"group": "template", "kind": "template", "name": n, "threads": t,
              "title": f"{n}, {t} thread(s)"} for n in templates for t in THREADS]
    cases += [{"group": "model", "kind": "model", "name": n, "threads": t, "quick": quick,
               "title": f"{n}{' (small)' if quick else ''}, {t} thread(s)"}
              for n in models for t in THREADS]
    cases += [{"group": "overhead", "kind": "kernel call",
               "title": "call of a built 16-element add kernel"},
              {"group": "overhead", "kind": "run call", "title": "m.run of a one-Relu model"}]
    plan = {"matmul": 256 if quick else 1024, "quick": quick,
            "polybench": POLYBENCH_QUICK if quick else POLYBENCH}
    return cases, plan


def _harness_commit() -> str:
    """This checkout's commit, "+ changes" when its benchmarks or tests differ from it."""
    def git(*args):
        return subprocess.run(["git", "-C", TREE, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    changed = git("status", "--porcelain", "--", "benchmarks", "tests")
    return git("rev-parse", "--short", "HEAD") + (" + changes" if changed else "")


def report(rows: list[dict], commits: dict, options: dict) -> str:
    sys.path.insert(0, HERE)
    from _env import cpu_model

    measured = [r for r in rows if "error" not in r]
    passed = bool(measured) and len(measured) == len(rows) and all(r["passed"] for r in rows)
    lines = ["# Redesign A/B (issue 38): no slowdown", "",
             f"Old: {commits['old']} (before the redesign); new: {commits['new']}; "
             f"harness (this script, the benchmark modules, tests/testlib): "
             f"{commits['harness']}. "
             f"CPU: {cpu_model()}. Run: {options['mode']}, {options['rounds']} rounds, "
             f"load average {options['load'][0]:.1f} before, {options['load'][1]:.1f} after"
             + (" (machine loaded: these figures do not decide; the full run at idle does)."
                if options["mode"] == "--quick" else "."), "",
             "Times: medians of alternating blocks (run times) or of one fresh process per "
             "side and round (compile); old ms and new ms: the median of a side's block medians. "
             f"Rule: PASS when new / old <= {LIMIT}, new / old being the median of the "
             "per-round ratios (the two sides' blocks of one round, back to back); the spread "
             "is the range of the per-round ratios; \"within noise\" marks a FAIL whose per-round ratios straddle 1.0 "
             "(still a FAIL: measure again at idle).", "",
             "| group | case | old ms | new ms | new / old | per-round ratios | verdict | "
             "template (old / new) |", "|---|---|---:|---:|---:|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['group']} | {r['case']} | - | - | - | - | not measured: "
                         f"{json.dumps(r['error'])[:200]} | |")
            continue
        spread = f"{min(r['round_ratios']):.3f} - {max(r['round_ratios']):.3f}"
        lines.append(f"| {r['group']} | {r['case']} | {r['old_ms']:.3f} | {r['new_ms']:.3f} | "
                     f"{r['ratio']:.3f} | {spread} | {_verdict_text(r)} | {_templates(r)} |")
    lines += ["", f"**No slowdown: {'PASS' if passed else 'FAIL'}** "
              f"({sum(r.get('passed', False) for r in rows)} of {len(rows)} cases pass)."]
    return "\n".join(lines) + "\n"


def _templates(row: dict) -> str:
    """The templates the two sides chose for a template case ("-" for the others)."""
    names = [row.get("info", {}).get(side, {}).get("template") for side in ("old", "new")]
    if names[0] is None:
        return "-"
    return names[0] if names[0] == names[1] else f"{names[0]} / {names[1]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", default="HEAD", help="the new side (default HEAD)")
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, few repeats (for a loaded machine)")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 7)
    repeat = 3 if args.quick else 10
    cases, plan = plan_cases(args.quick)
    commits = {label: subprocess.run(["git", "-C", TREE, "rev-parse", "--short", commit],
                                     check=True, capture_output=True, text=True).stdout.strip()
               for label, commit in (("old", BASE), ("new", args.commit))}
    load = os.getloadavg()[0]
    with throwaway_worktrees(commits) as trees:
        scratch = os.path.dirname(trees["old"])
        rows = run_cases(cases, trees, scratch, rounds, repeat)
        rows += run_compile(plan, trees, scratch, rounds)
    options = {"mode": "--quick" if args.quick else "full", "rounds": rounds,
               "load": (load, os.getloadavg()[0])}
    commits = {**commits, "harness": _harness_commit()}
    text = report(rows, commits, options)
    print(text)
    sys.path.insert(0, HERE)
    from _env import write_results

    write_results("redesign_ab", text, {"commits": commits, **options, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
