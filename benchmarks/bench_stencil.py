"""Stencils over time: naive vs time-tiled vs wavefront- and diamond-parallel (and NumPy).

Run: ``python benchmarks/bench_stencil.py`` (``--quick`` for small sizes, printed only).
Writes ``benchmarks/results/stencil.md`` and ``stencil.json``.

Kernels (in-place loop nests written with ``po.kernel``, float64, from the tests'
``testlib.kernels``):

* heat-2D (Jacobi 5-point, two buffers ``A[2, N, N]`` indexed by ``t % 2``), N = 2000,
  100 steps; NumPy computes the same update with slices;
* seidel-2d (9-point Gauss-Seidel, in place), N = 2000, 60 steps.

Schedules: the naive one (the source order); time tiling (skew the space loops by
time so that every dependence distance is non-negative, then tile time, rows and
columns); the same with a wavefront over (time tile, row tile) whose row tiles run in
parallel; for heat-2D, diamond tiling (``diamond_tile``: every tile of a time band runs
in parallel, from the first band on).  Inside a seidel-2d tile time is the innermost
loop: its iterations are independent, where the source order's j loop is one chain of
dependent additions and divisions.  Every result is compared with the naive
schedule's (bit-identical, since these statements are not reductions).  Medians of
interleaved runs (one run of every variant per round); the thread count is a build
option of each variant (NumPy's slicing runs on one thread).
"""

from __future__ import annotations

import datetime
import os
import pathlib
import platform
import statistics
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]  # this checkout,
# the shared kernels and benchmark helpers

import polyopt as po  # noqa: E402
from _env import write_results  # noqa: E402
from testlib.kernels import heat_2d, seidel_2d  # noqa: E402
from testlib.kernels import heat_2d_ref as heat_numpy  # noqa: E402


def time_tiled(kernel, skews, tiles, points: str, wavefront: bool, vectorized: bool = False):
    """Skew the space loops by time (``skews``: (outer, inner, factor)), tile time, rows and
    columns (``tiles``: t, i, j sizes), order the loops inside a tile as ``points`` (e.g. "tij"),
    optionally run the row tiles of a wavefront in parallel and vectorize the innermost
    loop (its iterations are independent: LLVM is told so, see
    ``polyopt.target.llvm.access_groups``)."""
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
    if vectorized:
        stage.vectorize(inner[points[-1]])
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


def heat_tiled(wavefront: bool, vectorized: bool = False):
    return time_tiled(heat_2d, [("t", "i", 1), ("t", "j", 1)], (32, 128, 2048), "tij", wavefront,
                      vectorized)


def seidel_tiled(wavefront: bool, vectorized: bool = False):
    # i' = t + i, j' = 3t + i + j: no dependence has the same (i', j'), so with t innermost
    # in a tile its iterations are independent and overlap in the CPU (the j-chain of the
    # source order runs one division and six additions after another)
    return time_tiled(seidel_2d, [("t", "i", 1), ("t", "j", 2), ("i", "j", 1)], (32, 64, 256),
                      "ijt", wavefront, vectorized)


VECTOR_LOOP = {heat_2d: "j.inner", seidel_2d: "t.inner (gathers and scatters)"}


def heat_diamond():
    return diamond_tiled(heat_2d, 64, 512)


def median_times(runs, fresh, repeat: int):
    """Median time of each of ``runs`` (functions of a fresh input), measured in
    ``repeat`` interleaved rounds so that a noisy stretch of the machine hits all alike;
    also the median CPU time per wall time (about the thread count when every thread
    had a core to itself) and each run's last result."""
    times, cpu = [[] for _ in runs], [[] for _ in runs]
    results = [None] * len(runs)
    for _ in range(repeat):
        for k, run in enumerate(runs):
            data = fresh()
            start, start_cpu = time.perf_counter(), time.process_time()
            run(data)
            times[k].append(time.perf_counter() - start)
            cpu[k].append((time.process_time() - start_cpu) / times[k][-1])
            results[k] = data
    return ([statistics.median(t) for t in times], [statistics.median(c) for c in cpu],
            results)


def measure(title, kernel, variants, shape, steps, repeat, numpy_version=None):
    """Rows of the table for one kernel: ``variants`` are (name, schedule, threads), the
    first the naive schedule every result is compared with."""
    initial = np.random.default_rng(0).random(shape)
    rows, runs = [], []
    for name, schedule, threads in variants:
        start = time.perf_counter()
        f = po.build(schedule, num_threads=threads)
        rows.append({"kernel": title, "variant": name, "threads": threads,
                     "compile_s": time.perf_counter() - start})
        runs.append(lambda a, f=f: f(a, T=steps))
    if numpy_version is not None:
        rows.append({"kernel": title, "variant": "NumPy slicing", "threads": 1, "compile_s": 0.0})
        runs.append(lambda a: numpy_version(a, steps))
    seconds, cpu_per_wall, results = median_times(runs, initial.copy, repeat)
    for row, run_s, cpu, result in zip(rows, seconds, cpu_per_wall, results):
        row["run_s"] = run_s
        row["cpu_per_wall"] = cpu
        row["speedup_vs_naive"] = seconds[0] / run_s
        same = np.array_equal if row["variant"] != "NumPy slicing" else \
            (lambda a, b: np.allclose(a, b, rtol=1e-12))
        row["identical_to_naive"] = bool(same(result, results[0]))
    return rows


def tiled_variants(kernel, tiled, diamond=None):
    variants = [("naive", po.create_schedule(kernel), 1), ("time-tiled", tiled(False), 1),
                (f"time-tiled, {VECTOR_LOOP[kernel]} vectorized", tiled(False, True), 1)]
    variants += [("time-tiled + wavefront parallel", tiled(True), n) for n in (1, 2)]
    if diamond is not None:
        variants += [("diamond-tiled, tiles of a time band parallel", diamond(), n)
                     for n in (1, 2)]
    return variants


def diamond_refusal(kernel) -> str:
    """Why ``diamond_tile`` refuses ``kernel`` (its counterexample), or "accepted"."""
    try:
        po.create_schedule(kernel)["S0"].diamond_tile("t", "i", 64)
    except po.IllegalScheduleError as err:
        return str(err).split(". Repair:")[0].split(" is illegal: ")[1]
    return "accepted"


def main() -> int:
    quick = "--quick" in sys.argv
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    n, heat_steps, seidel_steps, repeat = (300, 10, 4, 2) if quick else (2000, 100, 60, 5)
    load_before = os.getloadavg()[0]
    rows = measure(f"heat-2D {n}x{n}, {heat_steps} steps", heat_2d,
                   tiled_variants(heat_2d, heat_tiled, heat_diamond), (2, n, n), heat_steps,
                   repeat, heat_numpy)
    rows += measure(f"seidel-2d {n}x{n}, {seidel_steps} steps", seidel_2d,
                    tiled_variants(seidel_2d, seidel_tiled), (n, n), seidel_steps, repeat)
    lines = [
        "# Stencils over time: naive vs time-tiled schedules",
        "",
        f"{datetime.date.today()} · {platform.processor() or platform.machine()} · "
        f"{os.cpu_count()} CPUs · medians of {repeat} interleaved runs · float64 · "
        f"1-minute load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
        "(a shared machine: at a load near 2, two threads rarely get two cores)",
        "",
        "| kernel | schedule | threads | compile s | run s | speedup vs naive | "
        "identical to naive | CPU s / run s |",
        "|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['kernel']} | {r['variant']} | {r['threads']} | "
                     f"{r['compile_s']:.3f} | {r['run_s']:.4f} | {r['speedup_vs_naive']:.2f}x | "
                     f"{'yes' if r['identical_to_naive'] else 'NO'} | {r['cpu_per_wall']:.2f} |")
    best = {}
    for r in rows:
        if r["threads"] == 2 and r["speedup_vs_naive"] > best.get(r["kernel"], (0, ""))[0]:
            best[r["kernel"]] = (r["speedup_vs_naive"], r["variant"])
    lines += ["", "| expectation | measured | result |", "|---|---|---|"]
    for kernel, (speedup, variant) in best.items():
        lines.append(f"| {kernel}: time-tiled beats naive by at least 2x on 2 threads | "
                     f"{speedup:.2f}x ({variant}) | {'PASS' if speedup >= 2 else 'FAIL'} |")
    lines += [
        "",
        f"Diamond tiling of seidel-2d is refused: {diamond_refusal(seidel_2d)}.",
        "",
        "seidel-2d's source order is latency-bound: A[i, j] waits for A[i, j - 1] (six "
        "additions and a division in one chain; nothing to vectorize). Its tiles run time "
        "innermost in the skewed space (t, t + i, 3t + i + j), where no dependence joins two "
        "iterations of that loop, so the CPU overlaps independent updates. heat-2D is "
        "memory-bound: its tiles reuse each row across time steps (inner loops vectorized).",
        "",
        "Marked vectorized, seidel-2d's t.inner becomes vector code only because polyopt "
        "tells LLVM that its iterations are independent (llvm.loop.parallel_accesses; LLVM "
        "alone keeps it scalar): its accesses move by -N - 2 elements per iteration, so every "
        "update gathers 9 vectors and scatters one, slower here than the scalar loop whose "
        "independent iterations the CPU already overlaps. heat-2D's j.inner is unit-stride: "
        "LLVM vectorizes it with or without the mark.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not quick:
        write_results("stencil", text, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
