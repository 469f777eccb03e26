"""Where stages are computed: compute_with, compute_at, compute_inline, compute_root."""

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from testlib.errors import pair, refused
from testlib.numeric import assert_numbers
from testlib.schedules import assert_loops, axis_names, irand, lowered, rand, run


def neighbour_sum(n):
    """B = 2A; C[i] = B[i] + B[i + 1] (C reads an element of B produced one step later)."""
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2, name="B")
    C = po.compute((n - 1,), lambda i: B[i] + B[i + 1], name="C")
    return A, B, C


SHIFT_REPAIR = ("Repair: shift the reader first: s['C'].shift('i', 1) makes each iteration "
                "of 'i' read what earlier iterations produced")


# -- compute_with ------------------------------------------------------------------------------

def test_compute_with_reading_a_later_element_is_refused_with_shift_repair():
    A, B, C = neighbour_sum(po.var("n"))
    s = po.create_schedule(C)
    assert not s[B].can_compute_with(s[C], C.op.axis[0])
    with pytest.raises(po.IllegalScheduleError) as info:
        s[B].compute_with(s[C], C.op.axis[0])
    assert str(info.value) == (
        's["B"].compute_with("C", "i") is illegal: B[i=1] writes B[1] that C[i=0] reads, but '
        "the new schedule runs the reader first (when n=2) [flow dependence B -> C through B]. "
        + SHIFT_REPAIR)
    assert s.steps == [] and s.program.stage("B").attach.kind == "root"


@pytest.mark.parametrize("symbolic", [True, False])
def test_compute_with_accepted_after_shift(symbolic):
    A, B, C = neighbour_sum(po.var("n") if symbolic else 9)
    s = po.create_schedule(C)
    s[C].shift(C.op.axis[0], 1)
    s[B].compute_with(s[C], C.op.axis[0])
    assert s.program.stage("B").attach.stage == "C" and s.program.stage("B").attach.depth == 1
    assert_loops(s, "C", "{ C[i] -> [i + 1] }")
    assert_loops(s, "B", "{ B[i] -> [i] }")
    text = lowered(s, [A, C])
    assert text.count("for (") == 1  # one loop computes both
    body = text[text.index("for ("):]
    assert body.index("B[i] = A[i] * 2;") < body.index("C[(i - 1)] = B[(i - 1)] + B[(i - 1) + 1];")
    for n in ([1, 2, 3, 9, 16] if symbolic else [9]):
        a = rand(n)
        got = run(s, [A, C], [a], n=n)
        np.testing.assert_array_equal(got, a[:-1] * 2 + a[1:] * 2)
        np.testing.assert_array_equal(got, run(po.create_schedule(C), [A, C], [a], n=n))


def test_fused_loop_carries_the_producer_consumer_dependence():
    """After the shift, iteration i + 1 reads what iteration i produced: the shared loop
    (and any part of it) cannot be parallel; splitting it splits both stages."""
    A, B, C = neighbour_sum(po.var("n"))
    s = po.create_schedule(C)
    s[C].shift(C.op.axis[0], 1)
    s[B].compute_with(s[C], C.op.axis[0])
    for stage in (B, C):
        with pytest.raises(po.IllegalScheduleError) as info:
            s[stage].parallel("i")
        assert ("carries a dependence between its iterations: B[i=0] writes B[0] that C[i=0] "
                "reads, in another iteration of that loop (when n=2) [flow dependence B -> C "
                "through B]") in str(info.value)
    io, ii = s[C].split(C.op.axis[0], factor=3)
    assert axis_names(s[B]) == axis_names(s[C]) == ["i.outer", "i.inner"]
    assert not s[C].can_parallel(ii)
    err = refused(po.DependenceViolationError, lambda: s[C].reorder(ii, io))
    assert err.transform == 's["C"].reorder("i.inner", "i.outer")'
    assert pair(err) == ("B[i=2]", "C[i=2]", "B[2]")
    text = lowered(s, [A, C])
    assert text.count("for (") == 2
    for n in (1, 2, 5, 10):
        a = rand(n)
        np.testing.assert_array_equal(run(s, [A, C], [a], n=n), a[:-1] * 2 + a[1:] * 2)


def test_consumer_computed_with_a_reduction():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
    E = po.compute((n,), lambda i: S[i] * 2, name="E")
    s = po.create_schedule(E)
    s[E].compute_with(s[S], S.op.axis[0])
    text = lowered(s, [A, E])
    assert text.count("for (") == 2
    # S is contracted to the one element each iteration of i uses
    assert "float32 S[1];" in text
    assert text.index("S[0] = 0.0f;") < text.index("for (k") < text.index("E[i] = S[0] * 2;")
    s[E].parallel(E.op.axis[0])  # each row is independent
    a = irand(6, 6)
    np.testing.assert_array_equal(run(s, [A, E], [a], n=6), a.sum(axis=1) * 2)


def test_sibling_fusion_with_a_backward_dependence_is_refused():
    """Two outputs; the second reads the first at i + 1: fused in either direction, the
    reader of iteration i would run before the write of element i + 1."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1, name="B")
    D = po.compute((n - 1,), lambda i: B[i + 1] * 3, name="D")
    s = po.create_schedule([B, D])
    expected = ("B[i=1] writes B[1] that D[i=0] reads, but the new schedule runs the reader "
                "first (when n=2) [flow dependence B -> D through B]. Repair: shift the reader "
                "first: s['D'].shift('i', 1)")
    for stage, other in ((B, D), (D, B)):
        with pytest.raises(po.IllegalScheduleError) as info:
            s[stage].compute_with(s[other], other.op.axis[0])
        assert expected in str(info.value)
        assert str(info.value).startswith(f's["{stage.name}"].compute_with("{other.name}", "i")')
    s[D].shift(D.op.axis[0], 1)
    s[D].compute_with(s[B], B.op.axis[0])
    assert lowered(s, [A, B, D]).count("for (") == 1
    for size in (1, 2, 7):
        a = rand(size)
        b, d = run(s, [A, B, D], [a], n=size)
        np.testing.assert_array_equal(b, a + 1)
        np.testing.assert_array_equal(d, (a[1:] + 1) * 3)


def test_independent_siblings_fuse_without_shift():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] + 1, name="B")
    D = po.compute((n, n), lambda i, j: A[j, i] * 2, name="D")
    s = po.create_schedule([B, D])
    s[D].compute_with(s[B], B.op.axis[1])  # share both loops
    text = lowered(s, [A, B, D])
    assert text.count("for (") == 2
    for size in (0, 1, 5):
        a = rand(size, size)
        b, d = run(s, [A, B, D], [a], n=size)
        np.testing.assert_array_equal(b, a + 1)
        np.testing.assert_array_equal(d, a.T * 2)


def test_compute_with_twice_is_the_same_as_once():
    """Attaching an attached stage again re-attaches it (it used to attach it to itself
    and recurse forever)."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1, name="B")
    C = po.compute((n,), lambda i: A[i] * 2, name="C")
    s = po.create_schedule([B, C])
    s[B].compute_with(s[C], C.op.axis[0])
    once = lowered(s, [A, B, C])
    s[B].compute_with(s[C], C.op.axis[0])
    assert lowered(s, [A, B, C]) == once
    assert s.program.stage("B").attach.stage == "C"
    a = rand(6)
    b, c = run(s, [A, B, C], [a], n=6)
    np.testing.assert_array_equal(b, a + 1)
    np.testing.assert_array_equal(c, a * 2)


def test_compute_with_a_stage_nested_inside_is_a_cycle():
    A, B, C = neighbour_sum(po.var("n"))
    s = po.create_schedule(C)
    s[C].shift(C.op.axis[0], 1)
    s[B].compute_with(s[C], C.op.axis[0])
    with pytest.raises(po.AttachCycleError) as refused:
        s[C].compute_with(s[B], B.op.axis[0])
    assert (refused.value.producer, refused.value.consumer) == ("C", "B")


def test_compute_with_cannot_share_a_reduction_loop():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n, n), lambda i, j: po.sum(A[i, k], axis=k), name="S")
    E = po.compute((n, n, n), lambda i, j, l: S[i, j] + 1.0, name="E")
    s = po.create_schedule(E)
    with pytest.raises(po.SharedReductionLoopError) as refused:
        s[S].compute_with(s[E], E.op.axis[2])
    assert (refused.value.stage, refused.value.loop) == ("S", "k")
    s[S].compute_with(s[E], E.op.axis[1])
    a = rand(4, 4)
    np.testing.assert_allclose(run(s, [A, E], [a], n=4),
                               np.repeat(a.sum(1)[:, None, None], 4, 1).repeat(4, 2) + 1,
                               rtol=1e-5)


def test_compute_with_more_loops_than_the_producer_has():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1, name="B")
    C = po.compute((n, n), lambda i, j: B[i] * B[j], name="C")
    s = po.create_schedule(C)
    err = refused(po.NotEnoughLoopsError, lambda: s[B].compute_with(s[C], C.op.axis[1]))
    assert (err.stage, err.count, err.needed, err.shared_with, err.down_to) == (
        "B", 1, 2, "C", "j")


# -- compute_at --------------------------------------------------------------------------------

def padded_conv(H, W):
    A = po.placeholder((H, W), name="A")
    P = po.compute((H + 2, W + 2), lambda i, j: po.if_then_else(
        (i >= 1) & (i <= H) & (j >= 1) & (j <= W), A[i - 1, j - 1], 0.0), name="P")
    Wt = po.placeholder((3, 3), name="Wt")
    ry = po.reduce_axis((0, 3), name="ry")
    rx = po.reduce_axis((0, 3), name="rx")
    C = po.compute((H, W), lambda i, j: po.sum(P[i + ry, j + rx] * Wt[ry, rx], axis=[ry, rx]),
                   name="C")
    return A, P, Wt, C


def conv_reference(a, w):
    h, wd = a.shape
    pad = np.pad(a.astype("float64"), 1)
    return sum(pad[y:y + h, x:x + wd] * w[y, x] for y in range(3) for x in range(3))


def tile_conv(s, C, P, ti, tj):
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], ti, tj)
    s[P].compute_at(s[C], jo)
    return io, jo


def test_compute_at_padding_in_tiled_conv_domain():
    """Per tile, the padding stage computes its (tile + 2) x (tile + 2) halo, clipped at
    the borders of P."""
    H, W = 10, 9
    A, P, Wt, C = padded_conv(H, W)
    s = po.create_schedule(C)
    tile_conv(s, C, P, 4, 4)
    assert axis_names(s[P]) == ["i.outer", "j.outer", "i", "j"]
    assert s.program.stage("P").attach.stage == "C" and s.program.stage("P").attach.depth == 2
    domain = s.program.statement("P").domain
    expected = isl.Set("{ P[io, jo, i, j] : 0 <= io <= 2 and 0 <= jo <= 2 and "
                       "4io <= i <= 4io + 5 and 4jo <= j <= 4jo + 5 and i <= 11 and j <= 10 }")
    assert domain.is_equal(expected), domain
    for io, jo, rows, cols in [(0, 0, 6, 6), (1, 1, 6, 6), (2, 0, 4, 6), (0, 2, 6, 3),
                               (2, 2, 4, 3)]:
        tile = domain.fix_val(isl.dim_type.set, 0, isl.Val(io)).fix_val(
            isl.dim_type.set, 1, isl.Val(jo))
        assert tile.count_val().to_python() == rows * cols
    # overlapping tiles recompute the halo: more instances than elements of P
    assert domain.count_val().to_python() == 6 * (6 + 6 + 3) + 6 * (6 + 6 + 3) + 4 * (6 + 6 + 3)
    text = lowered(s, [A, Wt, C])
    assert "for (i = 4 * i_outer; i <= min(11, 4 * i_outer + 5); i += 1)" in text
    assert "for (j = 4 * j_outer; j <= min(10, 4 * j_outer + 5); j += 1)" in text


def test_compute_at_padding_symbolic_domain():
    H, W = po.var("H"), po.var("W")
    A, P, Wt, C = padded_conv(H, W)
    s = po.create_schedule(C)
    tile_conv(s, C, P, 4, 3)
    expected = isl.Set("[H, W] -> { P[io, jo, i, j] : io >= 0 and jo >= 0 and 4io < H and "
                       "3jo < W and 4io <= i <= 4io + 5 and 3jo <= j <= 3jo + 4 and "
                       "i <= H + 1 and j <= W + 1 }")
    domain = s.program.statement("P").domain
    assert domain.is_equal(expected.align_params(domain.get_space())), domain


@pytest.mark.parametrize("h, w, ti, tj", [(10, 9, 4, 4), (8, 8, 4, 4), (7, 5, 3, 2),
                                          (1, 1, 4, 4), (5, 6, 8, 1), (0, 3, 2, 2)])
def test_compute_at_padding_numbers(h, w, ti, tj):
    H, W = po.var("H"), po.var("W")
    A, P, Wt, C = padded_conv(H, W)
    s = po.create_schedule(C)
    tile_conv(s, C, P, ti, tj)
    a, wt = irand(h, w), irand(3, 3)
    got = run(s, [A, Wt, C], [a, wt], H=h, W=w)
    np.testing.assert_allclose(got, conv_reference(a, wt), rtol=1e-5, atol=1e-5)
    # every P value is the same whichever tile computes it: the default's result exactly
    np.testing.assert_array_equal(got, run(po.create_schedule(C), [A, Wt, C], [a, wt],
                                           H=h, W=w))


def test_compute_at_fixed_size_conv_numbers():
    A, P, Wt, C = padded_conv(10, 9)
    s = po.create_schedule(C)
    tile_conv(s, C, P, 4, 4)
    a, wt = rand(10, 9), rand(3, 3)
    np.testing.assert_allclose(run(s, [A, Wt, C], [a, wt]), conv_reference(a, wt),
                               rtol=1e-5, atol=1e-5)


def stencil_1d(n):
    X = po.placeholder((n,), name="X")
    Y = po.compute((n,), lambda i: X[i] * 3, name="Y")
    Z = po.compute((n,), lambda i: Y[i] + po.if_then_else(i >= 1, Y[i - 1], 0.0), name="Z")
    return X, Y, Z


def test_compute_at_split_loop_with_left_halo():
    X, Y, Z = stencil_1d(po.var("n"))
    s = po.create_schedule(Z)
    zo, zi = s[Z].split(Z.op.axis[0], factor=4)
    s[Y].compute_at(s[Z], zo)
    domain = s.program.statement("Y").domain
    expected = isl.Set("[n] -> { Y[o, i] : o >= 0 and 4o < n and 4o - 1 <= i <= 4o + 3 and "
                       "0 <= i < n }")
    assert domain.is_equal(expected), domain
    assert "for (i = max(0, 4 * i_outer - 1); i <= min(n - 1, 4 * i_outer + 3); i += 1)" \
        in lowered(s, [X, Z])
    for n in (0, 1, 4, 5, 13):
        x = rand(n)
        expected_z = x * 3 + np.concatenate([[0.0], x[:-1] * 3])[:n]
        np.testing.assert_allclose(run(s, [X, Z], [x], n=n), expected_z, rtol=1e-6)


def chain(n):
    X = po.placeholder((n,), name="X", dtype="int32")
    P = po.compute((n,), lambda i: X[i] + 1, name="P")
    Q = po.compute((n,), lambda i: P[i] * 2 + po.if_then_else(i >= 1, P[i - 1], 0), name="Q")
    R = po.compute((n,), lambda i: Q[i] + po.if_then_else(i + 1 < n, Q[i + 1], 0), name="R")
    return X, P, Q, R


@pytest.mark.parametrize("level", ["i", "i.outer"])
def test_compute_at_chain(level):
    """Q per tile of R (with its right halo), P per iteration of Q (with its left halo) or
    per tile."""
    n = po.var("n")
    X, P, Q, R = chain(n)
    s = po.create_schedule(R)
    ro, ri = s[R].split(R.op.axis[0], factor=4)
    s[Q].compute_at(s[R], ro)
    s[P].compute_at(s[Q], level)
    text = lowered(s, [X, R])
    assert "for (i = 4 * i_outer; i <= min(n - 1, 4 * i_outer + 4); i += 1)" in text
    if level == "i":
        assert "for (i_1 = max(0, i - 1); i_1 <= i; i_1 += 1)" in text
    else:
        assert "for (i = max(0, 4 * i_outer - 1); i <= min(n - 1, 4 * i_outer + 4); i += 1)" \
            in text
    default = po.create_schedule(R)
    for size in (0, 1, 4, 5, 9):
        x = irand(size, dtype="int32")
        np.testing.assert_array_equal(run(s, [X, R], [x], n=size),
                                      run(default, [X, R], [x], n=size))


def test_compute_at_refusals():
    X, Y, Z = stencil_1d(po.var("n"))
    s = po.create_schedule(Z)
    zo, zi = s[Z].split(Z.op.axis[0], factor=4)
    s[Y].compute_at(s[Z], zo)
    with pytest.raises(po.AlreadyAttachedError) as info:
        s[Y].compute_at(s[Z], zi)
    assert (info.value.stage, info.value.target) == ("Y", "Z")
    # an output whose tiles do not cover it
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1, name="B")
    C = po.compute((n - 1,), lambda i: B[i] * 2, name="C")
    s2 = po.create_schedule([B, C])
    with pytest.raises(po.PartialOutputError) as info:
        s2[B].compute_at(s2[C], C.op.axis[0])
    assert (info.value.output, info.value.consumer) == ("B", "C")
    # a producer with another reader
    D = po.compute((n - 1,), lambda i: B[i + 1] - 1, name="D")
    s3 = po.create_schedule([C, D])
    s3[B].compute_at(s3[C], C.op.axis[0])  # waits for D to be attached too (as in TVM) ...
    assert [st.name for st in s3.program.stages] == ["B", "C", "D"] and s3.deferred
    err = refused(po.ReaderOutsideError, lambda: po.lower(s3, [A, C, D]))  # ... never happens
    assert (err.producer, err.consumer, err.reader) == ("B", "C", "D")



def test_compute_at_that_makes_a_cycle_waits_and_lowering_refuses_it():
    # TVM accepts s[C].compute_at(s[C], ...) and a two-stage cycle, and refuses them when
    # lowering; polyopt keeps them waiting (deferred, nothing changed) and lowering refuses
    n = po.var("n")
    A = po.compute((n, 4), lambda i, j: po.const(1.0), name="A")
    C = po.compute((n, 4), lambda i, j: A[i, j] + 2.0, name="C")
    s = po.create_schedule(C)
    program = s.program
    s[C].compute_at(s[C], C.op.axis[0])
    assert s.program is program and s.steps == [] and len(s.deferred) == 1
    err = refused(po.AttachCycleError, lambda: po.lower(s, [C]))
    assert (err.producer, err.consumer) == ("C", "C")
    s2 = po.create_schedule(C)
    s2[A].compute_at(s2[C], C.op.axis[0])
    attached = s2.program
    s2[C].compute_at(s2[A], A.op.axis[0])
    assert s2.program is attached and len(s2.deferred) == 1
    err = refused(po.AttachCycleError, lambda: po.build(s2, [C]))
    assert (err.producer, err.consumer) == ("C", "A")
    s2.deferred.clear()  # without the cycle, the schedule computes C = 3
    assert_numbers(run(s2, [C], [], n=3), np.full((3, 4), 3.0, np.float32))



def _row_product():
    m, n = po.var("m"), po.var("n")
    A = po.placeholder((m, 3), name="A")
    B = po.placeholder((n, 3), name="B")
    AA = po.compute((m, 3), lambda i, j: A[i, j] + 1.0, name="AA")
    T = po.compute((m, n, 3), lambda i, j, k: AA[i, k] * B[j, k], name="T")
    return A, B, AA, T


def test_reorder_of_loops_a_stage_is_attached_inside_keeps_it_at_its_loop():
    # TVM attaches to a loop, not a depth: after the reorder, AA is computed inside
    # xo, xi2, xi1 (done as the reorder before the compute_at, the later steps replayed)
    A, B, AA, T = _row_product()
    s = po.create_schedule(T)
    xo, xi = s[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s[T].split(xi, factor=2)
    s[AA].compute_at(s[T], xi1)
    s[AA].split(AA.op.axis[1], factor=2)
    s[T].reorder(xi2, xi1)
    assert axis_names(s[T]) == ["i.outer", "i.inner.inner", "i.inner.outer", "j", "k"]
    assert T.op.axis[1] in s[T].leaf_iter_vars and T.op.axis[0] not in s[T].leaf_iter_vars
    assert s.script().splitlines()[2:] == [
        's["T"].reorder("i.inner.inner", "i.inner.outer")',
        's["AA"].compute_at("T", "i.inner.outer")', 's["AA"].split("j", factor=2)']
    attach = s.program.stage("AA").attach
    assert (attach.stage, attach.depth) == ("T", 3)
    a, b = rand(23, 3), rand(5, 3)
    assert_numbers(run(s, [A, B, T], [a, b], m=23, n=5), (a + 1)[:, None, :] * b[None])
    # a step on T after the compute_at: the reorder cannot be moved before it
    s2 = po.create_schedule(T)
    xo, xi = s2[T].split(T.op.axis[0], factor=10)
    xi1, xi2 = s2[T].split(xi, factor=2)
    s2[AA].compute_at(s2[T], xi1)
    s2[T].unroll(T.op.axis[2])
    script = s2.script()
    with pytest.raises(po.PartlySharedLoopsError) as info:
        s2[T].reorder(xi2, xi1)
    assert (info.value.stage, info.value.other, info.value.attached) == ("AA", "T", True)
    assert s2.script() == script


# -- compute_inline ----------------------------------------------------------------------------

def test_compute_inline_numbers_and_text():
    X, Y, Z = stencil_1d(po.var("n"))
    s = po.create_schedule(Z)
    s[Y].compute_inline()
    assert [st.name for st in s.stages] == ["Z"]
    text = lowered(s, [X, Z])
    assert "Z[i] = X[i] * 3 + (i >= 1 ? X[i - 1] * 3 : 0.0);" in text
    assert "allocated by the kernel" not in text
    for n in (0, 1, 6):
        x = rand(n)
        np.testing.assert_array_equal(run(s, [X, Z], [x], n=n),
                                      run(po.create_schedule(Z), [X, Z], [x], n=n))


def test_compute_inline_refusals():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
    E = po.compute((n,), lambda i: S[i] * 2.0, name="E")
    s = po.create_schedule(E)
    with pytest.raises(po.CannotInlineError) as refused:
        s[S].compute_inline()
    assert (refused.value.stage, refused.value.problem) == ("S", "reduction")
    with pytest.raises(po.CannotInlineError) as refused:
        s[E].compute_inline()
    assert (refused.value.stage, refused.value.problem) == ("E", "output")


def test_compute_inline_then_tile():
    X, Y, Z = stencil_1d(po.var("n"))
    s = po.create_schedule(Z)
    s[Y].compute_inline()
    s[Z].split(Z.op.axis[0], factor=3)
    x = rand(10)
    np.testing.assert_array_equal(run(s, [X, Z], [x], n=10),
                                  run(po.create_schedule(Z), [X, Z], [x], n=10))


# -- compute_root ------------------------------------------------------------------------------

def test_compute_root_after_compute_with():
    A, B, C = neighbour_sum(po.var("n"))
    s = po.create_schedule(C)
    default = lowered(s, [A, C])
    s[C].shift(C.op.axis[0], 1)
    s[B].compute_with(s[C], C.op.axis[0])
    s[B].compute_root()
    assert s.program.stage("B").attach.kind == "root"
    assert lowered(s, [A, C]).count("for (") == 2
    s[C].shift(C.op.axis[0], -1)
    assert lowered(s, [A, C]) == default
    s[B].compute_root()  # already at the root: nothing changes
    assert lowered(s, [A, C]) == default


def test_compute_root_after_compute_at():
    X, Y, Z = stencil_1d(po.var("n"))
    s = po.create_schedule(Z)
    zo, zi = s[Z].split(Z.op.axis[0], factor=4)
    s[Y].compute_at(s[Z], zo)
    s[Y].compute_root()
    assert s.program.stage("Y").attach.kind == "root"
    assert s.program.statement("Y").dims == ("i",)
    x = rand(9)
    np.testing.assert_array_equal(run(s, [X, Z], [x], n=9),
                                  run(po.create_schedule(Z), [X, Z], [x], n=9))


def test_compute_at_of_a_producer_whose_readers_share_the_tile():
    X = po.placeholder((6, 10), name="X")
    Y = po.ops.softmax(X)
    s = po.create_schedule(Y)
    for name in ("softmax_sum", "softmax_exp", "softmax_max"):  # readers first
        s[name].compute_at(s[Y], Y.op.axis[0])
    assert [a.name for a in s["softmax_exp"].axes] == ["i_1", "i", "j"]  # names stay unique
    text = str(po.lower(s, [X, Y]))
    assert text.count("for (i = 0; i < 6; i += 1)") == 1
    x = np.random.default_rng(0).random((6, 10)).astype("float32")
    y = np.zeros_like(x)
    po.build(s, [X, Y])(x, y)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(1, keepdims=True), rtol=1e-5)
    s["softmax_exp"].reorder("j", "i")  # its own loops, not the shared one


def test_compute_at_refused_while_another_reader_is_outside_the_loop():
    X = po.placeholder((6, 10), name="X")
    Y = po.ops.softmax(X)
    s = po.create_schedule(Y)
    s["softmax_exp"].compute_at(s[Y], Y.op.axis[0])  # deferred: softmax_sum reads it
    err = refused(po.ReaderOutsideError, lambda: po.lower(s, [X, Y]))
    assert (err.producer, err.reader) == ("softmax_exp", "softmax_sum_update")
