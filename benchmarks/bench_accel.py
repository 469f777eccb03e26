"""The simulated accelerator, fed by schedules: counters, cycles and GEMM-core utilization.

Everything here is compiled FROM SCHEDULES with ``po.build(s, args, target="accel")``
(the VTA-style schedules of ``tests/target/accel/schedules.py``: packed layouts, the
padded input and the weights cached in the ``inp``/``wgt`` buffers, the accumulation
and its requantization (shift, clip) in ``acc``, the inner tiles tensorized onto the
GEMM core, and, with latency hiding, the output channels split over two virtual
threads).  The device's hand-written routine (``polyopt/target/accel/gemm.py``) is not
used.  Nothing is timed on the host: cycles come from the simulator's cycle model.

* VTA's blocked matrix-multiply example (1x1024 by 1024x1024 int8, 16x16 blocks) must
  give exactly 4,096 GEMM operations and 1,048,576 weight bytes.
* The five ResNet-18 int8 convolutions of the CPU suite, bit-exact against NumPy, with
  counters and cycles without and with latency hiding; target: >= 88% GEMM-core
  utilization with latency hiding on the compute-bound layers (VTA's figure).

    python benchmarks/bench_accel.py [--only NAME]   ->  benchmarks/results/accel.md
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "target" / "accel"))

import polyopt as po  # noqa: E402
from polyopt.target.accel.config import VTA  # noqa: E402
from schedules import conv2d, conv2d_reference, matmul, matmul_reference  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
# name, in channels, out channels, size, kernel, stride, (output rows, out-channel blocks,
# in-channel blocks) per tile
LAYERS = [
    ("conv 56x56x64 3x3", 64, 64, 56, 3, 1, (7, 2, 1)),
    ("conv 28x28x128 3x3", 128, 128, 28, 3, 1, (14, 2, 1)),
    ("conv 14x14x256 3x3", 256, 256, 14, 3, 1, (14, 4, 1)),
    ("conv 7x7x512 3x3", 512, 512, 7, 3, 1, (7, 8, 1)),
    ("conv 56->28 1x1 s2", 64, 128, 56, 1, 2, (7, 4, 1)),
]


def _shape(tensor):
    return tuple(int(e) for e in tensor.shape)


def vta_matmul(lines, checks):
    rng = np.random.default_rng(0)
    s, args = matmul(VTA, 1, 64, 64, tile_n=8, tile_k=16)
    f = po.build(s, args, target="accel")
    a = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    w = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    f(a, w, o)
    exact = np.array_equal(o, matmul_reference(a, w))
    r = f.report
    checks.append(("VTA matmul example from a schedule: 4096 GEMM ops, 1048576 weight "
                   f"bytes, bit-exact (got {r.gemm_ops}, {r.loaded['wgt']})",
                   (r.gemm_ops, r.loaded["wgt"]) == (4096, 1048576) and exact))
    lines += ["## VTA's blocked matrix-multiply example (1x1024 by 1024x1024)", "",
              f"- {r}", f"- {len(f.program)} instructions; the first ones:", "", "```"]
    lines += f.listing().splitlines()[:12] + ["```", ""]


def conv_layer(spec, threads):
    name, cin, cout, size, kernel, stride, (rows, cout_tile, cin_tile) = spec
    start = time.perf_counter()
    s, args = conv2d(VTA, size, cin, cout, kernel, stride, rows=rows, cout_tile=cout_tile,
                     cin_tile=cin_tile, threads=threads)
    f = po.build(s, args, target="accel")
    built = time.perf_counter() - start
    rng = np.random.default_rng(size + cin)
    d = rng.integers(-128, 128, _shape(args[0]), dtype=np.int8)
    k = rng.integers(-128, 128, _shape(args[1]), dtype=np.int8)
    o = np.zeros(_shape(args[2]), np.int8)
    start = time.perf_counter()
    f(d, k, o)
    simulated = time.perf_counter() - start
    return f, np.array_equal(o, conv2d_reference(d, k, stride)), built, simulated


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="run only the layers whose name contains this")
    options = parser.parse_args()
    lines = ["# The simulated accelerator (VTA configuration), fed by schedules", "",
             "Written by `python benchmarks/bench_accel.py`. Every program below is compiled "
             "from a schedule (`po.build(s, args, target=\"accel\")`, schedules in "
             "`tests/target/accel/schedules.py`); cycles come from the simulator's cycle "
             "model (1x16x16 int8 GEMM core, 32 KiB input / 256 KiB weight / 128 KiB "
             f"accumulator buffers, DMA at {VTA.dram_bytes_per_cycle} bytes/cycle after "
             f"{VTA.dram_latency} cycles). Load average at the start: "
             f"{os.getloadavg()[0]:.1f} (it affects only the build times).", ""]
    checks = []
    if not options.only:
        vta_matmul(lines, checks)
    lines += ["## ResNet-18 int8 convolutions (padding by the DMA loads, requantized in the "
              "accumulators)", "",
              "| layer | tile (rows, out blocks, in blocks) | latency hiding | instructions | "
              "GEMM ops | input bytes | weight bytes | load / compute / store busy | cycles "
              "| GEMM utilization | bit-exact | build s | simulate s |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec in LAYERS:
        name = spec[0]
        if options.only and options.only not in name:
            continue
        for threads in (1, 2):
            f, exact, built, simulated = conv_layer(spec, threads)
            r = f.report
            busy = " / ".join(str(r.busy[q]) for q in ("load", "compute", "store"))
            lines.append(f"| {name} | {spec[6]} | {'yes' if threads == 2 else 'no'} | "
                         f"{len(f.program)} | {r.gemm_ops} | {r.loaded['inp']} | "
                         f"{r.loaded['wgt']} | {busy} | {r.cycles} | {r.utilization:.1%} | "
                         f"{'yes' if exact else 'NO'} | {built:.1f} | {simulated:.1f} |")
            hiding = "with" if threads == 2 else "without"
            checks.append((f"{name}: bit-exact ({hiding} latency hiding)", exact))
            compute_bound = r.busy["compute"] >= r.busy["load"]
            if threads == 2 and compute_bound:
                # the compute queue runs the requantization's ALU work too: GEMM ops /
                # (GEMM + ALU ops) bounds the utilization whatever the tiling
                ceiling = r.gemm_ops / (r.gemm_ops + r.alu_ops * VTA.alu_cycles)
                checks.append((f"{name} (compute-bound): GEMM utilization >= 88% with "
                               f"latency hiding ({r.utilization:.1%}; its ALU work bounds "
                               f"it to {ceiling:.1%})", r.utilization >= 0.88))
            elif threads == 2:
                lines_note = (f"{name} is load-bound (load busy {r.busy['load']} > compute "
                              f"busy {r.busy['compute']}): utilization {r.utilization:.1%}, "
                              "not held to the 88% target")
                checks.append((lines_note, True))
            print(lines[-1], flush=True)
    lines += ["", "## Targets", ""]
    lines += [f"- {'PASS' if ok else 'FAIL'}: {text}" for text, ok in checks]
    lines += ["- NOT BUILT: the graph layer sending a model's int8 convolutions to the device "
              "(needs the graph layer's int8 support)", ""]
    RESULTS.mkdir(exist_ok=True)
    if not options.only:
        (RESULTS / "accel.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
