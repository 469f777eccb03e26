"""A/B in one process, one thread: the LSTM and ResNet-18's max pool, before and after
their kernels changed, beside onnxruntime.

Run: ``python benchmarks/ab_lstm_pool.py [--rounds 5]`` -> ``results/experiments/ab_lstm_pool.md``.

* ``lstm_2layer`` end to end (bench_graph's model: 32 steps, 256 inputs and hidden
  units, batch 1), process CPU time in alternating blocks: the model as compiled now;
  the same with the earlier recurrence (one step per iteration) and its arrays where
  NumPy puts them (16 bytes past a cache line, as a large ``np.empty`` is); onnxruntime.
* the recurrence kernel alone, the same two ways (hot caches).
* the 3x3 stride-2 max pool on ResNet-18's blocked 64 x 112 x 112 tensor: the taps as a
  chain of ``maximum`` (before) and as a balanced tree (now); onnxruntime's MaxPool
  alone on the NCHW tensor (its call overhead included).
Every variant's numbers are checked equal (bit for bit) before timing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from _env import alternating_medians, restart_with_clean_environment, write_results  # noqa: E402

if __name__ == "__main__":
    restart_with_clean_environment(1)

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
import polyopt.graph.blocked as blocked  # noqa: E402
import polyopt.graph.lstm as lstm  # noqa: E402
from polyopt.graph.lowering import lower_group, schedule_group  # noqa: E402
from polyopt.target.args import data_pointer  # noqa: E402
from polyopt.te.tensor import maximum  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_session, random_inputs  # noqa: E402
import bench_graph  # noqa: E402


def numpy_placed(array: np.ndarray) -> np.ndarray:
    """A copy of ``array`` starting 16 bytes past a cache line."""
    raw = np.empty(array.nbytes + 80, np.uint8)
    start = -data_pointer(raw) % 64 + 16
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def as_before(runner) -> None:
    """The runner with its arrays 16 bytes past a cache line (it must run one step per
    iteration: compiled with ``pairs_apply`` off)."""
    for name in ("w_t", "r_t", "bias", "projected", "zeros"):
        setattr(runner, name, numpy_placed(getattr(runner, name)))
    runner.states = [numpy_placed(a) for a in runner.states]
    runner._weights = [data_pointer(a) for a in (runner.w_t, runner.bias, runner.projected)]
    runner._recurrent = data_pointer(runner.r_t)
    runner._states = [data_pointer(a) for a in runner.states]
    runner._zeros = data_pointer(runner.zeros)


def cpu_times(calls: dict, rounds: int, runs: int = 20) -> dict:
    """Median process CPU time (ms) of each call, in alternating blocks of ``runs``."""
    samples = {k: [] for k in calls}
    for call in calls.values():
        call()
    for _ in range(rounds * 3):
        for k, call in calls.items():
            for _ in range(runs):
                start = time.process_time()
                call()
                samples[k].append(time.process_time() - start)
    return {k: 1e3 * statistics.median(v) for k, v in samples.items()}


def lstm_rows(rounds: int) -> list[tuple[str, float]]:
    model = bench_graph.models(False)["lstm_2layer"]
    feeds = random_inputs(model)
    now = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    pairs_apply = lstm.pairs_apply
    lstm.pairs_apply = lambda *args: False
    try:
        before = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    finally:
        lstm.pairs_apply = pairs_apply
    for step in before.steps:
        if step.template == "lstm":
            as_before(step.kernel)
    session = ort_session(model, 1)
    names = [o.name for o in session.get_outputs()]
    a, b = now.run(feeds), before.run(feeds)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    times = cpu_times({"now": lambda: now.run(feeds), "before": lambda: before.run(feeds),
                       "onnxruntime": lambda: session.run(names, feeds)}, rounds)
    runners = [(s.kernel, t) for t in (now, before) for s in t.steps if s.template == "lstm"]
    kernel = []
    for runner, _ in runners[::2]:
        pointers = [runner._weights[2], runner._recurrent, runner._zeros, runner._zeros,
                    *runner._states]
        kernel.append(lambda r=runner, p=pointers: r.recurrence.call_pointers(p))
    recurrence = alternating_medians(kernel, 200, rounds)
    return [("lstm_2layer, now (ms, CPU time)", times["now"]),
            ("lstm_2layer, before (ms, CPU time)", times["before"]),
            ("lstm_2layer, onnxruntime (ms, CPU time)", times["onnxruntime"]),
            ("recurrence kernel, now (ms)", 1e3 * recurrence[0]),
            ("recurrence kernel, before (ms)", 1e3 * recurrence[1])]


def pool_rows(rounds: int) -> list[tuple[str, float]]:
    m = ModelBuilder(3)
    x = m.input("x", (1, 3, 224, 224))
    stem = m.add("Relu", [m.add("Conv", [x, m.weight(64, 3, 7, 7)], pads=[3] * 4,
                                strides=[2, 2])])
    pool = m.add("MaxPool", [stem], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    model = m.model([m.add("Conv", [pool, m.weight(64, 64, 3, 3)], pads=[1] * 4)])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    (step,) = [s for s in compiled.steps if s.template == "pool_blocked"]

    def chain(terms):
        result = terms[0]
        for term in terms[1:]:
            result = maximum(result, term)
        return result
    kernels = []
    tree = blocked.maximum_tree
    for combine in (tree, chain):
        blocked.maximum_tree = combine
        try:
            lowered = lower_group(compiled.graph, step.group.nodes, step.group.output)
            s = schedule_group(lowered, "reduction", step.group.nodes)
            kernels.append(po.build(s, [*lowered.placeholders, lowered.output],
                                    target="llvm", num_threads=1))
        finally:
            blocked.maximum_tree = tree
    shape_in, shape_out = step.kernel_shapes
    X = np.random.default_rng(0).standard_normal(shape_in).astype(np.float32)
    outs = [np.empty(shape_out, np.float32) for _ in kernels]
    calls = [lambda k=k, y=y: k.call_pointers([data_pointer(X), data_pointer(y)])
             for k, y in zip(kernels, outs)]
    p = ModelBuilder(0)
    plain = p.input("x", (1, 64, 112, 112))
    session = ort_session(p.model([p.add("MaxPool", [plain], kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1] * 4)]), 1)
    nchw = np.ascontiguousarray(X.transpose(0, 1, 4, 2, 3).reshape(1, 64, 112, 112))
    for call in calls:
        call()
    (expected,) = session.run(None, {"x": nchw})
    for y in outs:
        np.testing.assert_array_equal(y.transpose(0, 1, 4, 2, 3).reshape(expected.shape),
                                      expected)
    calls.append(lambda: session.run(None, {"x": nchw}))
    now, before, theirs = alternating_medians(calls, 200, rounds)
    return [("max pool 3x3/2 blocked, now: tree (ms)", 1e3 * now),
            ("max pool 3x3/2 blocked, before: chain (ms)", 1e3 * before),
            ("max pool 3x3/2, onnxruntime NCHW, one node (ms)", 1e3 * theirs)]


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    opts = parser.parse_args()
    load = os.getloadavg()[0]
    rows = lstm_rows(opts.rounds) + pool_rows(opts.rounds)
    value = dict(rows)
    ratio = value["lstm_2layer, onnxruntime (ms, CPU time)"] / value[
        "lstm_2layer, now (ms, CPU time)"]
    before = value["lstm_2layer, onnxruntime (ms, CPU time)"] / value[
        "lstm_2layer, before (ms, CPU time)"]
    lines = ["# LSTM and blocked max pool, before and after (one thread, one process)", "",
             f"Load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.", "",
             "| what | value |", "|---|---:|"]
    lines += [f"| {name} | {v:.3f} |" for name, v in rows]
    verdict = "PASS" if ratio >= 1.0 else "FAIL"
    lines += ["", f"lstm_2layer 1 thread vs onnxruntime: now {ratio:.3f}x, before {before:.3f}x"
              f" -> {verdict} (target >= 1.0x)"]
    text = "\n".join(lines) + "\n"
    print(text)
    write_results("experiments/ab_lstm_pool", text, {"rows": value, "vs_onnxruntime": ratio,
                                         "before_vs_onnxruntime": before, "load": load})
    return 0


if __name__ == "__main__":
    sys.exit(main())
