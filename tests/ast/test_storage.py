"""Storage contraction: temporaries are allocated with their exact footprint per
iteration of their attach loops, re-indexed, and give the same numbers."""

import numpy as np
import pytest

import polyopt as po
from testlib.machine import HOST
from testlib.schedules import assert_matmul_kernel, irand, run


def _extents(func, name):
    return [str(e) for e in func.storage[name].extents]


def _matmul(M, N, K):
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    return A, B, po.ops.matmul(A, B)


@pytest.mark.parametrize("tile", [(4, 8), (3, 5)])
def test_cache_write_at_a_tile_is_the_tile(tile):
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B, C = _matmul(M, N, K)
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, *tile)
    s[CL].compute_at(s[C], jo)
    func = po.lower(s, [A, B, C])
    assert _extents(func, "C_local") == [str(t) for t in tile]
    assert func.storage["C_local"].loops == ("i.outer", "j.outer")
    assert not func.storage["C_local"].private
    text = str(func)
    assert f"float32 C_local[{tile[0]}][{tile[1]}];  // allocated by the kernel, its " \
           "footprint per iteration of i.outer, j.outer" in text
    assert "= C_local[i_inner, j_inner];" in text
    for m, n, k in [(8, 16, 3), (13, 11, 7), (1, 1, 1), (5, 17, 2)]:  # tiles divide or not
        a, b = irand(m, k), irand(k, n)
        np.testing.assert_array_equal(run(s, [A, B, C], [a, b], M=m, N=n, K=k), a @ b)


def test_cache_read_at_a_reduction_tile_is_the_block():
    A, B, C = _matmul(30, 20, 25)
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=6)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[AS].compute_at(s[C], ko)
    s[BS].compute_at(s[C], ko)
    func = po.lower(s, [A, B, C])
    assert _extents(func, "A_shared") == ["8", "6"]
    assert _extents(func, "B_shared") == ["6", "4"]
    a, b = irand(30, 25), irand(25, 20)
    np.testing.assert_array_equal(run(s, [A, B, C], [a, b]), a @ b)


def test_a_halo_widens_the_footprint():
    """B is recomputed per tile of C with the halo it reads: 4 + 2 elements."""
    n = po.var("n")
    A = po.placeholder((n + 2,), name="A")
    B = po.compute((n + 2,), lambda i: A[i] * 2, name="B")
    C = po.compute((n,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = po.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    func = po.lower(s, [A, C])
    assert _extents(func, "B") == ["6"]
    for size in (1, 4, 9, 16):
        a = irand(size + 2)
        np.testing.assert_array_equal(run(s, [A, C], [a], n=size),
                                      2 * (a[:-2] + a[1:-1] + a[2:]))


def test_a_parametric_dimension_keeps_its_extent():
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B, C = _matmul(M, N, K)
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 4)
    s[AS].compute_at(s[C], jo)
    func = po.lower(s, [A, B, C])
    assert _extents(func, "A_shared") == ["4", "K"]


def test_values_crossing_iterations_keep_the_full_buffer():
    """After compute_with, iteration i reads B[i - 1] written by iteration i - 1: a
    per-iteration buffer would lose it, so B keeps its shape."""
    A = po.placeholder((9,), name="A")
    B = po.compute((9,), lambda i: A[i] * 2, name="B")
    C = po.compute((8,), lambda i: B[i] + B[i + 1], name="C")
    s = po.create_schedule(C)
    s[C].shift(C.op.axis[0], 1)
    s[B].compute_with(s[C], C.op.axis[0])
    func = po.lower(s, [A, C])
    assert "B" not in func.storage and [str(e) for e in func.temps[0].shape] == ["9"]
    a = irand(9)
    np.testing.assert_array_equal(run(s, [A, C], [a]), 2 * (a[:-1] + a[1:]))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_buffer_inside_a_parallel_loop_is_private(threads):
    """Each thread gets its own tile buffer (a shared one would be a race)."""
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B, C = _matmul(M, N, K)
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(*C.op.axis, 4, 8)
    s[CL].compute_at(s[C], jo)
    s[C].parallel(io)
    func = po.lower(s, [A, B, C])
    assert func.storage["C_local"].private
    assert "one per thread" in str(func)
    f = po.build(s, [A, B, C], num_threads=threads)
    body = f.llvm_ir[f.llvm_ir.index("C_kernel.omp0.body"):]
    assert "C_local.stack\" = alloca [128 x i8], align 64" in body
    assert_matmul_kernel(f, [(16, 16, 5), (37, 29, 11)])


def test_a_large_private_buffer_is_on_the_heap_per_thread():
    """A packed panel too large for the stack: aligned_alloc and free in each thread."""
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B, C = _matmul(M, N, K)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    func = po.lower(s, [A, B, C])
    panel = HOST.register_tile()[1] * HOST.lanes("float32")  # the host's tile: 64, 16
    assert func.storage["B_global"].private and _extents(func, "B_global") == ["K", str(panel)]
    f = po.build(s, [A, B, C], num_threads=2)
    body = f.llvm_ir[f.llvm_ir.index("define internal void @\"C_kernel.omp0.body\""):]
    body = body[:body.index("\n}")]
    assert "aligned_alloc" in body and "free" in body
    kernel = f.llvm_ir[f.llvm_ir.index("define i32 @\"C_kernel\""):]
    kernel = kernel[:kernel.index("\n}")]
    assert "aligned_alloc" not in kernel  # only the threads use the panel
    assert_matmul_kernel(f, [(70, 130, 300)])
