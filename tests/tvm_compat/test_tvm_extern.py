"""The "external tensor functions" tutorial, ported by changing the imports only: a
BLAS matrix product as an extern followed by a compute, the contrib wrapper, and a
Python function registered and called as a packed function."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from polyopt.tvm.contrib import cblas


def test_extern_matmul_then_bias():
    n, l, m = 24, 16, 9
    bias = te.var("bias", dtype="float32")
    A = te.placeholder((n, l), name="A")
    B = te.placeholder((l, m), name="B")
    C = te.extern((n, m), [A, B],
                  lambda ins, outs: tvm.tir.call_packed("tvm.contrib.cblas.matmul", ins[0],
                                                        ins[1], outs[0], False, False),
                  name="C")
    D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
    s = te.create_schedule(D.op)
    f = tvm.build(s, [A, B, D, bias], "llvm")
    dev = tvm.cpu(0)
    a = tvm.nd.array(np.random.uniform(size=(n, l)).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=(l, m)).astype(B.dtype), dev)
    d = tvm.nd.array(np.zeros((n, m), dtype=D.dtype), dev)
    f(a, b, d, 10.0)
    tvm.testing.assert_allclose(d.numpy(), np.dot(a.numpy(), b.numpy()) + 10, rtol=1e-5)


def test_contrib_cblas_wrapper():
    A = te.placeholder((7, 5), name="A")
    B = te.placeholder((5, 3), name="B")
    C = cblas.matmul(A, B)
    D = te.compute(C.shape, lambda i, j: C[i, j] * 2, name="D")
    f = tvm.build(te.create_schedule(D.op), [A, B, D], "llvm")
    a, b = np.random.rand(7, 5).astype("float32"), np.random.rand(5, 3).astype("float32")
    d = np.zeros((7, 3), "float32")
    f(a, b, d)
    np.testing.assert_allclose(d, 2 * a @ b, rtol=1e-5)


def test_python_function_as_packed_function():
    seen = []

    @tvm.register_func("tvm.contrib.my_tvm_addone", override=True)
    def my_tvm_addone(x, y):
        seen.append((type(x).__name__, type(y).__name__))
        tvm.nd.array(x.numpy() + 1).copyto(y)

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.extern(A.shape, [A], lambda ins, outs: tvm.tir.call_packed(
        "tvm.contrib.my_tvm_addone", ins[0], outs[0]), name="C")
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm")
    a = tvm.nd.array(np.random.uniform(size=(10,)).astype(A.dtype))
    b = tvm.nd.array(np.random.uniform(size=(10,)).astype(B.dtype))
    f(a, b)
    tvm.testing.assert_allclose(b.numpy(), a.numpy() + 1, rtol=1e-6)
    assert seen == [("NDArray", "NDArray")]


def test_extern_reading_a_compute_says_what_to_do():
    A = te.placeholder((4,), name="A")
    A2 = te.compute((4,), lambda i: A[i] * 2, name="A2")
    C = te.extern((4,), [A2], lambda ins, outs: lambda x, y: np.copyto(y, x), name="C")
    D = te.compute((4,), lambda i: C[i] + 1, name="D")
    with pytest.raises(te.PolyoptError, match="a compute feeding an extern is not supported"):
        tvm.build(te.create_schedule(D.op), [A, D], "llvm")
