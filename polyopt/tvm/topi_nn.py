"""``tvm.topi.nn`` and TOPI's reductions and elementwise maps, as tensor expressions.

Each function returns polyopt tensors (computes) with TVM's signature and meaning, so
that TVM code calling ``topi.nn.conv2d_nchw``, ``topi.nn.pool2d``, ``topi.nn.dense``,
``topi.nn.softmax`` or ``topi.sum`` runs as written; schedule them like any compute.

>>> import polyopt as te
>>> A = te.placeholder((1, 2, 6, 6), name="A")
>>> P = pool2d(A, kernel=(3, 3), stride=(2, 2), dilation=(1, 1), padding=(1, 1, 1, 1),
...            pool_type="max")
>>> [int(e.value) for e in P.shape]
[1, 2, 3, 3]
"""

from __future__ import annotations

from .. import dtypes
from ..errors import InvalidArgumentError, public
from ..te.compat import const, min_value
from ..te.expr import Const, as_expr
from ..te.tensor import (Tensor, all_of, compute, exp, if_then_else, maximum, reduce_axis,
                         reduce_max, reduce_min, reduce_sum)


def _number(extent):
    return extent.value if isinstance(extent, Const) else extent


def _pair(value, what: str) -> tuple:
    values = tuple(value) if isinstance(value, (list, tuple)) else (value, value)
    if len(values) != 2:
        raise InvalidArgumentError(f"{what} takes an int or two ints, got {value!r}")
    return tuple(_positive(v, what, zero=what.endswith("padding")) for v in values)


def _positive(value, what: str, zero: bool = False) -> int:
    value = _number(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise InvalidArgumentError(f"{what} must be {'non-negative' if zero else 'positive'} "
                                   f"ints, got {value!r}")
    return value


def _padding(padding, what: str) -> tuple[int, int, int, int]:
    """TVM's ``get_pad_tuple``: an int, ``(height, width)`` or ``(top, left, bottom,
    right)`` -> ``(top, left, bottom, right)``."""
    if isinstance(padding, (list, tuple)) and len(padding) == 4:
        return tuple(_positive(p, f"{what} padding", zero=True) for p in padding)
    h, w = _pair(padding, f"{what} padding")
    return h, w, h, w


def _padded_read(data: Tensor, index: list, spatial: tuple, low: tuple, fill):
    """``data[index]`` where the spatial indices (positions ``spatial``, each ``low``
    ahead of the data) fall inside the data, else ``fill``: a guarded read."""
    shape = data.shape
    inside = []
    for dim, pad in zip(spatial, low):
        index[dim] = index[dim] - pad if pad else index[dim]
        inside += [index[dim] >= 0, index[dim] < shape[dim]]
    return if_then_else(all_of(*inside), data[tuple(index)], fill)


@public
def conv2d_nchw(Input: Tensor, Filter: Tensor, stride, padding, dilation=1,  # noqa: N803
                out_dtype=None) -> Tensor:
    """TVM's ``topi.nn.conv2d_nchw(Input, Filter, stride, padding, dilation, out_dtype)``:
    ``Input`` is ``(N, C, H, W)``, ``Filter`` ``(F, C, KH, KW)``; zero padding."""
    (sh, sw), (dh, dw) = _pair(stride, "conv2d stride"), _pair(dilation, "conv2d dilation")
    top, left, bottom, right = _padding(padding, "conv2d")
    N, C, H, W = Input.shape
    F, _, KH, KW = (_number(e) for e in Filter.shape)
    out_dtype = dtypes.normalize(out_dtype or Input.dtype)
    out_h = (_number(H) + top + bottom - ((KH - 1) * dh + 1)) // sh + 1
    out_w = (_number(W) + left + right - ((KW - 1) * dw + 1)) // sw + 1
    rc = reduce_axis((0, C), name="rc")
    ry = reduce_axis((0, KH), name="ry")
    rx = reduce_axis((0, KW), name="rx")
    zero = const(0, Input.dtype)

    def body(n, f, y, x):
        value = _padded_read(Input, [n, rc, y * sh + ry * dh, x * sw + rx * dw], (2, 3),
                             (top, left), zero) if top or left or bottom or right else \
            Input[n, rc, y * sh + ry * dh, x * sw + rx * dw]
        return reduce_sum(value.astype(out_dtype) * Filter[f, rc, ry, rx].astype(out_dtype),
                          axis=[rc, ry, rx])
    return compute((N, F, out_h, out_w), body, name="conv2d_nchw", tag="conv2d_nchw")


@public
def conv2d(input: Tensor, filter: Tensor, strides, padding, dilation,  # noqa: A002
           data_layout: str = "NCHW", kernel_layout: str = "", out_dtype=None) -> Tensor:
    """TVM's ``topi.nn.conv2d``: NCHW data with an OIHW filter (other layouts are
    refused; transpose the tensors first)."""
    if data_layout != "NCHW" or kernel_layout not in ("", "OIHW"):
        raise InvalidArgumentError(f"topi.nn.conv2d: polyopt computes NCHW data with OIHW "
                                   f"filters, got {data_layout!r}/{kernel_layout!r}; "
                                   "transpose the tensors, or use po.graph for other layouts")
    return conv2d_nchw(input, filter, strides, padding, dilation, out_dtype)


@public
def pool2d(data: Tensor, kernel, stride, dilation, padding, pool_type: str,
           ceil_mode: bool = False, layout: str = "NCHW",
           count_include_pad: bool = True) -> Tensor:
    """TVM's ``topi.nn.pool2d``: ``"max"`` or ``"avg"`` pooling over the ``H`` and ``W``
    dimensions of ``layout``; padding ``(top, left, bottom, right)`` is never a maximum
    and counts in an average only with ``count_include_pad``; ``ceil_mode`` keeps a
    last, partial window."""
    if pool_type not in ("max", "avg"):
        raise InvalidArgumentError(f"pool_type must be 'max' or 'avg', got {pool_type!r}")
    if not isinstance(layout, str) or len(layout) != len(data.shape) or \
            "H" not in layout or "W" not in layout:
        raise InvalidArgumentError(f"layout {layout!r} must name each of the "
                                   f"{len(data.shape)} dimensions, with H and W")
    (kh, kw), (sh, sw) = _pair(kernel, "pool2d kernel"), _pair(stride, "pool2d stride")
    dh, dw = _pair(dilation, "pool2d dilation")
    top, left, bottom, right = _padding(padding, "pool2d")
    spatial = (layout.index("H"), layout.index("W"))
    sizes = [_number(data.shape[d]) for d in spatial]
    extra = (sh - 1, sw - 1) if ceil_mode else (0, 0)
    out = [(size + lo + hi + more - ((k - 1) * d + 1)) // s + 1 for size, lo, hi, more, k, d, s
           in zip(sizes, (top, left), (bottom, right), extra, (kh, kw), (dh, dw), (sh, sw))]
    shape = list(data.shape)
    shape[spatial[0]], shape[spatial[1]] = out
    ry, rx = reduce_axis((0, kh), name="ry"), reduce_axis((0, kw), name="rx")

    def window(index):
        index = list(index)
        index[spatial[0]] = index[spatial[0]] * sh + ry * dh
        index[spatial[1]] = index[spatial[1]] * sw + rx * dw
        return index

    if pool_type == "max":
        lowest = min_value(data.dtype)
        return compute(shape, lambda *i: reduce_max(
            _padded_read(data, window(i), spatial, (top, left), lowest), axis=[ry, rx]),
            name="pool_max", tag="pool_max")
    total = compute(shape, lambda *i: reduce_sum(
        _padded_read(data, window(i), spatial, (top, left), const(0, data.dtype)),
        axis=[ry, rx]), name="pool_sum")
    cy, cx = reduce_axis((0, kh), name="cy"), reduce_axis((0, kw), name="cx")
    # the window's points inside the data (and its padding, with count_include_pad)
    lo = (-top, -left) if count_include_pad else (0, 0)
    hi = ((sizes[0] + bottom, sizes[1] + right) if count_include_pad else sizes)

    def count(*i):
        y = i[spatial[0]] * sh + cy * dh - top
        x = i[spatial[1]] * sw + cx * dw - left
        return reduce_sum(if_then_else(all_of(y >= lo[0], y < hi[0], x >= lo[1], x < hi[1]),
                                       1, 0), axis=[cy, cx])
    counts = compute(shape, count, name="pool_count")
    float_dtype = data.dtype if dtypes.is_float(data.dtype) else "float32"
    return compute(shape, lambda *i: (total[i].astype(float_dtype) / maximum(
        counts[i], 1).astype(float_dtype)).astype(data.dtype), name="pool_avg",
        tag="pool_avg")


@public
def dense(data: Tensor, weight: Tensor, bias: Tensor | None = None,
          out_dtype=None) -> Tensor:
    """TVM's ``topi.nn.dense``: ``out[i, j] = sum_k data[i, k] * weight[j, k]`` (+ bias[j])."""
    out_dtype = dtypes.normalize(out_dtype or data.dtype)
    k = reduce_axis((0, data.shape[1]), name="k")
    out = compute((data.shape[0], weight.shape[0]), lambda i, j: reduce_sum(
        data[i, k].astype(out_dtype) * weight[j, k].astype(out_dtype), axis=k),
        name="T_dense", tag="dense")
    if bias is None:
        return out
    return compute(out.shape, lambda i, j: out[i, j] + bias[j].astype(out_dtype),
                   name="T_add", tag="broadcast")


def _axis(x: Tensor, axis: int) -> int:
    rank = len(x.shape)
    if isinstance(axis, bool) or not isinstance(axis, int) or not -rank <= axis < rank:
        raise InvalidArgumentError(f"axis must be an int in [{-rank}, {rank}), got {axis!r}")
    return axis % rank


@public
def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """TVM's ``topi.nn.softmax``: ``exp(x - max) / sum(exp(x - max))`` along ``axis``."""
    axis = _axis(x, axis)
    reduced = [e for d, e in enumerate(x.shape) if d != axis]
    k = reduce_axis((0, x.shape[axis]), name="k")

    def along(i, at):
        return tuple(i[:axis]) + (at,) + tuple(i[axis:])
    top = compute(reduced, lambda *i: reduce_max(x[along(i, k)], axis=k), name="T_softmax_maxelem")
    e = compute(x.shape, lambda *i: exp(x[i] - top[tuple(i[:axis]) + tuple(i[axis + 1:])]),
                name="T_softmax_exp")
    k2 = reduce_axis((0, x.shape[axis]), name="k")
    total = compute(reduced, lambda *i: reduce_sum(e[along(i, k2)], axis=k2),
                    name="T_softmax_expsum")
    return compute(x.shape, lambda *i: e[i] / total[tuple(i[:axis]) + tuple(i[axis + 1:])],
                   name="T_softmax_norm", tag="softmax_output")


@public
def relu(x: Tensor) -> Tensor:
    """TVM's ``topi.nn.relu``: ``max(x, 0)`` elementwise."""
    return compute(x.shape, lambda *i: maximum(x[i], const(0, x.dtype)), name="T_relu",
                   tag="elemwise")


def _reduction(reducer, name: str):
    def reduce(data: Tensor, axis=None, keepdims: bool = False) -> Tensor:
        rank = len(data.shape)
        axes = range(rank) if axis is None else [_axis(data, a) for a in (
            axis if isinstance(axis, (list, tuple)) else [axis])]
        axes = sorted(set(axes))
        over = {d: reduce_axis((0, data.shape[d]), name=f"k{d}") for d in axes}
        kept = [d for d in range(rank) if d not in over]
        shape = [1 if d in over else data.shape[d] for d in range(rank)] if keepdims else \
            [data.shape[d] for d in kept]

        def body(*i):
            outer = iter([i[d] for d in kept] if keepdims else i)
            index = tuple(over[d] if d in over else next(outer) for d in range(rank))
            return reducer(data[index], axis=[over[d] for d in axes])
        return compute(shape, body, name=f"{data.name}_{name}", tag="comm_reduce")
    reduce.__name__ = reduce.__qualname__ = name
    reduce.__doc__ = (f"TVM's ``topi.{name}(data, axis=None, keepdims=False)``: the {name} "
                      "over ``axis`` (an int, a list of them, or None for all).")
    return public(reduce)


sum_, max_, min_ = (_reduction(r, n) for r, n in ((reduce_sum, "sum"), (reduce_max, "max"),
                                                  (reduce_min, "min")))


def _elementwise(function, name: str):
    def apply(x: Tensor) -> Tensor:
        return compute(x.shape, lambda *i: function(x[i]), name=f"T_{name}", tag="elemwise")
    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"TVM's ``topi.{name}(x)``: elementwise."
    return public(apply)


def negate(value):
    return -as_expr(value)
