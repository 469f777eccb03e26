"""po.auto_schedule on the PolyBench-style kernels of benchmarks/polybench: at small and
odd sizes the automatic schedule is found (no fall-back to the source order), is legal,
and computes the numbers of the default schedule.  The kernels added last (statements
outside every loop, scalar recurrences, reversed loops, integer tables) run by default;
all 30 run with ``-m slow``."""

import re
from pathlib import Path

import numpy as np
import pytest

import polyopt as po

from testlib.numeric import assert_c_same_as_default

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
ALL = sorted(p.stem for p in POLYBENCH.glob("*.c"))
RECENT = ["adi", "correlation", "deriche", "durbin", "gramschmidt", "ludcmp", "nussinov",
          "symm"]


def small_sizes(name: str) -> dict[str, int]:
    """Odd sizes, different per dimension; a few time steps."""
    text = (POLYBENCH / f"{name}.c").read_text()
    names = re.findall(r"^#\s*define\s+([A-Z]\w*)\s+\d+\s*$", text, re.MULTILINE)
    return {m: 3 if m in ("TSTEPS", "TMAX") else 9 + 2 * k for k, m in enumerate(names)}


def check_kernel(name: str, **options) -> po.Schedule:
    """At small sizes every kernel's data fits in the cache; a cache of 64 bytes
    (``cache_bytes``, the default here) makes the scheduler tile them all the same,
    with tiles of 8 (partial tiles at these odd sizes)."""
    options.setdefault("cache_bytes", 64)
    defines = small_sizes(name)
    kernel = po.from_c(str(POLYBENCH / f"{name}.c"), defines=defines)
    s = po.auto_schedule(kernel, **options)
    assert not s.auto_report.fell_back, str(s.auto_report)
    assert s.is_legal()
    sizes = {p.name: defines[p.name.upper()] for p in kernel.c_params if p.kind == "size"}
    assert_c_same_as_default(kernel, s, sizes, seed=5,
                             prepare=_full_rank if name == "gramschmidt" else None)
    return s


def _full_rank(values):
    """Columns past the rank: norm 0, not rounding noise."""
    values["A"][:, min(values["A"].shape):] = 0.0


def test_thirty_kernels():
    assert len(ALL) == 30 and set(RECENT) <= set(ALL)


@pytest.mark.parametrize("name", RECENT)
def test_recent_kernels(name):
    check_kernel(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in ALL if n not in RECENT])
def test_other_kernels(name):
    check_kernel(name)


@pytest.mark.parametrize("name, kept", [("atax", False), ("gesummv", False),
                                        ("jacobi-1d", True), ("trisolv", False)])
def test_kernels_whose_data_fits_in_the_cache_are_not_tiled(name, kept):
    s = check_kernel(name, cache_bytes=None)
    report = str(s.auto_report)
    assert "within half the L2 cache" in report and "tiled loops" not in report
    assert ("the source order is kept" in report) == kept  # jacobi-1d: isl skews
    assert (s.script() == "") == kept


def test_column_walks_become_row_walks_in_nests_of_their_own():
    """gramschmidt's tiled band runs scalar (its innermost loop carries a dependence):
    the source order distributed, ``R[k][j] += Q[i][k] * A[i][j]`` over ``i`` then
    ``j`` (rows of A), checked and computing the same numbers."""
    s = check_kernel("gramschmidt")
    assert "as gcc's loop interchange" in str(s.auto_report)
    assert 's["S5"].transform("[n, m] -> { [k, j, i] -> [0, k, 5, i, j] }")' in s.script()


def test_a_band_above_loops_of_its_own_is_not_tiled_and_may_not_distribute():
    s = check_kernel("nussinov")  # a table entry read by the next statement's nest
    report = str(s.auto_report)
    assert "band i, c1 not tiled: loop(s) c4 below it" in report
    assert "distributed with stride-1 innermost loops is illegal" in report
    assert "tiled loops" not in report


def test_transform_of_a_statement_outside_every_loop():
    kernel = po.from_c("""void f(int n, double A[n], double B[n]) {
  int i;
#pragma scop
  A[0] = 2.0;
  for (i = 1; i < n; i++)
    A[i] = A[i - 1] + B[i];
#pragma endscop
}""")
    s = po.create_schedule(kernel)
    s["S0"].transform("[n] -> { [] -> [c0 = 0, c1 = 0] }")
    assert [a.name for a in s["S0"].axes] == ["c0", "c1"]
    s["S1"].transform("[n] -> { [i] -> [c0 = 1, i] }")
    a, b = np.zeros(6), np.arange(6.0)
    po.build(s)(a, b)
    np.testing.assert_array_equal(a, [2.0, 3.0, 5.0, 8.0, 12.0, 17.0])
