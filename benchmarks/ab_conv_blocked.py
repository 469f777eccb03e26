"""A/B in one process, one thread, CPU time: the blocked convolutions of
``bench_templates.py`` (ResNet-18's 3x3 layers and its 1x1 stride-2 projection, with a
bias, compiled by ``po.graph.compile``) before and after issue 29's changes, beside
onnxruntime.

Run: ``python benchmarks/ab_conv_blocked.py [--rounds 11] [--only 3x3]``; prints a
Markdown table (copy it into ``results/experiments/``).

* before: the padded input written a vector of channels at a time from the NCHW input
  (a gather of ``lanes`` scalars ``H * W`` floats apart per vector), row tiles the
  largest divisor of the row (``layouts.row_tile``);
* after: the code as it is (``flat_conv.schedule_blocked_padding``,
  ``layouts.register_columns``).

The "before" model is compiled with those two functions put back for the duration of
its compilation.  Each side's result is checked against NumPy (float64) first.  Times
are medians of alternating batches of the caller thread's CPU time
(``time.thread_time``: on a shared machine, wall-clock times are mostly the other
processes'); onnxruntime runs on the caller thread too (``intra_op_num_threads`` 1,
spinning off).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from _env import restart_with_clean_environment  # noqa: E402

if __name__ == "__main__":
    restart_with_clean_environment(1)

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
import polyopt.graph.layouts as layouts  # noqa: E402
from bench_templates import CONVS, conv_reference  # noqa: E402
from testlib.onnx_models import ort_session, single_op  # noqa: E402

BEFORE = {"is_blocked_padding": lambda tensor: False,
          "register_columns": lambda width, columns: layouts.row_tile(width, columns)}


def layer(name: str):
    """``(model, x, reference)`` of one case of ``bench_templates.CONVS``."""
    channels, size, features, k, stride, pad = CONVS[name]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    w = (rng.standard_normal((features, channels, k, k))
         * np.sqrt(2.0 / (channels * k * k))).astype(np.float32)
    b = rng.standard_normal(features).astype(np.float32)
    model = single_op("Conv", [x.shape], consts=(w, b), kernel_shape=[k, k],
                      strides=[stride] * 2, pads=[pad] * 4)
    return model, x, conv_reference(x, w, b, stride, pad)


def compiled_run(model, x, reference, before: bool):
    saved = {name: getattr(layouts, name) for name in BEFORE} if before else {}
    try:
        for name in saved:
            setattr(layouts, name, BEFORE[name])
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    finally:
        for name, value in saved.items():
            setattr(layouts, name, value)
    feeds, output = {"x0": x}, compiled.graph.outputs[0]
    error = float(np.max(np.abs(compiled.run(feeds)[output] - reference)))
    if error > 1e-4 * max(1.0, float(np.max(np.abs(reference)))):
        raise SystemExit(f"{'before' if before else 'after'}: differs from NumPy by {error}")
    return lambda: compiled.run(feeds)


def cpu_time(call, calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        call()
    return (time.thread_time() - start) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--only", default="")
    opts = parser.parse_args()
    print("| case | before ms | after ms | onnxruntime ms | after / before | "
          "vs onnxruntime before | after |\n|---|---:|---:|---:|---:|---:|---:|")
    for name in (n for n in CONVS if opts.only in n):
        model, x, reference = layer(name)
        session = ort_session(model, 1)
        out = session.get_outputs()[0].name
        calls = [compiled_run(model, x, reference, True),
                 compiled_run(model, x, reference, False),
                 lambda: session.run([out], {"x0": x})]
        for call in calls:
            cpu_time(call, 3)
        repeat = max(3, int(0.1 / cpu_time(calls[1], 2)))
        samples = [[], [], []]
        for _ in range(opts.rounds):
            for side, call in enumerate(calls):
                samples[side].append(cpu_time(call, repeat))
        before, after, ort = (1e3 * statistics.median(s) for s in samples)
        print(f"| {name} | {before:.3f} | {after:.3f} | {ort:.3f} | {before / after:.3f}x | "
              f"{ort / before:.2f}x | {ort / after:.2f}x |", flush=True)
    print(f"\nload average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
