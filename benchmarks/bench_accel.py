"""The simulated accelerator: counters, cycles and GEMM-core utilization.

* VTA's published blocked matrix-multiply example (1x1024 by 1024x1024 int8, 16x16
  blocks) must give exactly 4,096 GEMM operations and 1,048,576 weight bytes.
* The five ResNet-18 convolutions of the CPU suite, as matrix products on the device
  (output pixels x (in channels x kernel) by (in channels x kernel) x out channels, the
  input unfolded on the host), bit-exact against NumPy, with counters and cycles per
  layer, without and with latency hiding (two virtual threads); the issue's target is at
  least 88% GEMM-core utilization with latency hiding on compute-bound layers.

The convolutions run through the device's hand-written GEMM routine
(``polyopt/target/accel/gemm.py``): the compiler that lowers a conv schedule onto the
device (scopes, tensorize, virtual_thread) is not built yet, so this measures the device
model and the routine, not schedules.  Nothing here is timed on the host.

    python benchmarks/bench_accel.py   ->  benchmarks/results/accel.md
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from polyopt.target.accel.config import VTA  # noqa: E402
from polyopt.target.accel.gemm import gemm_dram, gemm_program, gemm_result  # noqa: E402
from polyopt.target.accel.sim import Report, run  # noqa: E402

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
LAYERS = [  # name, in channels, out channels, size, kernel, stride
    ("conv 56x56x64 3x3", 64, 64, 56, 3, 1), ("conv 28x28x128 3x3", 128, 128, 28, 3, 1),
    ("conv 14x14x256 3x3", 256, 256, 14, 3, 1), ("conv 7x7x512 3x3", 512, 512, 7, 3, 1),
    ("conv 56->28 1x1 s2", 64, 128, 56, 1, 2)]

def rows_per_call(n: int) -> int:
    """Output pixels per routine call: as many as two copies of the accumulator tiles
    (and of one input column chunk of 4 tiles) allow, at most 128."""
    return max(1, min(128, VTA.entries("acc") // (2 * n), VTA.entries("inp") // (2 * 4)))


def unfold(x: np.ndarray, kernel: int, stride: int) -> np.ndarray:
    """(C, H, W) int8 -> (pixels, C * kernel * kernel), zero padding of kernel // 2."""
    pad = kernel // 2
    channels, height, _ = x.shape
    padded = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    out = (height + 2 * pad - kernel) // stride + 1
    columns = [padded[:, dy:dy + stride * out:stride, dx:dx + stride * out:stride]
               for dy in range(kernel) for dx in range(kernel)]
    return np.stack(columns, 1).reshape(channels * kernel * kernel, out * out).T.copy()


def device_gemm(a: np.ndarray, w: np.ndarray, threads: int) -> tuple[np.ndarray, Report]:
    """a (M x K) @ w.T (N x K) on the device, :func:`rows_per_call` rows per call; the
    calls run one after another (their cycles add up)."""
    total, out = Report(), []
    k, n = a.shape[1] // VTA.block_in, w.shape[0] // VTA.block_out
    step = rows_per_call(n)
    for start in range(0, a.shape[0], step):
        rows = a[start:start + step]
        m = rows.shape[0]
        program, uops = gemm_program(VTA, m, n, k, virtual_threads=threads, shift=8)
        dram = gemm_dram(VTA, rows, w, uops)
        report = run(program, dram, VTA)
        out.append(gemm_result(VTA, dram["y"], m, n))
        for field in ("gemm_ops", "alu_ops", "stored", "cycles", "gemm_cycles"):
            setattr(total, field, getattr(total, field) + getattr(report, field))
        for key in total.loaded:
            total.loaded[key] += report.loaded[key]
        for key in total.busy:
            total.busy[key] += report.busy[key]
    return np.concatenate(out), total


def main() -> None:
    rng = np.random.default_rng(0)
    lines = ["# The simulated accelerator (VTA configuration)", "",
             "Written by `python benchmarks/bench_accel.py`. Device model: 1x16x16 int8 GEMM "
             "core, 32 KiB input / 256 KiB weight / 128 KiB accumulator buffers, DMA at "
             f"{VTA.dram_bytes_per_cycle} bytes/cycle after {VTA.dram_latency} cycles.", ""]
    checks = []
    x, w = rng.integers(-128, 128, (1, 1024), np.int8), rng.integers(-128, 128, (1024, 1024),
                                                                     np.int8)
    program, uops = gemm_program(VTA, 1, 64, 64)
    dram = gemm_dram(VTA, x, w, uops)
    report = run(program, dram, VTA)
    exact = (x.astype(np.int32) @ w.astype(np.int32).T).astype(np.int8)
    ok = (report.gemm_ops, report.loaded["wgt"]) == (4096, 1048576) and np.array_equal(
        gemm_result(VTA, dram["y"], 1, 64), exact)
    checks.append(("VTA matmul example: 4096 GEMM ops, 1048576 weight bytes, bit-exact", ok))
    lines += ["## VTA's blocked matrix-multiply example", "", f"- {report}", ""]
    lines += ["## ResNet-18 convolutions as device GEMMs (input unfolded on the host)", "",
              "| layer | latency hiding | GEMM ops | weight bytes | cycles | GEMM utilization "
              "| bit-exact |", "|---|---|---|---|---|---|---|"]
    for name, cin, cout, size, kernel, stride in LAYERS:
        image = rng.integers(-128, 128, (cin, size, size), np.int8)
        weight = rng.integers(-128, 128, (cout, cin * kernel * kernel), np.int8)
        a = unfold(image, kernel, stride)
        expected = np.clip((a.astype(np.int32) @ weight.astype(np.int32).T) >> 8, -128, 127)
        for threads in (1, 2):
            got, total = device_gemm(a, weight, threads)
            exact = np.array_equal(got, expected.astype(np.int8))
            lines.append(f"| {name} | {'yes' if threads == 2 else 'no'} | {total.gemm_ops} | "
                         f"{total.loaded['wgt']} | {total.cycles} | {total.utilization:.1%} | "
                         f"{'yes' if exact else 'NO'} |")
            checks.append((f"{name}: bit-exact ({'with' if threads == 2 else 'without'} "
                           "latency hiding)", exact))
            if threads == 2:
                checks.append((f"{name}: GEMM utilization >= 88% with latency hiding "
                               f"({total.utilization:.1%})", total.utilization >= 0.88))
    lines += ["", "## Targets", ""]
    lines += [f"- {'PASS' if ok else 'FAIL'}: {text}" for text, ok in checks]
    lines += ["- NOT BUILT: convolutions compiled from schedules (cache_read/cache_write in "
              "the device's scopes, tensorize onto the GEMM core, virtual_thread); the "
              "graph layer sending int8 convolutions to the device", ""]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "accel.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
