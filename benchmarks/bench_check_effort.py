"""How much of isl's effort the heaviest accepted checks take, against the default bound.

Run from the repository root::

    python benchmarks/bench_check_effort.py

For each case (the slowest generated cases of the property run, and the checked split of
a long stencil chain) it finds, by bisection on ``po.check_effort.operations``, the
smallest bound under which the step is still accepted: each try runs in a fresh process
(no memoized result helps a later try).  Writes ``benchmarks/results/check_effort.md``
and prints PASS when every case needs at most a tenth of the default bound (the margin
that ``polyopt.deps.effort`` promises), else FAIL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO))

from _env import write_results  # noqa: E402
from polyopt.deps.effort import DEFAULT_OPERATIONS  # noqa: E402

MARGIN = 10

TE_102230 = """
n, m = po.var("n"), po.var("m")
A = po.placeholder((n, m), name="A")
k = po.reduce_axis((0, n), name="k")
C = po.compute((n, m), lambda i, j: po.sum(po.if_then_else(k <= i, A[k, j] * -1.0, 0.0),
                                           axis=k), name="C0")
s = po.create_schedule(C)
s[C].split("i", nparts=4); s[C].shift("i.inner", 3); s[C].split("k", nparts=5)
"""
TE_102398 = """
n, m = po.var("n"), po.var("m")
B = po.placeholder((n, m), name="B", dtype="int32")
r0 = po.reduce_axis((0, 1), name="r0")
C0 = po.compute((n, m), lambda i, j: po.sum(po.if_then_else(
    (i >= 0) & (i < n) & (j + r0 >= 0) & (j + r0 < m), B[i, j + r0], 0), axis=r0), name="C0")
r2 = po.reduce_axis((0, 2), name="r2")
C2 = po.compute((n, m), lambda i, j: po.sum(po.if_then_else(
    (i + -1 + r2 >= 0) & (i + -1 + r2 < n) & (j >= 0) & (j < m), B[i + -1 + r2, j], 0) * -1,
    axis=r2), name="C2")
s = po.create_schedule([C0, C2])
s["C2"].split("i", nparts=5); s["C2"].wavefront("i.inner", "j", "r2"); s["C0"].shift("r0", 1)
"""
CHAIN = """
import sys; sys.path.insert(0, {tests!r})
from testlib.chains import stencil_chain
A, out = stencil_chain({k}, 64)
s = po.create_schedule(out)
po.deps(s)
"""
CASES = [
    ("te-steps 102230: wavefront", TE_102230, 's[C].wavefront("i.outer", "i.inner", "j")'),
    ("te-steps 102398: rfactor", TE_102398, 's.rfactor("C2", "wave")'),
    ("te-steps 102398: cache_read after rfactor", TE_102398 + 's.rfactor("C2", "wave")\n',
     's.cache_read("B", "local", ["C0"], layout="{ [d0, d1] -> [floor(d0 / 3), d1, d0 mod 3] }")'),
    ("stencil chain K=500: checked split", CHAIN.format(tests=str(REPO / "tests"), k=500),
     "s[out].split(out.op.axis[1], factor=8)"),
]

TRY = """
import sys, time
import polyopt as po
{setup}
po.check_effort.operations = int(sys.argv[1])
start = time.process_time()
try:
    {step}
except po.CheckEffortError:
    print("refused")
else:
    print("accepted", time.process_time() - start)
"""


def accepted(setup: str, step: str, bound: int) -> float | None:
    """CPU seconds of ``step`` under ``bound`` in a fresh process; None if refused."""
    out = subprocess.run([sys.executable, "-c", TRY.format(setup=setup, step=step),
                          str(bound)], capture_output=True, text=True, cwd=REPO,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    words = out.stdout.split()
    if not words:
        raise RuntimeError(out.stderr[-2000:])
    return float(words[1]) if words[0] == "accepted" else None


def smallest_bound(setup: str, step: str) -> tuple[int, float]:
    """The smallest bound (within 5%) that accepts ``step``, and its CPU seconds."""
    seconds = accepted(setup, step, DEFAULT_OPERATIONS)
    if seconds is None:
        return DEFAULT_OPERATIONS + 1, float("nan")
    low, high = 0, DEFAULT_OPERATIONS
    while high - low > max(high // 20, 1000):
        middle = (low + high) // 2
        if accepted(setup, step, middle) is None:
            low = middle
        else:
            high = middle
    return high, seconds


def main() -> int:
    started = time.time()
    rows, data, passed = [], [], True
    for name, setup, step in CASES:
        needed, seconds = smallest_bound(setup, step)
        ok = needed * MARGIN <= DEFAULT_OPERATIONS
        passed &= ok
        rows.append(f"| {name} | {needed:,} | {seconds:.2f} | "
                    f"{DEFAULT_OPERATIONS / needed:.0f}x | {'ok' if ok else 'TOO CLOSE'} |")
        data.append({"case": name, "operations": needed, "cpu_seconds": seconds})
        print(rows[-1], flush=True)
    load = os.getloadavg()[0]
    text = "\n".join([
        "# The exact check's effort bound (polyopt.deps.effort)", "",
        "Command: `python benchmarks/bench_check_effort.py`  ",
        f"Default bound: {DEFAULT_OPERATIONS:,} isl operations (`po.check_effort.operations`; "
        "isl counts allocations).  Each case: the smallest bound (bisection, within 5%) "
        "under which the step is still accepted, each try in a fresh process; CPU seconds "
        "of the step's check without a bound.  "
        f"Load average {load:.1f} on 2 cores; {(time.time() - started) / 60:.1f} min.", "",
        "| case | operations needed | CPU s | default / needed | margin |",
        "|---|---|---|---|---|", *rows, "",
        f"**{'PASS' if passed else 'FAIL'}**: every case needs at most 1/{MARGIN} of the "
        "default bound.", ""])
    write_results("check_effort", text, {"default": DEFAULT_OPERATIONS, "cases": data})
    print(("PASS" if passed else "FAIL") + ": see benchmarks/results/check_effort.md")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
