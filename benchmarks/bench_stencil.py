"""Stencils over time: naive vs time-tiled vs time-tiled + wavefront-parallel (and NumPy).

Run: ``python benchmarks/bench_stencil.py`` (``--quick`` for small sizes, printed only).
Writes ``benchmarks/results/stencil.md`` and ``stencil.json``.

Kernels (in-place loop nests written with ``po.kernel``, float64):

* heat-2D (Jacobi 5-point, two buffers ``A[2, N, N]`` indexed by ``t % 2``), N = 2000,
  100 steps; NumPy computes the same update with slices;
* seidel-2d (9-point Gauss-Seidel, in place), N = 2000, 60 steps.

Schedules: the naive one (the source order); time tiling (skew the space loops by
time so that every dependence distance is non-negative, then tile time and rows);
the same with a wavefront over (time tile, row tile) whose row tiles run in parallel.
Every result is compared with the naive schedule's (bit-identical, since these
statements are not reductions).  Medians of several runs; OMP_NUM_THREADS is set per
variant (1 for naive, tiled and NumPy; 2 for the parallel schedule).
"""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

import polyopt as po

RESULTS = pathlib.Path(__file__).resolve().parent / "results"
N, T = po.var("N"), po.var("T")


@po.kernel
def heat_2d(A: po.f64[2, N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[(t + 1) % 2, i, j] = 0.125 * (A[t % 2, i - 1, j] + A[t % 2, i + 1, j]
                                                + A[t % 2, i, j - 1] + A[t % 2, i, j + 1]) \
                    + 0.5 * A[t % 2, i, j]


@po.kernel
def seidel_2d(A: po.f64[N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1] + A[i, j - 1]
                           + A[i, j] + A[i, j + 1] + A[i + 1, j - 1] + A[i + 1, j]
                           + A[i + 1, j + 1]) / 9.0


def time_tiled(kernel, skews, tiles, points: str, wavefront: bool):
    """Skew the space loops by time (``skews``: (outer, inner, factor)), tile time and rows
    (``tiles``: t, i, j sizes), order the loops inside a tile as ``points`` (e.g. "tij"),
    and optionally run the row tiles of a wavefront in parallel."""
    s = po.create_schedule(kernel)
    stage = s["S0"]
    for outer, inner, factor in skews:
        stage.skew(outer, inner, factor)
    to, io, ti, ii = stage.tile("t", "i", tiles[0], tiles[1])
    jo, ji = stage.split("j", factor=tiles[2])
    inner = {"t": ti, "i": ii, "j": ji}
    stage.reorder(to, io, jo, *(inner[p] for p in points))
    if wavefront:
        stage.wavefront(to, io)
    return s


def diamond_tiled(kernel, size: int, j_tile: int):
    """Diamonds of ``size`` in (t, i) whose tiles of one time band run in parallel; the
    rows are cut into ``j_tile`` columns after skewing j by t (parallelograms in (t, j))."""
    s = po.create_schedule(kernel)
    stage = s["S0"]
    _, tile = stage.diamond_tile("t", "i", size)
    stage.skew("t", "j", 1)
    jo, ji = stage.split("j", factor=j_tile)
    stage.reorder(tile, jo, "t", "i", ji)
    return s


def heat_tiled(wavefront: bool):
    return time_tiled(heat_2d, [("t", "i", 1), ("t", "j", 1)], (32, 128, 2048), "tij", wavefront)


def seidel_tiled(wavefront: bool):
    # i' = t + i, j' = 3t + i + j: no dependence has the same (i', j'), so with t innermost
    # in a tile its iterations are independent and overlap in the CPU (the j-chain of the
    # source order runs one division and six additions after another)
    return time_tiled(seidel_2d, [("t", "i", 1), ("t", "j", 2), ("i", "j", 1)], (32, 64, 256),
                      "ijt", wavefront)


def heat_numpy(a: np.ndarray, steps: int) -> None:
    for t in range(steps):
        src, dst = a[t % 2], a[(t + 1) % 2]
        dst[1:-1, 1:-1] = 0.125 * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2]
                                   + src[1:-1, 2:]) + 0.5 * src[1:-1, 1:-1]


def median_time(run, fresh, repeat: int) -> tuple[float, np.ndarray]:
    times, result = [], None
    for _ in range(repeat):
        data = fresh()
        start = time.perf_counter()
        run(data)
        times.append(time.perf_counter() - start)
        result = data
    return statistics.median(times), result


def measure(title, kernel, tiled, shape, steps, repeat, numpy_version=None):
    rng = np.random.default_rng(0)
    initial = rng.random(shape)
    rows = []
    variants = [("naive", po.create_schedule(kernel), 1), ("time-tiled", tiled(False), 1),
                ("time-tiled + wavefront parallel", tiled(True), 2)]
    reference = None
    for name, schedule, threads in variants:
        start = time.perf_counter()
        f = po.build(schedule, num_threads=threads)
        compile_s = time.perf_counter() - start
        seconds, result = median_time(lambda a: f(a, T=steps), initial.copy, repeat)
        if reference is None:
            reference = result
        same = bool(np.array_equal(result, reference))
        rows.append({"kernel": title, "variant": name, "threads": threads,
                     "compile_s": compile_s, "run_s": seconds, "identical_to_naive": same})
    if numpy_version is not None:
        seconds, result = median_time(lambda a: numpy_version(a, steps), initial.copy, repeat)
        rows.append({"kernel": title, "variant": "NumPy slicing", "threads": 1,
                     "compile_s": 0.0, "run_s": seconds,
                     "identical_to_naive": bool(np.allclose(result, reference, rtol=1e-12))})
    naive = rows[0]["run_s"]
    for row in rows:
        row["speedup_vs_naive"] = naive / row["run_s"]
    return rows


def main() -> int:
    quick = "--quick" in sys.argv
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    n, heat_steps, seidel_steps, repeat = (300, 10, 4, 2) if quick else (2000, 100, 60, 3)
    rows = measure(f"heat-2D {n}x{n}, {heat_steps} steps", heat_2d, heat_tiled,
                   (2, n, n), heat_steps, repeat, heat_numpy)
    rows += measure(f"seidel-2d {n}x{n}, {seidel_steps} steps", seidel_2d, seidel_tiled,
                    (n, n), seidel_steps, repeat)
    lines = [
        "# Stencils over time: naive vs time-tiled schedules",
        "",
        f"{datetime.date.today()} · {platform.processor() or platform.machine()} · "
        f"{os.cpu_count()} CPUs · medians of {repeat} runs · float64",
        "",
        "| kernel | schedule | threads | compile s | run s | speedup vs naive | "
        "identical to naive |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['variant']} | {r['threads']} | "
                     f"{r['compile_s']:.3f} | {r['run_s']:.4f} | {r['speedup_vs_naive']:.2f}x | "
                     f"{'yes' if r['identical_to_naive'] else 'NO'} |")
    best = {}
    for r in rows:
        if r["variant"].startswith("time-tiled"):
            best[r["kernel"]] = max(best.get(r["kernel"], 0), r["speedup_vs_naive"])
    lines += ["", "| expectation | measured | result |", "|---|---|---|"]
    for kernel, speedup in best.items():
        lines.append(f"| {kernel}: time-tiled beats naive by at least 2x on 2 threads | "
                     f"{speedup:.2f}x | {'PASS' if speedup >= 2 else 'FAIL'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "stencil.md").write_text(text)
        (RESULTS / "stencil.json").write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
