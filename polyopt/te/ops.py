"""Common operators written as tensor expressions (the start of an operator library).

>>> import polyopt as po
>>> A = po.placeholder((4, 3), name="A"); B = po.placeholder((3, 5), name="B")
>>> matmul(A, B).shape
(<Const 4>, <Const 5>)
"""

from __future__ import annotations

from .expr import Const, Expr
from .tensor import Tensor, all_of, compute, if_then_else, reduce_axis, reduce_sum


def _plus(extent: Expr, amount: int):
    """``extent + amount``, folded to a number when the extent is one."""
    return extent.value + amount if isinstance(extent, Const) else extent + amount


def _scaled(axis, stride: int):
    return axis if stride == 1 else axis * stride


def matmul(A: Tensor, B: Tensor, name: str = "C") -> Tensor:
    """``C[i, j] = sum_k A[i, k] * B[k, j]``."""
    k = reduce_axis((0, A.shape[1]), name="k")
    return compute((A.shape[0], B.shape[1]),
                   lambda i, j: reduce_sum(A[i, k] * B[k, j], axis=k), name=name)


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


def conv2d_nchw(data: Tensor, weight: Tensor, *, padding: int = 1, stride: int = 1,
                name: str = "conv") -> Tensor:
    """NCHW convolution with a square kernel, zero padding and a stride."""
    N, C, H, W = data.shape
    F, _, R, S = weight.shape
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
