"""LLVM code for loop kinds: unrolled loops are copied, full tiles have no guards and
constant trip counts, loops around a vectorized or an unrolled loop are not
vectorized."""

import re

import numpy as np
import pytest

import polyopt as po
from testlib.machine import HOST, vector_register
from testlib.schedules import assert_matmul_kernel, irand


def _scaled(n):
    A = po.placeholder((n, 8), name="A")
    B = po.compute((n, 8), lambda i, j: A[i, j] * 3, name="B")
    return A, B


@pytest.mark.parametrize("size, symbolic", [(12, False), (13, False), (13, True)])
def test_unroll_copies_the_body(size, symbolic):
    A, B = _scaled(po.var("n") if symbolic else size)
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(ii)
    s[B].unroll(B.op.axis[1])
    dividing = size % 4 == 0 and not symbolic
    text = str(po.lower(s, [A, B]))
    assert text.count("#pragma unrolled") == (2 if dividing else 4)  # full and partial tiles
    f = po.build(s, [A, B])
    assert "llvm.loop.unroll" not in f.llvm_ir  # copied by polyopt, no hint needed
    assert f.llvm_ir.count("fmul") == (32 if dividing else 64)
    for n in ([1, 4, 13] if symbolic else [size]):
        a = irand(n, 8)
        b = np.full((n, 8), np.nan, np.float32)
        f(a, b)
        np.testing.assert_array_equal(b, a * 3)


def test_full_tiles_are_separated_from_the_partial_one():
    n = po.var("n")
    A, B = _scaled(n)
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=4)
    s[B].unroll(ii)
    text = str(po.lower(s, [A, B]))
    assert "if (3 <= n - 4 * i_outer - 1)" in text, text
    assert "for (i_inner = 0; i_inner <= 3; i_inner += 1)" in text
    assert "i_inner <= min(" in text  # the partial tile keeps its exact bound


def test_loops_around_a_vectorized_loop_are_not_vectorized_by_llvm():
    A, B = _scaled(po.var("n"))
    s = po.create_schedule(B)
    s[B].vectorize(B.op.axis[1])
    f = po.build(s, [A, B])
    assert '!"llvm.loop.vectorize.enable", i1 0' in f.llvm_ir
    assert '!"llvm.loop.vectorize.enable", i1 1' in f.llvm_ir


def test_loops_around_unrolled_loops_are_not_vectorized_by_llvm():
    """A transposing copy over ``c, f, r`` with ``r`` unrolled: the schedule asks for
    scalar moves, LLVM would vectorize the ``f`` loop with gathers."""
    W = po.placeholder((32, 64, 9), name="W")
    P = po.compute((64, 9, 32), lambda c, r, f: W[f, c, r], name="P")
    s = po.create_schedule(P)
    c, r, f = P.op.axis
    s[P].reorder(c, f, r)
    s[P].unroll(r)
    f_ = po.build(s, [W, P])
    assert "gather" not in f_.assembly
    assert '!"llvm.loop.vectorize.enable", i1 0' in f_.llvm_ir
    w = irand(32, 64, 9)
    p = np.full((64, 9, 32), np.nan, np.float32)
    f_(w, p)
    np.testing.assert_array_equal(p, w.transpose(1, 2, 0))


@pytest.mark.parametrize("threads", [1, 2])
def test_a_partial_column_tile_keeps_its_register_tile(threads):
    """N = 1500 leaves a 28-column tile: it runs 64 columns with conditional stores into
    its private accumulator (constant offsets, so the tile can stay in registers)."""
    M, N, K = 50, 1500, 40
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    f = po.build(s, [A, B, C], num_threads=threads)
    assert "widened" in f.llvm_ir
    assert_matmul_kernel(f, [(M, N, K)])


def test_a_partial_tile_writing_a_user_array_is_not_widened():
    """Widening would write outside B: the partial tile keeps its exact bound."""
    A, B = _scaled(po.var("n"))
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=16)
    s[B].reorder(B.op.axis[1], io, ii)
    s[B].vectorize(ii)
    f = po.build(s, [A, B])
    assert "widened" not in f.llvm_ir
    a = irand(21, 8)
    b = np.full((21, 8), np.nan, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a * 3)


def test_a_parallel_loop_inside_a_full_tile_loop():
    """The outlined body computes ``i - 4 * i_outer`` from the tile loop's value, not
    from its counter (which lives in the calling function)."""
    A, B = po.placeholder((8, 5), name="A"), po.placeholder((5, 32), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 16)
    s[CL].compute_at(s[C], jo)
    s[CL].parallel(CL.op.axis[1])
    text = str(po.lower(s, [A, B, C]))
    assert "for (i = 4 * i_outer; i <= 4 * i_outer + 3; i += 1)" in text  # a full tile
    f = po.build(s, [A, B, C], num_threads=2)
    assert_matmul_kernel(f, [(8, 32, 5)])


def _loop_bodies(assembly: str) -> list[str]:
    """The instructions of each innermost loop in the assembly: from a label to a jump
    back to it, with no label between."""
    bodies = []
    for label in re.finditer(r"^(\.LBB\w+):$", assembly, re.M):
        back = re.compile(rf"^\s+j\w+\s+{re.escape(label.group(1))}$", re.M)
        jump = back.search(assembly, label.end())
        if jump is not None and ".LBB" not in assembly[label.end():jump.start()]:
            bodies.append(assembly[label.end():jump.start()])
    return bodies


@pytest.mark.parametrize("template", [False, True])
def test_address_arithmetic_is_hoisted_out_of_the_inner_loops(template):
    """Row offsets (``i * m`` with ``m`` a var) and tile bases are computed outside the
    innermost loops: their bodies multiply no integers."""
    n, m, k = po.var("n"), po.var("m"), po.var("k")
    if template:
        A, B = po.placeholder((n, k), name="A"), po.placeholder((k, m), name="B")
        C = po.ops.matmul(A, B)
        s = po.create_schedule(C)
        po.templates.matmul_template(s, C)
        args = [A, B, C]
    else:
        A = po.placeholder((n, m), name="A")
        C = po.compute((n, m), lambda i, j: A[i, j] * 2.0 + 1.0, name="C")
        s = po.create_schedule(C)
        args = [A, C]
    f = po.build(s, args)
    vector_loops = [body for body in _loop_bodies(f.assembly) if vector_register() in body]
    assert vector_loops, "no vectorized loop found"
    for body in vector_loops:
        assert "imul" not in body, body


def test_unrolled_recurrence_reads_what_the_previous_copy_stored():
    """In one block, a load after a store to another element of the same array reads
    memory again (an address it cannot tell apart may be the same element)."""
    @po.kernel
    def prefix(A: po.f32[12], B: po.f32[12]):
        for i in range(1, 12):
            A[i] = A[i - 1] * 2.0 + B[i]
            B[i] = A[i] + B[i - 1]

    s = po.create_schedule(prefix)
    s["S0"].unroll("i")
    s["S1"].unroll("i")
    f = po.build(s)
    a = np.arange(12, dtype=np.float32)
    b = np.linspace(1, 2, 12, dtype=np.float32)
    ea, eb = a.copy(), b.copy()
    for i in range(1, 12):
        ea[i] = ea[i - 1] * 2 + eb[i]
        eb[i] = ea[i] + eb[i - 1]
    f(a, b)
    np.testing.assert_allclose(a, ea, rtol=1e-6)
    np.testing.assert_allclose(b, eb, rtol=1e-6)


def test_repeated_reads_in_an_unrolled_body_are_loaded_once():
    """A weight read by every unrolled copy of a row, and the accumulator an update
    stores and reads again, are not loaded again (fewer instructions for LLVM)."""
    A = po.placeholder((4, 16), name="A")
    w = po.placeholder((4,), name="w")
    k = po.reduce_axis((0, 4), name="k")
    C = po.compute((16,), lambda j: po.sum(A[k, j] * w[k], axis=k), name="C")
    s = po.create_schedule(C)
    s[C].reorder(k, C.op.axis[0])
    s[C].unroll(C.op.axis[0])
    f = po.build(s, [A, w, C])
    assert f.llvm_ir.count("load float") == 16 + 16 + 1  # A[k, j], C[j] once each, w[k]
    rng = np.random.default_rng(0)
    a, wv = rng.standard_normal((4, 16), dtype=np.float32), rng.standard_normal(4, dtype=np.float32)
    c = np.zeros(16, np.float32)
    f(a, wv, c)
    np.testing.assert_allclose(c, wv @ a, rtol=1e-5, atol=1e-5)


def test_a_register_tile_of_one_vector_per_row_keeps_its_vectors():
    # 8 rows x one vector (16 lanes with AVX-512, 8 with AVX2) summed over k: every row
    # reads the same vector of X.  LLVM unrolled some rows' 16-lane loops into scalars
    # and rebuilt their vectors with shuffles (and stored the sums on every k) unless
    # told not to unroll them
    lanes = HOST.lanes("float32")
    X = po.placeholder((64, lanes), name="X")
    W = po.placeholder((8, 64), name="W")
    k = po.reduce_axis((0, 64), name="k")
    Y = po.compute((8, lanes), lambda f, p: po.sum(W[f, k] * X[k, p], axis=k), name="Y")
    s = po.create_schedule(Y)
    f, p = Y.op.axis
    s[Y].reorder(k, f, p)
    s[Y].unroll(f)
    s[Y].vectorize(p)
    kernel = po.build(s, [X, W, Y])
    assert '!"llvm.loop.unroll.disable", i1 1' in kernel.llvm_ir
    assembly = kernel.assembly
    assert not re.search(r"vperm|vinsert|vshuf", assembly), assembly
    rng = np.random.default_rng(0)  # its own stream: later tests' data stays as it was
    x, w = (rng.integers(-5, 6, shape).astype(np.float32) for shape in ((64, lanes), (8, 64)))
    y = np.full((8, lanes), np.nan, np.float32)
    kernel(x, w, y)
    np.testing.assert_allclose(y, w @ x, rtol=1e-5)


def test_nested_unrolled_loops_stay_within_a_budget_of_copies():
    # 40 x 8 nested copies of a vector row took minutes to compile (property case
    # te-auto 100421): the outer loop stays a loop, which LLVM unrolls by a few
    n = po.var("n")
    A = po.placeholder((n, 64), name="A")
    B = po.compute((n, 64), lambda i, j: A[i, j] * 3 + 1, name="B")
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=320)
    iio, iii = s[B].split(ii, factor=8)
    s[B].unroll(iio)  # 40 iterations
    s[B].unroll(iii)  # 8 iterations: 320 copies together
    s[B].vectorize(B.op.axis[1])
    text = str(po.lower(s, [A, B], target="llvm"))
    assert "#pragma unrolled: 8 copies" in text and "#pragma unrolled: 40" not in text
    f = po.build(s, [A, B])
    assert re.search(r'!"llvm.loop.unroll.count", i32 4', f.llvm_ir)
    for rows in (1, 9, 700):
        a = irand(rows, 64)
        b = np.full((rows, 64), np.nan, np.float32)
        f(a, b)
        np.testing.assert_array_equal(b, a * 3 + 1)


def test_copies_of_a_wide_vector_row_stay_within_a_budget_of_elements():
    # 64 copies of a 64-element float64 vector row (32 KiB; and 64 guarded ones) took
    # 43 s of CPU in LLVM (property case te-auto 100616): the unrolled loop stays a loop
    n = po.var("n")
    A = po.placeholder((n, n), name="A", dtype="float64")
    B = po.compute((n, n), lambda i, j: A[j, i] * -1.0 + 2.0, name="B")
    s = po.create_schedule(B)
    io, ii = s[B].split(B.op.axis[0], factor=64)
    jo, ji = s[B].split(B.op.axis[1], factor=64)
    s[B].reorder(io, jo, ii, ji)
    s[B].vectorize(ji)
    s[B].unroll(ii)
    text = str(po.lower(s, [A, B], target="llvm"))
    assert "#pragma unrolled" in text and "copies" not in text, text
    f = po.build(s, [A, B])
    for size in (1, 70):
        a = np.arange(size * size, dtype="float64").reshape(size, size)
        b = np.full((size, size), np.nan)
        f(a, b)
        np.testing.assert_array_equal(b, a.T * -1.0 + 2.0)
