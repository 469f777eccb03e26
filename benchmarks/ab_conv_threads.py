"""A/B in one process for the blocked convolutions of ``bench_templates.py`` (issue 29):
one thread, caller CPU time, the bias added in its own pass over each output row
("before") or in the transposed copy of the row ("after", ``flat_conv.adds_per_row``),
beside onnxruntime; two threads, each thread's run time from
``/proc/self/task/*/schedstat`` (nanoseconds on the CPU, and waiting for one), so the
split of the work between the caller and the pool's worker shows on a loaded machine
too; and ``compiled.run``'s Python cost on a ``Relu`` of 4,096 floats.

Run: ``python benchmarks/ab_conv_threads.py [--rounds 9] [--only 3x3]``; prints
Markdown (copy it into ``results/experiments/``).  Each side's result is checked
against NumPy (float64) first.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from _env import restart_with_clean_environment  # noqa: E402

if __name__ == "__main__":
    restart_with_clean_environment(1)

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
import polyopt.graph.flat_conv as flat_conv  # noqa: E402
from ab_conv_blocked import cpu_time, layer  # noqa: E402
from bench_templates import CONVS  # noqa: E402
from testlib.onnx_models import ort_session, single_op  # noqa: E402


def compiled(model, x, reference, threads: int, before: bool = False):
    saved = flat_conv.adds_per_row
    try:
        if before:
            flat_conv.adds_per_row = lambda out, nchw: False
        result = po.graph.compile(po.graph.from_onnx(model), num_threads=threads, cache=False)
    finally:
        flat_conv.adds_per_row = saved
    feeds, output = {"x0": x}, result.graph.outputs[0]
    error = float(np.max(np.abs(result.run(feeds)[output] - reference)))
    if error > 1e-4 * max(1.0, float(np.max(np.abs(reference)))):
        raise SystemExit(f"differs from NumPy by {error}")
    return lambda: result.run(feeds)


def one_thread(name: str, rounds: int) -> str:
    model, x, reference = layer(name)
    session = ort_session(model, 1)
    out = session.get_outputs()[0].name
    calls = [compiled(model, x, reference, 1, before=True), compiled(model, x, reference, 1),
             lambda: session.run([out], {"x0": x})]
    for call in calls:
        cpu_time(call, 3)
    repeat = max(3, int(0.05 / cpu_time(calls[1], 2)))
    samples = [[], [], []]
    for _ in range(rounds):
        for side, call in enumerate(calls):
            samples[side].append(cpu_time(call, repeat))
    before, after, ort = (1e3 * statistics.median(s) for s in samples)
    return (f"| {name} | {before:.3f} | {after:.3f} | {ort:.3f} | {before / after:.3f}x | "
            f"{ort / before:.2f}x | {ort / after:.2f}x |")


def _tasks() -> dict[int, tuple[int, int]]:
    found = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat") as file:
                run, wait, _ = map(int, file.read().split())
        except OSError:
            continue
        found[int(task)] = (run, wait)
    return found


def two_threads(name: str, calls: int = 100) -> str:
    model, x, reference = layer(name)
    run = compiled(model, x, reference, 2)
    for _ in range(10):
        run()
    before, start = _tasks(), time.perf_counter()
    for _ in range(calls):
        run()
    wall, after = time.perf_counter() - start, _tasks()
    me = threading.get_native_id()
    spent = {tid: [(a - b) / calls / 1e6 for a, b in zip(after[tid], before[tid])]
             for tid in after if tid in before and after[tid][0] > before[tid][0]}
    caller = spent.pop(me, [0.0, 0.0])
    worker = max(spent.values(), default=[0.0, 0.0], key=lambda v: v[0])
    return (f"| {name} | {1e3 * wall / calls:.3f} | {caller[0]:.3f} | {worker[0]:.3f} | "
            f"{caller[0] + worker[0]:.3f} | {caller[1]:.3f} | {worker[1]:.3f} |")


def python_cost(rounds: int) -> str:
    x = np.random.default_rng(0).standard_normal((1, 4096)).astype(np.float32)
    model = single_op("Relu", [x.shape])
    lines = []
    for threads in (1, 2):
        ours = po.graph.compile(po.graph.from_onnx(model), num_threads=threads, cache=False)
        session = ort_session(model, threads)
        out, feeds = session.get_outputs()[0].name, {"x0": x}
        sides = [lambda: ours.run(feeds), lambda: session.run([out], feeds)]
        samples = [[], []]
        for _ in range(rounds):
            for side, call in enumerate(sides):
                samples[side].append(cpu_time(call, 1000))
        a, b = (1e6 * statistics.median(s) for s in samples)
        lines.append(f"| Relu 4,096 floats | {threads} | {a:.1f} | {b:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    names = [n for n in CONVS if opts.only in n]
    print(f"load average before: {os.getloadavg()[0]:.1f}\n")
    print("| case | bias pass before ms | after ms | onnxruntime ms | after / before | "
          "vs onnxruntime before | after |\n|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        print(one_thread(name, opts.rounds), flush=True)
    print("\n| case, 2 threads | wall ms / call | caller CPU ms | worker CPU ms | sum | "
          "caller waiting ms | worker waiting ms |\n|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        print(two_threads(name), flush=True)
    print("\n| run | threads | polyopt us (caller CPU) | onnxruntime us |\n|---|---:|---:|---:|")
    print(python_cost(opts.rounds))
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
