"""Legal skewed, time-tiled and wavefront schedules of in-place kernels (po.kernel).

seidel-2d, jacobi-1d with a time loop (two statements), LU without pivoting and a
triangular solve (the kernels and their references from ``testlib.kernels``), each under
skewed, tiled (after the skew: parallelogram tiles) and wavefront schedules, built with
the schedule primitives or written by hand and checked with ``po.check``.  A schedule
polyopt accepts must give the numbers of the default schedule bit for bit (the same
operations run in the same dependence order) and those of a plain Python reference; the
illegal ones are refused with a concrete counterexample (and a skew or shift to apply,
where the library suggests one).

The legal schedules come from the dependence distances.  seidel-2d in (t, i, j):
(0, 0, 1), (0, 1, -1), (0, 1, 0), (0, 1, 1), (1, -1, -1), (1, -1, 0), (1, -1, 1),
(1, 0, -1), (1, 0, 0).  With i' = t + i and j' = 3t + i + j (skew i by t, j by 2t, then j
by i') they become (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2), (1, 0, 1), (1, 0, 2),
(1, 0, 3), (1, 1, 2), (1, 1, 3): all non-negative, so the band (t, i', j') is fully
permutable (any rectangular tiling of it is legal) and every dependence advances the
wavefront t + i' + j' = 5t + 2i + j by at least one (the loops inside it are parallel).
"""

import re

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.errors import IllegalScheduleError

from testlib.errors import pair, refused
from testlib.kernels import forward_substitution as trisolv
from testlib.kernels import forward_substitution_ref as trisolv_ref
from testlib.kernels import jacobi_1d, jacobi_1d_ref, lu, lu_ref, seidel_2d, seidel_2d_ref
from testlib.numeric import assert_numbers

RNG = np.random.default_rng(7)
# against the plain Python references: tighter than the documented float64 bound; against
# the default schedule: bit for bit (exact=True)
TIGHT = dict(rtol=1e-13, atol=1e-14)


@po.kernel
def seidel_2d_fixed(A: po.f64[9, 9]):
    for t in range(4):
        for i in range(1, 8):
            for j in range(1, 8):
                A[i, j] = (A[i-1, j-1] + A[i-1, j] + A[i-1, j+1] + A[i, j-1] + A[i, j]
                           + A[i, j+1] + A[i+1, j-1] + A[i+1, j] + A[i+1, j+1]) / 9.0


# -- helpers -------------------------------------------------------------------------------

def _default(kernel):
    return po.build(po.create_schedule(kernel))


def _handwritten(kernel, schedule):
    """The kernel under a hand-written schedule that ``po.check`` accepts, ready to build."""
    report = po.check(kernel, schedule=schedule)
    assert report.legal, str(report)
    return po.Schedule(report.program, kernel.outputs, default_args=kernel.args), report


SEIDEL_SIZES = [(1, 2), (2, 3), (3, 1), (4, 3), (7, 5), (10, 4), (6, 0)]


def check_seidel(s, sizes=SEIDEL_SIZES):
    f, default = po.build(s), _default(seidel_2d)
    for n, steps in sizes:
        a = RNG.random((n, n))
        got, same, ref = a.copy(), a.copy(), a.copy()
        f(got, T=steps)
        default(same, T=steps)
        seidel_2d_ref(ref, steps)
        assert_numbers(got, same, exact=True)
        assert_numbers(got, ref, **TIGHT)


def check_jacobi(s, sizes=((1, 2), (2, 1), (3, 3), (8, 5), (13, 4), (5, 0))):
    f, default = po.build(s), _default(jacobi_1d)
    for n, steps in sizes:
        a, b = RNG.random(n), RNG.random(n)
        got, same, ref = (a.copy(), b.copy()), (a.copy(), b.copy()), (a.copy(), b.copy())
        f(*got, T=steps)
        default(*same, T=steps)
        jacobi_1d_ref(*ref, steps)
        for g, d, r in zip(got, same, ref):
            assert_numbers(g, d, exact=True)
            assert_numbers(g, r, **TIGHT)


def check_lu(s, sizes=(1, 2, 3, 6, 9)):
    f, default = po.build(s), _default(lu)
    for n in sizes:
        a = RNG.random((n, n)) + n * np.eye(n)
        got, same, ref = a.copy(), a.copy(), a.copy()
        f(got)
        default(same)
        lu_ref(ref)
        assert_numbers(got, same, exact=True)
        assert_numbers(got, ref, **TIGHT)
        lower, upper = np.tril(got, -1) + np.eye(n), np.triu(got)
        assert_numbers(lower @ upper, a)


def check_trisolv(s, sizes=(1, 2, 3, 6, 9)):
    f, default = po.build(s), _default(trisolv)
    for n in sizes:
        L = np.tril(RNG.random((n, n))) + n * np.eye(n)
        b = RNG.random(n)
        got, same, ref = np.zeros(n), np.zeros(n), np.zeros(n)
        f(L, b, got)
        default(L, b, same)
        trisolv_ref(L, b, ref)
        # its x[i] -= L[i, j] * x[j] is a sum that may be reassociated (README: floating
        # point), so schedules agree to rounding, not bit for bit
        assert_numbers(got, same, rtol=1e-13, atol=1e-15)
        assert_numbers(got, ref, **TIGHT)
        assert_numbers(L @ got, b)


def _skewed_seidel():
    """(t, i, j) -> (t, t + i, 3t + i + j): every distance non-negative."""
    s = po.create_schedule(seidel_2d)
    s["S0"].skew("t", "i", 1)
    s["S0"].skew("t", "j", 2)
    s["S0"].skew("i", "j", 1)
    return s


def _loop_values(s, stage):
    return [isl.Map.from_pw_aff(a.value) for a in s.program.stage(stage).axes]


def _pragma_lines(text):
    """The loop variables of the loops marked ``#pragma parallel``."""
    lines = text.splitlines()
    return [re.match(r"\s*for \((\w+) =", lines[k + 1]).group(1)
            for k, line in enumerate(lines[:-1]) if line.strip() == "#pragma parallel"]


INSTANCE = r"S\d\[(?:[tkij]=\d+(?:, )?)+\]"


def _parallel_inside_wavefront(s, wave, kinds):
    """The wavefront loop ``wave`` is the outermost loop of S0 and serial, the loops inside
    it have ``kinds`` and carry ``#pragma parallel``; returns the lowered text."""
    axes = s["S0"].axes
    assert axes[0].name == wave.name and axes[0].kind == "serial"
    assert [a.kind for a in axes[1:]] == kinds
    text = str(po.lower(s))
    assert _pragma_lines(text) == [a.name for a in axes[1:]]
    return text


# -- seidel-2d -----------------------------------------------------------------------------

def test_seidel_dependence_distances_are_exact():
    deps = po.deps(po.create_schedule(seidel_2d))
    sizes = isl.Set("[N, T] -> { : N = 10 and T = 3 }")
    distances = ("[N, T] -> { S0[0, 0, 1]; S0[0, 1, -1]; S0[0, 1, 0]; S0[0, 1, 1]; "
                 "S0[1, -1, -1]; S0[1, -1, 0]; S0[1, -1, 1]; S0[1, 0, -1]; S0[1, 0, 0] }")
    for kind, expected in (("flow", distances), ("anti", distances),
                           ("output", "[N, T] -> { S0[1, 0, 0] }")):
        got = deps.between("S0", "S0", kind).deltas().intersect_params(sizes)
        want = isl.UnionSet(expected).intersect_params(sizes)
        assert got.is_equal(want), (kind, got)


def test_seidel_skewed_loops_and_numbers():
    s = _skewed_seidel()
    expected = ["[N, T] -> { S0[t, i, j] -> [t] }", "[N, T] -> { S0[t, i, j] -> [t + i] }",
                "[N, T] -> { S0[t, i, j] -> [3t + i + j] }"]
    assert all(got.is_equal(isl.Map(want))
               for got, want in zip(_loop_values(s, "S0"), expected, strict=True))
    check_seidel(s)


@pytest.mark.parametrize("factors", [(2, 4, 4), (3, 2, 5), (1, 3, 2)])
def test_seidel_skewed_then_tiled_in_three_dimensions(factors):
    """Parallelogram tiles: rectangular in the skewed (t, i', j') space."""
    ft, fi, fj = factors
    s = _skewed_seidel()
    to, io, ti, ii = s["S0"].tile("t", "i", ft, fi)
    jo, ji = s["S0"].split("j", factor=fj)
    s["S0"].reorder(to, io, jo, ti, ii, ji)
    assert [a.name for a in s["S0"].axes] == ["t.outer", "i.outer", "j.outer",
                                              "t.inner", "i.inner", "j.inner"]
    assert po.check(s).legal
    check_seidel(s)


@pytest.mark.parametrize("factors", [(2, 4, 4), (3, 2, 5)])
def test_seidel_tiles_with_time_innermost_have_an_independent_inner_loop(factors):
    """No distance is (*, 0, 0) in (t, i', j'): inside a tile, the iterations of time at
    fixed (i', j') are independent (bench_stencil's seidel tiles, which the CPU overlaps,
    where the source order's j loop is one chain of dependent updates)."""
    ft, fi, fj = factors
    s = _skewed_seidel()
    to, io, ti, ii = s["S0"].tile("t", "i", ft, fi)
    jo, ji = s["S0"].split("j", factor=fj)
    s["S0"].reorder(to, io, jo, ii, ji, ti)
    assert [a.name for a in s["S0"].axes][-1] == "t.inner"
    assert s["S0"].can_parallel(ti) and not s["S0"].can_parallel(ji)
    check_seidel(s)
    s["S0"].wavefront(to, io)
    assert [a.kind for a in s["S0"].axes][:2] == ["serial", "parallel"]
    check_seidel(s)


def test_seidel_fixed_sizes_time_tiled():
    s = po.create_schedule(seidel_2d_fixed)
    s["S0"].skew("t", "i", 1)
    s["S0"].skew("t", "j", 2)
    s["S0"].skew("i", "j", 1)
    s["S0"].tile("t", "i", 2, 3)
    a = RNG.random((9, 9))
    got, same, ref = a.copy(), a.copy(), a.copy()
    po.build(s)(got)
    po.build(po.create_schedule(seidel_2d_fixed))(same)
    seidel_2d_ref(ref, 4)
    assert_numbers(got, same, exact=True)
    assert_numbers(got, ref, **TIGHT)


def test_seidel_wavefront_of_the_skewed_band_has_parallel_inner_loops():
    s = _skewed_seidel()
    wave = s["S0"].wavefront("t", "i", "j")
    text = _parallel_inside_wavefront(s, wave, ["parallel", "parallel"])
    # the wavefront loop is t + i' + j' = 5t + 2i + j
    assert _loop_values(s, "S0")[0].is_equal(isl.Map("[N, T] -> { S0[t, i, j] -> [5t + 2i + j] }"))
    assert f"for ({wave.name} = " in text
    check_seidel(s)


def test_seidel_time_axis_and_the_others_refused_by_parallel():
    s = po.create_schedule(seidel_2d)
    with pytest.raises(IllegalScheduleError) as info:
        s["S0"].parallel("t")
    message = str(info.value)
    assert "loop 't' carries a dependence between its iterations" in message
    assert re.search(rf"{INSTANCE} writes A\[\d+, \d+\] that {INSTANCE} reads", message)
    assert "[flow dependence S0 -> S0 through A" in message
    # in place, every loop of seidel-2d carries a dependence (0, 0, 1), (0, 1, *), (1, *, *)
    for axis in ("i", "j"):
        assert not s["S0"].can_parallel(axis)
    # after the skew, only the wavefront frees loops
    skewed = _skewed_seidel()
    assert not any(skewed["S0"].can_parallel(a) for a in ("t", "i", "j"))


def test_seidel_rectangular_tiling_without_skew_is_refused():
    s = po.create_schedule(seidel_2d)
    # spatial tiles: distance (0, 1, -1) runs backwards across j tiles
    with pytest.raises(IllegalScheduleError) as info:
        s["S0"].tile("i", "j", 4, 4)
    message = str(info.value)
    assert re.search(r"S0\[t=\d+, i=\d+, j=\d+\] writes A\[\d+, \d+\] that "
                     r"S0\[t=\d+, i=\d+, j=\d+\] reads, but the new schedule runs the reader "
                     r"first \(when N=\d+, T=\d+\)", message), message
    # the broken pairs share the distance (0, 1, -1): where the message suggests a skew,
    # it is j by i
    if "Repair:" in message or info.value.violation.distance is not None:
        assert info.value.violation.distance == (0, 1, -1)
        assert "dependence distance (0, 1, -1)" in message
        assert re.search(r"Repair: skew j by i with factor 1 first \(s\[\S+\]\.skew\('i', "
                         r"'j', 1\)\)", message), message
    # following that repair makes the same tiling legal
    s["S0"].skew("i", "j", 1)
    s["S0"].tile("i", "j", 4, 4)
    check_seidel(s, sizes=[(1, 2), (7, 3), (10, 2)])
    # time tiles: distances (1, -1, *) run backwards across i tiles
    s = po.create_schedule(seidel_2d)
    err = refused(po.DependenceViolationError, lambda: s["S0"].tile("t", "i", 2, 4))
    assert re.fullmatch(r"S0\[t=0, i=\d+, j=\d+\] S0\[t=1, i=\d+, j=\d+\] A\[\d+, \d+\]",
                        " ".join(pair(err))), pair(err)
    assert err.violation.dependence.kind == "flow"
    # all three dimensions at once, by an affine map
    err = refused(po.DependenceViolationError, lambda: s["S0"].transform(
        "{ [t, i, j] -> [floor(t/2), floor(i/4), floor(j/4), t, i, j] }"))
    assert err.violation.source.startswith("S0[t=")
    assert [a.name for a in s["S0"].axes] == ["t", "i", "j"]  # refusals change nothing


def test_seidel_three_dimensional_tiles_by_affine_map_after_skew():
    s = _skewed_seidel()
    s["S0"].transform("{ [t, i, j] -> [floor(t/2), floor(i/4), floor(j/3), t, i, j] }")
    assert len(s["S0"].axes) == 6
    check_seidel(s)


def test_seidel_wavefront_without_skew_is_refused():
    """(1, -1, -1) goes back one wavefront t + i + j."""
    s = po.create_schedule(seidel_2d)
    err = refused(po.DependenceViolationError, lambda: s["S0"].wavefront("t", "i", "j"))
    assert re.fullmatch(r"S0\[t=0, i=\d+, j=\d+\] S0\[t=1, i=\d+, j=\d+\] A\[\d+, \d+\]",
                        " ".join(pair(err))), pair(err)
    assert err.violation.dependence.kind == "flow"


def test_seidel_unchecked_tiling_is_caught_by_check():
    s = po.create_schedule(seidel_2d)
    s["S0"].tile("i", "j", 4, 4, check=False)
    assert not s.is_legal()
    err = refused(po.DependenceViolationError, s.check)
    assert err.transform == "the schedule"
    assert re.fullmatch(r"S0\[t=\d+, i=\d+, j=\d+\]", err.violation.source)
    assert err.violation.dependence.kind in ("flow", "output")
    assert not po.check(s).legal


def test_seidel_handwritten_illegal_schedule_refused_with_counterexample():
    report = po.check(seidel_2d, schedule="{ S0[t, i, j] -> [t, floor(i/4), floor(j/4), i, j] }")
    assert not report.legal
    assert {v.dependence.kind for v in report.violations} == {"flow", "anti"}
    first = report.violations[0].explain()
    assert re.match(r"S0\[t=\d+, i=\d+, j=\d+\] writes A\[\d+, \d+\] that S0\[t=\d+, i=\d+, "
                    r"j=\d+\] reads, but the new schedule runs the reader first", first), first
    assert str(report).startswith("illegal: 2 dependences violated\n")
    # time tiles without skew
    report = po.check(seidel_2d, schedule="[N, T] -> { S0[t, i, j] -> "
                      "[floor(t/2), floor(i/4), floor(j/4), t, i, j] }")
    assert not report.legal and report.violations[0].source.startswith("S0[t=")


@pytest.mark.parametrize("schedule, kinds", [
    ("{ S0[t, i, j] -> [4t + 2i + j, t, i] }", ["sequential", "parallel", "parallel"]),
    ("{ S0[t, i, j] -> [5t + 2i + j, t + i, 3t + i + j] }",
     ["sequential", "parallel", "parallel"]),
    ("{ S0[t, i, j] -> [2t + i + j, t, i] }", ["sequential", "sequential", "sequential"]),
    ("{ S0[t, i, j] -> [t, t + i, 2t + i + j] }", ["sequential"] * 3),
    ("{ S0[t, i, j] -> [floor(t/2), floor((t + i)/4), floor((2t + i + j)/3), t, t + i, "
     "2t + i + j] }", ["sequential"] * 6),
])
def test_seidel_handwritten_legal_schedules_give_the_same_numbers(schedule, kinds):
    s, report = _handwritten(seidel_2d, schedule)
    assert [loop.kind for loop in report.loops_of("S0")] == kinds
    check_seidel(s, sizes=[(1, 2), (3, 1), (6, 3), (9, 4)])


# -- jacobi-1d with a time loop ------------------------------------------------------------

def _fused_jacobi(skews):
    """Both statements in one (t, i) nest, S1 one iteration behind S0, then skewed."""
    s = po.create_schedule(jacobi_1d)
    s["S1"].shift("i", 1)
    s["S1"].compute_with("S0", "i")
    for _ in range(skews):
        s["S0"].skew("t", "i", 1)
    return s


def test_jacobi_dependences_are_exact():
    s = po.create_schedule(jacobi_1d)
    inside = "1 <= i <= N - 2 and 1 <= j <= N - 2 and j - 1 <= i <= j + 1"
    deps = po.deps(s)
    assert deps.between("S0", "S1", "flow").is_equal(isl.UnionMap(
        f"[N, T] -> {{ S0[t, i] -> S1[t, j] : 0 <= t < T and {inside} }}"))
    assert deps.between("S1", "S0", "flow").is_equal(isl.UnionMap(
        f"[N, T] -> {{ S1[t, i] -> S0[t + 1, j] : 0 <= t <= T - 2 and {inside} }}"))
    # S0 reads A[i - 1 .. i + 1] before S1 overwrites them in the same step
    assert deps.between("S0", "S1", "anti").is_equal(isl.UnionMap(
        f"[N, T] -> {{ S0[t, j] -> S1[t, i] : 0 <= t < T and {inside} }}"))


def test_jacobi_default_and_parallel_space_loops():
    s = po.create_schedule(jacobi_1d)
    check_jacobi(s)
    err = refused(po.LoopCarriesDependenceError, lambda: s["S0"].parallel("t"))
    assert err.loop == "t" and re.fullmatch(INSTANCE, err.violation.source)
    s["S0"].parallel("i")
    s["S1"].parallel("i")
    assert _pragma_lines(str(po.lower(s))) == ["i", "i"]
    check_jacobi(s)


def test_jacobi_fusion_refused_then_repaired_by_the_suggested_shift():
    s = po.create_schedule(jacobi_1d)
    with pytest.raises(IllegalScheduleError) as info:
        s["S1"].compute_with("S0", "i")
    message = str(info.value)
    assert re.search(rf"{INSTANCE} reads A\[\d+\] before {INSTANCE} overwrites it", message)
    assert "Repair: shift the reader first: s['S1'].shift('i', 1)" in message
    check_jacobi(_fused_jacobi(skews=0))


def test_jacobi_time_tiling_needs_a_skew_of_two():
    """Fused, S1 (shifted by one) writes A[i] at i + 1, read by S0 at i - 1 .. i + 1 one
    step later: distances (1, -2), (1, -1), (1, 0); a skew by 1 leaves (1, -1)."""
    once = _fused_jacobi(skews=1)
    err = refused(po.DependenceViolationError, lambda: once["S0"].tile("t", "i", 2, 4))
    assert re.fullmatch(rf"{INSTANCE} {INSTANCE} A\[\d+\]", " ".join(pair(err))), pair(err)
    assert err.violation.dependence.kind == "flow"
    twice = _fused_jacobi(skews=2)
    assert _loop_values(twice, "S1")[1].is_equal(
        isl.Map("[N, T] -> { S1[t, i] -> [2t + i + 1] }"))
    check_jacobi(twice)
    twice["S0"].tile("t", "i", 2, 4)
    assert [a.name for a in twice["S1"].axes] == ["t.outer", "i.outer", "t.inner", "i.inner"]
    check_jacobi(twice)


def test_jacobi_wavefront_after_the_skew():
    once = _fused_jacobi(skews=1)
    with pytest.raises(IllegalScheduleError):
        once["S0"].wavefront("t", "i")
    s = _fused_jacobi(skews=2)
    wave = s["S0"].wavefront("t", "i")
    _parallel_inside_wavefront(s, wave, ["parallel"])
    check_jacobi(s)


# -- LU without pivoting -------------------------------------------------------------------

def test_lu_dependences_are_exact():
    deps = po.deps(po.create_schedule(lu))
    # A[i, j] is updated once per k; row k + 1 is read by every later row
    assert deps.between("S1", "S1", "flow").is_equal(isl.UnionMap(
        "[N] -> { S1[k, i, j] -> S1[k + 1, i2, j] : 0 <= k and k + 2 <= i2 < N and "
        "k + 2 <= j < N and (i = i2 or i = k + 1) }"))
    assert deps.between("S0", "S1", "flow").is_equal(isl.UnionMap(
        "[N] -> { S0[k, i] -> S1[k, i, j] : 0 <= k < i < N and k < j < N }"))


def test_lu_parallel_time_axis_refused_others_accepted():
    s = po.create_schedule(lu)
    with pytest.raises(IllegalScheduleError) as info:
        s["S0"].parallel("k")
    message = str(info.value)
    assert "loop 'k' carries a dependence between its iterations" in message
    assert re.search(rf"{INSTANCE} writes A\[\d+, \d+\] that {INSTANCE} reads", message), message
    assert "Repair: use a loop that carries no dependence: i" in message
    s["S0"].parallel("i")
    s["S1"].parallel("j")
    assert _pragma_lines(str(po.lower(s))) == ["i", "j"]
    check_lu(s)


@pytest.mark.parametrize("skew", [False, True], ids=["rectangular", "skewed"])
def test_lu_tiled(skew):
    """LU's (k, i) distances are all non-negative: rectangular tiles are legal already."""
    s = po.create_schedule(lu)
    if skew:
        s["S0"].skew("k", "i", 1)
        check_lu(s)
    s["S0"].tile("k", "i", 2, 3)
    assert [a.name for a in s["S1"].axes] == ["k.outer", "i.outer", "k.inner", "i.inner", "j"]
    check_lu(s)


def test_lu_wavefront():
    s = po.create_schedule(lu)
    wave = s["S0"].wavefront("k", "i")
    _parallel_inside_wavefront(s, wave, ["parallel"])
    check_lu(s)


def test_lu_handwritten_schedules():
    # row by row (i outermost, then k): legal, the same updates of each element in order
    s, report = _handwritten(lu, "{ S0[k, i] -> [i, k, 0, 0]; S1[k, i, j] -> [i, k, 1, j] }")
    check_lu(s)
    # the update before the division it reads
    report = po.check(lu, schedule="{ S0[k, i] -> [k, i, 1, 0]; S1[k, i, j] -> [k, i, 0, j] }")
    assert not report.legal
    flow = next(v for v in report.violations if v.dependence.kind == "flow")
    assert re.match(r"S0\[k=\d+, i=\d+\] writes A\[\d+, \d+\] that S1\[k=\d+, i=\d+, j=\d+\] "
                    r"reads, but the new schedule runs the reader first", flow.explain())


# -- triangular solve ----------------------------------------------------------------------

TRISOLV_LEGAL = {
    "skewed": "{ S0[i] -> [i, 0, 0]; S1[i, j] -> [i, 1, i + j]; S2[i] -> [i, 2, 0] }",
    # rectangular 4 x 4 tiles of (i, j), the division at the end of its diagonal tile
    "tiled": "{ S0[i] -> [floor(i/4), 0, i, 0, 0]; S1[i, j] -> [floor(i/4), floor(j/4), i, 1, j];"
             " S2[i] -> [floor(i/4), floor(i/4), i, 2, 0] }",
    # wavefront i + j: x[j] is final at 2j, read from 2j + 1 on
    "wavefront": "{ S0[i] -> [i, 0, i]; S1[i, j] -> [i + j, 1, i]; S2[i] -> [2i, 2, i] }",
}


def test_trisolv_default_and_refused_parallel_loops():
    s = po.create_schedule(trisolv)
    check_trisolv(s)
    err = refused(po.LoopCarriesDependenceError, lambda: s["S0"].parallel("i"))
    assert re.fullmatch(r"S2\[i=\d+\] S1\[i=\d+, j=\d+\] x\[\d+\]", " ".join(pair(err)))
    assert err.violation.dependence.kind == "flow"
    err = refused(po.LoopCarriesDependenceError, lambda: s["S1"].parallel("j"))
    assert re.fullmatch(r"S1\[i=\d+, j=\d+\] S1\[i=\d+, j=\d+\] x\[\d+\]",
                        " ".join(pair(err))), pair(err)
    assert (err.loop, err.violation.dependence.kind) == ("j", "flow")
    s["S1"].split("j", factor=3)
    check_trisolv(s)


@pytest.mark.parametrize("name", list(TRISOLV_LEGAL))
def test_trisolv_handwritten_legal_schedules(name):
    s, report = _handwritten(trisolv, TRISOLV_LEGAL[name])
    if name == "wavefront":
        assert [loop.kind for loop in report.loops_of("S1")] == ["sequential", "static",
                                                                  "parallel"]
    check_trisolv(s)


def test_trisolv_handwritten_illegal_tiling_refused():
    """The division before the off-diagonal tiles of its row have been subtracted."""
    report = po.check(trisolv, schedule=(
        "{ S0[i] -> [floor(i/4), 0, i, 0, 0]; S1[i, j] -> [floor(i/4), floor(j/4), i, 1, j]; "
        "S2[i] -> [floor(i/4), 0, i, 2, 0] }"))
    assert not report.legal
    flow = next(v for v in report.violations if v.dependence.kind == "flow")
    assert re.match(r"S1\[i=\d+, j=\d+\] writes x\[\d+\] that S2\[i=\d+\] reads, but the new "
                    r"schedule runs the reader first \(when N=\d+\)", flow.explain())
    # the division of x[j] one wavefront late (2j + 1): S1[j + 1, j] reads x[j] on that
    # wavefront, before the division
    report = po.check(trisolv, schedule=(
        "{ S0[i] -> [i, 0, i]; S1[i, j] -> [i + j, 1, i]; S2[i] -> [2i + 1, 2, i] }"))
    assert not report.legal
    assert any(v.sink.startswith("S1[") and v.source.startswith("S2[")
               for v in report.violations)


def test_report_of_a_time_tiled_schedule_names_its_tile_loops():
    report = po.check(seidel_2d, schedule="{ S0[t, i, j] -> [floor(t/2), floor((t + i)/4), "
                      "floor((2t + i + j)/3), t, t + i, 2t + i + j] }")
    assert report.legal
    for line in str(report).splitlines():
        assert line.count("(") == line.count(")"), line
