"""Convolution and pooling over any number of spatial axes (3-D: ``[N, C, D, H, W]``):
``ConvNd``, ``MaxPoolNd``, ``AveragePoolNd``, the internal operators the importer makes
of a 3-D ``Conv``, ``MaxPool`` or ``AveragePool`` (:mod:`.onnx_rewrites`; the 2-D ones
keep their templates and layout passes), and ``LpPool`` of any rank. Groups, strides,
dilations, pads, auto_pad and ceil_mode; written as one reduction over the window of a
padded copy of the input.

>>> from polyopt.graph.registry import OPS
>>> OPS["ConvNd"].internal, OPS["AveragePoolNd"].attrs["count_include_pad"]
(True, 0)
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgumentError
from ..te.expr import Call
from ..te.tensor import (all_of, compute, if_then_else, reduce_axis, reduce_max,
                         reduce_sum, sqrt)
from .operators_nn import lowest
from .graph_errors import UnsupportedAttributeValueError
from .registry import AUTO_PADS, attr, register

_WINDOW_ATTRS = {"auto_pad": "NOTSET", "dilations": None, "kernel_shape": None, "pads": None,
                 "strides": None}


def _sizes(node, key, count, least, default):
    value = attr(node, key)
    if value is None:
        return [default] * count
    if len(value) != count or any(int(v) < least for v in value):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): {key} must be {count} "
                                   f"integers >= {least}, got {list(value)}")
    return [int(v) for v in value]


def window_nd(node, sizes, kernel):
    """``(begin pads, end pads, strides, dilations, output sizes, padded_end)`` of a
    window over the spatial ``sizes``; ``padded_end``: the end pads before ceil_mode
    extended them (what count_include_pad counts)."""
    n = len(sizes)
    strides = _sizes(node, "strides", n, 1, 1)
    dilations = _sizes(node, "dilations", n, 1, 1)
    pads = _sizes(node, "pads", 2 * n, 0, 0)
    extent = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    auto = attr(node, "auto_pad")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        out = [-(-h // s) for h, s in zip(sizes, strides)]
        total = [max(0, (o - 1) * s + e - h) for o, s, e, h in zip(out, strides, extent, sizes)]
        small, big = [t // 2 for t in total], [t - t // 2 for t in total]
        pads = small + big if auto == "SAME_UPPER" else big + small
    elif auto == "VALID":
        pads = [0] * (2 * n)
    elif auto != "NOTSET":
        raise UnsupportedAttributeValueError(node.name, node.op_type, "auto_pad", auto,
                                             AUTO_PADS)
    begin, end = pads[:n], pads[n:]
    ceil = bool(attr(node, "ceil_mode"))  # (None for ConvNd)
    out = []
    for h, b, e, x, s in zip(sizes, begin, end, extent, strides):
        span = h + b + e - x
        o = (-(-span // s) if ceil else span // s) + 1
        if ceil and (o - 1) * s >= h + b:
            o -= 1
        out.append(o)
    if min(out) < 1:
        raise InvalidArgumentError(f"node '{node.name}': the window is larger than the input")
    padded_end = list(end)
    end = [max(e, (o - 1) * s + x - h - b)
           for e, o, s, x, h, b in zip(end, out, strides, extent, sizes, begin)]
    return begin, end, strides, dilations, out, padded_end


def _padded(X, begin, end, fill, name):
    spatial = [d.value for d in X.shape[2:]]
    if not any(begin) and not any(end):
        return X
    shape = (X.shape[0].value, X.shape[1].value,
             *[h + b + e for h, b, e in zip(spatial, begin, end)])

    def body(n, c, *s):
        at = [a - b for a, b in zip(s, begin)]
        inside = all_of(*[c_ for a, h in zip(at, spatial) for c_ in (a >= 0, a < h)])
        return if_then_else(inside, X[(n, c, *at)], fill)
    return compute(shape, body, name=f"{name}_pad")


def _conv_infer(node, infos, constants):
    x, w = infos[0], infos[1]
    group = attr(node, "group")
    if len(x.shape) != len(w.shape) or len(x.shape) < 3:
        raise InvalidArgumentError(f"node '{node.name}' (Conv): input {x.shape} and weight "
                                   f"{w.shape} must have the same rank (>= 3)")
    if not isinstance(group, (int, np.integer)) or group < 1 or \
            x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise InvalidArgumentError(f"node '{node.name}' (Conv): weight {w.shape} does not fit "
                                   f"input {x.shape} with group={group}")
    kernel = attr(node, "kernel_shape")
    if kernel is not None and [int(k) for k in kernel] != list(w.shape[2:]):
        raise InvalidArgumentError(f"node '{node.name}' (Conv): kernel_shape {list(kernel)} is "
                                   f"not the weight's {list(w.shape[2:])}")
    if len(infos) > 2 and infos[2] is not None and infos[2].shape != (w.shape[0],):
        raise InvalidArgumentError(f"node '{node.name}' (Conv): the bias has shape "
                                   f"{infos[2].shape}; it must be ({w.shape[0]},)")
    out = window_nd(node, x.shape[2:], w.shape[2:])[4]
    return [((x.shape[0], w.shape[0], *out), x.dtype)]


def _conv_lower(node, args, values, out_info, name):
    X, Wt, bias = (list(args) + [None])[:3]
    F, Cg, *kernel = (d.value for d in Wt.shape)
    group = int(attr(node, "group"))
    begin, end, strides, dilations, _, _ = window_nd(
        node, [d.value for d in X.shape[2:]], kernel)
    padded = _padded(X, begin, end, 0.0, name)
    per_group = F // group

    def body(n, f, *o):
        rc = reduce_axis((0, Cg), name="rc")
        rk = [reduce_axis((0, k), name=f"rk{j}") for j, k in enumerate(kernel)]
        c = (f // per_group) * Cg + rc if group > 1 else rc
        at = [a * s + r * d for a, s, r, d in zip(o, strides, rk, dilations)]
        return reduce_sum(padded[(n, c, *at)] * Wt[(f, rc, *rk)], axis=[rc, *rk])
    conv = compute(tuple(out_info.shape), body, name=f"{name}_conv" if bias is not None else name)
    if bias is None:
        return conv
    return compute(out_info.shape, lambda n, f, *o: conv[(n, f, *o)] + bias[f], name=name)


def _pool_infer(node, infos, constants):
    x = infos[0].shape
    kernel = attr(node, "kernel_shape")
    if not kernel or len(kernel) != len(x) - 2 or any(int(k) < 1 for k in kernel):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): kernel_shape must be "
                                   f"{len(x) - 2} sizes >= 1, got {kernel!r}")
    out = window_nd(node, x[2:], [int(k) for k in kernel])[4]
    return [((x[0], x[1], *out), infos[0].dtype)]


def _pool_lower(node, args, values, out, name):
    X = args[0]
    kernel = [int(k) for k in attr(node, "kernel_shape")]
    sizes = [d.value for d in X.shape[2:]]
    begin, end, strides, dilations, _, padded_end = window_nd(node, sizes, kernel)
    is_max = node.op_type == "MaxPoolNd"
    padded = _padded(X, begin, end, lowest(X.dtype) if is_max else 0.0, name)
    if node.op_type == "LpPool":
        return _lp_pool(node, padded, kernel, strides, dilations, out, name)

    def window(o, prefix):
        rk = [reduce_axis((0, k), name=f"{prefix}{j}") for j, k in enumerate(kernel)]
        return rk, [a * s + r * d for a, s, r, d in zip(o, strides, rk, dilations)]

    def total(n, c, *o):
        rk, at = window(o, "r")
        return (reduce_max if is_max else reduce_sum)(padded[(n, c, *at)], axis=rk)
    result = compute(out.shape, total, name=name if is_max else f"{name}_sum")
    if is_max:
        return result
    low = [0 if attr(node, "count_include_pad") else b for b in begin]
    high = [b + h + (e if attr(node, "count_include_pad") else 0)
            for b, h, e in zip(begin, sizes, padded_end)]
    if all(lo == 0 for lo in low) and all(hi >= b + h + e for hi, b, h, e in
                                          zip(high, begin, sizes, end)):
        return compute(out.shape, lambda *i: result[i] * (1.0 / math.prod(kernel)), name=name)

    def count(n, c, *o):  # the window's cells inside the counted range
        rk, at = window(o, "q")
        inside = all_of(*[t for a, lo, hi in zip(at, low, high) for t in (a >= lo, a < hi)])
        return reduce_sum(if_then_else(inside, 1.0, 0.0), axis=rk)
    counted = compute(out.shape, count, name=f"{name}_count")
    return compute(out.shape, lambda *i: result[i] / counted[i], name=name)


register("ConvNd", "reduction", {**_WINDOW_ATTRS, "group": 1}, min_inputs=2,
         internal=True)((_conv_infer, _conv_lower))
register("MaxPoolNd", "reduction", {**_WINDOW_ATTRS, "ceil_mode": 0, "storage_order": 0},
         internal=True)((_pool_infer, _pool_lower))
register("AveragePoolNd", "reduction", {**_WINDOW_ATTRS, "ceil_mode": 0,
                                        "count_include_pad": 0}, internal=True)(
    (_pool_infer, _pool_lower))


def _lp_pool(node, padded, kernel, strides, dilations, out, name):
    """``(sum over the window of |x|^p)^(1/p)`` (the pads count as zeros)."""
    p = attr(node, "p")
    if not isinstance(p, (int, np.integer)) or p < 1:
        raise InvalidArgumentError(f"node '{node.name}' (LpPool): p must be an integer >= 1, "
                                   f"got {p!r}")

    def power(x):
        magnitude = if_then_else(x < 0.0, -x, x)
        return magnitude if p == 1 else x * x if p == 2 else Call.make("pow", magnitude,
                                                                       float(p))

    def total(n, c, *o):
        rk = [reduce_axis((0, k), name=f"r{j}") for j, k in enumerate(kernel)]
        at = [a * s + r * d for a, s, r, d in zip(o, strides, rk, dilations)]
        return reduce_sum(power(padded[(n, c, *at)]), axis=rk)
    sums = compute(out.shape, total, name=f"{name}_sum")
    root = (lambda v: v) if p == 1 else (lambda v: sqrt(v)) if p == 2 else \
        (lambda v: Call.make("pow", v, 1.0 / p))
    return compute(out.shape, lambda *i: root(sums[i]), name=name)


register("LpPool", "reduction", {**_WINDOW_ATTRS, "ceil_mode": 0, "p": 2})(
    (_pool_infer, _pool_lower))
