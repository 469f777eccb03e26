"""Common operators written as tensor expressions (the start of an operator library).

>>> import polyopt as po
>>> A = po.placeholder((4, 3), name="A"); B = po.placeholder((3, 5), name="B")
>>> matmul(A, B).shape
(<Const 4>, <Const 5>)
"""

from __future__ import annotations

from ..errors import public
from .expr import Const
from .tensor import (Tensor, all_of, compute, exp, if_then_else, reduce_axis, reduce_max,
                     reduce_sum, sqrt)


def _number(extent):
    """A constant extent as a Python int (so that arithmetic on it folds), else itself."""
    return extent.value if isinstance(extent, Const) else extent


def _plus(extent, amount):
    """``extent + amount``, folded to a number when both are numbers (or constants)."""
    return _number(extent) + _number(amount)


def _scaled(axis, stride: int):
    return axis if stride == 1 else axis * stride


@public
def matmul(A: Tensor, B: Tensor, name: str = "C") -> Tensor:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``."""
    k = reduce_axis((0, A.shape[1]), name="k")
    return compute((A.shape[0], B.shape[1]),
                   lambda i, j: reduce_sum(A[i, k] * B[k, j], axis=k), name=name)


@public
def pad_nchw(data: Tensor, padding: int, name: str = "padded") -> Tensor:
    """Zero padding of the two spatial dimensions, as an ``if_then_else`` compute."""
    N, C, H, W = data.shape
    p = padding
    return compute(
        (N, C, _plus(H, 2 * p), _plus(W, 2 * p)),
        lambda n, c, h, w: if_then_else(
            all_of(h >= p, h < _plus(H, p), w >= p, w < _plus(W, p)),
            data[n, c, h - p, w - p], 0.0),
        name=name)


@public
def conv2d_nchw(data: Tensor, weight: Tensor, *, padding: int = 1, stride: int = 1,
                name: str = "conv") -> Tensor:
    """NCHW convolution with a square kernel, zero padding and a stride."""
    N, C, H, W = data.shape
    F, _, R, S = (_number(d) for d in weight.shape)
    padded = pad_nchw(data, padding) if padding else data
    rc = reduce_axis((0, C), name="rc")
    ry = reduce_axis((0, R), name="ry")
    rx = reduce_axis((0, S), name="rx")
    out_h = _plus(_plus(H, 2 * padding - R) // stride, 1)
    out_w = _plus(_plus(W, 2 * padding - S) // stride, 1)
    return compute(
        (N, F, out_h, out_w),
        lambda n, f, y, x: reduce_sum(
            padded[n, rc, _scaled(y, stride) + ry, _scaled(x, stride) + rx]
            * weight[f, rc, ry, rx],
            axis=[rc, ry, rx]),
        name=name)


@public
def softmax(X: Tensor, name: str = "softmax") -> Tensor:
    """Softmax over the last axis of a 2-D tensor, in four computes: the row maximum
    ``<name>_max``, ``<name>_exp = exp(X - max)``, the row sum ``<name>_sum`` and the
    quotient.

    >>> import polyopt as po
    >>> Y = softmax(po.placeholder((8, 5), name="X"))
    >>> [t.name for t in Y.op.inputs]
    ['softmax_exp', 'softmax_sum']
    """
    rows, cols = X.shape
    k = reduce_axis((0, cols), name="k")
    row_max = compute((rows,), lambda i: reduce_max(X[i, k], axis=k), name=f"{name}_max")
    e = compute((rows, cols), lambda i, j: exp(X[i, j] - row_max[i]), name=f"{name}_exp")
    k2 = reduce_axis((0, cols), name="k")
    total = compute((rows,), lambda i: reduce_sum(e[i, k2], axis=k2), name=f"{name}_sum")
    return compute((rows, cols), lambda i, j: e[i, j] / total[i], name=name)


@public
def layer_norm(X: Tensor, gamma: Tensor, beta: Tensor, eps: float = 1e-5,
               name: str = "layer_norm") -> Tensor:
    """Layer normalization over the last axis of a 2-D tensor (two passes: the row sum
    ``<name>_sum``, then the sum of squared deviations ``<name>_sqdev``), scaled by
    ``gamma`` and shifted by ``beta`` (both of the row length).

    >>> import polyopt as po
    >>> X = po.placeholder((8, 5), name="X")
    >>> g, b = po.placeholder((5,), name="g"), po.placeholder((5,), name="b")
    >>> [t.name for t in layer_norm(X, g, b).op.inputs]
    ['X', 'layer_norm_sum', 'layer_norm_sqdev', 'g', 'b']
    """
    rows, cols = X.shape
    k = reduce_axis((0, cols), name="k")
    total = compute((rows,), lambda i: reduce_sum(X[i, k], axis=k), name=f"{name}_sum")

    def centered(i, j):
        return X[i, j] - total[i] / cols

    k2 = reduce_axis((0, cols), name="k")
    sqdev = compute((rows,), lambda i: reduce_sum(centered(i, k2) * centered(i, k2), axis=k2),
                    name=f"{name}_sqdev")
    return compute((rows, cols), lambda i, j: centered(i, j) / sqrt(sqdev[i] / cols + eps)
                   * gamma[j] + beta[j], name=name)


from .quantized import (conv2d_u8s8_nchw, matmul_bf16, matmul_u8s8, pack_conv_vnni_numpy,  # noqa: E402,F401
                        pack_vnni_numpy, requantize)
from .quantized_amx import conv2d_u8s8_wide  # noqa: E402,F401
