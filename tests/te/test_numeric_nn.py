"""Numerical tests of neural-network kernels against NumPy: conv2d (stride, zero
padding as an if_then_else compute, dilation), depthwise conv, max pooling, softmax and
layer norm written as several computes."""

import numpy as np
import pytest

import polyopt as po

from testlib.numeric import SYMBOLIC, assert_numbers, extents, random_arrays, run

RNG = np.random.default_rng(2)
rand = random_arrays(RNG)
# sums of many float32 products (convolutions) and normalized rows: a looser bound than the
# documented float32 one
LOOSE = dict(dtype="float32", rtol=1e-4, atol=1e-4)


# -- convolutions -------------------------------------------------------------------------

def out_size(size, kernel, stride, pad, dilation):
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def zero_pad(X, pad):
    """The NCHW tensor X with ``pad`` zeros around H and W, as its own compute."""
    _, _, H, W = X.shape
    return po.compute(
        (X.shape[0], X.shape[1], H + 2 * pad, W + 2 * pad),
        lambda n, c, h, w: po.if_then_else(
            (h >= pad) & (h < H + pad) & (w >= pad) & (w < W + pad),
            X[n, c, h - pad, w - pad], 0.0),
        name="Pad")


def conv2d_nchw(X, Wt, stride, pad, dilation):
    N, C, H, W = X.shape
    F, _, KH, KW = Wt.shape
    P = zero_pad(X, pad)
    c = po.reduce_axis((0, C), name="c")
    kh = po.reduce_axis((0, KH), name="kh")
    kw = po.reduce_axis((0, KW), name="kw")
    return po.compute(
        (N, F, out_size(H, KH, stride, pad, dilation), out_size(W, KW, stride, pad, dilation)),
        lambda n, f, y, x: po.sum(
            P[n, c, y * stride + kh * dilation, x * stride + kw * dilation] * Wt[f, c, kh, kw],
            axis=[c, kh, kw]),
        name="Conv")


def np_windows(x, kh, kw, stride, pad, dilation, fill=0.0):
    """For each kernel offset (a, b): the (N, C, OH, OW) input slice it multiplies."""
    n, c, h, w = x.shape
    xp = np.pad(x.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)),
                constant_values=fill)
    oh, ow = out_size(h, kh, stride, pad, dilation), out_size(w, kw, stride, pad, dilation)
    for a in range(kh):
        for b in range(kw):
            yield a, b, xp[:, :, a * dilation: a * dilation + stride * (oh - 1) + 1: stride,
                           b * dilation: b * dilation + stride * (ow - 1) + 1: stride]


def np_conv2d(x, w, stride, pad, dilation):
    f, _, kh, kw = w.shape
    out = 0.0
    for a, b, window in np_windows(x, kh, kw, stride, pad, dilation):
        out = out + np.einsum("nchw,fc->nfhw", window, w[:, :, a, b])
    return out


CONV_CONFIGS = [  # (stride, pad, dilation)
    (1, 0, 1), (2, 1, 1), (2, 0, 1), (1, 2, 2), (2, 1, 2), (3, 2, 1)]
CONV_SHAPES = [  # (n, c, h, w, f, kh, kw)
    (1, 1, 5, 5, 1, 1, 1), (2, 3, 7, 6, 4, 3, 3), (1, 2, 9, 8, 3, 3, 2)]


@SYMBOLIC
@pytest.mark.parametrize("stride,pad,dilation", CONV_CONFIGS)
@pytest.mark.parametrize("n,c,h,w,f,kh,kw", CONV_SHAPES)
def test_conv2d_nchw(symbolic, stride, pad, dilation, n, c, h, w, f, kh, kw):
    N, C, H, W, F, KH, KW = extents(symbolic, N=n, C=c, H=h, W=w, F=f, KH=kh, KW=kw)
    X = po.placeholder((N, C, H, W), name="X")
    Wt = po.placeholder((F, C, KH, KW), name="Wt")
    Conv = conv2d_nchw(X, Wt, stride, pad, dilation)
    x, wt = rand(n, c, h, w), rand(f, c, kh, kw)
    out = run([X, Wt, Conv], [x, wt], N=n, C=c, H=h, W=w, F=f, KH=kh, KW=kw)
    assert_numbers(out, np_conv2d(x, wt, stride, pad, dilation), **LOOSE)


def test_conv2d_symbolic_kernel_on_several_shapes_including_empty():
    N, C, H, W, F = extents(True, N=0, C=0, H=0, W=0, F=0)
    X = po.placeholder((N, C, H, W), name="X")
    Wt = po.placeholder((F, C, 3, 3), name="Wt")
    Conv = conv2d_nchw(X, Wt, stride=2, pad=1, dilation=1)
    for n, c, h, w, f in [(1, 1, 1, 1, 1), (2, 3, 5, 8, 2), (0, 2, 4, 4, 2), (1, 0, 4, 4, 2),
                          (1, 2, 4, 0, 2)]:
        x, wt = rand(n, c, h, w), rand(f, c, 3, 3)
        out = run([X, Wt, Conv], [x, wt], N=n, C=c, H=h, W=w, F=f)
        expected = np_conv2d(x, wt, 2, 1, 1) if w else np.zeros((n, f, out_size(h, 3, 2, 1, 1), 0))
        assert_numbers(out, expected, **LOOSE)  # C == 0 gives zeros, W == 0 an empty output


@SYMBOLIC
@pytest.mark.parametrize("stride,pad,dilation", [(1, 1, 1), (2, 1, 1), (1, 2, 2)])
@pytest.mark.parametrize("n,c,h,w", [(1, 1, 3, 3), (2, 3, 6, 7)])
def test_depthwise_conv(symbolic, stride, pad, dilation, n, c, h, w):
    N, C, H, W = extents(symbolic, N=n, C=c, H=h, W=w)
    X = po.placeholder((N, C, H, W), name="X")
    Wt = po.placeholder((C, 3, 3), name="Wt")
    P = zero_pad(X, pad)
    kh = po.reduce_axis((0, 3), name="kh")
    kw = po.reduce_axis((0, 3), name="kw")
    D = po.compute(
        (N, C, out_size(H, 3, stride, pad, dilation), out_size(W, 3, stride, pad, dilation)),
        lambda b, ch, y, x: po.sum(
            P[b, ch, y * stride + kh * dilation, x * stride + kw * dilation] * Wt[ch, kh, kw],
            axis=[kh, kw]),
        name="Depthwise")
    x, wt = rand(n, c, h, w), rand(c, 3, 3)
    expected = sum(window * wt[None, :, a, b, None, None]
                   for a, b, window in np_windows(x, 3, 3, stride, pad, dilation))
    assert_numbers(run([X, Wt, D], [x, wt], N=n, C=c, H=h, W=w), expected, **LOOSE)


@SYMBOLIC
@pytest.mark.parametrize("k,stride", [(2, 2), (3, 2), (3, 1), (1, 1)])
@pytest.mark.parametrize("h,w", [(4, 4), (7, 5), (3, 3)])
def test_max_pool(symbolic, k, stride, h, w):
    N, C, H, W = extents(symbolic, N=2, C=3, H=h, W=w)
    X = po.placeholder((N, C, H, W), name="X")
    rh = po.reduce_axis((0, k), name="rh")
    rw = po.reduce_axis((0, k), name="rw")
    Pool = po.compute(
        (N, C, (H - k) // stride + 1, (W - k) // stride + 1),
        lambda n, c, y, x: po.max(X[n, c, y * stride + rh, x * stride + rw], axis=[rh, rw]),
        name="Pool")
    x = rand(2, 3, h, w)
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))
    expected = windows[:, :, ::stride, ::stride].max(axis=(4, 5))
    np.testing.assert_array_equal(run([X, Pool], [x], N=2, C=3, H=h, W=w), expected)


@SYMBOLIC
@pytest.mark.parametrize("h,w", [(1, 1), (5, 4)])
def test_max_pool_with_padding_ignores_pad(symbolic, h, w):
    """3x3 stride-2 pooling with 1 padding; padded cells are -inf, never the maximum."""
    N, C, H, W = extents(symbolic, N=1, C=2, H=h, W=w)
    X = po.placeholder((N, C, H, W), name="X")
    P = po.compute((N, C, H + 2, W + 2), lambda n, c, y, x: po.if_then_else(
        (y >= 1) & (y <= H) & (x >= 1) & (x <= W), X[n, c, y - 1, x - 1], -np.inf), name="P")
    rh = po.reduce_axis((0, 3), name="rh")
    rw = po.reduce_axis((0, 3), name="rw")
    Pool = po.compute((N, C, (H - 1) // 2 + 1, (W - 1) // 2 + 1),
                      lambda n, c, y, x: po.max(P[n, c, 2 * y + rh, 2 * x + rw], axis=[rh, rw]),
                      name="Pool")
    x = rand(1, 2, h, w)
    expected = np.max([win for _, _, win in np_windows(x, 3, 3, 2, 1, 1, fill=-np.inf)],
                      axis=0)
    np.testing.assert_array_equal(run([X, Pool], [x], N=1, C=2, H=h, W=w), expected)


# -- normalizations -----------------------------------------------------------------------

def softmax(X):
    M, N = X.shape
    k = po.reduce_axis((0, N), name="k")
    Max = po.compute((M,), lambda i: po.max(X[i, k], axis=k), name="Max")
    E = po.compute((M, N), lambda i, j: po.exp(X[i, j] - Max[i]), name="E")
    k2 = po.reduce_axis((0, N), name="k2")
    S = po.compute((M,), lambda i: po.sum(E[i, k2], axis=k2), name="S")
    return po.compute((M, N), lambda i, j: E[i, j] / S[i], name="Softmax")


@SYMBOLIC
@pytest.mark.parametrize("m,n", [(1, 1), (3, 7), (4, 1), (0, 5), (3, 0)])
def test_softmax(symbolic, m, n):
    M, N = extents(symbolic, M=m, N=n)
    X = po.placeholder((M, N), name="X")
    Y = softmax(X)
    x = rand(m, n) * 10  # large values: the max subtraction keeps exp finite
    x64 = x.astype("float64")
    e = np.exp(x64 - x64.max(axis=1, keepdims=True, initial=-np.inf))
    y = run([X, Y], [x], M=m, N=n)
    assert_numbers(y, e / e.sum(axis=1, keepdims=True), dtype="float32")
    if n:
        np.testing.assert_allclose(y.sum(axis=1), np.ones(m), rtol=1e-5)


@SYMBOLIC
@pytest.mark.parametrize("m,n", [(1, 1), (3, 8), (2, 5)])
def test_layer_norm(symbolic, m, n):
    M, N = extents(symbolic, M=m, N=n)
    X = po.placeholder((M, N), name="X")
    gamma = po.placeholder((N,), name="gamma")
    beta = po.placeholder((N,), name="beta")
    k = po.reduce_axis((0, N), name="k")
    Sum = po.compute((M,), lambda i: po.sum(X[i, k], axis=k), name="Sum")
    Avg = po.compute((M,), lambda i: Sum[i] / N, name="Mean")
    Centered = po.compute((M, N), lambda i, j: X[i, j] - Avg[i], name="Centered")
    k2 = po.reduce_axis((0, N), name="k2")
    SqSum = po.compute((M,), lambda i: po.sum(Centered[i, k2] * Centered[i, k2], axis=k2),
                       name="SqSum")
    Rstd = po.compute((M,), lambda i: 1.0 / po.sqrt(SqSum[i] / N + 1e-5), name="Rstd")
    Y = po.compute((M, N), lambda i, j: Centered[i, j] * Rstd[i] * gamma[j] + beta[j],
                   name="Y")
    assert Avg.dtype == Rstd.dtype == Y.dtype == "float32"
    x, g, b = rand(m, n) + 3, rand(n), rand(n)
    x64 = x.astype("float64")
    mean = x64.mean(axis=1, keepdims=True)
    expected = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * g + b
    y, avg = run([X, gamma, beta, Y, Avg], [x, g, b], M=m, N=n)
    assert_numbers(avg, mean[:, 0], dtype="float32")
    assert_numbers(y, expected, **LOOSE)
