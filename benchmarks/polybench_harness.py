"""A PolyBench/C 4.2.1 checkout measured with its own harness, as its users build it.

``bench_polybench.py --polybench DIR`` uses this when ``DIR/utilities`` holds PolyBench's
``polybench.h`` and ``polybench.c`` (else it reads the kernels with a stand-in for
``polybench.h``, see ``polybench_checkout.py``).  For each ``<kernel>.c`` (with its
``<kernel>.h`` beside it):

* ``polyopt opt -I DIR/utilities <kernel>.c -D <dataset> --emit c -o <kernel>.opt.c`` runs
  as a command (its wall and CPU seconds are recorded: the target is 2 s);
* gcc -O3 -march=native -fopenmp builds the original and the emitted C with
  ``utilities/polybench.c`` and ``-DPOLYBENCH_TIME``; they run interleaved (the original,
  the emitted C with ``OMP_NUM_THREADS=1``, then 2), and PolyBench's timer gives the
  kernel's seconds;
* the same two files built with ``-DPOLYBENCH_DUMP_ARRAYS`` on a small dataset dump their
  arrays, which must agree (PolyBench prints ``%0.2lf``: within 1e-2).

A kernel that ``polyopt opt`` refuses or gcc cannot build is reported with the reason;
the run goes on.

>>> harness_dir("/nonexistent") is None
True
>>> dumps_agree("begin dump: A 1.00 2.50", "begin dump: A 1.00 2.51")
(True, '')
"""

from __future__ import annotations

import math
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from testlib.polybench_shaped import dumps_agree as same_dumps  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
GCC = ("gcc", "-O3", "-march=native", "-fopenmp")
BUILD_SECONDS, RUN_SECONDS = 300, 3600


class Refused(Exception):
    """A kernel that could not be optimized, built or run (the message says why)."""


def harness_dir(root) -> pathlib.Path | None:
    """``root/utilities`` when it holds PolyBench's ``polybench.h`` and ``polybench.c``."""
    utilities = pathlib.Path(root) / "utilities"
    if (utilities / "polybench.h").is_file() and (utilities / "polybench.c").is_file():
        return utilities
    return None


def kernels(root) -> list[tuple[str, pathlib.Path]]:
    """``(name, <name>.c)`` of each kernel under ``root``: a ``.c`` file with its ``.h``
    beside it, outside ``utilities``, sorted by name."""
    found = [(p.stem, p) for p in pathlib.Path(root).rglob("*.c")
             if p.with_suffix(".h").is_file() and p.parent.name != "utilities"]
    return sorted(found)


def optimize(utilities: pathlib.Path, source: pathlib.Path, dataset: str,
             out: pathlib.Path) -> tuple[float, float]:
    """Run ``polyopt opt`` on ``source`` (this repository's polyopt); its ``(wall, CPU)``
    seconds, the CPU of the command and of the processes it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "polyopt", "opt", "-I", str(utilities),
                           str(source), "-D", dataset, "--emit", "c", "-o", str(out)],
                          capture_output=True, text=True, timeout=RUN_SECONDS,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise Refused(f"polyopt opt: {' '.join(done.stderr.split())[:600]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build(utilities: pathlib.Path, source: pathlib.Path, headers: pathlib.Path,
          dataset: str, exe: pathlib.Path, *, dump: bool = False) -> pathlib.Path:
    """``source`` built with the harness (gcc -O3 -march=native -fopenmp)."""
    flags = ["-I", str(utilities), "-I", str(headers), f"-D{dataset}",
             "-DPOLYBENCH_DUMP_ARRAYS" if dump else "-DPOLYBENCH_TIME"]
    done = subprocess.run([*GCC, *flags, str(utilities / "polybench.c"), str(source),
                           "-o", str(exe), "-lm"], capture_output=True, text=True,
                          timeout=BUILD_SECONDS)
    if done.returncode != 0:
        raise Refused(f"gcc cannot build {source.name}: {' '.join(done.stderr.split())[:600]}")
    return exe


def seconds(exe: pathlib.Path, threads: int) -> float:
    """One run of a ``-DPOLYBENCH_TIME`` build: the kernel's seconds, as PolyBench's
    timer prints them (the last line of its output)."""
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_SECONDS,
                          env={**os.environ, "OMP_NUM_THREADS": str(threads)})
    lines = done.stdout.split()
    if done.returncode != 0 or not lines:
        raise Refused(f"{exe.name} failed (status {done.returncode}): {done.stderr[:300]}")
    return float(lines[-1])


def dump(exe: pathlib.Path) -> str:
    """The arrays a ``-DPOLYBENCH_DUMP_ARRAYS`` build prints (on stderr)."""
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_SECONDS,
                          env={**os.environ, "OMP_NUM_THREADS": "2"})
    if done.returncode != 0:
        raise Refused(f"{exe.name} failed (status {done.returncode}): {done.stderr[:300]}")
    return done.stderr


def dumps_agree(expected: str, actual: str, rtol: float = 1e-2,
                atol: float = 1e-2) -> tuple[bool, str]:
    """Whether two dumps have the same words, numbers within ``rtol``/``atol`` (the
    tests' comparison of dumps, at the precision PolyBench prints, ``%0.2lf``);
    ``(ok, the first difference)``."""
    return same_dumps(expected, actual, rtol=rtol, atol=atol)


def run_kernel(utilities: pathlib.Path, name: str, source: pathlib.Path, dataset: str,
               check_dataset: str, rounds: int, work: pathlib.Path) -> dict:
    """Optimize, check and time one kernel (see the module doc); raises :class:`Refused`."""
    emitted = work / f"{name}.opt.c"
    opt_wall, opt_cpu = optimize(utilities, source, dataset, emitted)
    headers = source.parent
    same, where = dumps_agree(
        dump(build(utilities, source, headers, check_dataset, work / f"{name}.ref.dump",
                   dump=True)),
        dump(build(utilities, emitted, headers, check_dataset, work / f"{name}.opt.dump",
                   dump=True)))
    original = build(utilities, source, headers, dataset, work / f"{name}.ref")
    optimized = build(utilities, emitted, headers, dataset, work / f"{name}.opt")
    runs = {"original": (original, 1), "emitted 1 thread": (optimized, 1),
            "emitted 2 threads": (optimized, 2)}
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(rounds):
        for label, (exe, threads) in runs.items():
            times[label].append(seconds(exe, threads))
    medians = {label: statistics.median(t) for label, t in times.items()}
    return {"kernel": name, "dataset": dataset, "check_dataset": check_dataset,
            "opt_wall": opt_wall, "opt_cpu": opt_cpu, "same": same, "difference": where,
            "medians": medians, "rounds": rounds}


def speedups(row: dict) -> tuple[float, float]:
    m = row["medians"]
    return (m["original"] / max(m["emitted 1 thread"], 1e-9),
            m["original"] / max(m["emitted 2 threads"], 1e-9))


def geomean(values: list[float]) -> float:
    return math.exp(statistics.mean(math.log(v) for v in values)) if values else math.nan


def report(rows: list[dict], refused: list[dict], root, dataset: str, rounds: int,
           load: tuple[float, float]) -> tuple[str, dict]:
    """The results file's text (a table per kernel, then the targets) and its data."""
    lines = ["# PolyBench/C 4.2.1 as distributed: `polyopt opt` vs the original, both "
             "gcc -O3 -march=native", "",
             f"Checkout: {root} (its own utilities/polybench.h and polybench.c). Dataset "
             f"{dataset}; medians of {rounds} interleaved runs timed by PolyBench's "
             f"timer (-DPOLYBENCH_TIME); arrays checked on {rows[0]['check_dataset'] if rows else '-'} "
             f"(-DPOLYBENCH_DUMP_ARRAYS, within 1e-2: PolyBench prints %0.2lf). "
             f"1-minute load average {load[0]:.1f} before, {load[1]:.1f} after.", "",
             "| kernel | original s | emitted 1T s | speedup 1T | emitted 2T s | speedup 2T | "
             "polyopt opt s (CPU) | same arrays |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        m, (s1, s2) = r["medians"], speedups(r)
        lines.append(f"| {r['kernel']} | {m['original']:.4g} | {m['emitted 1 thread']:.4g} | "
                     f"{s1:.2f}x | {m['emitted 2 threads']:.4g} | {s2:.2f}x | "
                     f"{r['opt_wall']:.2f} ({r['opt_cpu']:.2f}) | "
                     f"{'yes' if r['same'] else 'NO: ' + r['difference']} |")
    one = [speedups(r)[0] for r in rows]
    two = [speedups(r)[1] for r in rows]
    slowest_opt = max((r["opt_wall"] for r in rows), default=0.0)
    slowest_cpu = max((r["opt_cpu"] for r in rows), default=0.0)
    checks = [
        ("every kernel optimized and checked (none refused)",
         f"{len(refused)} refused" if refused else f"all {len(rows)}", not refused),
        ("geomean speedup on 1 thread >= 4x", f"{geomean(one):.2f}x", geomean(one) >= 4),
        ("no kernel below 1.0x (1 thread)", f"lowest {min(one, default=math.nan):.2f}x",
         bool(one) and min(one) >= 1.0),
        ("geomean speedup on 2 threads >= 6x", f"{geomean(two):.2f}x", geomean(two) >= 6),
        ("polyopt opt within 2 s per kernel", f"largest {slowest_opt:.2f} s "
         f"({slowest_cpu:.2f} s of CPU)", slowest_opt <= 2),
        ("same arrays as the original", "all" if all(r["same"] for r in rows) else "NOT all",
         all(r["same"] for r in rows)),
    ]
    lines += ["", "| target | measured | result |", "|---|---|---|"]
    lines += [f"| {what} | {measured} | {'PASS' if ok else 'FAIL'} |"
              for what, measured, ok in checks]
    if refused:
        lines += ["", "| refused kernel | reason |", "|---|---|"]
        lines += [f"| {r['kernel']} | {r['reason'][:300]} |" for r in refused]
    data = {"kernels": rows, "refused": refused,
            "targets": [{"target": w, "measured": m, "pass": ok} for w, m, ok in checks]}
    return "\n".join(lines) + "\n", data
