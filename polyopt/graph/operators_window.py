"""Window operators of ONNX beyond Conv and the 2-D pools: ConvTranspose (2-D and 3-D,
groups, strides, dilations, pads, output_padding, output_shape, auto_pad), GlobalMaxPool and
LRN (local response normalization across channels). 1-D ConvTranspose is the 2-D one
on ``[N, C, 1, L]`` (:mod:`.onnx_rewrites`).

A transposed convolution is the convolution of the input with its zeros inserted
(``stride - 1`` between neighbours) and padded, by the flipped kernel:
``out[n, m, y, x] = sum over (c, ky, kx) of U[n, c, y + ky d, x + kx d] *
W[c, m, kh - 1 - ky, kw - 1 - kx]``; ``U`` reads ``X`` where the position is a
multiple of the stride (a guarded, affine read) and is 0 elsewhere.

>>> from polyopt.graph.registry import OPS
>>> OPS["ConvTranspose"].attrs["group"], OPS["LRN"].attrs["size"]
(1, None)
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..te.expr import Call
from ..te.tensor import (all_of, compute, if_then_else, reduce_axis, reduce_max,
                         reduce_sum)
from .graph_errors import UnsupportedAttributeValueError, UnsupportedShapeError
from .registry import AUTO_PADS, attr, register

_CONV_T_ATTRS = {"auto_pad": "NOTSET", "dilations": None, "group": 1, "kernel_shape": None,
                 "output_padding": None, "output_shape": None, "pads": None, "strides": None}


def _ints(node, key, default, count, least):
    value = attr(node, key)
    if value is None:
        return list(default)
    if len(value) != count or any(int(v) < least for v in value):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): {key} must be {count} "
                                   f"integers >= {least}, got {list(value)}")
    return [int(v) for v in value]


def transposed_window(node, in_hw, kernel):
    """``(pads (begins, then ends), strides, dilations, output size)`` of a 2-D or 3-D
    ConvTranspose (one entry per spatial axis of ``in_hw``), as onnx's reference
    computes them."""
    d = len(in_hw)
    strides = _ints(node, "strides", (1,) * d, d, 1)
    dilations = _ints(node, "dilations", (1,) * d, d, 1)
    extra = _ints(node, "output_padding", (0,) * d, d, 0)
    if any(e >= max(s, di) for e, s, di in zip(extra, strides, dilations)):
        raise InvalidArgumentError(f"node '{node.name}' (ConvTranspose): output_padding {extra} "
                                   "must be below the stride or the dilation")
    full = [s * (h - 1) + e + (k - 1) * di + 1
            for s, h, e, k, di in zip(strides, in_hw, extra, kernel, dilations)]
    auto = attr(node, "auto_pad")
    if auto not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedAttributeValueError(node.name, node.op_type, "auto_pad", auto,
                                             AUTO_PADS)
    given = attr(node, "output_shape")
    if given is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = [int(v) for v in given][-d:] if given is not None else \
            [h * s for h, s in zip(in_hw, strides)]
        total = [f - t for f, t in zip(full, target)]  # (< 0: zeros added after)
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        # ONNX's equations, with floor division (as onnx's reference: a negative total
        # adds zeros at the end)
        pads = small + big if auto == "SAME_UPPER" else big + small
    else:
        pads = [0] * 2 * d if auto == "VALID" else _ints(node, "pads", (0,) * 2 * d, 2 * d, 0)
    out = [f - pads[k] - pads[k + d] for k, f in enumerate(full)]
    if min(out) < 1:
        raise InvalidArgumentError(f"node '{node.name}' (ConvTranspose): pads {pads} leave no "
                                   "output")
    return pads, strides, dilations, out


def _conv_t_infer(node, infos, constants):
    x, w = infos[0], infos[1]
    group = attr(node, "group")
    if len(x.shape) not in (4, 5):
        raise UnsupportedShapeError(node.name, node.op_type, x.name, x.shape, ranks=(4, 5))
    if len(w.shape) != len(x.shape):
        raise UnsupportedShapeError(node.name, node.op_type, w.name, w.shape,
                                    ranks=(len(x.shape),))
    if not isinstance(group, (int, np.integer)) or group < 1 or x.shape[1] != w.shape[0] or \
            w.shape[0] % group:
        raise InvalidArgumentError(f"node '{node.name}' (ConvTranspose): weight {w.shape} does "
                                   f"not fit input {x.shape} with group={group}")
    kernel = attr(node, "kernel_shape")
    if kernel is not None and [int(k) for k in kernel] != list(w.shape[2:]):
        raise InvalidArgumentError(f"node '{node.name}' (ConvTranspose): kernel_shape "
                                   f"{list(kernel)} is not the weight's {list(w.shape[2:])}")
    channels = w.shape[1] * group
    if len(infos) > 2 and infos[2] is not None and infos[2].shape != (channels,):
        raise InvalidArgumentError(f"node '{node.name}' (ConvTranspose): the bias has shape "
                                   f"{infos[2].shape}; it must be ({channels},)")
    _, _, _, out = transposed_window(node, x.shape[2:], w.shape[2:])
    return [((x.shape[0], channels, *out), x.dtype)]


def _conv_t_lower(node, args, values, out_info, name):
    X, Wt, bias = (list(args) + [None])[:3]
    N, C, *size = (d.value for d in X.shape)
    _, Mg, *kernel = (d.value for d in Wt.shape)
    rank = len(size)
    group = int(attr(node, "group"))
    Cg = C // group
    pads, strides, dilations, out = transposed_window(node, size, kernel)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    before = [e - 1 - p for e, p in zip(extents, pads[:rank])]  # U's rows before X's first

    def spread(n, c, *u):
        at = [v - b for v, b in zip(u, before)]
        inside = all_of(*(cond for a, s, h in zip(at, strides, size)
                          for cond in (a >= 0, a % s == 0, a // s < h)))
        return if_then_else(inside, X[(n, c, *(a // s for a, s in zip(at, strides)))], 0.0)
    spread_t = compute((N, C, *(o + e - 1 for o, e in zip(out, extents))), spread,
                       name=f"{name}_spread")
    rc = reduce_axis((0, Cg), name="rc")
    rk = [reduce_axis((0, k), name=f"r{'zyx'[3 - rank + a]}") for a, k in enumerate(kernel)]
    conv_name = f"{name}_conv" if bias is not None else name

    def body(n, m, *at):
        g = m // Mg if group > 1 else 0
        c = g * Cg + rc if group > 1 else rc
        return reduce_sum(spread_t[(n, c, *(a + r * d for a, r, d in zip(at, rk, dilations)))]
                          * Wt[(c, m % Mg if group > 1 else m,
                                *(k - 1 - r for k, r in zip(kernel, rk)))],
                          axis=[rc, *rk])
    result = compute(tuple(out_info.shape), body, name=conv_name)
    if bias is None:
        return result
    return compute(out_info.shape, lambda n, m, *at: result[(n, m, *at)] + bias[m], name=name)


register("ConvTranspose", "reduction", _CONV_T_ATTRS, min_inputs=2,
         max_inputs=3)(
    (_conv_t_infer, _conv_t_lower))


def _global_max_infer(node, infos, constants):
    x = infos[0].shape
    if len(x) < 3:
        raise InvalidArgumentError(f"node '{node.name}' (GlobalMaxPool) needs [N, C, ...], "
                                   f"got {x}")
    return [((*x[:2], *[1] * (len(x) - 2)), infos[0].dtype)]


def _global_max_lower(node, args, values, out, name):
    X = args[0]
    spatial = [d.value for d in X.shape[2:]]

    def body(n, c, *rest):
        axes = [reduce_axis((0, d), name=f"r{k}") for k, d in enumerate(spatial)]
        return reduce_max(X[(n, c, *axes)], axis=axes)
    return compute(out.shape, body, name=name)


register("GlobalMaxPool", "reduction")((_global_max_infer, _global_max_lower))


def _lrn_infer(node, infos, constants):
    x = infos[0]
    size = attr(node, "size")
    if not isinstance(size, (int, np.integer)) or size < 1:
        raise InvalidArgumentError(f"node '{node.name}' (LRN): size must be an integer >= 1, "
                                   f"got {size!r}")
    if len(x.shape) < 3 or not x.dtype.startswith("float"):
        raise InvalidArgumentError(f"node '{node.name}' (LRN) needs a float [N, C, ...] input, "
                                   f"got {x}")
    return [(x.shape, x.dtype)]


def _lrn_lower(node, args, values, out, name):
    X = args[0]
    C = X.shape[1].value
    size = int(attr(node, "size"))
    alpha, beta, bias = (float(attr(node, k)) for k in ("alpha", "beta", "bias"))
    before = (size - 1) // 2

    def squares(n, c, *rest):
        r = reduce_axis((0, size), name="rc")
        k = c - before + r
        inside = all_of(k >= 0, k < C)
        return reduce_sum(if_then_else(inside, X[(n, k, *rest)] * X[(n, k, *rest)], 0.0),
                          axis=r)
    total = compute(out.shape, squares, name=f"{name}_sq")
    return compute(out.shape, lambda *i: X[i] / Call.make(
        "pow", bias + (alpha / size) * total[i], beta), name=name)


register("LRN", "reduction", {"alpha": 1e-4, "beta": 0.75, "bias": 1.0, "size": None})(
    (_lrn_infer, _lrn_lower))
