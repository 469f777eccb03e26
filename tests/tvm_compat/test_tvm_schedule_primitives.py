"""The "schedule primitives" tutorial, ported by changing the imports only: every
primitive on the tutorial's computations, numbers checked against NumPy."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)


def row_sum():
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((m, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((m,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B


def check_row_sum(s, A, B, shape=(45, 13), rng=None):
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.default_rng(0).random(shape, dtype="float32")
    b = tvm.nd.array(np.zeros(shape[0], "float32"))
    f(tvm.nd.array(a), b)
    assert_numbers(b.numpy(), a.sum(axis=1), rtol=1e-5, atol=1e-7)  # (TVM's atol)


def test_split_by_factor():
    A, B = row_sum()
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    assert "i_outer" in str(tvm.lower(s, [A, B], simple_mode=True)).replace(".", "_")
    check_row_sum(s, A, B)


def test_split_of_a_stage_computed_at_another_tiles_from_each_attachment():
    n = te.var("n")
    A = te.placeholder((n + 2,), name="A")
    B = te.compute((n + 2,), lambda i: A[i] * 2, name="B")
    C = te.compute((n,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    s = te.create_schedule(C.op)
    co, ci = s[C].split(C.op.axis[0], factor=5)
    s[B].compute_at(s[C], co)
    bo, bi = s[B].split(s[B].op.axis[0], factor=4)   # 7 values per attachment: 4 + 3
    text = str(tvm.lower(s, [A, C], simple_mode=True))
    assert "for (i_outer_1 = 0; i_outer_1 <= " in text            # starts at 0 in each
    assert "for (i_inner = 0; i_inner <= min(3, " in text
    f = tvm.build(s, [A, C], "llvm")
    for size in (0, 1, 5, 13, 20):
        a = np.random.default_rng(size).random(size + 2, dtype="float32")
        c = np.zeros(size, "float32")
        f(a, c)
        np.testing.assert_allclose(c, 2 * (a[:-2] + a[1:-1] + a[2:]), rtol=1e-5)


def test_split_by_nparts():
    A, B = row_sum()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], nparts=32)   # the factor ceil(m / 32) depends on m
    assert [a.name for a in s[B].axes][:2] == ["i.outer", "i.inner"]
    f = tvm.build(s, [A, B], "llvm")
    for m in (1, 31, 32, 45, 100):
        a = np.random.default_rng(m).random((m, 13), dtype="float32")
        b = np.zeros(m, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def test_split_by_nparts_of_a_symbolic_extent_onto_gpu_threads(opencl):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    bx, xi = s[B].split(B.op.axis[0], nparts=3)
    tx, xi = s[B].split(xi, nparts=8)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "opencl")
    for size in (1, 5, 24, 100):
        a = np.random.rand(size).astype("float32")
        b = np.zeros(size, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a * 2)


def test_tile_then_fuse():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, yo, xi, yi = s[B].tile(B.op.axis[0], B.op.axis[1], x_factor=10, y_factor=5)
    fused = s[B].fuse(xi, yi)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.rand(23, 17).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a)


def test_reorder_of_split_loops():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j], name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    yo, yi = s[B].split(B.op.axis[1], factor=32)
    s[B].reorder(xi, yo, xo, yi)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.rand(70, 40).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a)


def test_bind_to_gpu_threads(opencl):
    A, B = row_sum()
    s = te.create_schedule(B.op)
    bx, tx = s[B].split(B.op.axis[0], factor=64)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [A, B], "opencl")
    a = np.random.rand(100, 9).astype("float32")
    b = np.zeros(100, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)


def producer_consumer():
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m,), name="A")
    B = te.compute((m,), lambda i: A[i] + 1, name="B")
    C = te.compute((m,), lambda i: B[i] * 2, name="C")
    return A, B, C


@pytest.mark.parametrize("where", ["compute_at", "compute_inline", "compute_root"])
def test_where_the_producer_is_computed(where):
    A, B, C = producer_consumer()
    s = te.create_schedule(C.op)
    if where == "compute_inline":
        s[B].compute_inline()
    else:
        s[B].compute_at(s[C], C.op.axis[0])
        if where == "compute_root":
            s[B].compute_root()
    f = tvm.build(s, [A, B, C] if where != "compute_inline" else [A, C], "llvm")
    a = np.random.rand(11).astype("float32")
    c = np.zeros_like(a)
    if where == "compute_inline":
        f(a, c)
    else:
        b = np.zeros_like(a)
        f(a, b, c)
        np.testing.assert_allclose(b, a + 1)
    np.testing.assert_allclose(c, (a + 1) * 2)


def test_compute_at_calls_in_any_order():
    """TVM attaches a cache before the cache that reads it; polyopt waits for the reader."""
    M, N, K = 12, 10, 16
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "global", [C])
    AL = s.cache_read(AA, "local", [C])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 5)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[AA].compute_at(s[C], jo)      # AL still reads AA outside those loops: deferred
    s[AL].compute_at(s[C], ko)      # ... and done once AL is attached
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "A_global" in text.replace(".", "_")
    f = tvm.build(s, [A, B, C], "llvm")
    a, b = np.random.rand(M, K).astype("float32"), np.random.rand(K, N).astype("float32")
    c = np.zeros((M, N), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_a_compute_at_that_never_becomes_possible_is_reported_when_lowering():
    M, N, K = 12, 10, 16
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    k = te.reduce_axis((0, K), name="k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    AA = s.cache_read(A, "global", [C])
    s.cache_read(AA, "local", [C])
    s[AA].compute_at(s[C], C.op.axis[0])
    with pytest.raises(te.ReaderOutsideError) as err:
        tvm.lower(s, [A, B, C])
    assert (err.value.producer, err.value.consumer) == ("A_global", "C")


def test_fuse_of_three_loops_then_parallel():
    A = te.placeholder((3, 4, 5), name="A")
    B = te.compute((3, 4, 5), lambda i, j, k: A[i, j, k] + 1, name="B")
    s = te.create_schedule(B.op)
    fused = s[B].fuse(*B.op.axis)
    s[B].parallel(fused)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.rand(3, 4, 5).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a + 1)


def test_virtual_threads_on_opencl(opencl):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    s = te.create_schedule(B.op)
    bx, rest = s[B].split(B.op.axis[0], factor=16)
    vx, tx = s[B].split(rest, nparts=2)
    s[B].bind(bx, te.thread_axis("blockIdx.x"))
    s[B].bind(vx, te.thread_axis((0, 2), "vthread", name="vx"))   # an unrolled loop
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    assert s[B].axes[1].kind == "unrolled"
    f = tvm.build(s, [A, B], "opencl")
    a = np.random.rand(50).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)
