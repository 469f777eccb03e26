"""The "compute and reduce with tuple inputs" tutorial, ported by changing the imports
only: a multi-output compute, scheduled and computed at its reader, and the argmax
reducer over (index, value) pairs (each instance updates both outputs)."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)


def test_multi_output_compute():
    n = te.var("n")
    m = te.var("m")
    A0 = te.placeholder((m, n), name="A0")
    A1 = te.placeholder((m, n), name="A1")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A1[i, j] * 3), name="B")
    s = te.create_schedule(B0.op)
    assert B0.op.num_outputs == 2 and B0.op.output(1) is B1
    text = str(tvm.lower(s, [A0, A1, B0, B1], simple_mode=True))
    assert "B_v0[i, j] = A0[i, j] + 2" in text and "B_v1[i, j] = A1[i, j] * 3" in text
    f = tvm.build(s, [A0, A1, B0, B1], "llvm")
    a0, a1 = np.random.rand(4, 5).astype("float32"), np.random.rand(4, 5).astype("float32")
    b0, b1 = np.zeros_like(a0), np.zeros_like(a0)
    f(a0, a1, b0, b1)
    np.testing.assert_allclose(b0, a0 + 2)
    np.testing.assert_allclose(b1, a1 * 3)


def test_multi_output_compute_attached_to_its_reader():
    n = te.var("n")
    m = te.var("m")
    A0 = te.placeholder((m, n), name="A0")
    B0, B1 = te.compute((m, n), lambda i, j: (A0[i, j] + 2, A0[i, j] * 3), name="B")
    A1 = te.placeholder((m, n), name="A1")
    C = te.compute((m, n), lambda i, j: A1[i, j] + B0[i, j], name="C")
    s = te.create_schedule(C.op)
    s[B0].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [A0, A1, C], "llvm")
    a0, a1 = np.random.rand(3, 6).astype("float32"), np.random.rand(3, 6).astype("float32")
    c = np.zeros_like(a0)
    f(a0, a1, c)
    np.testing.assert_allclose(c, a1 + a0 + 2, rtol=1e-6)


def fcombine(x, y):
    lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
    rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
    return lhs, rhs


def fidentity(t0, t1):
    return tvm.tir.const(-1, t0), tvm.te.min_value(t1)


def argmax_compute():
    """The tutorial's argmax, as written."""
    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m = te.var("m")
    n = te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    T0, T1 = te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    return idx, val, T0, T1


def argmax_inputs(m, n, ties):
    """Values with many ties (small range) or none (a permutation); idx is the column."""
    if ties:
        val = np.random.randint(0, 3, size=(m, n)).astype("int32")
    else:
        val = np.random.permutation(m * n).reshape(m, n).astype("int32")
    return np.tile(np.arange(n, dtype="int32"), (m, 1)), val


def check_argmax(f, m=7, n=37, ties=True):
    idx, val = argmax_inputs(m, n, ties)
    t0, t1 = np.zeros(m, "int32"), np.zeros(m, "int32")
    f(idx, val, t0, t1)
    assert_numbers(t1, val.max(axis=1))  # int32: bit for bit
    # fcombine keeps the accumulated pair on ties (x[1] >= y[1]): in k order, the first
    assert_numbers(t0, val.argmax(axis=1))


def test_argmax_over_a_tuple_as_the_tutorial_writes_it():
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op)
    text = str(tvm.lower(s, [idx, val, T0, T1], simple_mode=True))
    assert "T_v0[i] = -1" in text and "T_v1[i] = -2147483648" in text
    # each instance updates both outputs; the index first, from the old value
    assert text.index("T_v0[i] = (T_v1[i] >= val[i, k]") < text.index("T_v1[i] = (T_v1[i] >=")
    f = tvm.build(s, [idx, val, T0, T1], "llvm")
    check_argmax(f, ties=True)
    check_argmax(f, ties=False)
    check_argmax(f, m=3, n=1)
    check_argmax(f, m=0, n=4)


def test_argmax_after_split_reorder_and_parallel():
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(T0.op.reduce_axis[0], factor=8)
    xo, xi = s[T1].split(T1.op.axis[0], factor=4)   # s[T1] is the same stage, as in TVM
    s[T0].parallel(xo)
    f = tvm.build(s, [idx, val, T0, T1], "llvm")
    check_argmax(f, ties=True)                        # k still runs in order: first index
    s[T0].reorder(xo, ki, ko, xi)                     # the reduction reassociated
    text = str(tvm.lower(s, [idx, val, T0, T1], simple_mode=True))
    assert text.index("for (k_inner") < text.index("for (k_outer")
    check_argmax(tvm.build(s, [idx, val, T0, T1], "llvm"), ties=False)
    with pytest.raises(te.LoopCarriesDependenceError) as err:
        s[T0].parallel(ki)
    dep = err.value.violation.dependence
    assert (dep.kind, dep.source, dep.sink) == ("flow", "T_v0_update", "T_v0_update")


def test_argmax_reordered_with_ties_follows_the_visiting_order():
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(T0.op.reduce_axis[0], factor=4)
    s[T0].reorder(ki, ko)
    f = tvm.build(s, [idx, val, T0, T1], "llvm")
    ix, v = argmax_inputs(5, 10, ties=True)
    t0, t1 = np.zeros(5, "int32"), np.zeros(5, "int32")
    f(ix, v, t0, t1)
    order = [4 * o + i for i in range(4) for o in range(3) if 4 * o + i < 10]
    np.testing.assert_array_equal(t0, [order[int(np.argmax(row[order]))] for row in v])
    np.testing.assert_array_equal(t1, v.max(axis=1))


def test_argmax_in_strict_order_refuses_the_reorder():
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op, strict_fp=True)
    ko, ki = s[T0].split(T0.op.reduce_axis[0], factor=8)
    with pytest.raises(te.DependenceViolationError) as err:
        s[T0].reorder(ki, ko)
    dep = err.value.violation.dependence
    assert dep.source.startswith("T_v") and dep.source.endswith("_update")
    assert dep.sink.startswith("T_v") and dep.sink.endswith("_update")


def test_argmax_computed_at_its_reader_with_only_one_output_read():
    idx, val, T0, T1 = argmax_compute()
    C = te.compute(T0.shape, lambda i: T0[i] * 2, name="C")
    s = te.create_schedule(C.op)
    s[T0].compute_at(s[C], C.op.axis[0])
    f = tvm.build(s, [idx, val, C], "llvm")
    ix, v = argmax_inputs(6, 11, ties=True)
    c = np.zeros(6, "int32")
    f(ix, v, c)
    np.testing.assert_array_equal(c, v.argmax(axis=1) * 2)


def test_argmin_with_float_values_and_int_indices():
    def combine(x, y):
        keep = x[1] <= y[1]
        return te.if_then_else(keep, x[0], y[0]), te.if_then_else(keep, x[1], y[1])

    argmin = te.comm_reducer(combine, lambda t0, t1: (te.const(-1, t0), te.max_value(t1)))
    A = te.placeholder((9, 13), name="A")
    k = te.reduce_axis((0, 13), "k")
    I, V = te.compute((9,), lambda i: argmin((k, A[i, k]), axis=k), name="R")
    f = tvm.build(te.create_schedule(I.op), [A, I, V], "llvm")
    a = np.random.rand(9, 13).astype("float32")
    i_out, v_out = np.zeros(9, I.dtype), np.zeros(9, "float32")
    f(a, i_out, v_out)
    np.testing.assert_array_equal(i_out, a.argmin(axis=1))
    np.testing.assert_array_equal(v_out, a.min(axis=1))


def test_tuple_reduction_misuse_is_refused_clearly():
    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    val = te.placeholder((4, 5), name="val", dtype="int32")
    k = te.reduce_axis((0, 5), "k")
    with pytest.raises(te.PolyoptError, match="is applied to a tuple"):
        te.compute((4,), lambda i: argmax(val[i, k], axis=k))  # fidentity takes two dtypes
    with pytest.raises(te.PolyoptError, match="whole result"):
        te.compute((4,), lambda i: argmax((k, val[i, k]), axis=k)[0])
    swap = te.comm_reducer(lambda x, y: (x[1] + y[1], x[0] + y[0]),
                           lambda t0, t1: (te.const(0, t0), te.const(0, t1)), name="swap")
    P, Q = te.compute((4,), lambda i: swap((val[i, k], val[i, k]), axis=k), name="P")
    with pytest.raises(te.PolyoptError, match="no order of the updates"):
        te.create_schedule(P.op)
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op)
    ko, ki = s[T0].split(T0.op.reduce_axis[0], factor=8)
    with pytest.raises(te.TupleReductionError) as err:
        s.rfactor(T0, ki)
    assert (err.value.primitive, err.value.stage, err.value.init_moved) == ("rfactor", "T_v0",
                                                                           False)


def test_the_suggested_argmax_in_two_reductions():
    m, n = 4, 7
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    M = te.compute((m,), lambda i: te.max(val[i, k], axis=k), name="M")
    k2 = te.reduce_axis((0, n), "k2")
    T = te.compute((m,), lambda i: te.min(te.if_then_else(val[i, k2] == M[i], k2, n), axis=k2),
                   name="T")
    f = tvm.build(te.create_schedule(T.op), [val, T], "llvm")
    v = np.random.randint(0, 5, size=(m, n)).astype("int32")
    t = np.zeros(m, "int64")
    f(v, t)
    np.testing.assert_array_equal(t, v.argmax(axis=1))


def test_argmax_on_opencl_one_row_per_work_item(opencl):
    idx, val, T0, T1 = argmax_compute()
    s = te.create_schedule(T0.op)
    xo, xi = s[T0].split(T0.op.axis[0], factor=8)
    s[T0].bind(xo, te.thread_axis("blockIdx.x"))
    s[T1].bind(xi, te.thread_axis("threadIdx.x"))
    ko, ki = s[T0].split(T0.op.reduce_axis[0], factor=4)
    f = tvm.build(s, [idx, val, T0, T1], "opencl")
    assert "__kernel" in f.imported_modules[0].get_source()
    check_argmax(f, ties=True)
    check_argmax(f, m=19, n=5, ties=False)
