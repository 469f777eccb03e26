"""ONNX's quantization operators: ``QuantizeLinear`` and ``DequantizeLinear``.

``QuantizeLinear(x, scale, zero_point)`` is ``saturate(round(x / scale) + zero_point)``
to uint8 (the default) or int8, rounding halves to even as ONNX asks;
``DequantizeLinear(x, scale, zero_point)`` is ``(x - zero_point) * scale`` in float32.
``scale`` and ``zero_point`` are one value (per tensor) or one per index of ``axis``
(per channel).  Both are elementwise (they fuse into the epilogue of a convolution or
into an elementwise chain).  The int8 convolutions and matrix products
(``QLinearConv``, ``MatMulInteger``...) are not imported yet.
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..te.tensor import compute, if_then_else, maximum, minimum
from .operators import UnsupportedOperatorError, attr, register

_RANGES = {"uint8": (0, 255), "int8": (-128, 127)}
_ATTRS = {"axis": 1, "saturate": 1}


def _check_parameters(node, infos):
    x, scale = infos[0], infos[1]
    point = infos[2] if len(infos) > 2 else None
    if scale.dtype != "float32":
        raise UnsupportedOperatorError(f"node '{node.name}' ({node.op_type}): the scale must "
                                       f"be float32, got {scale.dtype}")
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
        raise UnsupportedOperatorError(
            f"node '{node.name}' (QuantizeLinear): quantizing to {dtype} is not supported; "
            "only uint8 and int8")
    if infos[0].dtype != "float32":
        raise UnsupportedOperatorError(f"node '{node.name}' (QuantizeLinear) quantizes "
                                       f"float32, got {infos[0].dtype}")
    return [(infos[0].shape, dtype)]


def _quantize_lower(node, args, values, out, name):
    X, scale, point = (list(args) + [None])[:3]
    axis = _axis(node, X)
    lo, hi = _RANGES[out.dtype]

    def body(*i):
        v = X[i] / _parameter(scale, i, axis)
        v = maximum(minimum(v, 1e9), -1e9)  # saturates below: stay inside int32
        q = round_half_even(v)
        if point is not None:
            q = q + _parameter(point, i, axis).astype("int32")
        return maximum(minimum(q, hi), lo).astype(out.dtype)
    return compute(out.shape, body, name=name)


def _dequantize_infer(node, infos, constants):
    _check_parameters(node, infos)
    if infos[0].dtype not in ("uint8", "int8", "int32"):
        raise UnsupportedOperatorError(
            f"node '{node.name}' (DequantizeLinear): dequantizing {infos[0].dtype} is not "
            "supported; only uint8, int8 and int32")
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


register("QuantizeLinear", "injective", _ATTRS, min_inputs=2)((_quantize_infer,
                                                                _quantize_lower))
register("DequantizeLinear", "injective", {"axis": 1}, min_inputs=2)((_dequantize_infer,
                                                                      _dequantize_lower))
