"""Vectorized exp/log/tanh call glibc's libmvec where it exists: same numbers as NumPy."""

import numpy as np
import pytest

import polyopt as po
from polyopt.target.llvm.vecmath import host_variants
from testlib.numeric import assert_numbers

needs_libmvec = pytest.mark.skipif(not host_variants()[1],
                                   reason="no libmvec or no AVX2/AVX-512 on this machine")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("func", ["exp", "log", "tanh"])
@pytest.mark.parametrize("n", [1, 37, 4096])
def test_vector_math_matches_numpy(func, dtype, n):
    A = po.placeholder((n,), name="A", dtype=dtype)
    B = po.compute((n,), lambda i: getattr(po, func)(A[i]), name="B")
    s = po.create_schedule(B)
    f = po.build(s, [A, B])
    a = np.random.default_rng(0).uniform(0.01, 20, n).astype(dtype)
    b = np.zeros(n, dtype)
    f(a, b)
    np.testing.assert_allclose(b, getattr(np, func)(a), rtol=4e-6 if dtype == "float32" else 1e-13)


@needs_libmvec
@pytest.mark.parametrize("func", ["exp", "log", "tanh"])
def test_vectorized_loops_call_libmvec(func):
    A = po.placeholder((1024,), name="A")
    B = po.compute((1024,), lambda i: getattr(po, func)(A[i]) * 2.0, name="B")
    f = po.build(po.create_schedule(B), [A, B])
    assert f"_ZGVeN16v_{func}f" in f.optimized_ir or f"_ZGVdN8v_{func}f" in f.optimized_ir


@needs_libmvec
def test_reduction_of_exp_calls_libmvec():
    X = po.placeholder((8, 1000), name="X")
    k = po.reduce_axis((0, 1000), name="k")
    S = po.compute((8,), lambda i: po.sum(po.exp(X[i, k]), axis=k), name="S")
    f = po.build(po.create_schedule(S), [X, S])
    x = np.random.default_rng(1).standard_normal((8, 1000), dtype=np.float32)
    s = np.zeros(8, np.float32)
    f(x, s)
    np.testing.assert_allclose(s, np.exp(x).sum(axis=1), rtol=1e-5)
    assert "_ZGV" in f.optimized_ir


@pytest.mark.parametrize("func", ["exp", "log", "tanh"])
def test_strict_fp_gives_every_schedule_the_default_bits(func):
    """With strict_fp=True the math functions are libm's scalar ones in every loop: a
    split and vectorized schedule computes the default schedule's bits (without it, the
    elements of the vector loop may differ by libmvec's 4 ULP)."""
    n = 1003  # a vector loop and a scalar remainder
    a = np.random.default_rng(2).uniform(0.01, 20, n).astype("float32")

    def run(split: bool):
        A = po.placeholder((n,), name="A")
        B = po.compute((n,), lambda i: getattr(po, func)(A[i]), name="B")
        s = po.create_schedule(B, strict_fp=True)
        if split:
            _, inner = s[B].split(B.op.axis[0], factor=8)
            s[B].vectorize(inner)
        f = po.build(s, [A, B])
        b = np.zeros(n, np.float32)
        f(a, b)
        return f, b

    default, expected = run(split=False)
    vectorized, got = run(split=True)
    assert "_ZGV" not in default.optimized_ir and "_ZGV" not in vectorized.optimized_ir
    assert_numbers(got, expected, exact=True)
    assert_numbers(got, getattr(np, func)(a.astype(np.float64)).astype(np.float32),
                   rtol=4e-7, atol=0)
