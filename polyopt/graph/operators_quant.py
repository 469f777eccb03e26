"""ONNX's quantization operators: ``QuantizeLinear`` and ``DequantizeLinear``.

``QuantizeLinear(x, scale, zero_point)`` is ``saturate(round(x / scale) + zero_point)``
to uint8 (the default) or int8, rounding halves to even as ONNX asks (NaN gives 0 or
-128, the least value, as onnxruntime);
``DequantizeLinear(x, scale, zero_point)`` is ``(x - zero_point) * scale`` in float32.
``scale`` and ``zero_point`` are one value (per tensor) or one per index of ``axis``
(per channel).  Both are elementwise (they fuse into the epilogue of a convolution or
into an elementwise chain).

``MatMulInteger`` (int32 products of uint8/int8 matrices less their zero points) and
``QLinearConv`` (a uint8/int8 convolution with int32 sums, requantized with
``x_scale * w_scale / y_scale``, halves to even) are written as int32 reductions over
the widened operands (the input padded with its zero point): exact, and scheduled by
the generic schedule, not yet by the VNNI int8 kernels of ``po.ops``
(``conv2d_u8s8_nchw``, ``matmul_u8s8``), which need the weights packed at compile time.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..te.tensor import all_of, compute, if_then_else, maximum, minimum, reduce_axis, reduce_sum
from .graph_errors import (UnsupportedAttributeValueError, UnsupportedDTypeError,
                           UnsupportedShapeError)
from .registry import attr, constant_value, register
from .operators_nn import _CONV_ATTRS, window

_RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
_ATTRS = {"axis": 1, "saturate": 1}


def _check_parameters(node, infos):
    x, scale = infos[0], infos[1]
    point = infos[2] if len(infos) > 2 else None
    if scale.dtype != "float32":
        raise UnsupportedDTypeError(node.name, node.op_type, scale.name, scale.dtype,
                                    ("float32",))
    axis = attr(node, "axis")
    axis = axis + len(x.shape) if axis < 0 else axis
    for info, what in ((scale, "scale"), (point, "zero point")):
        if info is None or len(info.shape) == 0 or info.shape == (1,):
            continue
        if len(info.shape) != 1 or not 0 <= axis < len(x.shape) \
                or info.shape[0] != x.shape[axis]:
            raise InvalidArgumentError(
                f"node '{node.name}' ({node.op_type}): the {what} has shape {info.shape}; it "
                f"must be one value or one per index of axis {attr(node, 'axis')} of "
                f"{x.shape}")
    return axis


def _parameter(T, index, axis):
    """``T`` (a scale or zero point) at the element ``index`` of the data."""
    if T is None:
        return None
    size = T.shape[0].value if T.ndim else 1
    return T[(index[axis] if size > 1 else 0,)] if T.ndim else T[()]


def round_half_even(v):
    """``v`` (float32, within +-2^30) rounded to the nearest integer, halves to even,
    as an int32 expression."""
    truncated = v.astype("int32")
    floor = truncated - if_then_else(v < truncated.astype("float32"), 1, 0)
    fraction = v - floor.astype("float32")
    odd = floor % 2 != 0
    up = if_then_else(fraction > 0.5, 1, if_then_else(fraction < 0.5, 0,
                                                       if_then_else(odd, 1, 0)))
    return floor + up


def _quantize_infer(node, infos, constants):
    _check_parameters(node, infos)
    dtype = infos[2].dtype if len(infos) > 2 and infos[2] is not None else "uint8"
    if dtype not in _RANGES:
        raise UnsupportedDTypeError(node.name, node.op_type, infos[2].name, dtype,
                                    tuple(_RANGES))
    if infos[0].dtype != "float32":
        raise UnsupportedDTypeError(node.name, node.op_type, infos[0].name, infos[0].dtype,
                                    ("float32",))
    return [(infos[0].shape, dtype)]


def _quantize_lower(node, args, values, out, name):
    X, scale, point = (list(args) + [None])[:3]
    axis = _axis(node, X)
    lo, hi = _RANGES[out.dtype]

    def body(*i):
        ratio = X[i] / _parameter(scale, i, axis)
        v = maximum(minimum(ratio, 1e9), -1e9)  # saturates below: stay inside int32
        q = round_half_even(v)
        if point is not None:
            q = q + _parameter(point, i, axis).astype("int32")
        # NaN (x NaN, or 0 / 0) gives the range's least value, as onnxruntime and
        # onnx.reference do (their NaN converted to int32 is INT_MIN, then saturated)
        return if_then_else(ratio != ratio, lo, maximum(minimum(q, hi), lo)).astype(out.dtype)
    return compute(out.shape, body, name=name)


def _dequantize_infer(node, infos, constants):
    _check_parameters(node, infos)
    if infos[0].dtype not in ("uint8", "int8", "int32"):
        raise UnsupportedDTypeError(node.name, node.op_type, infos[0].name, infos[0].dtype,
                                    ("uint8", "int8", "int32"))
    return [(infos[0].shape, "float32")]


def _dequantize_lower(node, args, values, out, name):
    X, scale, point = (list(args) + [None])[:3]
    axis = _axis(node, X)

    def body(*i):
        q = X[i].astype("int32")
        if point is not None:
            q = q - _parameter(point, i, axis).astype("int32")
        return q.astype("float32") * _parameter(scale, i, axis)
    return compute(out.shape, body, name=name)


def _axis(node, X) -> int:
    axis = attr(node, "axis")
    return axis + X.ndim if axis < 0 else axis


register("QuantizeLinear", "injective", _ATTRS, min_inputs=2, max_inputs=3)((_quantize_infer,
                                                                _quantize_lower))
register("DequantizeLinear", "injective", {"axis": 1}, min_inputs=2,
         max_inputs=3)((_dequantize_infer,
                                                                      _dequantize_lower))


# -- integer matrix products and convolutions ---------------------------------------------------

def _integer(node, info, what):
    if info.dtype not in _RANGES:
        raise UnsupportedDTypeError(node.name, node.op_type, info.name, info.dtype,
                                    tuple(_RANGES))


def _matmul_integer_infer(node, infos, constants):
    a, b = infos[0], infos[1]
    _integer(node, a, "A")
    _integer(node, b, "B")
    for info in (a, b):
        if len(info.shape) != 2:
            raise UnsupportedShapeError(node.name, node.op_type, info.name, info.shape,
                                        ranks=(2,))
    if a.shape[1] != b.shape[0]:
        raise UnsupportedShapeError(node.name, node.op_type, b.name, b.shape,
                                    shapes=((a.shape[1], b.shape[1]),))
    for index, size, what in ((2, 1, "a_zero_point"), (3, b.shape[1], "b_zero_point")):
        point = infos[index] if len(infos) > index else None
        if point is not None and point.shape not in ((), (1,), (size,)):
            raise UnsupportedShapeError(node.name, node.op_type, what, point.shape,
                                        shapes=((), (1,), (size,)))
    return [((a.shape[0], b.shape[1]), "int32")]


def _widened(T, index, point, point_index):
    value = T[index].astype("int32")
    if point is None:
        return value
    size = point.shape[0].value if point.ndim else 1
    at = (point_index if size > 1 else 0,) if point.ndim else ()
    return value - point[at].astype("int32")


def _matmul_integer_lower(node, args, values, out, name):
    A, B, a_point, b_point = (list(args) + [None, None])[:4]
    k = reduce_axis((0, A.shape[1].value), name="k")
    return compute(out.shape, lambda i, j: reduce_sum(
        _widened(A, (i, k), a_point, 0) * _widened(B, (k, j), b_point, j), axis=k), name=name)


register("MatMulInteger", "complex", min_inputs=2, max_inputs=4)((_matmul_integer_infer,
                                                    _matmul_integer_lower))


def _qlinear_conv_infer(node, infos, constants):
    x, w = infos[0], infos[3]
    _integer(node, x, "x")
    _integer(node, w, "w")
    for info in (x, w):
        if len(info.shape) != 4:
            raise UnsupportedShapeError(node.name, node.op_type, info.name, info.shape,
                                        ranks=(4,))
    if attr(node, "group") != 1:
        raise UnsupportedAttributeValueError(node.name, node.op_type, "group",
                                             attr(node, "group"), (1,))
    if w.shape[1] != x.shape[1]:
        raise UnsupportedShapeError(node.name, node.op_type, w.name, w.shape,
                                    shapes=((w.shape[0], x.shape[1], *w.shape[2:]),))
    for index, what in ((1, "x_scale"), (2, "x_zero_point"), (6, "y_scale"),
                        (7, "y_zero_point")):
        if infos[index].shape not in ((), (1,)):
            raise UnsupportedShapeError(node.name, node.op_type, what, infos[index].shape,
                                        shapes=((), (1,)))
    for index in (4, 5):
        if infos[index].shape not in ((), (1,), (w.shape[0],)):
            raise InvalidArgumentError(f"node '{node.name}' (QLinearConv): the weight scale "
                                       "and zero point are one value or one per output channel")
    for index in (1, 6):
        constant_value(node, constants, index, "scale")
    kernel = attr(node, "kernel_shape") or w.shape[2:]
    _, _, _, size = window(node, x.shape[2:], kernel)
    return [((x.shape[0], w.shape[0], *size), infos[7].dtype)]


def _qlinear_conv_lower(node, args, values, out, name):
    X, _, x_point, W, w_scale, w_point, _, y_point, bias = (list(args) + [None] * 9)[:9]
    x_scale, y_scale = (float(np.float32(np.asarray(values[k]).reshape(-1)[0]))
                        for k in (1, 6))
    _, C, H, Wd = (d.value for d in X.shape)
    _, _, KH, KW = (d.value for d in W.shape)
    pads, (sy, sx), (dy, dx), _ = window(node, [H, Wd], (KH, KW))
    top, left = pads[0], pads[1]
    rc, ry, rx = (reduce_axis((0, e), name=n) for e, n in ((C, "rc"), (KH, "ry"), (KW, "rx")))

    def term(n, f, y, x):
        h, w = y * sy + ry * dy - top, x * sx + rx * dx - left
        inside = all_of(h >= 0, h < H, w >= 0, w < Wd)
        data = if_then_else(inside, _widened(X, (n, rc, h, w), x_point, 0), 0)
        return data * _widened(W, (f, rc, ry, rx), w_point, f)

    acc = compute(out.shape, lambda n, f, y, x: reduce_sum(term(n, f, y, x), axis=[rc, ry, rx]),
                  name=f"{name}_acc")
    lo, hi = _RANGES[out.dtype]

    def requantized(n, f, y, x):
        total = acc[n, f, y, x] + (bias[(f,)] if bias is not None else 0)
        # onnxruntime's order, in float32: (x_scale * w_scale) / y_scale
        scale = _parameter(w_scale, (n, f, y, x), 1) * x_scale / y_scale
        q = round_half_even(maximum(minimum(total.astype("float32") * scale, 1e9), -1e9))
        if y_point is not None:
            q = q + _parameter(y_point, (n, f, y, x), 1).astype("int32")
        return maximum(minimum(q, hi), lo).astype(out.dtype)
    return compute(out.shape, requantized, name=name)


register("QLinearConv", "complex", _CONV_ATTRS, min_inputs=8, max_inputs=9)((_qlinear_conv_infer,
                                                               _qlinear_conv_lower))
