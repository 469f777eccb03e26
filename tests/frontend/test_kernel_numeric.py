"""po.kernel results against plain Python/NumPy loops, on small, odd and empty sizes."""

import numpy as np
import pytest

import polyopt as po

from testlib.kernels import (N, forward_substitution, jacobi_1d, jacobi_1d_ref, lu, seidel_2d,
                             seidel_2d_ref)

M = po.var("M")
rng = np.random.default_rng(0)


@pytest.mark.parametrize("n, steps", [(0, 2), (1, 3), (2, 1), (3, 2), (5, 0), (7, 3), (10, 4)])
def test_seidel_2d(n, steps):
    a = rng.random((n, n))
    expected = a.copy()
    seidel_2d_ref(expected, steps)
    po.build(po.create_schedule(seidel_2d))(a, T=steps)
    np.testing.assert_allclose(a, expected, rtol=1e-13)


@pytest.mark.parametrize("n, steps", [(0, 1), (1, 2), (2, 2), (3, 1), (6, 5), (13, 3)])
def test_jacobi_1d_with_time_loop(n, steps):
    a, b = rng.random(n), rng.random(n)
    ea, eb = a.copy(), b.copy()
    jacobi_1d_ref(ea, eb, steps)
    po.build(po.create_schedule(jacobi_1d))(a, b, T=steps)
    np.testing.assert_allclose(a, ea, rtol=1e-13)
    np.testing.assert_allclose(b, eb, rtol=1e-13)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 9])
def test_lu_without_pivoting(n):
    a = rng.random((n, n)) + n * np.eye(n)
    original = a.copy()
    po.build(po.create_schedule(lu))(a)
    lower, upper = np.tril(a, -1) + np.eye(n), np.triu(a)
    np.testing.assert_allclose(lower @ upper, original, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 4, 7])
def test_triangular_solve(n):
    L = np.tril(rng.random((n, n))) + n * np.eye(n)
    b, x = rng.random(n), np.zeros(n)
    po.build(po.create_schedule(forward_substitution))(L, b, x)
    np.testing.assert_allclose(L @ x, b, rtol=1e-12, atol=1e-12)


@po.kernel
def banded_matvec(A: po.f32[N, N], x: po.f32[N], y: po.f32[N]):
    for i in range(N):
        y[i] = 0.0
        for j in range(max(0, i - 2), min(N, i + 3)):
            y[i] += A[i, j] * x[j]


@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 11])
def test_min_max_bounds(n):
    A = rng.random((n, n)).astype("float32")
    x, y = rng.random(n).astype("float32"), np.full(n, np.nan, "float32")
    band = np.triu(np.tril(A, 2), -2)
    po.build(po.create_schedule(banded_matvec))(A, x, y)
    np.testing.assert_allclose(y, band @ x, rtol=1e-5)


@po.kernel
def checker(A: po.f64[N, M]):
    for i in range(N):
        for j in range(M):
            if (i + j) % 2 == 0 and not i == j:
                A[i, j] = 1.0
            elif 0 < j <= i < N - 1:
                A[i, j] *= 2.0
            else:
                A[i, j] -= 3.0


@pytest.mark.parametrize("n, m", [(0, 3), (1, 1), (4, 5), (7, 3)])
def test_if_with_affine_conditions(n, m):
    a = rng.random((n, m))
    expected = a.copy()
    for i in range(n):
        for j in range(m):
            if (i + j) % 2 == 0 and not i == j:
                expected[i, j] = 1.0
            elif 0 < j <= i < n - 1:
                expected[i, j] *= 2.0
            else:
                expected[i, j] -= 3.0
    po.build(po.create_schedule(checker))(a)
    np.testing.assert_array_equal(a, expected)


@po.kernel
def softsign_update(A: po.f64[N], B: po.f64[N]):
    for i in range(N):
        t = A[i] * 2.0 - 1.0
        u = t / (1.0 + abs(t))
        B[i] = po.maximum(u, -0.5) + po.exp(t) * 0.0 + (u if i % 3 == 0 else -u)
        A[i] += u ** 2


def test_scalar_temporaries_are_substituted():
    n = 10
    a, b = rng.random(n), np.zeros(n)
    ea, eb = a.copy(), b.copy()
    for i in range(n):
        t = ea[i] * 2.0 - 1.0
        u = t / (1.0 + abs(t))
        eb[i] = max(u, -0.5) + (u if i % 3 == 0 else -u)
        ea[i] += u ** 2
    po.build(po.create_schedule(softsign_update))(a, b)
    np.testing.assert_allclose(a, ea, rtol=1e-14)
    np.testing.assert_allclose(b, eb, rtol=1e-14)


@po.kernel
def accumulate(A: po.i32[N], S: po.i64[()]):
    S[()] = 0
    for i in range(0, N, 3):
        A[i] += i // 2
        A[i] -= 1
        A[i] *= 3
        S[()] += A[i]


@pytest.mark.parametrize("n", [0, 1, 3, 4, 10])
def test_augmented_assignments_and_strides(n):
    a, s = np.arange(n, dtype="int32"), np.full((), -7, "int64")
    expected = a.copy()
    total = 0
    for i in range(0, n, 3):
        expected[i] = (expected[i] + i // 2 - 1) * 3
        total += int(expected[i])
    po.build(po.create_schedule(accumulate))(a, s)
    np.testing.assert_array_equal(a, expected)
    assert s == total


def test_vars_from_a_closure_and_the_default_arguments():
    n = po.var("n")
    scale = 0.5

    @po.kernel
    def halve(A: po.f64[n + 1]):
        for i in range(n + 1):
            A[i] = A[i] * scale

    s = po.create_schedule(halve)
    assert [t.name for t in s.default_args] == ["A"]
    a = np.arange(4.0)
    po.build(s)(a)
    np.testing.assert_array_equal(a, [0.0, 0.5, 1.0, 1.5])
