"""The "reduction" tutorial, ported by changing the imports only: a row sum with split
reduce loops, rfactor, a cross-thread reduction on OpenCL, a 2-D convolution written
with sum over two axes, and a new reducer declared with comm_reducer."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)


def row_sum():
    n = te.var("n")
    m = te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    return A, B


def check(f, shape=(37, 50)):
    a = np.random.rand(*shape).astype("float32")
    b = tvm.nd.array(np.zeros(shape[0], dtype="float32"))
    f(tvm.nd.array(a), b)
    assert_numbers(b.numpy(), a.sum(axis=1), rtol=1e-4, atol=1e-7)  # (TVM's atol)


def test_split_reduce_axis_and_reorder_it_freely():
    A, B = row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    xo, xi = s[B].split(B.op.axis[0], factor=32)
    s[B].reorder(ki, xo, ko, xi)           # reduce loops outside, as TVM allows
    check(tvm.build(s, [A, B], "llvm"))
    strict = te.create_schedule(B.op, strict_fp=True)
    ko, ki = strict[B].split(B.op.reduce_axis[0], factor=16)
    with pytest.raises(te.DependenceViolationError) as err:
        strict[B].reorder(ki, ko)
    dep = err.value.violation.dependence
    assert (dep.kind, dep.source, dep.sink) == ("flow", "B_update", "B_update")


def test_rfactor_gives_the_partial_sums_and_a_refreshed_stage():
    A, B = row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    assert len(BF.op.axis) == 2 and len(s[B].op.reduce_axis) == 1
    assert "B_rf" in str(tvm.lower(s, [A, B], simple_mode=True)).replace(".", "_")
    s[BF].parallel(BF.op.axis[0])
    check(tvm.build(s, [A, B], "llvm"))


def test_cross_thread_reduction_on_opencl(opencl):
    A, B = row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    s[B].set_store_predicate(tx.var.equal(0))
    fcl = tvm.build(s, [A, B], "opencl")
    source = fcl.imported_modules[0].get_source()
    assert "__kernel" in source and "reduction across work-items (threadIdx.x)" in source
    check(fcl)
    check(fcl, (3, 5))
    check(fcl, (64, 16))


def test_cross_thread_reduction_with_the_partial_sums_in_their_own_kernel(opencl):
    A, B = row_sum()
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=16)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=32)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    tx = te.thread_axis("threadIdx.x")
    s[B].bind(s[B].op.reduce_axis[0], tx)
    s[B].set_store_predicate(tx.var.equal(0))
    bo, bi = s[BF].split(BF.op.axis[1], factor=16)
    s[BF].reorder(bo, bi, BF.op.axis[0])
    s[BF].bind(bo, "blockIdx.x")
    s[BF].bind(bi, "threadIdx.x")
    fcl = tvm.build(s, [A, B], "opencl")
    check(fcl)
    check(fcl, (3, 5))


def test_convolution_as_a_sum_over_two_axes():
    n = te.var("n")
    Input = te.placeholder((n, n), name="Input")
    Filter = te.placeholder((3, 3), name="Filter")
    di = te.reduce_axis((0, 3), name="di")
    dj = te.reduce_axis((0, 3), name="dj")
    Output = te.compute(
        (n - 2, n - 2),
        lambda i, j: te.sum(Input[i + di, j + dj] * Filter[di, dj], axis=[di, dj]),
        name="Output")
    s = te.create_schedule(Output.op)
    s[Output].reorder(di, *Output.op.axis, dj)
    f = tvm.build(s, [Input, Filter, Output], "llvm")
    x = np.random.rand(9, 9).astype("float32")
    w = np.random.rand(3, 3).astype("float32")
    out = np.zeros((7, 7), "float32")
    f(x, w, out)
    expected = sum(x[a:a + 7, b:b + 7] * w[a, b] for a in range(3) for b in range(3))
    np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_comm_reducer_declares_a_product():
    n = te.var("n")
    m = te.var("m")
    product = te.comm_reducer(lambda x, y: x * y,
                              lambda t: tvm.tir.const(1, dtype=t), name="product")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), name="k")
    B = te.compute((n,), lambda i: product(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=4)
    s[B].reorder(ki, B.op.axis[0], ko)
    f = tvm.build(s, [A, B], "llvm")
    a = np.random.uniform(0.5, 1.5, size=(5, 11)).astype("float32")
    b = np.zeros(5, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a.prod(axis=1), rtol=1e-5)


def test_a_tuple_reducer_sums_and_counts_in_one_pass():
    sum_count = te.comm_reducer(lambda x, y: (x[0] + y[0], x[1] + y[1]),
                                lambda t0, t1: (tvm.tir.const(0, t0), tvm.tir.const(0, t1)),
                                name="sum_count")
    A = te.placeholder((6, 9), name="A")
    k = te.reduce_axis((0, 9), name="k")
    S, C = te.compute((6,), lambda i: sum_count((A[i, k], te.if_then_else(A[i, k] > 0.5, 1, 0)),
                                                axis=k), name="SC")
    M = te.compute((6,), lambda i: S[i] / C[i], name="M")
    s = te.create_schedule(M.op)
    s[S].compute_at(s[M], M.op.axis[0])
    ko, ki = s[S].split(k, factor=4)
    s[S].reorder(ki, ko)
    f = tvm.build(s, [A, M], "llvm")
    a = np.random.rand(6, 9).astype("float32")
    a[:, 0] = 0.9  # every row counts at least one
    m = np.zeros(6, M.dtype)  # float32 / int64 is float64, as in NumPy
    f(a, m)
    np.testing.assert_allclose(m, a.sum(axis=1) / (a > 0.5).sum(axis=1), rtol=1e-5)