"""Legality-check benchmark: how long polyopt takes to say whether a schedule is legal.

Run from the repository root::

    python benchmarks/bench_check.py            # writes benchmarks/results/check.{md,json}
    python benchmarks/bench_check.py --quick    # fewer repetitions, prints only

For each program, with its exact dependences computed once beforehand (not timed):

* primitive: the legality check of the schedule after one primitive of the Schedule API
  (applied with ``check=False``, then ``s.check()``: every dependence against the new
  schedule, plus the parallel/vectorized loops);
* po.check: ``po.check(s, schedule=...)`` of a whole hand-written schedule given as isl
  text: parsing, the input checks, the violations and the parallel-loop report.

Programs: matmul 1024^3 (C_init, C_update); conv2d NCHW 1x64x56x56 -> 64, 3x3, pad 1 as
an ``if_then_else`` padding stage (padded, conv_init, conv_update); and a 3-statement
program, matmul 512^3 followed by ``relu(C + bias)`` (C_init, C_update, D).  Times are
medians of several runs.  The issue expects "a check on these programs takes under 50 ms".
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import polyopt as po  # noqa: E402
from _env import cpu_model, write_results  # noqa: E402

LIMIT_S = 0.050


def matmul(n=1024):
    return po.ops.matmul(po.placeholder((n, n), name="A"), po.placeholder((n, n), name="B"))


def conv2d(channels=64, size=56):
    data = po.placeholder((1, channels, size, size), name="data")
    weight = po.placeholder((channels, channels, 3, 3), name="weight")
    return po.ops.conv2d_nchw(data, weight, padding=1)


def matmul_relu(n=512):
    C = matmul(n)
    bias = po.placeholder((n,), name="bias")
    return po.compute((n, n), lambda i, j: po.maximum(C[i, j] + bias[j], 0.0), name="D")


def _reorder_matmul(s, out):
    i, j = out.op.axis
    s[out].reorder(i, out.op.reduce_axis[0], j, check=False)


def _split_conv(s, out):
    s[out].split(out.op.axis[1], factor=8, check=False)


def _split_relu(s, out):
    s[out].split(out.op.axis[0], factor=8, check=False)


CASES = [
    ("matmul 1024^3", matmul, "reorder(i, k, j)", _reorder_matmul,
     "{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }"),
    ("conv2d 1x64x56x56 -> 64, 3x3, pad 1", conv2d, "split(f, factor=8)", _split_conv,
     "{ padded[n, c, h, w] -> [0, n, c, 0, h, w, 0, 0, 0]; "
     "conv_init[n, f, y, x] -> [1, n, f, 0, y, x, 0, 0, 0]; "
     "conv_update[n, f, y, x, rc, ry, rx] -> [1, n, f, 1, rc, ry, rx, y, x] }"),
    ("matmul 512^3 + relu(C + bias) (3 statements)", matmul_relu, "split(D.i, factor=8)",
     _split_relu,
     "{ C_init[i, j] -> [i, 0, j, 0]; C_update[i, j, k] -> [i, 1, k, j]; "
     "D[i, j] -> [i, 2, j, 0] }"),
]


def timings(fn, repeat: int) -> list[float]:
    fn()  # warm up (and fail early)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def measure(repeat: int) -> list[dict]:
    rows = []
    for title, build, primitive, apply, handwritten in CASES:
        out = build()
        s = po.create_schedule(out)
        start = time.perf_counter()
        deps = s.deps
        deps_s = time.perf_counter() - start
        apply(s, out)
        primitive_times = timings(s.check, repeat)
        get_map_s = statistics.median(timings(s.program.schedule.get_map, repeat))
        fresh = po.create_schedule(build())
        fresh_deps = fresh.deps
        report = po.check(fresh, schedule=handwritten, deps=fresh_deps)
        assert report.legal, f"{title}: the hand-written schedule should be legal\n{report}"
        check_times = timings(lambda: po.check(fresh, schedule=handwritten, deps=fresh_deps),
                              repeat)
        primitive_s, check_s = statistics.median(primitive_times), statistics.median(check_times)
        rows.append({
            "program": title,
            "statements": [st.name for st in s.program.statements],
            "dependences": len(deps),
            "dependences_s": deps_s,
            "primitive": primitive,
            "primitive_check_s": primitive_s,
            "primitive_check_range_s": [min(primitive_times), max(primitive_times)],
            "get_map_s": get_map_s,
            "handwritten_schedule": handwritten,
            "parallel_loops": [f"{loop.statement}:{loop.dim}" for loop in report.parallel_loops
                               if loop.parallel],
            "po_check_s": check_s,
            "po_check_range_s": [min(check_times), max(check_times)],
            "repeat": repeat,
        })
        print(f"{title}: check after {primitive} {primitive_s * 1e3:.1f} ms; "
              f"po.check {check_s * 1e3:.1f} ms (dependences {deps_s * 1e3:.1f} ms, not "
              "included)")
    return rows


def environment() -> dict:
    cpu = cpu_model()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        commit = "unknown"
    import islpy
    return {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "cpu": cpu, "python": platform.python_version(),
            "islpy": getattr(islpy, "__version__", "unknown"), "polyopt_commit": commit}


def markdown(rows: list[dict], env: dict) -> str:
    lines = ["# Legality-check benchmark", "",
             f"- Date: {env['date']}", f"- CPU: {env['cpu']}",
             f"- Python {env['python']}, islpy {env['islpy']}, polyopt commit "
             f"{env['polyopt_commit']}",
             "- Command: `python benchmarks/bench_check.py`", "",
             "Times are medians. The dependences are computed once beforehand (their time is "
             "shown, not included). *Primitive* = `s.check()` after the primitive was applied "
             "with `check=False`; *po.check* = `po.check(s, schedule=<isl text>)` of the "
             "hand-written schedule below, including parsing and the parallel-loop report.", "",
             "| program | dependences (computed in) | primitive | check after primitive "
             "(min-max) | po.check of hand-written schedule (min-max) | reps |",
             "|---|---:|---|---:|---:|---:|"]

    def ms(r, key):
        low, high = r[key + "_range_s"]
        return f"{r[key + '_s'] * 1e3:.1f} ms ({low * 1e3:.1f}-{high * 1e3:.1f})"

    for r in rows:
        lines.append(f"| {r['program']} | {r['dependences']} ({r['dependences_s'] * 1e3:.1f} ms)"
                     f" | `{r['primitive']}` | {ms(r, 'primitive_check')} | "
                     f"{ms(r, 'po_check')} | {r['repeat']} |")
    lines += ["", "## Expectations", "", "| expectation | measured | result |", "|---|---|---|"]
    for r in rows:
        for what, key in (("check after a primitive", "primitive_check_s"),
                          ("po.check of a hand-written schedule", "po_check_s")):
            ok = r[key] < LIMIT_S
            lines.append(f"| {r['program']}: {what} under 50 ms | {r[key] * 1e3:.1f} ms | "
                         f"{'PASS' if ok else 'FAIL'} |")
    lines += ["", "## Notes", "",
              "- `Program.schedule_of` flattens each schedule once (`isl.Schedule.get_map()`, "
              "cached per schedule object); the rest of a check is one isl emptiness test "
              "per dependence:"]
    for r in rows:
        lines.append(f"  - {r['program']}: flattening the schedule after the primitive takes "
                     f"{r['get_map_s'] * 1e3:.2f} ms of the "
                     f"{r['primitive_check_s'] * 1e3:.1f} ms check")
    lines += ["", "## Hand-written schedules", ""]
    for r in rows:
        lines += [f"- {r['program']}: `{r['handwritten_schedule']}`; parallel loops "
                  f"(statement:dimension): {', '.join(r['parallel_loops']) or 'none'}"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions, print only")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rows = measure(3 if args.quick else args.repeat)
    if args.quick:
        return 0
    env = environment()
    text = markdown(rows, env)
    write_results("check", text, {"environment": env, "rows": rows, "limit_s": LIMIT_S})
    print(text)
    return 0 if all(r["primitive_check_s"] < LIMIT_S and r["po_check_s"] < LIMIT_S
                    for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
