"""``tvm.topi``'s operators (issue 35): pooling, convolution, dense, softmax, relu,
reductions and elementwise maps, written as TVM code and checked against NumPy."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from polyopt.tvm import topi
from tests.testlib.numeric import assert_numbers

RNG = np.random.default_rng(35)


def _run(outputs, inputs, arrays):
    outputs = outputs if isinstance(outputs, list) else [outputs]
    f = tvm.build(te.create_schedule([o.op for o in outputs]), inputs + outputs, "llvm")
    results = [np.zeros([int(e.value) for e in o.shape], o.dtype) for o in outputs]
    f(*arrays, *results)
    return results if len(results) > 1 else results[0]


def _pool_reference(a, kernel, stride, dilation, pads, pool_type, count_include_pad,
                    ceil_mode):
    n, c, h, w = a.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    top, left, bottom, right = pads
    extra_h, extra_w = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    out_h = (h + top + bottom + extra_h - (kh - 1) * dh - 1) // sh + 1
    out_w = (w + left + right + extra_w - (kw - 1) * dw - 1) // sw + 1
    out = np.zeros((n, c, out_h, out_w), a.dtype)
    for y in range(out_h):
        for x in range(out_w):
            ys = [y * sh + r * dh - top for r in range(kh)]
            xs = [x * sw + r * dw - left for r in range(kw)]
            inside = [(p, q) for p in ys for q in xs if 0 <= p < h and 0 <= q < w]
            if not inside:  # a window over padding only: TVM's lowest value, or 0
                out[:, :, y, x] = np.finfo(a.dtype).min if pool_type == "max" else 0
                continue
            values = np.stack([a[:, :, p, q] for p, q in inside], -1)
            if pool_type == "max":
                out[:, :, y, x] = values.max(-1)
            else:
                counted = len(inside) if not count_include_pad else sum(
                    1 for p in ys for q in xs if -top <= p < h + bottom and -left <= q < w + right)
                out[:, :, y, x] = values.sum(-1) / counted
    return out


@pytest.mark.parametrize("pool_type", ["max", "avg"])
@pytest.mark.parametrize("count_include_pad,ceil_mode,dilation", [
    (True, False, (1, 1)), (False, False, (1, 1)), (False, True, (1, 1)),
    (True, False, (2, 1))])
def test_pool2d_matches_numpy(pool_type, count_include_pad, ceil_mode, dilation):
    a = RNG.standard_normal((2, 3, 9, 8)).astype("float32")
    A = te.placeholder(a.shape, name="A")
    args = dict(kernel=(3, 2), stride=(2, 2), dilation=dilation, padding=(1, 0, 2, 1))
    P = topi.nn.pool2d(A, pool_type=pool_type, count_include_pad=count_include_pad,
                       ceil_mode=ceil_mode, **args)
    expected = _pool_reference(a, (3, 2), (2, 2), dilation, (1, 0, 2, 1), pool_type,
                               count_include_pad, ceil_mode)
    assert_numbers(_run(P, [A], [a]), expected)


def test_pool2d_of_nhwc_data_pools_h_and_w():
    a = RNG.standard_normal((1, 7, 6, 4)).astype("float32")
    A = te.placeholder(a.shape, name="A")
    P = topi.pool2d(A, (2, 2), (2, 2), (1, 1), (0, 0, 1, 0), "max", layout="NHWC")
    expected = _pool_reference(a.transpose(0, 3, 1, 2), (2, 2), (2, 2), (1, 1),
                               (0, 0, 1, 0), "max", True, False).transpose(0, 2, 3, 1)
    assert_numbers(_run(P, [A], [a]), expected)
    with pytest.raises(te.InvalidArgumentError, match="pool_type must be"):
        topi.nn.pool2d(A, (2, 2), (2, 2), (1, 1), 0, "min")


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, (0, 1, 1, 2), 1),
                                                     ((1, 2), 0, (2, 1))])
def test_conv2d_nchw_matches_the_numpy_reference(stride, padding, dilation):
    a = RNG.standard_normal((1, 3, 9, 10)).astype("float32")
    w = RNG.standard_normal((4, 3, 3, 2)).astype("float32")
    A, W = te.placeholder(a.shape, name="A"), te.placeholder(w.shape, name="W")
    C = topi.nn.conv2d(A, W, stride, padding, dilation)
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    dilated = np.zeros((4, 3, (3 - 1) * dh + 1, (2 - 1) * dw + 1), "float32")
    dilated[:, :, ::dh, ::dw] = w
    expected = tvm.topi.testing.conv2d_nchw_python(a, dilated, stride, padding)
    assert_numbers(_run(C, [A, W], [a, w]), expected)


def test_dense_softmax_relu_and_reductions():
    x = RNG.standard_normal((5, 7)).astype("float32")
    w = RNG.standard_normal((3, 7)).astype("float32")
    b = RNG.standard_normal((3,)).astype("float32")
    X, Wt, B = (te.placeholder(v.shape, name=n) for v, n in ((x, "X"), (w, "W"), (b, "B")))
    outs = [topi.nn.dense(X, Wt, B), topi.nn.softmax(X, axis=0), topi.nn.relu(X),
            topi.sum(X, axis=1, keepdims=True), topi.max(X), topi.min(X, axis=[0]),
            topi.exp(X), topi.negative(X)]
    got = _run(outs, [X, Wt, B], [x, w, b])
    e = np.exp(x - x.max(0))
    expected = [x @ w.T + b, e / e.sum(0), np.maximum(x, 0), x.sum(1, keepdims=True),
                x.max(), x.min(0), np.exp(x), -x]
    for g, want in zip(got, expected):
        assert_numbers(g, np.asarray(want, "float32").reshape(g.shape))
    assert_numbers(tvm.topi.testing.softmax_python(x), np.exp(x) / np.exp(x).sum(1)[:, None])
    with pytest.raises(te.InvalidArgumentError, match="axis must be an int"):
        topi.nn.softmax(X, axis=2)
    with pytest.raises(te.PolyoptError, match="not available in polyopt"):
        topi.nn.batch_norm(X)
