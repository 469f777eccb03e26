"""Numerical tests of dtypes against NumPy: the promotion rules of polyopt/dtypes.py
(both the dtype of each compute and its numbers), weak Python numbers, casts, integer
floor division and modulo with Python semantics, wraparound, and int8 data accumulated
in int32."""

import itertools
import operator

import numpy as np
import pytest

import polyopt as po
from polyopt import dtypes

from testlib.numeric import SYMBOLIC, extents, run

RNG = np.random.default_rng(3)
ALL = ("float32", "float64", "int8", "uint8", "int32", "int64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "int64")
SIGNED = ("int8", "int32", "int64")


def values(dtype, size):
    """Random values of ``dtype``: the whole range for integers, so that sums wrap."""
    if dtype in INTS:
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, size=size, endpoint=True).astype(dtype)
    return (RNG.standard_normal(size) * 100).astype(dtype)


def documented_promotion(a, b):
    """The rule of polyopt/dtypes.py, stated independently of it: NumPy's promotion,
    except that int8 with uint8 gives int32 (as before polyopt had int16)."""
    result = np.result_type(a, b).name
    return "int32" if {np.dtype(a).name, np.dtype(b).name} == {"int8", "uint8"} else result


def elementwise(fn, n, *in_dtypes):
    """Placeholders of ``in_dtypes`` of extent ``n`` and compute(s) ``fn(*reads)``."""
    inputs = [po.placeholder((n,), name=f"I{k}", dtype=d) for k, d in enumerate(in_dtypes)]
    bodies = fn(*inputs)
    outputs = [po.compute((n,), _one_axis(body), name=f"O{k}") for k, body in enumerate(bodies)]
    return inputs, outputs


def _one_axis(body):
    return lambda i: body(i)  # po.compute names the axes after the parameters


# -- promotion of two typed operands ------------------------------------------------------

def test_documented_examples_of_promote():
    assert dtypes.promote("int8", "float32") == "float32"
    assert dtypes.promote("int32", "float32") == "float64"
    assert dtypes.promote("uint8", "int8") == "int32"
    assert dtypes.promote("float32", "float64") == "float64"
    assert dtypes.promote("uint8", "int64") == "int64"


@SYMBOLIC
@pytest.mark.parametrize("a_dtype,b_dtype", list(itertools.product(ALL, ALL)))
def test_binary_promotion(symbolic, a_dtype, b_dtype):
    (n,) = extents(symbolic, n=17)
    ops = (operator.add, operator.sub, operator.mul)
    (A, B), outs = elementwise(
        lambda A, B: [lambda i, op=op: op(A[i], B[i]) for op in ops], n, a_dtype, b_dtype)
    expected_dtype = documented_promotion(a_dtype, b_dtype)
    assert dtypes.promote(a_dtype, b_dtype) == expected_dtype
    assert all(out.dtype == expected_dtype for out in outs)
    a, b = values(a_dtype, 17), values(b_dtype, 17)
    results = run([A, B, *outs], [a, b], n=17)
    for op, result in zip(ops, results):
        assert result.dtype == np.dtype(expected_dtype)
        # one IEEE operation or one wrapping integer operation: exact
        np.testing.assert_array_equal(result, op(a.astype(expected_dtype),
                                                 b.astype(expected_dtype)))


@pytest.mark.parametrize("t_dtype,f_dtype", [("int8", "float32"), ("float64", "int32"),
                                             ("uint8", "int8"), ("float32", "float64")])
def test_if_then_else_promotes_its_branches(t_dtype, f_dtype):
    n = po.var("n")
    (C, T, F), (O,) = elementwise(
        lambda C, T, F: [lambda i: po.if_then_else(C[i] > 0, T[i], F[i])],
        n, "int32", t_dtype, f_dtype)
    expected_dtype = documented_promotion(t_dtype, f_dtype)
    assert O.dtype == expected_dtype
    c, t, f = values("int32", 12), values(t_dtype, 12), values(f_dtype, 12)
    np.testing.assert_array_equal(run([C, T, F, O], [c, t, f], n=12),
                                  np.where(c > 0, t.astype(expected_dtype),
                                           f.astype(expected_dtype)))


# -- weak Python numbers ------------------------------------------------------------------

WEAK_CASES = [  # (tensor dtype, expression, documented dtype)
    ("float32", lambda x: x * 2, "float32"),
    ("float32", lambda x: x * 0.5, "float32"),
    ("float32", lambda x: 1.5 - x, "float32"),
    ("float32", lambda x: x / 3, "float32"),
    ("float64", lambda x: x + 0.1, "float64"),
    ("int8", lambda x: x + 1, "int8"),
    ("int8", lambda x: 3 - x * 2, "int8"),
    ("uint8", lambda x: x + 100, "uint8"),
    ("int32", lambda x: x * 7, "int32"),
    ("int64", lambda x: x - 5, "int64"),
    ("int32", lambda x: x * 0.5, "float64"),
    ("uint8", lambda x: x + 0.25, "float64"),
    ("int8", lambda x: x / 2, "float64"),
    ("int64", lambda x: 1 / x, "float64"),
]


@SYMBOLIC
@pytest.mark.parametrize("dtype,fn,expected_dtype", WEAK_CASES)
def test_weak_python_numbers(symbolic, dtype, fn, expected_dtype):
    (n,) = extents(symbolic, n=20)
    (A,), (O,) = elementwise(lambda A: [lambda i: fn(A[i])], n, dtype)
    assert O.dtype == expected_dtype
    a = values(dtype, 20)
    if dtype in INTS:
        a[0] = 0  # 1 / 0 -> inf, as NumPy
    with np.errstate(divide="ignore"):
        expected = fn(a)  # NumPy 2 treats Python numbers as weak too
    assert expected.dtype == np.dtype(expected_dtype)
    o = run([A, O], [a], n=20)
    np.testing.assert_allclose(o, expected, rtol=1e-6 if expected_dtype == "float32" else 1e-15)


@SYMBOLIC
def test_weak_constants_and_index_arithmetic_as_stored_values(symbolic):
    """A weak float stores as float32, index arithmetic as int64; casts pick the dtype."""
    (n,) = extents(symbolic, n=9)
    Half = po.compute((n,), lambda i: 1.5, name="Half")
    Idx = po.compute((n,), lambda i: i * 3 - 10, name="Idx")
    Narrow = po.compute((n,), lambda i: (i * 50).astype("int8"), name="Narrow")
    Real = po.compute((n,), lambda i: i.astype("float64") / 4, name="Real")
    assert (Half.dtype, Idx.dtype, Narrow.dtype, Real.dtype) == (
        "float32", "int64", "int8", "float64")
    half, idx, narrow, real = run([Half, Idx, Narrow, Real], [], n=9)
    i = np.arange(9)
    np.testing.assert_array_equal(half, np.full(9, 1.5, "float32"))
    np.testing.assert_array_equal(idx, i * 3 - 10)
    np.testing.assert_array_equal(narrow, (i * 50).astype("int8"))  # wraps past 127
    np.testing.assert_array_equal(real, i / 4)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32"])
def test_index_values_adopt_the_data_dtype(dtype):
    """A[i] * (i + 1): the index term is converted to A's dtype (wrapping for int8)."""
    n = po.var("n")
    (A,), (O,) = elementwise(lambda A: [lambda i: A[i] * (i + 1)], n, dtype)
    assert O.dtype == dtype
    a = values(dtype, 40) if dtype in INTS else np.linspace(-2, 2, 40, dtype=dtype)
    expected = (a.astype("int64") * (np.arange(40) + 1)).astype(dtype) if dtype in INTS \
        else a * (np.arange(40, dtype=dtype) + 1)
    np.testing.assert_array_equal(run([A, O], [a], n=40), expected)


def test_comparison_compute_stores_int8():
    n = po.var("n")
    (A, B), (Gt, Ne) = elementwise(lambda A, B: [lambda i: A[i] > B[i],
                                                 lambda i: A[i] != B[i]], n, "uint8", "float32")
    assert Gt.dtype == Ne.dtype == "int8"
    a = np.array([0, 200, 255, 3, 128, 7], "uint8")
    b = np.array([0, 199.5, np.nan, 3, -1, 8], "float32")
    gt, ne = run([A, B, Gt, Ne], [a, b], n=6)
    np.testing.assert_array_equal(gt, (a > b).astype("int8"))  # 200 > 199.5: unsigned data
    np.testing.assert_array_equal(ne, (a != b).astype("int8"))  # NaN != anything


# -- casts ----------------------------------------------------------------------------------

CASTS = [  # (source, destination, source values; out-of-range float casts are not tested)
    ("float32", "int32", [-2.7, -0.5, 0.0, 0.9, 3.5, 1e6]),
    ("float64", "int8", [-128.9, -1.5, 0.7, 127.2]),
    ("float64", "uint8", [0.0, 0.99, 128.5, 255.9]),
    ("float64", "float32", [1 / 3, -1e-30, 3.4e38, 1e-45]),
    ("int32", "int8", [300, -129, 127, -128, 255]),
    ("int64", "int32", [2 ** 40 + 5, -(2 ** 33) - 1, 7]),
    ("uint8", "int8", [0, 127, 128, 255]),
    ("int8", "uint8", [-1, -128, 5]),
    ("int8", "int64", [-128, -1, 127]),
    ("uint8", "int32", [255, 128, 0]),
    ("uint8", "float32", [255, 128, 1]),
    ("int64", "float64", [2 ** 53 + 1, -(2 ** 62)]),
    ("int32", "float32", [16777217, -3]),
]


@pytest.mark.parametrize("src,dst,data", CASTS, ids=[f"{s}-{d}" for s, d, _ in CASTS])
def test_cast(src, dst, data):
    n = po.var("n")
    (A,), (O,) = elementwise(lambda A: [lambda i: A[i].astype(dst)], n, src)
    assert O.dtype == dst
    a = np.array(data).astype(src)
    with np.errstate(over="ignore"):
        expected = a.astype(dst)
    np.testing.assert_array_equal(run([A, O], [a], n=len(data)), expected)


# -- integer floor division and modulo of data --------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("dtype", INTS)
def test_floor_div_mod_of_data(symbolic, dtype):
    """Python semantics for negative operands, x // 0 == x % 0 == 0 (as NumPy), and the
    least integer // -1 wraps to itself (as NumPy) instead of trapping."""
    info = np.iinfo(dtype)
    pairs = [(7, 2), (-7, 2), (7, -2), (-7, -2), (6, 3), (-6, 3), (0, -5), (5, 0), (-5, 0),
             (0, 0), (info.max, 1), (info.min, 1), (info.min, -1), (info.max, -1),
             (info.min, info.max), (info.max, info.min), (-1, info.min)]
    pairs = [(a, b) for a, b in pairs if info.min <= a <= info.max and info.min <= b <= info.max]
    a = np.array([p[0] for p in pairs] + list(values(dtype, 32)), dtype)
    b = np.array([p[1] for p in pairs] + list(values(dtype, 32)), dtype)
    (n,) = extents(symbolic, n=len(a))
    (A, B), (Q, R) = elementwise(lambda A, B: [lambda i: A[i] // B[i], lambda i: A[i] % B[i]],
                                 n, dtype, dtype)
    assert Q.dtype == R.dtype == dtype
    q, r = run([A, B, Q, R], [a, b], n=len(a))
    with np.errstate(divide="ignore", over="ignore"):
        np.testing.assert_array_equal(q, a // b)
        np.testing.assert_array_equal(r, a % b)
    nonzero = (b != 0) & ~((a == info.min) & (b == -1))
    for x, y, qq, rr in zip(a[nonzero], b[nonzero], q[nonzero], r[nonzero]):
        assert (int(qq), int(rr)) == divmod(int(x), int(y))  # Python's own semantics


@pytest.mark.parametrize("dtype", SIGNED)
@pytest.mark.parametrize("divisor", [3, -3, 1, -1, 0])
def test_floor_div_mod_of_data_by_constants(dtype, divisor):
    n = po.var("n")
    (A,), (Q, R) = elementwise(lambda A: [lambda i: A[i] // divisor,
                                          lambda i: A[i] % divisor], n, dtype)
    info = np.iinfo(dtype)
    a = np.array([-7, -6, -1, 0, 1, 5, 6, info.min, info.max] + list(values(dtype, 20)), dtype)
    q, r = run([A, Q, R], [a], n=len(a))
    d = np.array(divisor, dtype)
    with np.errstate(divide="ignore", over="ignore"):
        np.testing.assert_array_equal(q, a // d)
        np.testing.assert_array_equal(r, a % d)


def test_floor_div_mod_with_mixed_dtypes_promotes_first():
    """int8 // uint8 computes in int32 (the promoted dtype), so 200 stays positive."""
    n = po.var("n")
    (A, B), (Q, R) = elementwise(lambda A, B: [lambda i: A[i] // B[i],
                                               lambda i: A[i] % B[i]], n, "int8", "uint8")
    assert Q.dtype == R.dtype == "int32"
    a = np.array([-100, 100, -1, 127, -128, 5], "int8")
    b = np.array([200, 200, 255, 3, 7, 0], "uint8")
    q, r = run([A, B, Q, R], [a, b], n=6)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(q, a.astype("int32") // b.astype("int32"))
        np.testing.assert_array_equal(r, a.astype("int32") % b.astype("int32"))


def test_float_division_by_zero_is_ieee():
    n = po.var("n")
    (A, B), (O,) = elementwise(lambda A, B: [lambda i: A[i] / B[i]], n, "float32", "float32")
    a = np.array([1, -1, 0, 3], "float32")
    b = np.array([0, 0, 0, 2], "float32")
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(run([A, B, O], [a, b], n=4), a / b)


# -- unsigned and wraparound arithmetic ---------------------------------------------------

@SYMBOLIC
def test_uint8_wraparound(symbolic):
    (n,) = extents(symbolic, n=8)
    (A, B), outs = elementwise(lambda A, B: [
        lambda i: A[i] + B[i], lambda i: A[i] - B[i], lambda i: A[i] * B[i],
        lambda i: -A[i], lambda i: A[i] + 200, lambda i: 5 - A[i]], n, "uint8", "uint8")
    assert all(o.dtype == "uint8" for o in outs)
    a = np.array([0, 1, 100, 128, 200, 255, 255, 17], "uint8")
    b = np.array([0, 255, 200, 128, 100, 1, 255, 15], "uint8")
    expected = [a + b, a - b, a * b, -a, a + np.uint8(200), np.uint8(5) - a]
    for result, exp in zip(run([A, B, *outs], [a, b], n=8), expected):
        np.testing.assert_array_equal(result, exp)


@pytest.mark.parametrize("dtype", INTS)
def test_integer_abs_maximum_minimum(dtype):
    """Unsigned comparisons for uint8; abs of the least integer wraps (as NumPy)."""
    n = po.var("n")
    (A, B), (Abs, Max, Min) = elementwise(lambda A, B: [
        lambda i: po.abs(A[i]), lambda i: po.maximum(A[i], B[i]),
        lambda i: po.minimum(A[i], B[i])], n, dtype, dtype)
    info = np.iinfo(dtype)
    a = np.array([info.min, info.max, 0, 1] + list(values(dtype, 20)), dtype)
    b = np.array([info.max, info.min, 1, 0] + list(values(dtype, 20)), dtype)
    abs_, mx, mn = run([A, B, Abs, Max, Min], [a, b], n=len(a))
    np.testing.assert_array_equal(abs_, np.abs(a))
    np.testing.assert_array_equal(mx, np.maximum(a, b))
    np.testing.assert_array_equal(mn, np.minimum(a, b))


@pytest.mark.parametrize("dtype", INTS)
def test_math_of_integers_gives_float64(dtype):
    n = po.var("n")
    (A,), outs = elementwise(lambda A: [
        lambda i: po.exp(A[i] * 0.01), lambda i: po.sqrt(po.abs(A[i])),
        lambda i: po.tanh(A[i]), lambda i: po.log(po.abs(A[i]) + 1)], n, dtype)
    assert [o.dtype for o in outs] == ["float64"] * 4
    low = 0 if dtype == "uint8" else -100
    a = RNG.integers(low, low + 200, size=25).astype(dtype)
    a64 = a.astype("float64")
    expected = [np.exp(a64 * 0.01), np.sqrt(np.abs(a64)), np.tanh(a64), np.log(np.abs(a64) + 1)]
    for result, exp in zip(run([A, *outs], [a], n=25), expected):
        assert result.dtype == np.float64
        np.testing.assert_allclose(result, exp, rtol=1e-14)


# -- Python ints against integer data -----------------------------------------------------

@pytest.mark.parametrize("dtype,fn", [
    ("uint8", lambda x: x > -1), ("uint8", lambda x: x <= 300), ("uint8", lambda x: -5 < x),
    ("int8", lambda x: x < 200), ("int8", lambda x: x != 1000), ("int32", lambda x: x > -2 ** 40),
    ("uint8", lambda x: x == 255), ("int8", lambda x: x >= -128)])
def test_comparison_with_python_int_is_exact(dtype, fn):
    """A Python int outside the data's dtype is compared exactly, not wrapped into it."""
    n = po.var("n")
    (A,), (O,) = elementwise(lambda A: [lambda i: fn(A[i])], n, dtype)
    a = np.array([np.iinfo(dtype).min, 0, 1, np.iinfo(dtype).max] + list(values(dtype, 12)),
                 dtype)
    expected = np.array([fn(int(x)) for x in a], "int8")  # Python's own comparison
    np.testing.assert_array_equal(run([A, O], [a], n=len(a)), expected)


def test_comparison_with_index_arithmetic_is_exact():
    """uint8 data against i - 3 (negative for the first elements) compares exactly."""
    n = po.var("n")
    (A,), (O,) = elementwise(lambda A: [lambda i: A[i] > i - 3], n, "uint8")
    a = np.array([0, 0, 0, 0, 0, 9, 200, 2], "uint8")
    expected = (a.astype("int64") > np.arange(8) - 3).astype("int8")
    np.testing.assert_array_equal(run([A, O], [a], n=8), expected)


@pytest.mark.parametrize("dtype,fn", [
    ("int8", lambda x: x + 200), ("uint8", lambda x: x * -1), ("uint8", lambda x: 256 - x),
    ("int32", lambda x: x // 2 ** 31), ("int8", lambda x: po.maximum(x, -129)),
    ("uint8", lambda x: po.if_then_else(x > 0, x, -1))])
def test_python_int_that_the_dtype_cannot_hold_is_refused(dtype, fn):
    """Rather than wrapping the constant around silently (NumPy 2 refuses it too)."""
    A = po.placeholder((4,), name="A", dtype=dtype)
    with pytest.raises(po.DTypeError, match="does not fit"):
        fn(A[0])


@SYMBOLIC
def test_python_ints_at_the_limits_of_the_dtype_are_accepted(symbolic):
    (n,) = extents(symbolic, n=5)
    (A,), (Add, Sub, Div) = elementwise(lambda A: [
        lambda i: A[i] + 127, lambda i: A[i] - (-128), lambda i: A[i] / 300], n, "int8")
    assert (Add.dtype, Sub.dtype, Div.dtype) == ("int8", "int8", "float64")
    a = np.array([-128, -1, 0, 1, 127], "int8")
    add, sub, div = run([A, Add, Sub, Div], [a], n=5)
    np.testing.assert_array_equal(add, a + np.int8(127))  # wraps in int8
    np.testing.assert_array_equal(sub, a - np.int8(-128))
    np.testing.assert_array_equal(div, a / 300)  # true division: 300 is not wrapped


# -- int8 data accumulated in int32 -------------------------------------------------------

@SYMBOLIC
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (3, 5, 33), (4, 1, 64), (0, 2, 3), (2, 3, 0)])
def test_int8_matmul_accumulates_in_int32(symbolic, m, n, k):
    M, N, K = extents(symbolic, M=m, N=n, K=k)
    A = po.placeholder((M, K), name="A", dtype="int8")
    B = po.placeholder((K, N), name="B", dtype="int8")
    r = po.reduce_axis((0, K), name="r")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, r].astype("int32") * B[r, j].astype("int32"),
                                               axis=r), name="C")
    assert C.dtype == "int32"
    a, b = values("int8", (m, k)), values("int8", (k, n))
    a[..., :1], b[:1] = -128, -128  # the largest products, far outside int8 and int16
    c = run([A, B, C], [a, b], M=m, N=n, K=k)
    np.testing.assert_array_equal(c, a.astype("int32") @ b.astype("int32"))


@SYMBOLIC
def test_uint8_times_int8_dot_product_to_0d(symbolic):
    """uint8 * int8 promotes to int32 per element; the 0-d result sums them exactly."""
    (K,) = extents(symbolic, K=50)
    A = po.placeholder((K,), name="A", dtype="uint8")
    B = po.placeholder((K,), name="B", dtype="int8")
    r = po.reduce_axis((0, K), name="r")
    D = po.compute((), lambda: po.sum(A[r] * B[r], axis=r), name="D")
    assert D.dtype == "int32"
    a, b = values("uint8", 50), values("int8", 50)
    d = run([A, B, D], [a, b], K=50)
    assert d.shape == () and d.dtype == np.int32
    assert int(d) == sum(int(x) * int(y) for x, y in zip(a, b))
