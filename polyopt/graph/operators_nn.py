"""Neural-network operators: convolution, matrix products, pooling, softmax, layer norm.

Convolutions in the common form (one group, no dilation, the same padding on every side
and the same stride both ways) are ``po.ops.conv2d_nchw``, which the conv templates
schedule; the others (groups, depthwise, dilation, uneven padding) are written here in
the same shape ``out[n, f, y, x] = sum over (rc, ry, rx)``.  A grouped convolution with
few terms per output (a depthwise 3 x 3: 9) writes the sum out term by term, in the
order of the reduction, without a reduction: each output is computed in registers and
stored once (as a reduction, it was accumulated in memory, and its partial vectors
paid a store-to-load stall per term: 8x slower), and the schedule vectorizes it
like an elementwise operator.
"""

from __future__ import annotations

import math

import numpy as np

from .. import te
from ..dtypes import INDEX
from ..errors import InvalidArgumentError
from ..te.expr import Const
from ..te.substitute import substitute
from ..te.tensor import (all_of, compute, if_then_else, maximum, minimum, reduce_axis,
                         reduce_max, reduce_sum)
from .graph_errors import (UnsupportedAttributeValueError, UnsupportedCombinationError,
                           UnsupportedShapeError)
from .registry import AUTO_PADS, attr, axis_in_range, broadcast_read, register

_CONV_ATTRS = {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
               "pads": None, "strides": None}


def _value(extent) -> int:
    return extent.value if isinstance(extent, Const) else int(extent)


def window(node, in_hw, kernel):
    """``(pads (top, left, bottom, right), strides, dilations, output size)`` of a 2-D
    window operator, from its attributes (``auto_pad`` included)."""
    if len(in_hw) != 2:
        raise UnsupportedShapeError(node.name, node.op_type, f"{node.inputs[0]}'s window",
                                    tuple(in_hw), ranks=(2,))
    strides = _sizes(node, "strides", (1, 1), 2, 1)
    dilations = _sizes(node, "dilations", (1, 1), 2, 1)
    pads = _sizes(node, "pads", (0, 0, 0, 0), 4, 0)
    kernel = [int(k) for k in kernel]
    if len(kernel) != 2 or min(kernel) < 1:
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): kernel_shape must be "
                                   f"two sizes >= 1, got {list(kernel)}")
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    auto = attr(node, "auto_pad")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-h // s) for h, s in zip(in_hw, strides)]
        total = [max(0, (o - 1) * s + e - h) for o, s, e, h in zip(out, strides, extent, in_hw)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        pads = small + big if auto == "SAME_UPPER" else big + small
    elif auto == "VALID":
        pads = [0, 0, 0, 0]
    elif auto != "NOTSET":
        raise UnsupportedAttributeValueError(node.name, node.op_type, "auto_pad", auto,
                                             AUTO_PADS)
    out = [(h + pads[k] + pads[k + 2] - e) // s + 1
           for k, (h, e, s) in enumerate(zip(in_hw, extent, strides))]
    if attr(node, "ceil_mode"):  # a last, partial window if it starts inside (or before) X
        out = [-(-(h + pads[k] + pads[k + 2] - e) // s) + 1
               for k, (h, e, s) in enumerate(zip(in_hw, extent, strides))]
        out = [o - 1 if (o - 1) * s >= h + pads[k] else o
               for k, (o, s, h) in enumerate(zip(out, strides, in_hw))]
        pads = list(pads)
        for k, (o, s, e, h) in enumerate(zip(out, strides, extent, in_hw)):
            beyond = (o - 1) * s + e - (h + pads[k] + pads[k + 2])
            if beyond > 0:  # the partial window's cells past the pads
                if node.op_type == "AveragePool" and attr(node, "count_include_pad"):
                    raise UnsupportedCombinationError(node.name, node.op_type,
                                                      "partial_window", ceil_mode=1,
                                                      count_include_pad=1)
                pads[k + 2] += beyond
    if min(out) < 1:
        raise InvalidArgumentError(f"node '{node.name}': the window is larger than the input")
    return pads, strides, dilations, out


def _sizes(node, key: str, default, count: int, least: int) -> list[int]:
    """The attribute ``key`` of a window operator: ``count`` integers >= ``least``."""
    value = attr(node, key)
    if value is None:
        return list(default)
    if not isinstance(value, (list, tuple)) or len(value) != count or not all(
            isinstance(v, (int, np.integer)) and v >= least for v in value):
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}): {key} must be {count} integers >= {least}, "
            f"got {value!r}")
    return [int(v) for v in value]


def pad(X, pads, fill: float, name: str):
    """``X`` (NCHW) with ``pads`` (top, left, bottom, right) of ``fill`` around H and W."""
    N, C, H, W = (_value(d) for d in X.shape)
    top, left, bottom, right = pads
    if not any(pads):
        return X
    return compute(
        (N, C, H + top + bottom, W + left + right),
        lambda n, c, h, w: if_then_else(
            all_of(h >= top, h < H + top, w >= left, w < W + left),
            X[n, c, h - top, w - left], fill),
        name=name)


def _pad_split(X, pads, name: str, fill: float = 0.0):
    """``X`` zero-padded, its columns split into the even and the odd ones:
    ``[n, c, h, parity, w]`` holds padded column ``2 w + parity``.  A stride-2 window
    then reads consecutive elements for consecutive output columns (vector loads, not
    gathers)."""
    N, C, H, W = (_value(d) for d in X.shape)
    top, left, bottom, right = pads
    half = -(-(W + left + right) // 2)
    return compute(
        (N, C, H + top + bottom, 2, half),
        lambda n, c, h, p, w: if_then_else(
            all_of(h >= top, h < H + top, 2 * w + p >= left, 2 * w + p < W + left),
            X[n, c, h - top, 2 * w + p - left], fill),
        name=name)


def _conv_infer(node, infos, constants):
    x, w = infos[0], infos[1]
    group = attr(node, "group")
    if not isinstance(group, (int, np.integer)) or group < 1:
        raise InvalidArgumentError(f"node '{node.name}' (Conv): group must be an integer >= 1, "
                                   f"got {group!r}")
    for info in (x, w):
        if len(info.shape) != 4:
            raise UnsupportedShapeError(node.name, node.op_type, info.name, info.shape,
                                        ranks=(4,))
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise InvalidArgumentError(
            f"weight {w.shape} does not fit input {x.shape} with group={group}")
    kernel = attr(node, "kernel_shape") or w.shape[2:]
    if list(kernel) != list(w.shape[2:]):
        raise InvalidArgumentError(f"node '{node.name}' (Conv): kernel_shape {list(kernel)} is "
                                   f"not the weight's {list(w.shape[2:])}")
    if len(infos) > 2 and infos[2] is not None and infos[2].shape != (w.shape[0],):
        raise InvalidArgumentError(f"node '{node.name}' (Conv): the bias has shape "
                                   f"{infos[2].shape}; it must be ({w.shape[0]},)")
    _, _, _, out = window(node, x.shape[2:], kernel)
    return [((x.shape[0], w.shape[0], *out), x.dtype)]


def _conv_lower(node, args, values, out_info, name):
    X, Wt, bias = (list(args) + [None])[:3]
    group = attr(node, "group")
    F, Cg, KH, KW = (_value(d) for d in Wt.shape)
    pads, strides, dilations, _ = window(node, [_value(d) for d in X.shape[2:]], (KH, KW))
    plain = (group == 1 and dilations == [1, 1] and len(set(pads)) == 1
             and strides[0] == strides[1] and KH == KW)
    conv_name = f"{name}_conv" if bias is not None else name
    if plain:
        out = te.ops.conv2d_nchw(X, Wt, padding=pads[0], stride=strides[0], name=conv_name)
    else:
        split = group > 1 and strides[1] == 2  # a strided depthwise layer: see _pad_split
        padded = _pad_split(X, pads, f"{name}_pad") if split else pad(X, pads, 0.0,
                                                                        f"{name}_pad")
        rc = reduce_axis((0, Cg), name="rc")
        ry = reduce_axis((0, KH), name="ry")
        rx = reduce_axis((0, KW), name="rx")
        per_group = F // group
        (sy, sx), (dy, dx) = strides, dilations

        def channel(f):
            return rc if group == 1 else (f // per_group) * Cg + rc if per_group > 1 else \
                f * Cg + rc

        def read(n, f, y, x):
            if split:  # column 2 x + rx dx is in half (rx dx) % 2, at x + (rx dx) // 2
                return padded[n, channel(f), y * sy + ry * dy, (rx * dx) % 2,
                              x + (rx * dx) // 2]
            return padded[n, channel(f), y * sy + ry * dy, x * sx + rx * dx]

        if group > 1 and Cg * KH * KW <= UNROLLED_TERMS:
            out = compute(tuple(out_info.shape), lambda n, f, y, x: _unrolled_sum(
                read, Wt, (n, f, y, x), (rc, ry, rx), (Cg, KH, KW)), name=conv_name)
        else:
            out = compute(
                tuple(out_info.shape),
                lambda n, f, y, x: reduce_sum(read(n, f, y, x) * Wt[f, rc, ry, rx],
                                              axis=[rc, ry, rx]),
                name=conv_name)
    if bias is None:
        return out
    return compute(out_info.shape, lambda n, f, y, x: out[n, f, y, x] + bias[f], name=name)


UNROLLED_TERMS = 32  # a grouped convolution with at most this many terms: an explicit sum


def _unrolled_sum(read, Wt, index, axes, extents):
    """``sum over axes of read(index) * Wt[f, axes]`` written out term by term, in the
    reduction's order (so with its rounding), with the axes replaced by constants."""
    n, f, y, x = index
    total = None
    for values in np.ndindex(*extents):
        mapping = {axis: Const(int(v), INDEX) for axis, v in zip(axes, values)}
        term = substitute(read(n, f, y, x) * Wt[(f, *axes)], mapping)
        total = term if total is None else total + term
    return total


register("Conv", "complex", _CONV_ATTRS, min_inputs=2, max_inputs=3)((_conv_infer, _conv_lower))


# -- matrix products --------------------------------------------------------------------------

def _matmul_infer(node, infos, constants):
    a, b = infos[0].shape, infos[1].shape
    for info in infos[:2]:
        if len(info.shape) < 2:
            raise UnsupportedShapeError(node.name, node.op_type, info.name, info.shape,
                                        min_rank=2)
    if a[-1] != b[-2]:
        raise InvalidArgumentError(f"inner dimensions differ: {a} x {b}")
    batch = np.broadcast_shapes(a[:-2], b[:-2])
    return [((*batch, a[-2], b[-1]), infos[0].dtype)]


def _matmul_lower(node, args, values, out, name):
    A, B = args
    shape = out.shape
    k = reduce_axis((0, _value(A.shape[-1])), name="k")

    def body(*i):
        batch = i[:-2]
        a_index = broadcast_batch(A, batch, shape) + (i[-2], k)
        b_index = broadcast_batch(B, batch, shape) + (k, i[-1])
        return reduce_sum(A[a_index] * B[b_index], axis=k)
    return compute(shape, body, name=name)


def broadcast_batch(T, batch, out_shape):
    """The leading (batch) indices of ``T`` under broadcasting against ``out_shape``."""
    rank = T.ndim - 2
    offset = len(batch) - rank
    return tuple(0 if _value(T.shape[d]) == 1 and out_shape[offset + d] != 1
                 else batch[offset + d] for d in range(rank))


register("MatMul", "complex", min_inputs=2)((_matmul_infer, _matmul_lower))


def _gemm_infer(node, infos, constants):
    a, b = infos[0].shape, infos[1].shape
    if len(a) != 2 or len(b) != 2:
        raise InvalidArgumentError(f"Gemm needs 2-D operands, got {a} and {b}")
    m, k = a[::-1] if attr(node, "transA") else a
    k2, n = b[::-1] if attr(node, "transB") else b
    if k != k2:
        raise InvalidArgumentError(f"inner dimensions differ: {a} x {b}")
    if len(infos) > 2 and infos[2] is not None:
        np.broadcast_shapes(infos[2].shape, (m, n))
    return [((m, n), infos[0].dtype)]


def _gemm_lower(node, args, values, out, name):
    A, B, C = (list(args) + [None])[:3]
    trans_a, trans_b = attr(node, "transA"), attr(node, "transB")
    alpha, beta = float(attr(node, "alpha")), float(attr(node, "beta"))
    k = reduce_axis((0, _value(A.shape[0 if trans_a else 1])), name="k")
    product_name = f"{name}_mm" if (C is not None or alpha != 1.0) else name
    product = compute(out.shape, lambda i, j: reduce_sum(
        (A[k, i] if trans_a else A[i, k]) * (B[j, k] if trans_b else B[k, j]), axis=k),
        name=product_name)
    if product_name == name:
        return product

    def body(i, j):
        value = product[i, j] * alpha if alpha != 1.0 else product[i, j]
        if C is not None:
            term = broadcast_read(C, (i, j), out.shape)
            value = value + (term * beta if beta != 1.0 else term)
        return value
    return compute(out.shape, body, name=name)


register("Gemm", "complex", {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0},
         min_inputs=2, max_inputs=3)((_gemm_infer, _gemm_lower))


# -- pooling ----------------------------------------------------------------------------------

_POOL_ATTRS = {"auto_pad": "NOTSET", "ceil_mode": 0, "dilations": None, "kernel_shape": None,
               "pads": None, "strides": None}


def _pool_infer(node, infos, constants):
    x = infos[0].shape
    if len(x) != 4:
        raise UnsupportedShapeError(node.name, node.op_type, infos[0].name, x, ranks=(4,))
    kernel = attr(node, "kernel_shape")
    if not kernel or len(kernel) != 2 or any(int(k) < 1 for k in kernel):
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}): kernel_shape must be two sizes >= 1, "
            f"got {kernel!r}")
    _, _, _, out = window(node, x[2:], attr(node, "kernel_shape"))
    return [((x[0], x[1], *out), infos[0].dtype)]


def _pool_lower(node, args, values, out, name):
    X = args[0]
    KH, KW = attr(node, "kernel_shape")
    H, W = (_value(d) for d in X.shape[2:])
    pads, (sy, sx), (dy, dx), _ = window(node, [H, W], (KH, KW))
    is_max = node.op_type == "MaxPool"
    if is_max and KH * KW <= UNROLLED_TERMS and (dy, dx) == (1, 1) and X.shape[0].value == 1:
        return _separable_max(X, pads, (sy, sx), (KH, KW), out, name)
    padded = pad(X, pads, lowest(X.dtype) if is_max else 0.0, f"{name}_pad")
    ry = reduce_axis((0, KH), name="ry")
    rx = reduce_axis((0, KW), name="rx")
    combine = reduce_max if is_max else reduce_sum
    total_name = name if is_max else f"{name}_sum"
    total = compute(out.shape, lambda n, c, y, x: combine(
        padded[n, c, y * sy + ry * dy, x * sx + rx * dx], axis=[ry, rx]), name=total_name)
    if is_max:
        return total
    if attr(node, "count_include_pad") or not any(pads):
        return compute(out.shape, lambda n, c, y, x: total[n, c, y, x] * (1.0 / (KH * KW)),
                       name=name)
    if (dy, dx) != (1, 1):
        raise UnsupportedCombinationError(node.name, node.op_type, "dilated_padding",
                                          dilations=(dy, dx), pads=tuple(pads),
                                          count_include_pad=0)
    top, left = pads[0], pads[1]

    def count(axis, stride, before, kernel, size):
        """How many rows (columns) of the window at ``axis`` fall inside the input."""
        return minimum(axis * stride - before + kernel, size) - maximum(axis * stride - before, 0)

    return compute(out.shape, lambda n, c, y, x: total[n, c, y, x] / (
        count(y, sy, top, KH, H) * count(x, sx, left, KW, W)).astype("float32"), name=name)


def lowest(dtype: str):
    """The padding of a max pool: -inf, or an integer dtype's least value."""
    return int(np.iinfo(dtype).min) if np.issubdtype(np.dtype(dtype), np.integer) \
        else float("-inf")


def _separable_max(X, pads, strides, kernel, out, name):
    """A small max pool (batch 1) in two steps: the maximum over the window's rows,
    ``rows[n, c, y, w]`` for every padded column ``w`` (read from the input with the
    padding as guards: no padded copy), then over its columns.  With a stride of 2 the
    row maxima are stored split in even and odd columns (``[n, c, y, parity, w]``, as
    :func:`_pad_split` does), so consecutive outputs read consecutive values.  Each
    input is read ``kh`` times and each row maximum ``kw`` times (``kh + kw`` reads per
    output, not ``kh * kw``); both steps are written out tap by tap (no reduction)."""
    (sy, sx), (kh, kw) = strides, kernel
    N, C, H, W = (_value(d) for d in X.shape)
    top, left, bottom, right = pads
    fill = lowest(X.dtype)
    split = sx == 2

    def tap(n, c, y, column, a):
        row = y * sy + a - top
        inside = all_of(row >= 0, row < H, column >= left, column < W + left)
        return if_then_else(inside, X[n, c, row, column - left], fill)

    def rows_max(n, c, y, column):
        result = None
        for a in range(kh):
            term = tap(n, c, y, column, a)
            result = term if result is None else maximum(result, term)
        return result

    height = _value(out.shape[2])
    if split:
        half = -(-(W + left + right) // 2)
        rows = compute((N, C, height, 2, half),
                       lambda n, c, y, p, w: rows_max(n, c, y, 2 * w + p), name=f"{name}_rows")
    else:
        rows = compute((N, C, height, W + left + right),
                       lambda n, c, y, w: rows_max(n, c, y, w), name=f"{name}_rows")

    def value(n, c, y, x):
        result = None
        for b in range(kw):
            term = rows[n, c, y, b % 2, x + b // 2] if split else rows[n, c, y, x * sx + b]
            result = term if result is None else maximum(result, term)
        return result
    return compute(out.shape, value, name=name)


register("MaxPool", "reduction", {**_POOL_ATTRS, "storage_order": 0})((_pool_infer, _pool_lower))
register("AveragePool", "reduction", {**_POOL_ATTRS, "count_include_pad": 0})(
    (_pool_infer, _pool_lower))


def _global_pool_infer(node, infos, constants):
    x = infos[0].shape
    return [((*x[:2], *[1] * (len(x) - 2)), infos[0].dtype)]


def _global_pool_lower(node, args, values, out, name):
    X = args[0]
    H, W = (_value(d) for d in X.shape[2:])
    ry, rx = reduce_axis((0, H), name="ry"), reduce_axis((0, W), name="rx")
    total = compute((out.shape[0], out.shape[1]),
                    lambda n, c: reduce_sum(X[n, c, ry, rx], axis=[ry, rx]), name=f"{name}_sum")
    return compute(out.shape, lambda n, c, y, x: total[n, c] * (1.0 / (H * W)), name=name)


register("GlobalAveragePool", "reduction")((_global_pool_infer, _global_pool_lower))


# -- row-wise: softmax, layer normalization ------------------------------------------------------

def rows_and_columns(shape) -> tuple[int, int]:
    """A tensor normalized over its last axis, viewed as ``[rows, columns]``."""
    return math.prod(shape[:-1]), int(shape[-1])


def _last_axis_only(node, rank: int, default: int) -> None:
    axis = axis_in_range(node, attr(node, "axis"), rank)
    if axis != rank - 1:
        raise UnsupportedAttributeValueError(node.name, node.op_type, "axis", axis,
                                             (-1, rank - 1))


def _softmax_infer(node, infos, constants):
    _last_axis_only(node, len(infos[0].shape), -1)
    return [(infos[0].shape, infos[0].dtype)]


def _softmax_lower(node, args, values, out, name):
    return te.ops.softmax(args[0], name=name)


register("Softmax", "reduction", {"axis": -1})((_softmax_infer, _softmax_lower))


def _layer_norm_infer(node, infos, constants):
    x = infos[0].shape
    _last_axis_only(node, len(x), -1)
    for info in infos[1:]:
        if info is not None and math.prod(info.shape) != x[-1]:
            raise InvalidArgumentError(f"scale/bias {info.shape} do not fit the last axis of {x}")
    return [(x, infos[0].dtype)]


def _layer_norm_lower(node, args, values, out, name):
    X, scale, bias = (list(args) + [None])[:3]
    cols = _value(X.shape[-1])
    if bias is None:
        bias = compute((cols,), lambda j: 0.0 * scale[j], name=f"{name}_zero")
    return te.ops.layer_norm(X, scale, bias, eps=float(attr(node, "epsilon")), name=name)


register("LayerNormalization", "reduction", {"axis": -1, "epsilon": 1e-5, "stash_type": 1},
         min_inputs=2, max_inputs=3)((_layer_norm_infer, _layer_norm_lower))

# Row-wise operators see their tensors as [rows, columns] (scale and bias as [columns]).
ROW_WISE = ("Softmax", "LayerNormalization")
