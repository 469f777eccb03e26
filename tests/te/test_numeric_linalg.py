"""Numerical tests of linear-algebra kernels and index arithmetic against NumPy.

Every kernel is built twice: with fixed sizes and with symbolic sizes (``po.var``), the
symbolic one being called on several sizes, including 1, odd sizes and 0.
"""

import numpy as np
import pytest

import polyopt as po

from testlib.numeric import SYMBOLIC, assert_numbers, extents, random_arrays, run

RNG = np.random.default_rng(0)
rand = random_arrays(RNG)


# -- matmul family ------------------------------------------------------------------------

def matmul(M, N, K, dtype="float32"):
    A = po.placeholder((M, K), name="A", dtype=dtype)
    B = po.placeholder((K, N), name="B", dtype=dtype)
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


MATMUL_SIZES = [(1, 1, 1), (3, 5, 7), (4, 1, 9), (1, 6, 1), (8, 8, 8),
                (0, 3, 4), (3, 0, 4), (3, 4, 0)]


@SYMBOLIC
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n,k", MATMUL_SIZES)
def test_matmul(symbolic, dtype, m, n, k):
    A, B, C = matmul(*extents(symbolic, M=m, N=n, K=k), dtype=dtype)
    a, b = rand(m, k, dtype=dtype), rand(k, n, dtype=dtype)
    a_before, b_before = a.copy(), b.copy()
    c = run([A, B, C], [a, b], M=m, N=n, K=k)
    assert c.shape == (m, n)
    assert_numbers(c, a.astype("float64") @ b, dtype=dtype)  # K == 0 gives the zeros of the init
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


def test_symbolic_matmul_kernel_serves_every_size():
    A, B, C = matmul(*extents(True, M=0, N=0, K=0))
    kernel = po.build(po.create_schedule(C), [A, B, C])
    for m, n, k in MATMUL_SIZES:
        a, b = rand(m, k), rand(k, n)
        c = np.full((m, n), np.nan, "float32")
        kernel(a, b, c)
        assert_numbers(c, a.astype("float64") @ b, dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("batch,m,n,k", [(1, 1, 1, 1), (3, 2, 5, 3), (2, 4, 1, 7),
                                         (0, 2, 2, 2), (2, 3, 3, 0)])
def test_batched_matmul(symbolic, batch, m, n, k):
    Bt, M, N, K = extents(symbolic, Bt=batch, M=m, N=n, K=k)
    A = po.placeholder((Bt, M, K), name="A")
    B = po.placeholder((Bt, K, N), name="B")
    r = po.reduce_axis((0, K), name="r")
    C = po.compute((Bt, M, N), lambda b, i, j: po.sum(A[b, i, r] * B[b, r, j], axis=r),
                   name="C")
    a, b = rand(batch, m, k), rand(batch, k, n)
    c = run([A, B, C], [a, b], Bt=batch, M=m, N=n, K=k)
    assert_numbers(c, np.matmul(a.astype("float64"), b), dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("m,k", [(1, 1), (5, 3), (1, 9), (7, 1), (0, 4), (4, 0)])
def test_matrix_vector(symbolic, m, k):
    M, K = extents(symbolic, M=m, K=k)
    A = po.placeholder((M, K), name="A")
    x = po.placeholder((K,), name="x")
    r = po.reduce_axis((0, K), name="r")
    y = po.compute((M,), lambda i: po.sum(A[i, r] * x[r], axis=r), name="y")
    a, xv = rand(m, k), rand(k)
    assert_numbers(run([A, x, y], [a, xv], M=m, K=k), a.astype("float64") @ xv, dtype="float32")


def test_matmul_chain_with_intermediate_buffer():
    """(A @ B) @ D with A @ B an intermediate the kernel allocates itself."""
    M, N, K, L = extents(True, M=0, N=0, K=0, L=0)
    A, B, C = matmul(M, N, K)
    D = po.placeholder((N, L), name="D")
    n = po.reduce_axis((0, N), name="n")
    E = po.compute((M, L), lambda i, j: po.sum(C[i, n] * D[n, j], axis=n), name="E")
    for m, nn, k, l in [(3, 4, 5, 2), (1, 1, 1, 1), (2, 0, 3, 3)]:
        a, b, d = rand(m, k), rand(k, nn), rand(nn, l)
        e = run([A, B, D, E], [a, b, d], M=m, N=nn, K=k, L=l)
        np.testing.assert_allclose(e, (a.astype("float64") @ b) @ d, rtol=1e-4, atol=1e-4)


# -- data movement ------------------------------------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("m,n", [(1, 1), (3, 5), (6, 1), (0, 3)])
def test_transpose(symbolic, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    T = po.compute((N, M), lambda i, j: A[j, i], name="T")
    a = rand(m, n)
    np.testing.assert_array_equal(run([A, T], [a], M=m, N=n), a.T)


@SYMBOLIC
def test_permute_3d(symbolic):
    X, Y, Z = extents(symbolic, X=2, Y=3, Z=5)
    A = po.placeholder((X, Y, Z), name="A")
    P = po.compute((Z, X, Y), lambda i, j, k: A[j, k, i], name="P")
    a = rand(2, 3, 5)
    np.testing.assert_array_equal(run([A, P], [a], X=2, Y=3, Z=5), a.transpose(2, 0, 1))


@SYMBOLIC
@pytest.mark.parametrize("axis", [0, 1], ids=["row_vector", "column_vector"])
@pytest.mark.parametrize("m,n", [(1, 1), (4, 7), (5, 1), (0, 2)])
def test_broadcast_add(symbolic, axis, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    b = po.placeholder((N if axis == 0 else M,), name="b")
    C = po.compute((M, N), lambda i, j: A[i, j] + b[j if axis == 0 else i], name="C")
    a, bv = rand(m, n), rand(n if axis == 0 else m)
    expected = a + (bv[None, :] if axis == 0 else bv[:, None])
    assert_numbers(run([A, b, C], [a, bv], M=m, N=n), expected, dtype="float32")


@SYMBOLIC
def test_outer_product_and_scalar_broadcast(symbolic):
    M, N = extents(symbolic, M=3, N=4)
    x = po.placeholder((M,), name="x")
    y = po.placeholder((N,), name="y")
    s = po.placeholder((1,), name="s")
    O = po.compute((M, N), lambda i, j: x[i] * y[j] + s[0], name="O")
    xv, yv, sv = rand(3), rand(4), rand(1)
    assert_numbers(run([x, y, s, O], [xv, yv, sv], M=3, N=4), np.outer(xv, yv) + sv[0],
                   dtype="float32")


# -- elementwise chains -------------------------------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("n", [1, 7, 0])
@pytest.mark.parametrize("keep_intermediates", [True, False])
def test_elementwise_chain_of_computes(symbolic, n, keep_intermediates):
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N,), name="A")
    B = po.placeholder((N,), name="B")
    C = po.compute((N,), lambda i: A[i] * 2.0 + B[i], name="C")
    D = po.compute((N,), lambda i: po.maximum(C[i], 0.0) - A[i], name="D")
    E = po.compute((N,), lambda i: D[i] * C[i] + 1.0, name="E")
    a, b = rand(n), rand(n)
    c = a * np.float32(2) + b
    d = np.maximum(c, 0) - a
    e = d * c + 1
    if keep_intermediates:
        results = run([A, B, C, D, E], [a, b], N=n)
        for actual, expected in zip(results, [c, d, e]):
            assert_numbers(actual, expected, dtype="float32")
    else:
        assert_numbers(run([A, B, E], [a, b], N=n), e, dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m,n", [(1, 1), (3, 5), (0, 4)])
def test_long_math_expression(symbolic, dtype, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A", dtype=dtype)
    B = po.placeholder((M, N), name="B", dtype=dtype)
    Y = po.compute((M, N), lambda i, j: (
        po.exp(A[i, j] * 0.5) + po.log(po.abs(B[i, j]) + 1.0) * po.sqrt(po.abs(A[i, j]))
        - po.tanh(po.maximum(A[i, j], B[i, j])) / (po.minimum(po.abs(B[i, j]), 2.0) + 0.5)
        + abs(-A[i, j])), name="Y")
    assert Y.dtype == dtype
    a, b = rand(m, n, dtype=dtype), rand(m, n, dtype=dtype)
    a64, b64 = a.astype("float64"), b.astype("float64")
    expected = (np.exp(a64 * 0.5) + np.log(np.abs(b64) + 1) * np.sqrt(np.abs(a64))
                - np.tanh(np.maximum(a64, b64)) / (np.minimum(np.abs(b64), 2) + 0.5)
                + np.abs(a64))
    y = run([A, B, Y], [a, b], M=m, N=n)
    assert y.dtype == np.dtype(dtype)
    np.testing.assert_allclose(y, expected, rtol=1e-5 if dtype == "float32" else 1e-12,
                               atol=1e-6 if dtype == "float32" else 1e-12)


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 9, 0])
def test_data_dependent_if_then_else(symbolic, n):
    """Only the chosen branch is evaluated; conditions may read data and combine axes."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N,), name="A")
    B = po.placeholder((N,), name="B")
    O = po.compute((N,), lambda i: po.if_then_else(
        (A[i] > 0) & ((i % 3 == 0) | (B[i] < A[i])), A[i] * B[i],
        po.if_then_else(~(B[i] > 0), -B[i], 1.0)), name="O")
    a, b = rand(n), rand(n)
    i = np.arange(n)
    expected = np.where((a > 0) & ((i % 3 == 0) | (b < a)), a * b, np.where(~(b > 0), -b, 1))
    assert_numbers(run([A, B, O], [a, b], N=n), expected, dtype="float32")


# -- index arithmetic ---------------------------------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("n", [1, 5, 0])
def test_floor_div_and_mod_in_indices_flatten(symbolic, n):
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, 2), name="A")
    F = po.compute((2 * N,), lambda i: A[i // 2, i % 2], name="F")
    a = rand(n, 2)
    np.testing.assert_array_equal(run([A, F], [a], N=n), a.reshape(-1))


@SYMBOLIC
@pytest.mark.parametrize("h", [1, 4, 0])
@pytest.mark.parametrize("w", [1, 3])
def test_reshape_flat_to_2d(symbolic, h, w):
    """G[i, j] = A[i * w + j]: a flat array seen as (h, w), w a constant (the product of
    two vars would not be affine)."""
    (H,) = extents(symbolic, H=h)
    A = po.placeholder((H * w,), name="A")
    G = po.compute((H, w), lambda i, j: A[i * w + j], name="G")
    a = rand(h * w)
    np.testing.assert_array_equal(run([A, G], [a], H=h), a.reshape(h, w))


@pytest.mark.parametrize("n", [1, 6, 7, 12])
def test_div_mod_by_constants_mixed_with_offsets(n):
    """Quasi-affine reads mixing // and % by constants with offsets."""
    N = po.var("N")
    A = po.placeholder((N, 3), name="A")
    V = po.placeholder((3 * N + 2,), name="V")
    O = po.compute((3 * N,), lambda i: A[i // 3, i % 3] * 10.0 + V[(i + 5) % 3 + i // 3 * 3 + 2],
                   name="O")
    a, v = rand(n, 3), rand(3 * n + 2)
    i = np.arange(3 * n)
    expected = a[i // 3, i % 3] * np.float32(10) + v[(i + 5) % 3 + i // 3 * 3 + 2]
    assert_numbers(run([A, V, O], [a, v], N=n), expected, dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 4, 0])
def test_strided_and_offset_reads(symbolic, n):
    """Out[i] = A[3i + 1] - A[3i + 2] with A of size 3n + 2 (odd stride, offsets)."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((3 * N + 2,), name="A")
    O = po.compute((N,), lambda i: A[3 * i + 1] - A[3 * i + 2] * 2.0, name="O")
    a = rand(3 * n + 2)
    assert_numbers(run([A, O], [a], N=n), a[1:3 * n + 1:3] - a[2:3 * n + 2:3] * np.float32(2),
                   dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("m,n", [(1, 1), (3, 2), (2, 5)])
def test_dilated_2d_reads(symbolic, m, n):
    """Out[i, j] = A[2i + 3j, n - 1 - j]: strides, a dilation and a reversal."""
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((2 * M + 3 * N, N), name="A")
    O = po.compute((M, N), lambda i, j: A[2 * i + 3 * j, N - 1 - j], name="O")
    a = rand(2 * m + 3 * n, n)
    i, j = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    np.testing.assert_array_equal(run([A, O], [a], M=m, N=n), a[2 * i + 3 * j, n - 1 - j])


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 2, 7])
def test_index_values_in_data(symbolic, n):
    """Axes used as values: Out[i, j] = A[i, j] * (i + 1) - j (index terms adopt A's dtype)."""
    M, N = extents(symbolic, M=3, N=n)
    A = po.placeholder((M, N), name="A")
    O = po.compute((M, N), lambda i, j: A[i, j] * (i + 1) - j, name="O")
    a = rand(3, n)
    i, j = np.meshgrid(np.arange(3), np.arange(n), indexing="ij")
    assert_numbers(run([A, O], [a], M=3, N=n), a * (i + 1) - j, dtype="float32")


# -- vars as values, 0-d tensors, chains through intermediates ----------------------------

@pytest.mark.parametrize("n,s", [(1, 0), (5, 3), (0, 7)])
def test_var_used_as_value_is_passed_by_keyword(n, s):
    N, S = po.var("N"), po.var("S")
    A = po.placeholder((N,), name="A")
    O = po.compute((N,), lambda i: A[i] * S + (i - S), name="O")
    kernel = po.build(po.create_schedule(O), [A, O])
    a, o = rand(n), np.full(n, np.nan, "float32")
    kernel(a, o, S=s)  # N comes from the shapes, S from the keyword
    assert_numbers(o, a * np.float32(s) + (np.arange(n) - s), dtype="float32")


@SYMBOLIC
def test_0d_input_and_0d_output(symbolic):
    (N,) = extents(symbolic, N=6)
    A = po.placeholder((N,), name="A")
    S = po.placeholder((), name="S")
    O = po.compute((N,), lambda i: A[i] * S[()], name="O")
    # (Z may not read A[0]: it is out of bounds for N = 0, which polyopt rightly refuses)
    Z = po.compute((), lambda: po.sqrt(S[()]) * 2.0, name="Z")
    a, s = rand(6), np.array(1.5, "float32")
    o, z = run([A, S, O, Z], [a, s], N=6)
    assert z.shape == ()
    assert_numbers(o, a * s, dtype="float32")
    assert_numbers(z, np.sqrt(s) * 2, dtype="float32")


@SYMBOLIC
@pytest.mark.parametrize("m", [1, 4, 0])
def test_stencil_chain_through_intermediates(symbolic, m):
    """B reads X with an offset, C reads B with an offset: each consumer runs after its
    producer, and the kernel allocates B itself."""
    (M,) = extents(symbolic, M=m)
    X = po.placeholder((M + 2,), name="X")
    B = po.compute((M + 1,), lambda i: X[i] + X[i + 1] * 2.0, name="B")
    C = po.compute((M,), lambda i: B[i] * B[i + 1] - B[i], name="C")
    x = rand(m + 2)
    b = x[:-1] + x[1:] * np.float32(2)
    assert_numbers(run([X, C], [x], M=m), b[:-1] * b[1:] - b[:-1], dtype="float32")
