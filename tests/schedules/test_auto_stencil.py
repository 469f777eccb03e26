"""po.auto_schedule's diamond tiles for stencils (schedules/auto_stencil.py): the
re-timing found from the dependences, the report's reason, the ``stencil_tiling``
option, and the numbers of the PolyBench-style stencils against their default schedule
at small, odd sizes with partial diamonds."""

import pytest

import polyopt as po
from polyopt.schedules.auto_affine import flatten, isl_schedule
from polyopt.schedules.auto_stencil import diamond_plan
from tests.schedules.test_auto_polybench import POLYBENCH, check_kernel, small_sizes

STENCILS = ["jacobi-1d", "jacobi-2d", "heat-3d", "fdtd-2d"]


def _kinds(s, stage="S0"):
    return [(a.name, a.kind) for a in s[stage].axes]


@pytest.mark.parametrize("name", STENCILS)
def test_diamond_tiles_compute_the_original_numbers(name):
    s = check_kernel(name, stencil_tiling="diamond", tile_sizes=(6, 5, 7))
    report = str(s.auto_report)
    assert "diamond tiles of 6" in report and "start at once" in report, report
    kinds = _kinds(s)
    assert kinds[0][0].endswith(".diamond") and kinds[0][1] == "serial"
    assert kinds[1][0].endswith(".diamond") and kinds[1][1] == "parallel"
    assert "wavefront" not in s.script()
    assert "diamond_tile(" in s.script()
    if name != "jacobi-1d":
        assert kinds[-1][1] == "vectorized"


@pytest.mark.parametrize("name, size", [("jacobi-2d", 4), ("fdtd-2d", 3), ("heat-3d", 5)])
def test_diamonds_smaller_than_a_time_step_pair(name, size):
    """Tiles that hold only part of a time step's dependences' reach (sizes 3..5 in
    ``T = 2t + p``) still compute the same numbers."""
    check_kernel(name, stencil_tiling="diamond", tile_sizes=size)


def test_the_plan_of_jacobi_2d_and_fdtd_2d():
    """T = 2t + p_S: the second statement of Jacobi one step later; fdtd's hz update
    (S3) after the ey and ex updates of its time step."""
    plans = {}
    for name in ("jacobi-2d", "fdtd-2d"):
        kernel = po.from_c(str(POLYBENCH / f"{name}.c"), defines=small_sizes(name))
        s = po.create_schedule(kernel)
        rows = flatten(isl_schedule(s.program, s.deps)[0])
        plans[name], why = diamond_plan(s.program, s.deps, rows, list(rows.rows))
        assert why == ""
    assert (plans["jacobi-2d"].slope, plans["jacobi-2d"].offsets) == (2, {"S0": 0, "S1": 1})
    assert plans["fdtd-2d"].slope == 2
    assert plans["fdtd-2d"].offsets["S3"] == 1
    assert {plans["fdtd-2d"].offsets[n] for n in ("S0", "S1", "S2")} == {0}


def test_gauss_seidel_gets_no_diamonds_and_the_report_says_why():
    s = check_kernel("seidel-2d", stencil_tiling="diamond")
    report = str(s.auto_report)
    assert "no diamond tiles for S0" in report and "Gauss-Seidel" in report, report
    assert "diamond_tile(" not in s.script()


def test_skewed_turns_diamonds_off():
    s = check_kernel("jacobi-2d", stencil_tiling="skewed", tile_sizes=5)
    assert "diamond" not in str(s.auto_report)
    assert "diamond_tile(" not in s.script() and "wavefront(" in s.script()


def test_without_parallel_loops_no_diamonds():
    s = check_kernel("jacobi-2d", stencil_tiling="diamond", parallel=False, tile_sizes=5)
    report = str(s.auto_report)
    assert "no diamond tiles for S0, S1 (parallel=False)" in report, report
    assert all(kind != "parallel" for _, kind in _kinds(s))


def test_a_bad_stencil_tiling_is_refused():
    kernel = po.from_c(str(POLYBENCH / "jacobi-2d.c"), defines=small_sizes("jacobi-2d"))
    with pytest.raises(po.InvalidArgumentError, match="stencil_tiling must be one of auto"):
        po.auto_schedule(kernel, stencil_tiling="hexagonal")


def test_a_diamond_schedule_replays():
    s = check_kernel("jacobi-2d", stencil_tiling="diamond", tile_sizes=6)
    kernel = po.from_c(str(POLYBENCH / "jacobi-2d.c"), defines=small_sizes("jacobi-2d"))
    again = po.create_schedule(kernel)
    again.replay(s.script())
    assert again.script() == s.script() and again.is_legal()


def test_by_default_the_report_says_diamonds_are_possible_but_not_taken():
    """``stencil_tiling="auto"`` keeps the skewed tiles (diamonds measured no faster on
    one thread, slower to compile) and says so."""
    s = check_kernel("fdtd-2d", tile_sizes=5)
    report = str(s.auto_report)
    assert "diamond tiles are possible for S0, S1, S2, S3 (T = 2t + offset" in report, report
    assert "diamond_tile(" not in s.script() and "wavefront(" in s.script()


def test_a_python_kernel_on_two_buffers_against_numpy():
    """heat-2D written with ``A[(t + 1) % 2]``: one statement, ``T = t``; odd sizes and
    partial diamonds give NumPy's numbers exactly."""
    import numpy as np
    from testlib.kernels import heat_2d, heat_2d_ref
    s = po.auto_schedule(heat_2d, stencil_tiling="diamond", tile_sizes=(7, 5))
    assert "diamond tiles of 7 over T = t + offset (S0: 0)" in str(s.auto_report)
    f = po.build(s)
    for n, steps in ((13, 9), (20, 4)):
        a = np.random.default_rng(n).standard_normal((2, n, n))
        expected = a.copy()
        heat_2d_ref(expected, steps)
        f(a, N=n, T=steps)
        np.testing.assert_array_equal(a, expected)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in POLYBENCH.glob("*.c")))
def test_every_kernel_with_diamonds_asked_for(name):
    """Asking for diamonds changes only what allows them; every kernel still computes
    its numbers (the final check refuses anything else)."""
    check_kernel(name, stencil_tiling="diamond")
