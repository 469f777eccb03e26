"""Numerical tests of reductions (sum, max, min) against NumPy: one and several reduce
axes, affine and data-dependent ``where=``, empty ranges, 0-d outputs, prefix sums."""

import numpy as np
import pytest

import polyopt as po

from testlib.numeric import SYMBOLIC, assert_numbers, extents, random_arrays, run

RNG = np.random.default_rng(1)
rand = random_arrays(RNG)

COMBINERS = {"sum": (po.sum, np.sum, 0.0), "max": (po.max, np.max, -np.inf),
             "min": (po.min, np.min, np.inf)}
COMBINER = pytest.mark.parametrize("combiner", list(COMBINERS))


def np_reduce(combiner, values, mask, axis):
    """NumPy's reduction of ``values`` where ``mask`` holds; an empty set gives the
    identity (0, -inf, +inf) as polyopt's init does."""
    _, reduce, identity = COMBINERS[combiner]
    return reduce(np.where(mask, values, identity), axis=axis, initial=identity)


# -- one and several reduce axes ----------------------------------------------------------

@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("m,n", [(1, 1), (4, 7), (5, 1), (0, 3), (3, 0)])
def test_row_reduction(symbolic, combiner, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((M,), lambda i: COMBINERS[combiner][0](A[i, k], axis=k), name="R")
    a = rand(m, n)
    assert_numbers(run([A, R], [a], M=m, N=n), np_reduce(combiner, a, True, axis=1))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("m,n", [(1, 1), (5, 3), (1, 6)])
def test_column_reduction(symbolic, combiner, m, n):
    """The reduce axis indexes the outer dimension."""
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    k = po.reduce_axis((0, M), name="k")
    R = po.compute((N,), lambda j: COMBINERS[combiner][0](A[k, j], axis=k), name="R")
    a = rand(m, n)
    assert_numbers(run([A, R], [a], M=m, N=n), np_reduce(combiner, a, True, axis=0))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("b,m,n", [(1, 1, 1), (3, 4, 5), (2, 1, 3), (2, 0, 3)])
def test_several_reduce_axes(symbolic, combiner, b, m, n):
    B, M, N = extents(symbolic, B=b, M=m, N=n)
    A = po.placeholder((B, M, N), name="A")
    k = po.reduce_axis((0, M), name="k")
    l = po.reduce_axis((0, N), name="l")
    R = po.compute((B,), lambda i: COMBINERS[combiner][0](A[i, k, l], axis=[k, l]), name="R")
    a = rand(b, m, n)
    assert_numbers(run([A, R], [a], B=b, M=m, N=n), np_reduce(combiner, a, True, axis=(1, 2)))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("m,n", [(1, 1), (3, 5), (0, 0), (4, 0)])
def test_full_reduction_to_0d(symbolic, combiner, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    k = po.reduce_axis((0, M), name="k")
    l = po.reduce_axis((0, N), name="l")
    S = po.compute((), lambda: COMBINERS[combiner][0](A[k, l], axis=[l, k]), name="S")
    a = rand(m, n)
    s = run([A, S], [a], M=m, N=n)
    assert s.shape == () and s.dtype == np.float32
    assert_numbers(s, np_reduce(combiner, a, True, axis=None))


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 6, 0])
def test_reduce_axis_with_offset_bounds(symbolic, n):
    """reduce_axis((1, n + 1)) reads A[k - 1] and A[k]: a windowed pairwise sum."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N + 1,), name="A")
    k = po.reduce_axis((1, N + 1), name="k")
    S = po.compute((1,), lambda i: po.sum(A[k] * A[k - 1], axis=k), name="S")
    a = rand(n + 1)
    assert_numbers(run([A, S], [a], N=n), [np.sum(a[1:] * a[:-1].astype("float64"))])


def test_sum_of_computed_tensor_and_reduction_feeding_compute():
    """A reduction reads an intermediate and a later compute reads the reduction."""
    M, N = po.var("M"), po.var("N")
    A = po.placeholder((M, N), name="A")
    Sq = po.compute((M, N), lambda i, j: A[i, j] * A[i, j], name="Sq")
    k = po.reduce_axis((0, N), name="k")
    S = po.compute((M,), lambda i: po.sum(Sq[i, k], axis=k), name="S")
    Norm = po.compute((M,), lambda i: po.sqrt(S[i]) + 1.0, name="Norm")
    for m, n in [(1, 1), (3, 5), (2, 0)]:
        a = rand(m, n)
        assert_numbers(run([A, Norm], [a], M=m, N=n),
                       np.sqrt((a.astype("float64") ** 2).sum(axis=1)) + 1)


# -- where= --------------------------------------------------------------------------------

@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("n", [1, 2, 7])
def test_where_affine_triangle(symbolic, combiner, n):
    """R[i] reduces A[i, k] over k <= i (lower triangle, row 0 has one element)."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, N), name="A")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((N,), lambda i: COMBINERS[combiner][0](A[i, k], axis=k, where=k <= i),
                   name="R")
    a = rand(n, n)
    mask = np.tri(n, dtype=bool)
    assert_numbers(run([A, R], [a], N=n), np_reduce(combiner, a, mask, axis=1))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("n", [1, 5])
def test_where_affine_strict_upper_leaves_identity(symbolic, combiner, n):
    """k > i: the last row has nothing to reduce and keeps the init value."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, N), name="A")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((N,), lambda i: COMBINERS[combiner][0](A[i, k], axis=k, where=k > i),
                   name="R")
    a = rand(n, n)
    mask = ~np.tri(n, dtype=bool)
    assert_numbers(run([A, R], [a], N=n), np_reduce(combiner, a, mask, axis=1))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("m,n", [(1, 1), (4, 6), (3, 0)])
def test_where_data_dependent(symbolic, combiner, m, n):
    M, N = extents(symbolic, M=m, N=n)
    A = po.placeholder((M, N), name="A")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((M,), lambda i: COMBINERS[combiner][0](A[i, k] * 2.0, axis=k,
                                                          where=A[i, k] > 0), name="R")
    a = rand(m, n)
    if m > 1:
        a[1] = -np.abs(a[1])  # a row with no positive element keeps the identity
    assert_numbers(run([A, R], [a], M=m, N=n), np_reduce(combiner, a * 2, a > 0, axis=1))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("n", [1, 6])
def test_where_affine_and_data_dependent_together(symbolic, combiner, n):
    """where=(k <= i) & (B[k] > A[i, k]) & (k % 2 == 0) across two tensors."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, N), name="A")
    B = po.placeholder((N,), name="B")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((N,), lambda i: COMBINERS[combiner][0](
        A[i, k] + B[k], axis=k, where=(k <= i) & (B[k] > A[i, k]) & (k % 2 == 0)), name="R")
    a, b = rand(n, n), rand(n)
    kk = np.arange(n)
    mask = np.tri(n, dtype=bool) & (b[None, :] > a) & (kk[None, :] % 2 == 0)
    assert_numbers(run([A, B, R], [a, b], N=n), np_reduce(combiner, a + b[None, :], mask, 1))


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("n", [1, 4])
def test_where_on_several_axes(symbolic, combiner, n):
    """R[i] over (k, l) with k + l <= i: a triangular region of a 2-d window."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, N), name="A")
    k = po.reduce_axis((0, N), name="k")
    l = po.reduce_axis((0, N), name="l")
    R = po.compute((N,), lambda i: COMBINERS[combiner][0](A[k, l] * (i + 1), axis=[k, l],
                                                          where=k + l <= i), name="R")
    a = rand(n, n)
    kk, ll = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    expected = [np_reduce(combiner, a * (i + 1), kk + ll <= i, axis=None) for i in range(n)]
    assert_numbers(run([A, R], [a], N=n), expected)


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 2, 9, 0])
def test_prefix_sum_as_triangular_reduction(symbolic, n):
    (N,) = extents(symbolic, N=n)
    X = po.placeholder((N,), name="X")
    k = po.reduce_axis((0, N), name="k")
    P = po.compute((N,), lambda i: po.sum(X[k], axis=k, where=k <= i), name="P")
    x = rand(n)
    assert_numbers(run([X, P], [x], N=n), np.cumsum(x.astype("float64")))


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_prefix_sum_is_exact(dtype):
    N = po.var("N")
    X = po.placeholder((N,), name="X", dtype=dtype)
    k = po.reduce_axis((0, N), name="k")
    P = po.compute((N,), lambda i: po.sum(X[k], axis=k, where=k <= i), name="P")
    x = RNG.integers(-1000, 1000, size=13).astype(dtype)
    p = run([X, P], [x], N=13)
    assert p.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(p, np.cumsum(x, dtype=dtype))


# -- integer reductions -------------------------------------------------------------------

@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_reductions_with_where(symbolic, combiner, dtype):
    """Integer max/min use the least/greatest integer as identity; uint8 compares unsigned
    and sums wrap around in the dtype."""
    M, N = extents(symbolic, M=4, N=6)
    A = po.placeholder((M, N), name="A", dtype=dtype)
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((M,), lambda i: COMBINERS[combiner][0](A[i, k], axis=k, where=k < i),
                   name="R")
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, size=(4, 6), endpoint=True).astype(dtype)
    r = run([A, R], [a], M=4, N=6)
    assert r.dtype == np.dtype(dtype)
    mask = np.arange(6)[None, :] < np.arange(4)[:, None]
    identity = {"sum": 0, "max": info.min, "min": info.max}[combiner]
    reduce = COMBINERS[combiner][1]
    expected = reduce(np.where(mask, a, np.array(identity, dtype)), axis=1,
                      initial=np.array(identity, dtype)).astype(dtype)
    np.testing.assert_array_equal(r, expected)


# -- IEEE special values ------------------------------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("combiner", ["max", "min"])
def test_max_min_propagate_nan_like_numpy(symbolic, combiner):
    """po.max/po.min reductions (vectorized over 40 elements) and po.maximum/minimum."""
    (N,) = extents(symbolic, N=40)
    X = po.placeholder((3, N), name="X")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((3,), lambda i: COMBINERS[combiner][0](X[i, k], axis=k), name="R")
    elementwise = po.maximum if combiner == "max" else po.minimum
    E = po.compute((3, N), lambda i, j: elementwise(X[i, j], 0.0), name="E")
    x = rand(3, 40)
    x[0, 5] = np.nan
    x[1, 39] = np.inf if combiner == "max" else -np.inf
    r, e = run([X, R, E], [x], N=40)
    np.testing.assert_array_equal(r, COMBINERS[combiner][1](x, axis=1))
    np.testing.assert_array_equal(e, (np.maximum if combiner == "max" else np.minimum)(x, 0))


# -- bounds and conditions with vars ------------------------------------------------------

@pytest.mark.parametrize("n,s", [(7, 0), (7, 3), (7, 7), (7, 9), (1, 0)])
def test_reduce_axis_with_symbolic_lower_bound(n, s):
    """reduce_axis((s, n)) sums A[s:], an empty range when s >= n."""
    N, S = po.var("N"), po.var("S")
    A = po.placeholder((N,), name="A")
    k = po.reduce_axis((S, N), name="k")
    R = po.compute((1,), lambda i: po.sum(A[k], axis=k), name="R")
    kernel = po.build(po.create_schedule(R), [A, R])
    a, r = rand(n), np.full(1, np.nan, "float32")
    kernel(a, r, S=s)
    assert_numbers(r, [a[s:].astype("float64").sum()])


@pytest.mark.parametrize("n,s", [(6, 2), (6, 0), (1, 5)])
def test_where_with_var_and_output_axis(n, s):
    """where=k < S - i: a var and an output axis in the affine condition."""
    N, S = po.var("N"), po.var("S")
    A = po.placeholder((N,), name="A")
    k = po.reduce_axis((0, N), name="k")
    R = po.compute((N,), lambda i: po.sum(A[k], axis=k, where=k < S - i), name="R")
    kernel = po.build(po.create_schedule(R), [A, R])
    a, r = rand(n), np.full(n, np.nan, "float32")
    kernel(a, r, S=s)
    assert_numbers(r, [a[:max(0, s - i)].astype("float64").sum() for i in range(n)])


@SYMBOLIC
@COMBINER
@pytest.mark.parametrize("n", [1, 7])
def test_where_with_div_and_mod_on_two_axes(symbolic, combiner, n):
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N,), name="A")
    k = po.reduce_axis((0, N), name="k")
    l = po.reduce_axis((0, N), name="l")
    R = po.compute((2,), lambda i: COMBINERS[combiner][0](
        A[k] * A[l], axis=[k, l], where=(k % 2 == i) & (l // 2 == k // 3)), name="R")
    a = rand(n)
    kk, ll = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    products = np.outer(a, a)
    expected = [np_reduce(combiner, products, (kk % 2 == i) & (ll // 2 == kk // 3), None)
                for i in range(2)]
    assert_numbers(run([A, R], [a], N=n), expected)


@SYMBOLIC
@pytest.mark.parametrize("n", [1, 6])
def test_0d_reduction_as_intermediate(symbolic, n):
    """A global maximum kept in a 0-d temporary, then subtracted everywhere."""
    (N,) = extents(symbolic, N=n)
    A = po.placeholder((N, 3), name="A")
    k = po.reduce_axis((0, N), name="k")
    l = po.reduce_axis((0, 3), name="l")
    Mx = po.compute((), lambda: po.max(A[k, l], axis=[k, l]), name="Mx")
    O = po.compute((N, 3), lambda i, j: A[i, j] - Mx[()], name="O")
    a = rand(n, 3)
    np.testing.assert_array_equal(run([A, O], [a], N=n), a - a.max())
