"""The "compute and reduce with tuple inputs" tutorial, ported by changing the imports
only: a multi-output compute, scheduled and computed at its reader.  (The tutorial's
argmax, a reduction over a tuple, is not supported yet: it raises, saying what to do.)"""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm


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


def test_argmax_over_a_tuple_raises_with_a_workaround():
    def fcombine(x, y):
        lhs = tvm.tir.Select((x[1] >= y[1]), x[0], y[0])
        rhs = tvm.tir.Select((x[1] >= y[1]), x[1], y[1])
        return lhs, rhs

    def fidentity(t0, t1):
        return tvm.tir.const(-1, t0), tvm.te.min_value(t1)

    argmax = te.comm_reducer(fcombine, fidentity, name="argmax")
    m, n = te.var("m"), te.var("n")
    idx = te.placeholder((m, n), name="idx", dtype="int32")
    val = te.placeholder((m, n), name="val", dtype="int32")
    k = te.reduce_axis((0, n), "k")
    with pytest.raises(te.PolyoptError, match="po.max, then its index"):
        te.compute((m,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")


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
