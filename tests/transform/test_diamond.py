"""Diamond tiling (``s[S].diamond_tile``) of Jacobi-style stencils over time.

heat-1D and heat-2D (two buffers indexed by ``t % 2``, from ``testlib.kernels``): the
loops (isl maps, kinds, lowered text), the tile loop accepted as parallel and every tile
of the first time band able to start at once, the numbers (bit for bit against the
default schedule, and against a NumPy reference, on sizes the diamonds do not divide,
serially and on two threads), and the refusals: Gauss-Seidel (a dependence inside one
time step) with a concrete pair of instances, and bad arguments.
"""

import re

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.errors import IllegalScheduleError, InvalidArgumentError, ScheduleError
from testlib.errors import refused
from testlib.kernels import heat_1d, heat_1d_ref, heat_2d, heat_2d_ref, seidel_2d
from testlib.numeric import assert_numbers

RNG = np.random.default_rng(11)
SIZES_1D = [(1, 2), (2, 3), (3, 1), (4, 0), (7, 5), (13, 9), (31, 17), (40, 3)]
SIZES_2D = [(1, 2), (3, 1), (6, 4), (9, 7), (17, 11)]


def check_numbers(s, kernel, reference, shape, sizes, num_threads=1):
    """``s`` on each (n, steps) gives the default schedule's numbers bit for bit and the
    NumPy reference's."""
    f, default = po.build(s, num_threads=num_threads), po.build(po.create_schedule(kernel))
    for n, steps in sizes:
        a = RNG.random(shape(n))
        got, same, ref = a.copy(), a.copy(), a.copy()
        f(got, T=steps)
        default(same, T=steps)
        reference(ref, steps)
        assert_numbers(got, same, exact=True)
        assert_numbers(got, ref, rtol=1e-14, atol=1e-15)


def diamond_heat_2d(size, j_tile):
    """Diamonds in (t, i); columns cut into ``j_tile`` after skewing j by t."""
    s = po.create_schedule(heat_2d)
    band, tile = s["S0"].diamond_tile("t", "i", size)
    s["S0"].skew("t", "j", 1)
    jo, ji = s["S0"].split("j", factor=j_tile)
    s["S0"].reorder(tile, jo, "t", "i", ji)
    return s, band, tile, ji


def _values(s, params="N = 64 and T = 16"):
    """Every instance of S0 with its loop values, for fixed sizes (no parameters left)."""
    values = None
    for axis in s.program.stage("S0").axes:
        loop = isl.Map.from_pw_aff(axis.value)
        values = loop if values is None else values.flat_range_product(loop)
    domain = s.program.statement("S0").domain
    values = values.intersect_domain(domain).intersect_params(
        isl.Set(f"[N, T] -> {{ : {params} }}"))
    return values.project_out(isl.dim_type.param, 0, values.dim(isl.dim_type.param))


# -- loops ---------------------------------------------------------------------------------

def test_diamond_loops_of_heat_1d():
    s = po.create_schedule(heat_1d)
    band, tile = s["S0"].diamond_tile("t", "i", 4)
    assert (band.name, tile.name) == ("t.diamond", "i.diamond")
    assert [(a.name, a.kind) for a in s["S0"].axes] == [
        ("t.diamond", "serial"), ("i.diamond", "parallel"), ("t", "serial"), ("i", "serial")]
    expected = ["{ S0[t, i] -> [floor((t + i)/4) + floor((t - i)/4)] }",
                "{ S0[t, i] -> [floor((t + i)/4)] }", "{ S0[t, i] -> [t] }",
                "{ S0[t, i] -> [i] }"]
    domain = s.program.statement("S0").domain
    for axis, want in zip(s.program.stage("S0").axes, expected, strict=True):
        got = isl.Map.from_pw_aff(axis.value).intersect_domain(domain)
        assert got.is_equal(isl.Map(want).intersect_domain(domain)), (axis.name, got)
    text = str(po.lower(s))
    assert re.search(r"for \(t_diamond = .*\n\s*#pragma parallel\n\s*for \(i_diamond = .*\n"
                     r"\s*for \(t = .*\n\s*for \(i = ", text), text
    assert "polyopt_parallel" in po.build(s, parallel_min_work=0).llvm_ir


def test_diamond_tile_loop_is_accepted_as_parallel():
    s = po.create_schedule(heat_1d)
    s["S0"].diamond_tile("t", "i", 8)
    s.check()  # the schedule and the loop marked parallel
    report = po.check(s)
    assert report.legal
    loops = [loop.kind for loop in report.loops_of("S0") if loop.kind != "static"]
    assert loops == ["sequential", "parallel", "sequential", "parallel"]
    assert s["S0"].can_parallel("i.diamond")
    assert not s["S0"].can_parallel("t.diamond")


def test_every_tile_of_the_first_band_starts_at_once():
    """At t = 0 the instances fall in the first two bands, and the first band has a tile
    every ``size`` elements of the row: the first band runs N / size tiles in parallel
    (a parallelogram wavefront starts with one)."""
    n, size = 64, 8
    s = po.create_schedule(heat_1d)
    s["S0"].diamond_tile("t", "i", size)
    values = _values(s, f"N = {n} and T = 16")
    bands = values.range().project_out(isl.dim_type.set, 1, 3)
    first = bands.lexmin().sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python()
    at_start = values.intersect_domain(isl.Set("{ S0[t, i] : t = 0 }")).range()
    assert at_start.project_out(isl.dim_type.set, 1, 3).is_equal(
        isl.Set(f"{{ [b] : {first} <= b <= {first + 1} }}"))
    first_band = values.range().intersect(isl.Set(f"{{ [b, u, t, i] : b = {first} }}"))
    tiles = first_band.project_out(isl.dim_type.set, 2, 2).project_out(isl.dim_type.set, 0, 1)
    assert tiles.count_val().to_python() >= (n - 2) // size
    # the skewed-and-tiled schedule's wavefront starts with a single tile
    w = po.create_schedule(heat_1d)
    w["S0"].skew("t", "i", 1)
    to, io, _, _ = w["S0"].tile("t", "i", size, size)
    w["S0"].wavefront(to, io)
    start = _values(w, f"N = {n} and T = 16").range().lexmin()
    first_wave = _values(w, f"N = {n} and T = 16").range().intersect(
        isl.Set("{ [w, io, ti, ii] : w = 0 }"))
    assert start.sample_point().get_coordinate_val(isl.dim_type.set, 0).to_python() == 0
    assert first_wave.project_out(isl.dim_type.set, 2, 2).project_out(
        isl.dim_type.set, 0, 1).count_val().to_python() == 1


def test_diamond_heat_2d_loops_inner_columns_vectorized():
    s, band, tile, ji = diamond_heat_2d(4, 5)
    s["S0"].vectorize(ji)
    assert [(a.name, a.kind) for a in s["S0"].axes] == [
        ("t.diamond", "serial"), ("i.diamond", "parallel"), ("j.outer", "serial"),
        ("t", "serial"), ("i", "serial"), ("j.inner", "vectorized")]
    assert po.check(s).legal


def test_diamond_tile_is_recorded_and_replayed():
    s, *_ = diamond_heat_2d(4, 5)
    assert s.script().splitlines()[0] == 's["S0"].diamond_tile("t", "i", 4)'
    again = po.create_schedule(heat_2d).replay(s.script())
    assert str(again.program.schedule) == str(s.program.schedule)
    assert [a.kind for a in again["S0"].axes] == [a.kind for a in s["S0"].axes]


# -- numbers -------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 2, 3, 4, 8])
def test_diamond_heat_1d_numbers(size):
    s = po.create_schedule(heat_1d)
    s["S0"].diamond_tile("t", "i", size)
    check_numbers(s, heat_1d, heat_1d_ref, lambda n: (2, n), SIZES_1D)


def test_diamond_heat_1d_numbers_on_two_threads():
    s = po.create_schedule(heat_1d)
    s["S0"].diamond_tile("t", "i", 4)
    check_numbers(s, heat_1d, heat_1d_ref, lambda n: (2, n), SIZES_1D + [(200, 37)],
                  num_threads=2)


@pytest.mark.parametrize("size, j_tile", [(2, 3), (4, 5), (5, 4)])
def test_diamond_heat_2d_numbers(size, j_tile):
    s, *_ = diamond_heat_2d(size, j_tile)
    check_numbers(s, heat_2d, heat_2d_ref, lambda n: (2, n, n), SIZES_2D, num_threads=2)


def test_diamond_without_column_tiles_numbers():
    s = po.create_schedule(heat_2d)
    s["S0"].diamond_tile("t", "i", 3)
    s["S0"].vectorize("j")
    check_numbers(s, heat_2d, heat_2d_ref, lambda n: (2, n, n), SIZES_2D)


# -- refusals ------------------------------------------------------------------------------

def test_diamond_tiling_of_seidel_is_refused_with_a_counterexample():
    """Gauss-Seidel reads values of the same time step ((0, 1, 0) and (0, 0, 1)): a
    diamond tile would run such a reader before its writer."""
    s = po.create_schedule(seidel_2d)
    assert not s["S0"].can_diamond_tile("t", "i", 4)
    with pytest.raises(IllegalScheduleError) as info:
        s["S0"].diamond_tile("t", "i", 4)
    message = str(info.value)
    assert message.startswith('s["S0"].diamond_tile("t", "i", 4) is illegal: ')
    match = re.search(r"S0\[t=(\d+), i=(\d+), j=(\d+)\] writes A\[\d+, \d+\] that "
                      r"S0\[t=(\d+), i=(\d+), j=(\d+)\] reads, but the new schedule runs the "
                      r"reader first \(when N=\d+, T=\d+\)", message)
    assert match, message
    source, sink = [int(v) for v in match.groups()[:3]], [int(v) for v in match.groups()[3:]]
    assert source[0] == sink[0]  # the same time step
    assert "Repair: diamond tiles need every dependence to advance in time" in message
    assert [a.name for a in s["S0"].axes] == ["t", "i", "j"]  # a refusal changes nothing
    assert s.steps == []


def test_diamond_tile_arguments():
    s = po.create_schedule(heat_2d)
    for size in (0, -2, 2.5, True):
        with pytest.raises(InvalidArgumentError, match="diamond size must be a positive"):
            s["S0"].diamond_tile("t", "i", size)
    for time, space in (("t", "j"), ("i", "t")):
        err = refused(po.LoopsNotAdjacentError, lambda: s["S0"].diamond_tile(time, space, 4))
        assert (err.primitive, err.stage, err.loops, err.order) == (
            "diamond tiling", "S0", (time, space), "time first")
    err = refused(po.UnknownLoopError, lambda: s["S0"].diamond_tile("t", "k", 4))
    assert (err.stage, err.loop, err.loops) == ("S0", "k", ("t", "i", "j"))
    assert isinstance(err, ScheduleError)
