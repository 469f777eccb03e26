"""PolyBench/C-style kernels: polyopt's automatic schedule vs gcc -O3 on the loop nest.

Run: ``python benchmarks/bench_polybench.py`` (``--only gemm,lu`` for some kernels,
``--quick`` for small sizes, printed only; ``--rounds N``; ``--polybench DIR`` for a
PolyBench/C 4.2.1 checkout instead of our kernels: with its own ``utilities/polybench.h``
and ``polybench.c``, the emitted C of ``polyopt opt`` against the original, both built
with that harness (``polybench_harness.py``; ``--dataset``, default LARGE_DATASET;
``--quick``: MINI_DATASET, printed only), else its kernels read with a stand-in for
``polybench.h`` (``polybench_checkout.py``, said when it happens);
``--baseline stencil_tiling=skewed`` also runs, interleaved, the automatic schedule with
those options: a before/after in one run, printed; ``--compile-only``: only the
seconds of ``auto_schedule`` and of the 1-thread build, wall and CPU, per kernel, printed
with the compile target's PASS/FAIL: quick, and the CPU seconds hold on a loaded machine).
Writes ``benchmarks/results/polybench.md`` and ``polybench.json``.

The kernels (``benchmarks/polybench/*.c``) are written for polyopt from the published
PolyBench/C 4.2.1 algorithms, in its style (``#pragma scop``, sizes as macros with the
LARGE dataset's values, double).  For each kernel, in one process:

* ``po.from_c`` reads the C, ``po.auto_schedule`` schedules it (timed), ``po.build``
  compiles it with LLVM for 1 and 2 threads (timed);
* gcc -O3 -march=native compiles the original C (no OpenMP: the loop nest as written);
* the variants run interleaved (one run of each per round, inputs restored before
  every run, outside the timer); the medians are compared;
* every variant's arrays are compared with gcc's after a run from the same inputs.

Also: ``po.auto_schedule`` on the tensor-expression matmul (1024, float32) and a
ResNet-18 3x3 conv2d layer against the hand templates (``po.templates``).
Targets (issue 17): geomean speedup over gcc >= 4x on one thread, no kernel below
0.9x, auto_schedule < 1 s and compile < 1 s per kernel, templates' speed >= 0.7x.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import pathlib
import platform
import re
import statistics
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads must not spin
import numpy as np  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

import polyopt as po  # noqa: E402
from _env import write_results  # noqa: E402
from polybench_checkout import kernels_of, size_macros  # noqa: E402
import polybench_harness as harness  # noqa: E402
from polyopt.frontend.c_native import (NativeFunction, arguments, call_polyopt,  # noqa: E402
                                       compile_c)

KERNELS = REPO / "benchmarks" / "polybench"
GCC_FLAGS = ("-O3", "-march=native")
SHORT_SECONDS, SHORT_ROUNDS = 0.5, 101  # a kernel under 0.5 s / rounds: up to 101 rounds


def kernel_sources(checkout: str | None) -> list[tuple[str, str, str | None, dict]]:
    """``(name, C text, function, sizes)`` of our kernels or of a PolyBench checkout's."""
    if checkout is None:
        return [(p.stem, p.read_text(), None, macros(p.read_text()))
                for p in sorted(KERNELS.glob("*.c"))]
    found = kernels_of(checkout)
    if not found:
        raise SystemExit(f"no PolyBench kernel (a .c file with a kernel_ function and its .h "
                         f"beside it) under {checkout}")
    return [(k.name, k.text, k.function, size_macros(k.text)) for k in found]


def macros(text: str) -> dict[str, int]:
    """The ``# define NAME value`` sizes of a kernel file."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^#\s*define\s+(\w+)\s+(\d+)\s*$", text, re.MULTILINE)}


def sizes_for(kernel, table: dict[str, int]) -> dict[str, int]:
    """PolyBench's convention: the parameter ``ni`` takes the macro ``NI``."""
    return {p.name: table[p.name.upper()] for p in kernel.c_params if p.kind == "size"}


def inputs(name: str, kernel, sizes: dict) -> dict:
    """Random inputs; the factorizations and solvers get well-conditioned matrices."""
    values = arguments(kernel, sizes, seed=7)
    if name in ("lu", "ludcmp", "cholesky"):
        a = values["A"]
        n = a.shape[0]
        if name == "cholesky":
            b = np.random.default_rng(1).uniform(0, 1, (n, n)) / n
            a[...] = b @ b.T + np.eye(n)
        else:
            a += n * np.eye(n)
    if name == "trisolv":
        values["L"][...] = np.tril(values["L"]) / values["L"].shape[0] + np.eye(
            values["L"].shape[0])
    if name == "gramschmidt":
        # with fewer rows than columns the columns past the rank have norm 0 in exact
        # arithmetic and rounding noise otherwise (then any rounding difference is
        # amplified without bound): make them exactly 0 (their Q and R are then NaN, the
        # same NaN for every variant) so that the comparison is meaningful
        a = values["A"]
        a[:, min(a.shape):] = 0.0
    if name == "durbin":  # the autocorrelation of a stable AR(1) process
        values["r"][...] = 0.5 ** np.arange(1, values["r"].shape[0] + 1)
    if name == "nussinov":  # bases 0..3 (pairs sum to 3), an empty table
        values["seq"][...] = np.random.default_rng(2).integers(0, 4, values["seq"].shape)
        values["table"][...] = 0
    if "alpha" in values and name == "deriche":
        values["alpha"][...] = 0.25
    if "float_n" in values:
        values["float_n"][...] = float(sizes.get("n", 1))
    return values


def arrays_of(kernel) -> list[str]:
    return [p.name for p in kernel.c_params if p.kind != "size"]


def run_kernel(name: str, text: str, function: str | None, table: dict, defines: dict,
               rounds: int, baseline: dict | None = None) -> dict:
    """Schedule, build, run and check one kernel (C ``text``; ``table``: its sizes)."""
    kernel = po.from_c(text, function, defines=defines or None)
    sizes = sizes_for(kernel, table)
    start, cpu = time.perf_counter(), time.process_time()
    schedule = po.auto_schedule(kernel)
    auto_seconds = time.perf_counter() - start
    auto_cpu = time.process_time() - cpu
    built, compile_seconds, compile_cpu = {}, {}, {}
    for threads in (1, 2):
        start, cpu = time.perf_counter(), time.process_time()
        built[threads] = po.build(schedule, num_threads=threads)
        compile_seconds[threads] = time.perf_counter() - start
        compile_cpu[threads] = time.process_time() - cpu
    source = "".join(f"#define {k} {v}\n" for k, v in defines.items()) + text
    gcc = NativeFunction(compile_c(source, GCC_FLAGS), kernel.name, kernel.c_params)
    fresh = inputs(name, kernel, sizes)
    names = arrays_of(kernel)
    variants = {"gcc": gcc,
                "polyopt 1 thread": lambda v: call_polyopt(kernel, built[1], v),
                "polyopt 2 threads": lambda v: call_polyopt(kernel, built[2], v)}
    if baseline is not None:  # the same kernel auto-scheduled with other options
        before = po.auto_schedule(kernel, **baseline)
        for threads in (1, 2):
            variants[f"baseline {threads}T"] = (lambda f: lambda v: call_polyopt(
                kernel, f, v))(po.build(before, num_threads=threads))
    work = {label: {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in fresh.items()}
            for label in variants}
    results, times = {}, {label: [] for label in variants}
    round_ = 0
    while round_ < rounds:
        for label, call in variants.items():
            values = work[label]
            for k in names:
                np.copyto(values[k], fresh[k])
            start = time.perf_counter()
            call(values)
            times[label].append(time.perf_counter() - start)
            if round_ == 0:
                results[label] = {k: values[k].copy() for k in names}
        if round_ == 0:  # short kernels: more rounds (a loaded machine preempts some)
            rounds = max(rounds, min(SHORT_ROUNDS, int(SHORT_SECONDS / max(
                max(t[0] for t in times.values()), 1e-6))))
        round_ += 1
    same = {label: all(np.allclose(results[label][k], results["gcc"][k], rtol=1e-8,
                                   atol=1e-8, equal_nan=True) for k in names)
            for label in variants}
    medians = {label: statistics.median(t) for label, t in times.items()}
    return {"kernel": name, "sizes": sizes, "rounds": rounds, "auto_seconds": auto_seconds,
            "compile_seconds": compile_seconds, "auto_cpu": auto_cpu,
            "compile_cpu": compile_cpu, "medians": medians, "same": same,
            "fell_back": schedule.auto_report.fell_back,
            "report": str(schedule.auto_report), "script": schedule.script()}


def compile_times(sources) -> int:
    """``--compile-only``: schedule and build each kernel (1 thread), print the seconds."""
    worst = 0.0
    for name, text, function, _ in sources:
        try:
            kernel = po.from_c(text, function)
            start, cpu = time.perf_counter(), time.process_time()
            schedule = po.auto_schedule(kernel)
            auto = (time.perf_counter() - start, time.process_time() - cpu)
            start, cpu = time.perf_counter(), time.process_time()
            po.build(schedule, num_threads=1)
        except po.PolyoptError as err:  # reported, the others go on
            print(f"{name:16s} REFUSED ({type(err).__name__}): {' '.join(str(err).split())}",
                  flush=True)
            continue
        built = (time.perf_counter() - start, time.process_time() - cpu)
        worst = max(worst, built[1])
        print(f"{name:16s} auto_schedule {auto[0]:.2f}s (CPU {auto[1]:.2f}s)  compile "
              f"{built[0]:.2f}s (CPU {built[1]:.2f}s)", flush=True)
    print(f"compile < 1 s per kernel: largest {worst:.2f} s of CPU: "
          f"{'PASS' if worst < 1 else 'FAIL'} (load {os.getloadavg()[0]:.1f})")
    return 0


def tensor_expressions(rounds: int, quick: bool) -> list[dict]:
    """Auto-scheduled matmul and conv2d against the hand templates, one thread."""
    rows = []
    n = 256 if quick else 1024
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    rows.append(_te_row(f"matmul {n}", C, [A, B, C], [a, b, np.empty((n, n), np.float32)],
                        lambda s: po.templates.matmul_template(s, C), rounds, a @ b))
    size = 28 if quick else 56
    data = po.placeholder((1, 64, size, size), name="data")
    weight = po.placeholder((64, 64, 3, 3), name="weight")
    out = po.ops.conv2d_nchw(data, weight, padding=1)
    d = rng.standard_normal((1, 64, size, size), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
    padded = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    expected = np.einsum("nchwyx,fcyx->nfhw", windows, w, optimize=True)
    rows.append(_te_row(f"conv2d 64x{size}x{size} 3x3", out, [data, weight, out],
                        [d, w, np.empty((1, 64, size, size), np.float32)],
                        lambda s: po.templates.conv2d_template(s, out), rounds, expected))
    return rows


def _te_row(title, output, tensors, arrays, template, rounds, expected) -> dict:
    start = time.perf_counter()
    auto = po.auto_schedule(po.create_schedule(output))
    auto_seconds = time.perf_counter() - start
    hand = po.create_schedule(output)
    template(hand)
    funcs = {"auto": po.build(auto, tensors, num_threads=1),
             "template": po.build(hand, tensors, num_threads=1)}
    times = {k: [] for k in funcs}
    same = {}
    for _ in range(max(rounds, 3)):
        for label, f in funcs.items():
            start = time.perf_counter()
            f(*arrays)
            times[label].append(time.perf_counter() - start)
            same[label] = bool(np.allclose(arrays[-1], expected, rtol=1e-3, atol=1e-3))
    medians = {k: statistics.median(v) for k, v in times.items()}
    return {"title": title, "auto_seconds": auto_seconds, "medians": medians, "same": same,
            "ratio": medians["template"] / medians["auto"], "script": auto.script()}


def report(rows: list[dict], te_rows: list[dict], rounds: int, load,
           origin: str = "benchmarks/polybench (written for polyopt)",
           baseline: str | None = None, refused=()) -> tuple[str, dict]:
    lines = ["# PolyBench-style kernels: automatic schedule vs gcc -O3 -march=native", "",
             f"Kernels: {origin}.", "",
             f"{datetime.date.today()} · {platform.machine()} · {os.cpu_count()} CPUs · "
             f"medians of {rounds} interleaved runs (short kernels: up to "
             f"{SHORT_ROUNDS}, {SHORT_SECONDS} s a variant) · double · LARGE sizes unless noted · "
             f"1-minute load average {load[0]:.1f} before, {load[1]:.1f} after (a shared "
             "machine; the seconds of CPU this process used, in parentheses, are what an "
             "idle machine would show)", "",
             "| kernel | gcc s | polyopt 1 thread s | speedup 1T | polyopt 2 threads s | "
             "speedup 2T | auto_schedule s (CPU) | compile s (CPU) | same numbers | "
             "schedule |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        m = r["medians"]
        s1, s2 = m["gcc"] / m["polyopt 1 thread"], m["gcc"] / m["polyopt 2 threads"]
        ok = "yes" if all(r["same"].values()) else "NO"
        kind = "default (fell back)" if r["fell_back"] else "automatic"
        lines.append(f"| {r['kernel']} | {m['gcc']:.3f} | {m['polyopt 1 thread']:.3f} | "
                     f"{s1:.2f}x | {m['polyopt 2 threads']:.3f} | {s2:.2f}x | "
                     f"{r['auto_seconds']:.2f} ({r['auto_cpu']:.2f}) | "
                     f"{r['compile_seconds'][1]:.2f} ({r['compile_cpu'][1]:.2f}) | {ok} | "
                     f"{kind} |")
    speed1 = [r["medians"]["gcc"] / r["medians"]["polyopt 1 thread"] for r in rows]
    speed2 = [r["medians"]["gcc"] / r["medians"]["polyopt 2 threads"] for r in rows]
    geo1 = math.exp(statistics.mean(math.log(x) for x in speed1)) if rows else float("nan")
    geo2 = math.exp(statistics.mean(math.log(x) for x in speed2)) if rows else float("nan")
    worst = min(speed1, default=float("nan"))
    auto_max = max((r["auto_seconds"] for r in rows), default=0.0)
    compile_max = max((r["compile_seconds"][1] for r in rows), default=0.0)
    auto_cpu = max((r["auto_cpu"] for r in rows), default=0.0)
    compile_cpu = max((r["compile_cpu"][1] for r in rows), default=0.0)
    all_same = all(all(r["same"].values()) for r in rows)
    checks = [
        ("every kernel optimized (none refused)", f"{len(refused)} refused" if refused
         else "all", not refused),
        ("geomean speedup over gcc on 1 thread >= 4x", f"{geo1:.2f}x", geo1 >= 4),
        ("no kernel below 0.9x gcc (1 thread)", f"lowest {worst:.2f}x", worst >= 0.9),
        ("auto_schedule < 1 s per kernel", f"largest {auto_max:.2f} s ({auto_cpu:.2f} s "
         "of CPU)", auto_max < 1),
        ("compile < 1 s per kernel", f"largest {compile_max:.2f} s ({compile_cpu:.2f} s of "
         "CPU)", compile_max < 1),
        ("results match gcc's", "all" if all_same else "NOT all", all_same),
    ]
    lines += ["", f"Geomean speedup over gcc: {geo1:.2f}x on 1 thread, {geo2:.2f}x on 2 "
              f"threads ({len(rows)} kernels).", ""]
    if baseline:
        lines += [f"Side by side in the same run: the automatic schedule with `{baseline}` "
                  "(baseline) against the default one (above).", "",
                  "| kernel | default 1T | baseline 1T | default 2T | baseline 2T | "
                  "same numbers |", "|---|---:|---:|---:|---:|---|"]
        for r in rows:
            m = r["medians"]
            lines.append(f"| {r['kernel']} | {m['gcc'] / m['polyopt 1 thread']:.2f}x | "
                         f"{m['gcc'] / m['baseline 1T']:.2f}x | "
                         f"{m['gcc'] / m['polyopt 2 threads']:.2f}x | "
                         f"{m['gcc'] / m['baseline 2T']:.2f}x | "
                         f"{'yes' if r['same']['baseline 1T'] and r['same']['baseline 2T'] else 'NO'} |")
        lines.append("")
    if te_rows:
        lines += ["| tensor expression | auto s | template s | auto / template speed | "
                  "auto_schedule s | same numbers |", "|---|---:|---:|---:|---:|---|"]
        for t in te_rows:
            lines.append(f"| {t['title']} | {t['medians']['auto']:.4f} | "
                         f"{t['medians']['template']:.4f} | {t['ratio']:.2f}x | "
                         f"{t['auto_seconds']:.2f} | "
                         f"{'yes' if all(t['same'].values()) else 'NO'} |")
            checks.append((f"{t['title']}: auto-scheduled >= 0.7x the template",
                           f"{t['ratio']:.2f}x", t["ratio"] >= 0.7))
        lines.append("")
    lines += ["| target | measured | result |", "|---|---|---|"]
    lines += [f"| {what} | {measured} | {'PASS' if ok else 'FAIL'} |"
              for what, measured, ok in checks]
    if refused:
        lines += ["", "Refused kernels (not in the geomean):", "",
                  "| kernel | error | reason |", "|---|---|---|"]
        lines += [f"| {r['kernel']} | {r['error']} | {r['reason'][:300]} |" for r in refused]
    lines += ["", "## What the automatic scheduler chose", ""]
    for r in rows:
        lines += [f"### {r['kernel']}", "", "```", r["report"], "", r["script"] or
                  "(source order)", "```", ""]
    for t in te_rows:
        lines += [f"### {t['title']} (tensor expression)", "", "```", t["script"], "```", ""]
    data = {"kernels": rows, "refused": list(refused), "tensor_expressions": te_rows,
            "targets": [{"target": w, "measured": m, "pass": ok} for w, m, ok in checks]}
    return "\n".join(lines) + "\n", data


def _options(text: str | None) -> dict | None:
    """``"stencil_tiling=skewed,tile=False"`` -> keyword arguments of auto_schedule."""
    if not text:
        return None
    options = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        options[key.strip()] = {"True": True, "False": False, "None": None}.get(
            value, int(value) if value.isdigit() else value)
    return options


def checkout_with_harness(args, utilities: pathlib.Path) -> int:
    """``--polybench DIR`` with PolyBench's own harness in ``DIR/utilities``: each
    kernel's emitted C against the original, built and timed as PolyBench users do."""
    import tempfile

    dataset = "MINI_DATASET" if args.quick else args.dataset
    found = harness.kernels(args.polybench)
    if args.only:
        wanted = set(args.only.split(","))
        found = [k for k in found if k[0] in wanted]
    print(f"{args.polybench}: PolyBench's own {utilities / 'polybench.h'} and polybench.c; "
          f"{len(found)} kernels, {dataset}", flush=True)
    load_before = os.getloadavg()[0]
    rows, refused = [], []
    with tempfile.TemporaryDirectory(prefix="polyopt-polybench-") as work:
        for name, source in found:
            try:
                row = harness.run_kernel(utilities, name, source, dataset,
                                         args.check_dataset, args.rounds, pathlib.Path(work))
            except (harness.Refused, OSError, ValueError) as err:  # reported, run goes on
                reason = " ".join(str(err).split())
                print(f"{name:16s} REFUSED: {reason}", flush=True)
                refused.append({"kernel": name, "reason": reason})
                continue
            m, (s1, s2) = row["medians"], harness.speedups(row)
            print(f"{name:16s} original {m['original']:.4g}s  emitted {m['emitted 1 thread']:.4g}s "
                  f"({s1:.2f}x) 2T {m['emitted 2 threads']:.4g}s ({s2:.2f}x)  polyopt opt "
                  f"{row['opt_wall']:.2f}s (CPU {row['opt_cpu']:.2f}s)  same arrays "
                  f"{row['same']}", flush=True)
            rows.append(row)
    text, data = harness.report(rows, refused, args.polybench, dataset, args.rounds,
                                (load_before, os.getloadavg()[0]))
    print(text)
    if not args.quick and (args.write or not args.only):
        write_results(args.results or "polybench_distribution", text, data)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated kernel names")
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-te", action="store_true", help="skip matmul/conv2d")
    parser.add_argument("--polybench", metavar="DIR",
                        help="a PolyBench/C 4.2.1 checkout: its kernels instead of ours")
    parser.add_argument("--baseline", metavar="KEY=VALUE,...",
                        help="also run auto_schedule with these options (printed)")
    parser.add_argument("--results", metavar="NAME",
                        help="write results/NAME.md (and .json) instead of polybench.md")
    parser.add_argument("--compile-only", action="store_true",
                        help="only the auto_schedule and compile seconds, printed")
    parser.add_argument("--write", action="store_true",
                        help="write results/polybench.md even with --only")
    parser.add_argument("--dataset", default="LARGE_DATASET",
                        help="with --polybench and its own harness: the dataset timed")
    parser.add_argument("--check-dataset", default="MINI_DATASET",
                        help="with --polybench and its own harness: the dataset whose "
                             "dumped arrays are compared")
    args = parser.parse_args()
    if args.polybench:
        utilities = harness.harness_dir(args.polybench)
        if utilities is not None and not args.compile_only:
            return checkout_with_harness(args, utilities)
        why = ("no utilities/polybench.h and polybench.c" if utilities is None else
               "--compile-only")
        print(f"{args.polybench}: {why}: its kernels are read with a stand-in for "
              "polybench.h (polybench_checkout.PRELUDE)", flush=True)
    sources = kernel_sources(args.polybench)
    if args.only:
        wanted = set(args.only.split(","))
        sources = [k for k in sources if k[0] in wanted]
    if args.compile_only:
        return compile_times(sources)
    load_before = os.getloadavg()[0]
    rows, refused = [], []
    for name, text, function, table in sources:
        defines = {}
        if args.quick:
            defines = {k: max(v // 8, 8) for k, v in table.items()}
            for key in ("TSTEPS", "TMAX"):
                if key in defines:
                    defines[key] = 10
        try:
            row = run_kernel(name, text, function, {**table, **defines}, defines,
                             args.rounds, _options(args.baseline))
        except po.PolyoptError as err:  # one refused kernel: reported, the run goes on
            reason = " ".join(str(err).split())
            print(f"{name:16s} REFUSED ({type(err).__name__}): {reason}", flush=True)
            refused.append({"kernel": name, "error": type(err).__name__, "reason": reason})
            continue
        m = row["medians"]
        if args.baseline:
            print(f"{name:16s} baseline ({args.baseline}): "
                  f"{m['gcc'] / m['baseline 1T']:.2f}x 1T, {m['gcc'] / m['baseline 2T']:.2f}x 2T "
                  f"(same numbers: {row['same']['baseline 1T'] and row['same']['baseline 2T']})")
        print(f"{row['kernel']:16s} gcc {m['gcc']:.3f}s  ours {m['polyopt 1 thread']:.3f}s "
              f"({m['gcc'] / m['polyopt 1 thread']:.2f}x) 2T {m['polyopt 2 threads']:.3f}s "
              f"({m['gcc'] / m['polyopt 2 threads']:.2f}x) auto {row['auto_seconds']:.2f}s "
              f"compile {row['compile_seconds'][1]:.2f}s (CPU {row['compile_cpu'][1]:.2f}s) "
              f"same {all(row['same'].values())}",
              flush=True)
        rows.append(row)
    te_rows = [] if args.no_te else tensor_expressions(args.rounds, args.quick)
    for t in te_rows:
        print(f"{t['title']}: auto {t['medians']['auto']:.4f}s template "
              f"{t['medians']['template']:.4f}s ({t['ratio']:.2f}x)", flush=True)
    origin = (f"the PolyBench/C checkout {args.polybench}" if args.polybench else
              "benchmarks/polybench (written for polyopt)")
    text, data = report(rows, te_rows, args.rounds, (load_before, os.getloadavg()[0]), origin,
                        args.baseline, refused)
    print(text)
    if args.results and not args.quick:
        write_results(args.results, text, data)
    elif not args.quick and (args.write or not args.only):
        write_results("polybench_checkout" if args.polybench else "polybench", text, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
