"""auto_schedule jams adjacent rows in the time tiles of a stencil (auto_stencil_jam):
the plan, the option, the refusal for more statements, and the original's numbers bit
for bit at small odd sizes (partial row blocks at both edges, partial tiles)."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt

from testlib.numeric import assert_c_same_as_default

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
BIT_FOR_BIT = dict(seed=7, exact=True)


def _kernel(name):
    return po.from_c(str(KERNELS / f"{name}.c"))


def _numbers(kernel, schedule, sizes, threads=1):
    values = arguments(kernel, sizes, seed=7)
    call_polyopt(kernel, po.build(schedule, num_threads=threads), values)
    return values


def test_jacobi_2d_plan_jams_two_rows():
    s = po.auto_schedule(_kernel("jacobi-2d"))
    report = str(s.auto_report)
    assert "rows jammed: c1.inner split by 2" in report
    script = s.script()
    assert 's["S0"].split("c1.inner", factor=2)' in script
    assert ('s["S0"].reorder("t.inner", "c1.inner.outer", "c3", "c2.inner", '
            '"c1.inner.inner")') in script
    assert 's["S0"].unroll("c1.inner.inner")' in script
    assert script.count('s["S0"].vectorize("c2.inner")') == 1
    axes = {a.name: a.kind for a in s["S0"].axes}
    assert axes["c2.inner"] == "vectorized" and axes["c1.inner.inner"] == "unrolled"


@pytest.mark.parametrize("n, tsteps, options", [
    (13, 5, {}),                                      # one tile, both row edges partial
    (24, 7, {"stencil_jam": 3}),                      # 22 rows: blocks of 3, last partial
    (19, 6, {"tile_sizes": (4, 8, 16)}),              # many partial tiles
    (17, 9, {"tile_sizes": (4, 8, 16), "stencil_jam": 4}),
])
def test_jacobi_2d_jammed_computes_the_original_bit_for_bit(n, tsteps, options):
    kernel = _kernel("jacobi-2d")
    s = po.auto_schedule(kernel, **options)
    assert "rows jammed" in str(s.auto_report)
    assert_c_same_as_default(kernel, s, {"n": n, "tsteps": tsteps}, arrays=["A", "B"],
                             **BIT_FOR_BIT)


def test_jacobi_2d_jammed_on_two_threads():
    kernel = _kernel("jacobi-2d")
    s = po.auto_schedule(kernel, tile_sizes=(4, 8, 16))
    assert_c_same_as_default(kernel, s, {"n": 27, "tsteps": 5}, arrays=["A", "B"],
                             num_threads=2, **BIT_FOR_BIT)


def test_stencil_jam_zero_keeps_rows_one_by_one():
    s = po.auto_schedule(_kernel("jacobi-2d"), stencil_jam=0)
    assert "rows jammed" not in str(s.auto_report)
    assert "unroll" not in s.script()


def test_more_statements_are_not_jammed_unless_asked():
    kernel = _kernel("fdtd-2d")
    s = po.auto_schedule(kernel)
    assert "rows not jammed: 4 statements in the tile" in str(s.auto_report)
    assert "unroll" not in s.script()
    asked = po.auto_schedule(kernel, stencil_jam=2)
    assert "rows jammed: c1.inner split by 2" in str(asked.auto_report)
    assert_c_same_as_default(kernel, asked, {"tmax": 5, "nx": 11, "ny": 13},
                             arrays=["ex", "ey", "hz"], **BIT_FOR_BIT)


def test_jammed_schedule_replays():
    """The plan is a normal schedule: its script replays to the same numbers."""
    kernel = _kernel("jacobi-2d")
    s = po.auto_schedule(kernel)
    replayed = po.create_schedule(kernel).replay(s.script())
    sizes = {"n": 15, "tsteps": 4}
    for name in ("A", "B"):
        np.testing.assert_array_equal(_numbers(kernel, replayed, sizes)[name],
                                      _numbers(kernel, s, sizes)[name])


def test_a_row_tile_the_rows_do_not_divide_is_not_jammed_unless_asked():
    kernel = _kernel("jacobi-2d")
    s = po.auto_schedule(kernel, tile_sizes=5)
    assert "rows not jammed: the tile of c1.inner (5) is no multiple of 2" in str(
        s.auto_report)
    asked = po.auto_schedule(kernel, tile_sizes=5, stencil_jam=2)
    assert "rows jammed" in str(asked.auto_report)
    with pytest.warns(po.PolyoptWarning, match="did not vectorize"):  # the partial blocks
        assert_c_same_as_default(kernel, asked, {"n": 16, "tsteps": 4}, arrays=["A", "B"],
                                 **BIT_FOR_BIT)


@pytest.mark.parametrize("bad", [-1, "2", 1.5, True])
def test_a_bad_stencil_jam_is_refused(bad):
    with pytest.raises(po.InvalidArgumentError, match="stencil_jam must be None or an integer"):
        po.auto_schedule(_kernel("jacobi-2d"), stencil_jam=bad)
