"""Loop primitives: split, tile, reorder, fuse, skew, shift, reverse, transform and the
loop kinds (parallel, vectorize, unroll).

For each: the loops (isl maps of the schedule, stage axes, lowered text), the numbers
(against NumPy and bit for bit against the default schedule, on fixed sizes the factors
do not divide and on symbolic sizes including 0 and 1) and the refusals.
"""

import re

import numpy as np
import pytest

import polyopt as po
from testlib.errors import pair, refused
from testlib.numeric import assert_numbers
from testlib.schedules import assert_loops, axis_names, lowered, rand, run


def elementwise(n, m, dtype="float32"):
    A = po.placeholder((n, m), name="A", dtype=dtype)
    B = po.compute((n, m), lambda i, j: A[i, j] * 2 + 1, name="B")
    return A, B


def matmul(M, N, K):
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def symbolic():
    return po.var("n"), po.var("m")


SIZES = [(0, 3), (1, 1), (5, 7), (10, 9), (13, 4)]


def check_elementwise(s, A, B, sizes=SIZES):
    """Numbers of ``s`` for ``B = 2A + 1`` on every size: NumPy and the default schedule."""
    default = po.create_schedule(B)
    for n, m in sizes:
        a = rand(n, m)
        got = run(s, [A, B], [a], n=n, m=m)
        assert_numbers(got, a * 2 + 1, exact=True)
        assert_numbers(got, run(default, [A, B], [a], n=n, m=m), exact=True)


def check_matmul(s, A, B, C, m, n, k):
    """Small integers in float32: every sum is exact whatever the order (or contraction
    into fused multiply-adds), so the results must equal NumPy's and the default's."""
    a, b = rand(m, k, dtype="int32").astype("float32"), rand(k, n, dtype="int32").astype("float32")
    got = run(s, [A, B, C], [a, b], M=m, N=n, K=k)
    assert_numbers(got, a @ b, exact=True)
    assert_numbers(got, run(po.create_schedule(C), [A, B, C], [a, b], M=m, N=n, K=k),
                   exact=True)


# -- split ---------------------------------------------------------------------------------

def test_split_factor_loops():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    outer, inner = s[B].split(B.op.axis[0], factor=4)
    assert (outer.name, inner.name) == ("i.outer", "i.inner")
    assert axis_names(s[B]) == ["i.outer", "i.inner", "j"]
    assert_loops(s, "B", "{ B[i, j] -> [floor(i/4), i mod 4, j] }")
    text = lowered(s, [A, B])
    assert "for (i_outer = 0; i_outer <= floord(n - 1, 4); i_outer += 1)" in text
    assert "for (i_inner = 0; i_inner <= min(3, n - 4 * i_outer - 1); i_inner += 1)" in text
    assert text.index("for (i_outer") < text.index("for (i_inner") < text.index("for (j")


@pytest.mark.parametrize("factor", [1, 3, 4, 16])
def test_split_numbers_with_factors_that_do_not_divide(factor):
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].split(B.op.axis[1], factor=factor)
    check_elementwise(s, A, B)


def test_split_fixed_size_not_divided():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    s[B].split(B.op.axis[1], factor=3)
    text = lowered(s, [A, B])
    assert "i_outer < 3" in text and "j_outer < 3" in text
    a = rand(10, 7)
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


def test_split_nparts():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    outer, inner = s[B].split(B.op.axis[0], nparts=3)
    assert_loops(s, "B", "{ B[i, j] -> [floor(i/4), i mod 4, j] }")  # ceil(10 / 3) = 4
    assert "for (i_outer = 0; i_outer < 3; i_outer += 1)" in lowered(s, [A, B])
    a = rand(10, 7)
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


@pytest.mark.parametrize("nparts", [1, 2, 7, 10, 25])
def test_split_nparts_numbers(nparts):
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], nparts=nparts)
    a = rand(10, 7)
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


def test_split_nparts_of_a_parametric_extent():
    """TVM's factor ceil(n / parts), exact: one affine piece per part."""
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    outer, inner = s[B].split(B.op.axis[0], nparts=3)
    f = po.build(s, [A, B])
    rng = np.random.default_rng(3)  # not the module's stream: later tests keep their data
    for rows in (1, 2, 3, 7, 10):
        a = rng.standard_normal((rows, 5)).astype("float32")
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_array_equal(b, a * 2 + 1)
    with pytest.raises(po.SymbolicSplitError) as refused:
        s[B].split(B.op.axis[1], nparts=65)
    assert (refused.value.loop, refused.value.nparts, refused.value.tiled_loop) == ("j", 65,
                                                                                     None)



def _split_outer_repeatedly(s, stage, axis, times):
    for _ in range(times):
        axis, _inner = s[stage].split(axis, factor=2)


def test_nested_splits_of_a_symbolic_loop_lower_to_one_loop_per_level():
    """Splitting the outer loop 12 times over: 13 nested loops and no case split (the
    schedule band was isl's conversion of the row map, one piece per disjunct: the
    code doubled with each split, 44 KB and 2 s at 7 splits, over a minute at 10)."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2, name="B")
    s = po.create_schedule(B)
    _split_outer_repeatedly(s, B, B.op.axis[0], 12)
    levels = ", ".join(f"floor(i/{2 ** k}) mod 2" for k in range(11, 0, -1))
    assert_loops(s, "B", f"{{ B[i] -> [floor(i/4096), {levels}, i mod 2] }}")
    text = lowered(s, [A, B])
    assert text.count("for (") == 13 and "if (" not in text and len(text) < 12000, text
    f = po.build(s, [A, B])
    for size in (0, 1, 3, 4095, 4096, 4097, 6001):
        a = rand(size)
        b = np.full(size, np.nan, dtype="float32")
        f(a, b)
        np.testing.assert_array_equal(b, a * 2)


def test_nested_splits_of_a_fused_loop_address_the_arrays_once():
    """Ten splits of a fused 256 x 256 loop (the levels end on the row boundary, so no
    flat offset is needed; 80 s to lower before, most of it isl's inverse of the row)
    and six (a flat offset: the row is cut inside a level)."""
    for times, flat in ((10, False), (6, True)):
        A = po.placeholder((256, 256), name="A")
        B = po.compute((256, 256), lambda i, j: A[i, j] * 2 + 1, name="B")
        s = po.create_schedule(B)
        _split_outer_repeatedly(s, B, s[B].fuse(*B.op.axis), times)
        text = lowered(s, [A, B])
        assert text.count("for (") == times + 1 and "if (" not in text, text
        assert ("B.flat[" in text) == flat, text
        a = rand(256, 256)
        np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


N_, M_, T_ = po.var("N"), po.var("M"), po.var("T")


@po.kernel
def _two_nests_in_a_time_loop(A: po.f64[N_], y: po.f64[M_]):
    for t in range(T_):
        for i in range(2, N_ - 2):
            A[i] += A[i - 1] * 0.5
        for q in range(M_):
            y[q] = y[q] * 0.5 + 1.0


def test_split_nparts_of_a_shared_loop_covers_every_statement_in_it():
    """The parts of a symbolic loop come from every statement that runs in it: with the
    first nest empty (N < 5) the second still runs every time step (a defect found by
    the slow property run: the parts covered only the first nest's steps)."""
    s = po.create_schedule(_two_nests_in_a_time_loop)
    s["S0"].split("t", nparts=3)
    f = po.build(s)
    for n, m, steps in ((3, 4, 7), (8, 3, 5), (6, 0, 4), (9, 2, 1)):
        a = np.arange(n, dtype="float64")
        y = np.ones(m)
        want_a, want_y = a.copy(), y.copy()
        for _ in range(steps):
            for i in range(2, n - 2):
                want_a[i] += want_a[i - 1] * 0.5
            want_y = want_y * 0.5 + 1.0
        f(a, y, N=n, M=m, T=steps)
        np.testing.assert_array_equal(a, want_a)
        np.testing.assert_array_equal(y, want_y)


@po.kernel
def _shifted_time_loop(A: po.f64[N_]):
    for t in range(T_):
        for i in range(2, N_ - 2):
            A[i] += A[i - 1] * 0.5


def test_split_nparts_of_a_shifted_loop_starts_at_its_first_value():
    """A loop shifted to start at -1 where it runs and at 0 where its nest is empty
    (N < 5): its first value is piecewise constant, and the parts start at -1 (a defect
    found by the slow property run, c-steps 100960: the parts started at 0, so the
    first time step was left out and lowering failed). The schedule check now refuses
    any schedule that leaves out instances (``ensure_every_instance``)."""
    s = po.create_schedule(_shifted_time_loop)
    s["S0"].shift("t", -1)
    s["S0"].split("t", nparts=4)
    f = po.build(s)
    for n, steps in ((8, 5), (6, 1), (3, 4), (9, 9)):
        a = np.arange(n, dtype="float64")
        want = a.copy()
        for _ in range(steps):
            for i in range(2, n - 2):
                want[i] += want[i - 1] * 0.5
        f(a, N=n, T=steps)
        np.testing.assert_array_equal(a, want)


@pytest.mark.parametrize("kwargs, message", [
    ({"factor": 0}, "factor must be a positive integer, got 0"),
    ({"factor": -2}, "factor must be a positive integer, got -2"),
    ({"factor": 2.0}, "factor must be a positive integer, got 2.0"),
    ({"factor": True}, "factor must be a positive integer, got True"),
    ({"nparts": 0}, "nparts must be a positive integer, got 0"),
    ({}, "split needs exactly one of factor= or nparts="),
    ({"factor": 2, "nparts": 2}, "split needs exactly one of factor= or nparts="),
])
def test_split_invalid_arguments(kwargs, message):
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match=message):
        s[B].split(B.op.axis[0], **kwargs)


def test_unknown_loop_names_the_loops():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    with pytest.raises(po.UnknownLoopError) as unknown:
        s[B].split("x", factor=2)
    assert (unknown.value.stage, unknown.value.loop, unknown.value.loops) == ("B", "x",
                                                                               ("i", "j"))
    other = po.compute((3,), lambda i: i * 1.0, name="other")
    with pytest.raises(po.ForeignAxisError) as foreign:
        s[B].split(other.op.axis[0], factor=2)
    assert (foreign.value.stage, foreign.value.axis) == ("B", "i")
    assert isinstance(foreign.value, po.InvalidArgumentError)


def test_split_names_stay_unique():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=8)
    io2, ii2 = s[B].split(ii, factor=2)
    assert axis_names(s[B]) == ["i.outer", "i.inner.outer", "i.inner.inner", "j"]
    assert_loops(s, "B", "{ B[i, j] -> [floor(i/8), floor((i mod 8)/2), i mod 2, j] }")
    check_elementwise(s, A, B)


# -- tile ----------------------------------------------------------------------------------

def test_tile_loops():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], 4, 3)
    assert [a.name for a in (xo, yo, xi, yi)] == ["i.outer", "j.outer", "i.inner", "j.inner"]
    assert axis_names(s[B]) == ["i.outer", "j.outer", "i.inner", "j.inner"]
    assert_loops(s, "B", "{ B[i, j] -> [floor(i/4), floor(j/3), i mod 4, j mod 3] }")
    text = lowered(s, [A, B])
    order = [text.index(f"for ({v}") for v in ("i_outer", "j_outer", "i_inner", "j_inner")]
    assert order == sorted(order)


@pytest.mark.parametrize("factors", [(1, 1), (2, 5), (4, 4), (8, 3)])
def test_tile_numbers(factors):
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].tile(B.op.axis[0], B.op.axis[1], *factors)
    check_elementwise(s, A, B)


@pytest.mark.parametrize("sizes", [(7, 5, 3), (8, 8, 8), (1, 9, 2), (0, 4, 4), (5, 3, 0)])
def test_tiled_matmul_numbers(sizes):
    A, B, C = matmul(po.var("M"), po.var("N"), po.var("K"))
    s = po.create_schedule(C)
    s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    assert axis_names(s[C]) == ["i.outer", "j.outer", "i.inner", "j.inner", "k.outer",
                                "k.inner"]
    check_matmul(s, A, B, C, *sizes)


def test_tile_needs_adjacent_loops():
    A, B, C = matmul(6, 6, 6)
    s = po.create_schedule(C)
    with pytest.raises(po.LoopsNotAdjacentError) as refused:
        s[C].tile(C.op.axis[0], C.op.reduce_axis[0], 2, 2)
    assert (refused.value.primitive, refused.value.loops) == ("tile", ("i", "k"))
    with pytest.raises(po.LoopsNotAdjacentError) as refused:
        s[C].tile(C.op.axis[1], C.op.axis[0], 2, 2)
    assert (refused.value.stage, refused.value.loops) == ("C", ("j", "i"))


# -- reorder -------------------------------------------------------------------------------

def test_reorder_loops_and_numbers():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].reorder(B.op.axis[1], B.op.axis[0])
    assert axis_names(s[B]) == ["j", "i"]
    assert_loops(s, "B", "{ B[i, j] -> [j, i] }")
    text = lowered(s, [A, B])
    assert text.index("for (j = 0; j < m") < text.index("for (i = 0; i < n")
    check_elementwise(s, A, B)


def test_reorder_reduction_outermost():
    """k outermost: the init of each element runs before all updates (legal)."""
    A, B, C = matmul(po.var("M"), po.var("N"), po.var("K"))
    s = po.create_schedule(C)
    s[C].reorder(C.op.reduce_axis[0], C.op.axis[0], C.op.axis[1])
    assert_loops(s, "C_update", "{ C_update[i, j, k] -> [k, i, j] }")
    for sizes in [(3, 4, 5), (1, 1, 1), (4, 2, 0)]:
        check_matmul(s, A, B, C, *sizes)


def test_reorder_subset_keeps_other_positions():
    A, B, C = matmul(4, 5, 6)
    s = po.create_schedule(C)
    s[C].tile(C.op.axis[0], C.op.axis[1], 2, 2)
    s[C].reorder("j.inner", "k", "i.inner")
    assert axis_names(s[C]) == ["i.outer", "j.outer", "j.inner", "k", "i.inner"]
    check_matmul(s, A, B, C, 4, 5, 6)


def test_reorder_listing_a_loop_twice():
    A, B = elementwise(4, 4)
    s = po.create_schedule(B)
    with pytest.raises(po.DuplicateLoopError) as refused:
        s[B].reorder(B.op.axis[0], B.op.axis[0])
    assert (refused.value.primitive, refused.value.loops) == ("reorder", ("i", "i"))


# -- fuse ----------------------------------------------------------------------------------

def test_fuse_constant_extents():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1])
    assert fused.name == "i.j.fused" and axis_names(s[B]) == ["i.j.fused"]
    assert_loops(s, "B", "{ B[i, j] -> [7i + j] }")
    assert "for (i_j_fused = 0; i_j_fused < 70; i_j_fused += 1)" in lowered(s, [A, B])
    a = rand(10, 7)
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


def test_fuse_after_split_of_a_parametric_loop():
    """The inner loop of a split has a constant extent, so fusing works for any size."""
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=3)
    s[B].reorder(B.op.axis[1], io, ii)
    fused = s[B].fuse(io, ii)
    assert fused.name == "i.outer.i.inner.fused"
    assert axis_names(s[B]) == ["j", "i.outer.i.inner.fused"]
    assert_loops(s, "B", "{ B[i, j] -> [j, i] }")
    check_elementwise(s, A, B)
    s2 = po.create_schedule(B)  # both extents symbolic: the two loops run as one
    jo, ji = s2[B].split(B.op.axis[1], factor=4)
    fused = s2[B].fuse(B.op.axis[0], jo)
    assert axis_names(s2[B]) == ["i.j.outer.fused", "j.inner"]
    assert [a.name for a in s2.program.stage("B").axes] == [
        "i.j.outer.fused", "i.j.outer.fused.part", "j.inner"]
    s2[B].parallel(fused)
    assert_loops(s2, "B", "{ B[i, j] -> [i, floor(j / 4), j mod 4] }")
    check_elementwise(s2, A, B)


def test_fuse_of_two_parametric_extents_runs_the_two_loops_as_one():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1])
    assert axis_names(s[B]) == ["i.j.fused"]
    assert [(a.name, a.fused_part) for a in s.program.stage("B").axes] == [
        ("i.j.fused", False), ("i.j.fused.part", True)]
    for change in (lambda: s[B].split(fused, factor=4), lambda: s[B].vectorize(fused),
                   lambda: s[B].unroll(fused), lambda: s[B].fuse(fused, fused)):
        with pytest.raises(po.FusedPartsError) as refused:
            change()
        assert (refused.value.stage, refused.value.loop) == ("B", "i.j.fused")
    s[B].parallel(fused)
    assert s.program.stage("B").axes[0].kind == "parallel"
    check_elementwise(s, A, B)


def test_a_fuse_of_two_parametric_extents_is_reordered_as_one_loop():
    n, m = symbolic()
    A = po.placeholder((n, m, 3), name="A")
    B = po.compute((n, m, 3), lambda i, j, k: A[i, j, k] * 2.0 + 1.0, name="B")
    s = po.create_schedule(B)
    fused = s[B].fuse(B.op.axis[0], B.op.axis[1])
    ko, ki = s[B].split(B.op.axis[2], factor=2)
    s[B].reorder(ki, fused, ko)
    assert [(a.name, a.fused_part) for a in s.program.stage("B").axes] == [
        ("k.inner", False), ("i.j.fused", False), ("i.j.fused.part", True), ("k.outer", False)]
    assert axis_names(s[B]) == ["k.inner", "i.j.fused", "k.outer"]
    s[B].parallel(fused)
    s2 = po.create_schedule(B)
    fused2 = s2[B].fuse(B.op.axis[0], B.op.axis[1])
    s2[B].reorder(B.op.axis[2], fused2)
    assert axis_names(s2[B]) == ["k", "i.j.fused"]
    with pytest.raises(po.FusedPartsError):
        s2[B].reorder("i.j.fused.part", "k")  # the hidden part is not a loop of its own
    for sizes in ((0, 2), (1, 1), (4, 5), (7, 3)):
        a = rand(sizes[0], sizes[1], 3)
        for schedule in (s, s2):
            assert_numbers(run(schedule, [A, B], [a], n=sizes[0], m=sizes[1]), a * 2 + 1,
                           exact=True)


def test_fuse_needs_adjacent_loops():
    A, B, C = matmul(4, 4, 4)
    s = po.create_schedule(C)
    with pytest.raises(po.LoopsNotAdjacentError) as refused:
        s[C].fuse(C.op.axis[0], C.op.reduce_axis[0])
    assert (refused.value.primitive, refused.value.loops) == ("fuse", ("i", "k"))


def test_fuse_split_roundtrip_on_a_reduction():
    A, B, C = matmul(6, 5, 7)
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s[C].fuse(ko, ki)  # the same order of k as the default
    check_matmul(s, A, B, C, 6, 5, 7)


# -- skew, shift ---------------------------------------------------------------------------

@pytest.mark.parametrize("factor", [1, 2, -1, -3])
def test_skew_loops_and_numbers(factor):
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].skew(B.op.axis[0], B.op.axis[1], factor)
    assert_loops(s, "B", f"{{ B[i, j] -> [i, j + {factor} * i] }}")
    check_elementwise(s, A, B)


def test_skew_lowered_bounds():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    s[B].skew(B.op.axis[0], B.op.axis[1], 2)
    text = lowered(s, [A, B])
    assert "for (j = 2 * i; j <= 2 * i + 6; j += 1)" in text
    assert "B[i, (j - 2 * i)]" in text


def test_skew_invalid():
    A, B = elementwise(4, 4)
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidFactorError) as refused:
        s[B].skew(B.op.axis[0], B.op.axis[1], 0)
    assert (refused.value.what, refused.value.value) == ("skew factor", 0)
    with pytest.raises(po.LoopOrderError) as refused:
        s[B].skew(B.op.axis[1], B.op.axis[0])
    assert (refused.value.outer, refused.value.inner) == ("j", "i")


@pytest.mark.parametrize("offset", [3, -2, 0])
def test_shift_loops_and_numbers(offset):
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].shift(B.op.axis[0], offset)
    assert_loops(s, "B", f"{{ B[i, j] -> [i + {offset}, j] }}")
    check_elementwise(s, A, B)


def test_shift_invalid():
    A, B = elementwise(4, 4)
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match="shift offset must be an integer"):
        s[B].shift(B.op.axis[0], 1.5)


# -- reverse -------------------------------------------------------------------------------

def test_reverse_independent_loop():
    A, B = elementwise(10, 7)
    s = po.create_schedule(B)
    s[B].reverse(B.op.axis[0])
    assert_loops(s, "B", "{ B[i, j] -> [-i, j] }")
    text = lowered(s, [A, B])
    assert "for (i = -9; i < 1; i += 1)" in text and "B[(-i), j]" in text
    a = rand(10, 7)
    np.testing.assert_array_equal(run(s, [A, B], [a]), a * 2 + 1)


def test_reverse_numbers_symbolic():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].reverse(B.op.axis[1])
    s[B].reverse(B.op.axis[0])
    check_elementwise(s, A, B)


def test_reverse_reduction_loop_is_refused():
    """The updates of a sum depend on each other (exact dependences, no reassociation
    with strict_fp=True; by default a reduction may accumulate in any order)."""
    A, B, C = matmul(po.var("M"), po.var("N"), po.var("K"))
    assert po.create_schedule(C)[C].can_reverse(C.op.reduce_axis[0])
    s = po.create_schedule(C, strict_fp=True)
    with pytest.raises(po.IllegalScheduleError) as info:
        s[C].reverse(C.op.reduce_axis[0])
    message = str(info.value)
    assert message.startswith('s["C"].reverse("k") is illegal: ')
    assert ("C_update[i=0, j=0, k=0] writes C[0, 0] that C_update[i=0, j=0, k=1] reads, "
            "but the new schedule runs the reader first") in message
    assert "[flow dependence C_update -> C_update through C; dependence distance (0, 0, 1)]" \
        in message
    assert "when M=1" in message and "K=2" in message
    assert info.value.violation.dependence.kind == "flow"
    assert s.steps == [] and axis_names(s[C]) == ["i", "j", "k"]
    # the spatial loops of the same reduction are independent
    s[C].reverse(C.op.axis[1])
    check_matmul(s, A, B, C, 3, 4, 5)


def test_reverse_of_a_recurrence_is_refused():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    k = po.reduce_axis((0, n), name="k")
    P = po.compute((n,), lambda i: po.sum(po.if_then_else(k <= i, A[k], 0.0), axis=k),
                   name="P")
    s = po.create_schedule(P, strict_fp=True)
    s[P].reverse(P.op.axis[0])  # each prefix is independent
    a = rand(9)
    np.testing.assert_allclose(run(s, [A, P], [a], n=9), np.cumsum(a), rtol=1e-5)
    err = refused(po.DependenceViolationError, lambda: s[P].reverse(P.op.reduce_axis[0]))
    assert err.transform == 's["P"].reverse("k")'
    assert re.fullmatch(r"P_update\[i=(\d+), k=0\] P_update\[i=\1, k=1\] P\[\1\]",
                        " ".join(pair(err))), pair(err)


# -- transform -----------------------------------------------------------------------------

def test_transform_interchange_map():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    axes = s[B].transform("{ [i, j] -> [j, i] }")
    assert len(axes) == 2
    assert_loops(s, "B", "{ B[i, j] -> [j, i] }")
    check_elementwise(s, A, B)


def test_transform_names_the_new_loops():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].transform("{ [a, b] -> [x = b, y = a + b] }")
    assert axis_names(s[B]) == ["x", "y"]
    assert_loops(s, "B", "{ B[i, j] -> [j, i + j] }")
    assert "for (x = 0; x < m; x += 1)" in lowered(s, [A, B])
    check_elementwise(s, A, B)


def test_transform_after_split_and_projection():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    s[B].transform("{ [a, b, c] -> [c, a, -b] }")
    assert_loops(s, "B", "{ B[i, j] -> [j, floor(i/4), -(i mod 4)] }")
    check_elementwise(s, A, B)


def test_transform_illegal_map_is_refused_with_repair():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n,), lambda i: po.sum(A[k], axis=k), name="S")
    s = po.create_schedule(S, strict_fp=True)
    err = refused(po.DependenceViolationError, lambda: s[S].transform("{ [i, k] -> [i, -k] }"))
    assert pair(err) == ("S_update[i=0, k=0]", "S_update[i=0, k=1]", "S[0]")
    assert err.violation.dependence.kind == "flow"


@pytest.mark.parametrize("relation, message", [
    ("{ [a] -> [a] }", r"the map has 1 input dimension\(s\) but stage 'B' has 2 loops \(i, j\)"),
    ("{ [a, b] -> [a, c] }", "is not a function"),
    ("{ [a, b] -> [a, b", "cannot parse the map"),
    ("{ [a, b] -> [a + b, a] : a > 0 }",
     r"is not defined for every iteration of stage 'B' \(not for B\[i=0, j=0\]"),
])
def test_transform_invalid_maps(relation, message):
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match=message):
        s[B].transform(relation)
    assert s.steps == []


def test_transform_restricted_map_covering_every_iteration():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].transform("{ [a, b] -> [b, a] : a >= 0 and b >= 0 }")
    check_elementwise(s, A, B)


# -- loop kinds ----------------------------------------------------------------------------

def test_loop_kinds_in_the_lowered_text():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    assert s[B].parallel(io).kind == "parallel"
    assert s[B].unroll(ii).kind == "unrolled"
    assert s[B].vectorize(B.op.axis[1]).kind == "vectorized"
    assert [a.kind for a in s[B].axes] == ["parallel", "unrolled", "vectorized"]
    lines = lowered(s, [A, B]).splitlines()
    for pragma, loop in [("#pragma parallel", "for (i_outer"), ("#pragma unrolled", "for (i_inner"),
                         ("#pragma vectorized", "for (j ")]:
        k = next(n for n, line in enumerate(lines) if line.strip().startswith(loop))
        assert lines[k - 1].strip() == pragma, lines
    check_elementwise(s, A, B)


def test_parallel_matmul_outer_loops():
    A, B, C = matmul(po.var("M"), po.var("N"), po.var("K"))
    s = po.create_schedule(C)
    s[C].parallel(C.op.axis[0])
    s[C].vectorize(C.op.axis[1])
    s[C].unroll(C.op.reduce_axis[0])  # unrolling keeps the order: always legal
    text = lowered(s, [A, B, C])
    assert text.count("#pragma") == 3
    for sizes in [(9, 7, 5), (1, 1, 1), (0, 2, 3), (16, 3, 2)]:
        check_matmul(s, A, B, C, *sizes)


def test_split_outer_part_of_a_parallel_loop_stays_parallel():
    A, B = elementwise(*symbolic())
    s = po.create_schedule(B)
    s[B].parallel(B.op.axis[0])
    io, ii = s[B].split(B.op.axis[0], factor=3)
    assert (io.kind, ii.kind) == ("parallel", "serial")
    check_elementwise(s, A, B)


def test_parallel_on_a_carried_loop_names_the_free_loops():
    N = po.var("N")

    @po.kernel
    def rows_prefix(X: po.f64[N, N]):
        for i in range(N):
            for j in range(1, N):
                X[i, j] += X[i, j - 1]

    s = po.create_schedule(rows_prefix)
    with pytest.raises(po.IllegalScheduleError) as info:
        s["S0"].parallel("j")
    message = str(info.value)
    assert message.startswith('s["S0"].parallel("j") is illegal: parallel loop \'j\' carries '
                              "a dependence between its iterations: ")
    assert "S0[i=0, j=1] writes X[0, 1] that S0[i=0, j=2] reads" in message
    assert "dependence distance (0, 1)" in message
    assert message.endswith("Repair: use a loop that carries no dependence: i")
    assert not s[s.stages[0]].can_vectorize("j")
    s["S0"].parallel("i")
    x = np.random.default_rng(0).random((6, 6))
    expected = np.cumsum(x, axis=1)
    po.build(s)(x)
    np.testing.assert_allclose(x, expected)


def test_loop_marked_parallel_is_rechecked_when_fused():
    """A loop marked parallel must still carry nothing after later primitives."""
    N = po.var("N")

    @po.kernel
    def rows_prefix(X: po.f64[N, N]):
        for i in range(N):
            for j in range(1, N):
                X[i, j] += X[i, j - 1]

    s = po.create_schedule(rows_prefix)
    io, ii = s["S0"].split("i", factor=2)
    jo, ji = s["S0"].split("j", factor=2)
    s["S0"].reorder(io, jo, ii, ji)
    s["S0"].vectorize(ii)
    with pytest.raises(po.IllegalScheduleError) as info:
        s["S0"].fuse(ii, ji)
    message = str(info.value)
    assert message.startswith('s["S0"].fuse("i.inner", "j.inner") is illegal: vectorized loop '
                              "'i.inner.j.inner.fused' carries a dependence")
    assert "'i.inner.j.inner.fused' is marked vectorized: transform the loops first" in message
    assert [a.name for a in s["S0"].axes][-2:] == ["i.inner", "j.inner"]
