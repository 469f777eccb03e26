"""Scale benchmark: a chain of K 2-D stencils, phase by phase, K = 50 ... 1000.

Run from the repository root::

    python benchmarks/bench_scale.py            # writes benchmarks/results/scale.{md,json}
    python benchmarks/bench_scale.py --quick    # K = 50, 100, 200 only, prints only

Each stage ``S_k`` (64 x 64, float32) is the mean of ``S_{k-1}`` at (i, j), (i-1, j)
and (i, j-1), its own value on the first row and column (an ``if_then_else``).  The
phases, timed once each on a fresh program (the kernel cache cleared):

* program: the tensor expressions, ``po.create_schedule`` and its isl schedule;
* dependences: ``po.deps``;
* checked split: ``s[out].split(j, factor=8)`` (checked against the dependences);
* lowering: ``po.lower`` (isl AST, storage, the loop function);
* LLVM: ``po.build`` minus its lowering (IR, O3, JIT).

The target (issue 13): K = 500 under 5 s end to end, growth close to linear (a factor
near 2 per doubling of K).  No peer: this measures polyopt's compile time alone.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("polyopt") is None:
    sys.path.insert(0, str(REPO))

import polyopt as po  # noqa: E402
from _env import write_results  # noqa: E402

sys.path.insert(0, str(REPO / "tests"))
from testlib.chains import stencil_chain  # noqa: E402

build_module = importlib.import_module("polyopt.build")
PHASES = ("program", "dependences", "checked split", "lowering", "LLVM")
TARGET_K, TARGET_SECONDS = 500, 5.0


def measure(stages: int) -> dict[str, float]:
    build_module._CACHE.clear()
    gc.collect()
    times = {}
    start = time.perf_counter()
    A, out = stencil_chain(stages, 64)
    s = po.create_schedule(out)
    s.program.schedule  # built when first read
    times["program"] = time.perf_counter() - start
    start = time.perf_counter()
    po.deps(s)
    times["dependences"] = time.perf_counter() - start
    start = time.perf_counter()
    s[out].split(out.op.axis[1], factor=8)
    times["checked split"] = time.perf_counter() - start
    start = time.perf_counter()
    po.lower(s, [A, out])
    times["lowering"] = time.perf_counter() - start
    start = time.perf_counter()
    po.build(s, [A, out], target="llvm")
    times["LLVM"] = max(time.perf_counter() - start - times["lowering"], 0.0)
    times["total"] = sum(times[p] for p in PHASES)
    return times


def report(rows: dict[int, dict[str, float]]) -> str:
    ks = sorted(rows)
    lines = ["# Scale: a chain of K 2-D stencils (64 x 64), compile time per phase", "",
             "Seconds, one run per K on a shared 2-core machine (`python benchmarks/"
             "bench_scale.py`); growth: the time at K divided by the time at the previous K "
             "(per doubling, except 200 -> 500: x2.5).", "",
             "| K | " + " | ".join(PHASES) + " | total | growth |",
             "|---|" + "---|" * (len(PHASES) + 2)]
    for index, k in enumerate(ks):
        row = rows[k]
        growth = "" if index == 0 else f"x{row['total'] / rows[ks[index - 1]]['total']:.2f}"
        lines.append(f"| {k} | " + " | ".join(f"{row[p]:.2f}" for p in PHASES)
                     + f" | {row['total']:.2f} | {growth} |")
    lines.append("")
    if TARGET_K in rows:
        total = rows[TARGET_K]["total"]
        verdict = "PASS" if total < TARGET_SECONDS else "FAIL"
        lines.append(f"**{verdict}**: K={TARGET_K} end to end in {total:.2f} s "
                     f"(target: under {TARGET_SECONDS:.0f} s).")
        dominant = max(PHASES, key=lambda p: rows[TARGET_K][p])
        lines.append(f"Dominant phase at K={TARGET_K}: {dominant} "
                     f"({rows[TARGET_K][dominant]:.2f} s).")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 50, 100, 200; print only")
    args = parser.parse_args()
    ks = (50, 100, 200) if args.quick else (50, 100, 200, 500, 1000)
    rows = {}
    for k in ks:
        rows[k] = measure(k)
        print(f"K={k}: " + ", ".join(f"{p} {rows[k][p]:.2f} s" for p in PHASES)
              + f", total {rows[k]['total']:.2f} s", flush=True)
    text = report(rows)
    print(text)
    if not args.quick:
        write_results("scale", text, {str(k): v for k, v in rows.items()})


if __name__ == "__main__":
    main()
