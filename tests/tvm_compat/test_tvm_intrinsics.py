"""The "intrinsics and math functions" tutorial, ported by changing the imports only:
direct math calls, call_pure_extern by C name, and the generated code."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm


def build_and_run(B, A, n=17):
    s = te.create_schedule(B.op)
    f = tvm.build(s, [A, B], "llvm")
    a = tvm.nd.array(np.random.uniform(0.1, 2.0, size=n).astype(A.dtype))
    b = tvm.nd.array(np.zeros(n, dtype=B.dtype))
    f(a, b)
    return f, a.numpy(), b.numpy()


def test_exp_through_te():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: te.exp(A[i]), name="B")
    f, a, b = build_and_run(B, A)
    np.testing.assert_allclose(b, np.exp(a), rtol=1e-6)
    assert "exp" in f.get_source()


@pytest.mark.parametrize("name, reference", [("expf", np.exp), ("__expf", np.exp),
                                             ("logf", np.log), ("sqrtf", np.sqrt),
                                             ("tanhf", np.tanh), ("fabsf", np.abs)])
def test_call_pure_extern_by_c_name(name, reference):
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", name, A[i]),
                   name="B")
    f, a, b = build_and_run(B, A)
    np.testing.assert_allclose(b, reference(a), rtol=1e-6)


def test_unknown_extern_function_says_what_is_known():
    A = te.placeholder((4,), name="A")
    with pytest.raises(te.PolyoptError, match="cannot call the external function 'erf'"):
        te.compute(A.shape, lambda i: tvm.tir.call_pure_extern("float32", "erf", A[i]))


def test_log_and_a_sigmoid_written_out():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute(A.shape, lambda i: te.log(A[i]) + 1.0 / (1.0 + te.exp(-A[i])), name="B")
    f, a, b = build_and_run(B, A)
    np.testing.assert_allclose(b, np.log(a) + 1 / (1 + np.exp(-a)), rtol=1e-5)


def test_float64_math():
    A = te.placeholder((9,), name="A", dtype="float64")
    B = te.compute(A.shape, lambda i: tvm.tir.exp(A[i]) * tvm.tir.const(2, "float64"),
                   name="B")
    f, a, b = build_and_run(B, A, 9)
    np.testing.assert_allclose(b, np.exp(a) * 2, rtol=1e-12)
