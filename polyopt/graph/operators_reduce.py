"""Reductions of ONNX over any axes: ReduceSum, ReduceMean, ReduceMax, ReduceMin,
ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp (axes as
an attribute or a constant input, ``keepdims``, ``noop_with_empty_axes``), and
LogSoftmax and Softmax over any axis (``x - max - log(sum(exp(x - max)))``),
InstanceNormalization, ArgMax, ArgMin and Hardmax.

>>> from polyopt.graph.registry import OPS
>>> OPS["ReduceMean"].attrs["keepdims"], OPS["LogSoftmax"].kind
(1, 'reduction')
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidArgumentError
from ..te.reducers import comm_reducer
from ..te.tensor import all_of, any_of, compute, exp, if_then_else, log, reduce_axis, \
    reduce_max, reduce_min, reduce_sum, sqrt
from ..te.compat import const
from .registry import attr, axis_in_range, constant_value, register

_REDUCE_ATTRS = {"axes": None, "keepdims": 1, "noop_with_empty_axes": 0}
_product = comm_reducer(lambda x, y: x * y, lambda dtype: 1, name="product")


def _abs(x):
    return if_then_else(x < 0, -x, x)


# name -> (reduction, term of each element, finish: (reduced value, count) -> output)
REDUCTIONS = {
    "ReduceSum": (reduce_sum, lambda x: x, None),
    "ReduceMean": (reduce_sum, lambda x: x, lambda v, n: v * (1.0 / n)),
    "ReduceMax": (reduce_max, lambda x: x, None),
    "ReduceMin": (reduce_min, lambda x: x, None),
    "ReduceProd": (_product, lambda x: x, None),
    "ReduceL1": (reduce_sum, _abs, None),
    "ReduceL2": (reduce_sum, lambda x: x * x, lambda v, n: sqrt(v)),
    "ReduceSumSquare": (reduce_sum, lambda x: x * x, None),
    "ReduceLogSum": (reduce_sum, lambda x: x, lambda v, n: log(v)),
    "ReduceLogSumExp": None,  # max-shifted: see _log_sum_exp
}
_FLOAT_ONLY = ("ReduceMean", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")


def reduced_axes(node, constants, rank: int) -> list[int] | None:
    """The axes ``node`` reduces (sorted), or None when it reduces none (an empty list
    with ``noop_with_empty_axes``); from the input ``axes`` or the attribute."""
    axes = constant_value(node, constants, 1, "axes") if len(node.inputs) > 1 else None
    if axes is None:
        axes = attr(node, "axes")
    if axes is None or len(np.ravel(axes)) == 0:
        return None if attr(node, "noop_with_empty_axes") else list(range(rank))
    found = sorted(axis_in_range(node, int(a), rank, "axes") for a in np.ravel(axes))
    if len(set(found)) != len(found):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): axes "
                                   f"{[int(a) for a in np.ravel(axes)]} name an axis twice")
    return found


def _reduce_infer(node, infos, constants):
    shape, dtype = infos[0].shape, infos[0].dtype
    if node.op_type in _FLOAT_ONLY and not dtype.startswith("float"):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}) computes floats; "
                                   f"its input is {dtype} (Cast it to float32 first)")
    axes = reduced_axes(node, constants, len(shape))
    if axes is None:
        return [(shape, dtype)]
    if any(shape[a] == 0 for a in axes):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): it reduces an "
                                   f"empty axis of {shape}; polyopt.graph needs sizes >= 1")
    keep = attr(node, "keepdims")
    out = tuple(1 if k in axes else d for k, d in enumerate(shape) if keep or k not in axes)
    return [(out, dtype)]


def _reduce_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    constants = {n: v for n, v in zip(node.inputs, values) if v is not None}
    axes = reduced_axes(node, constants, len(shape))
    if axes is None:
        return compute(out.shape, lambda *i: X[i], name=name)
    keep = bool(attr(node, "keepdims"))
    count = math.prod(shape[a] for a in axes)
    if node.op_type == "ReduceLogSumExp":
        return _log_sum_exp(X, shape, axes, keep, out, name)
    reduction, term, finish = REDUCTIONS[node.op_type]
    total_name = name if finish is None else f"{name}_total"

    def total_body(*i):
        read, raxes = _reading(X, shape, axes, keep, i, "r")
        return reduction(term(read), axis=raxes)
    total = compute(out.shape, total_body, name=total_name)
    if finish is None:
        return total
    return compute(out.shape, lambda *i: finish(total[i], count), name=name)


def _reading(X, shape, axes, keep: bool, index, prefix: str):
    """``X`` read at the output ``index`` with a new reduce axis per reduced axis."""
    raxes, full, k = [], [], 0
    for d, size in enumerate(shape):
        if d in axes:
            axis = reduce_axis((0, size), name=f"{prefix}{d}")
            raxes.append(axis)
            full.append(axis)
            k += keep
        else:
            full.append(index[k])
            k += 1
    return X[tuple(full)], raxes


def _log_sum_exp(X, shape, axes, keep, out, name):
    def top_body(*i):
        read, raxes = _reading(X, shape, axes, keep, i, "m")
        return reduce_max(read, axis=raxes)
    top = compute(out.shape, top_body, name=f"{name}_max")

    def sum_body(*i):
        read, raxes = _reading(X, shape, axes, keep, i, "r")
        return reduce_sum(exp(read - top[i]), axis=raxes)
    total = compute(out.shape, sum_body, name=f"{name}_sum")
    return compute(out.shape, lambda *i: log(total[i]) + top[i], name=name)


for _op in REDUCTIONS:
    register(_op, "reduction", _REDUCE_ATTRS, max_inputs=2)((_reduce_infer, _reduce_lower))


def _log_softmax_infer(node, infos, constants):
    shape, dtype = infos[0].shape, infos[0].dtype
    axis_in_range(node, attr(node, "axis"), len(shape))
    if not dtype.startswith("float"):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}) computes floats; its "
                                   f"input is {dtype}")
    return [(shape, dtype)]


def _log_softmax_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    axis = axis_in_range(node, attr(node, "axis"), len(shape))
    row = tuple(1 if k == axis else d for k, d in enumerate(shape))

    def along(i, r):
        return tuple(r if k == axis else a for k, a in enumerate(i))

    def top_body(*i):
        r = reduce_axis((0, shape[axis]), name="m")
        return reduce_max(X[along(i, r)], axis=r)
    top = compute(row, top_body, name=f"{name}_max")

    def sum_body(*i):
        r = reduce_axis((0, shape[axis]), name="r")
        return reduce_sum(exp(X[along(i, r)] - top[i]), axis=r)
    total = compute(row, sum_body, name=f"{name}_sum")

    def body(*i):
        at = along(i, 0)
        if node.op_type == "SoftmaxAxis":
            return exp(X[i] - top[at]) / total[at]
        return X[i] - top[at] - log(total[at])
    return compute(out.shape, body, name=name)


register("LogSoftmax", "reduction", {"axis": -1})((_log_softmax_infer, _log_softmax_lower))
# Softmax over an axis other than the last (the importer makes it of such a Softmax; the
# last axis keeps Softmax's row-wise template)
register("SoftmaxAxis", "reduction", {"axis": -1}, internal=True)(
    (_log_softmax_infer, _log_softmax_lower))


def _instance_norm_infer(node, infos, constants):
    x = infos[0]
    if len(x.shape) < 3 or not x.dtype.startswith("float"):
        raise InvalidArgumentError(f"node '{node.name}' (InstanceNormalization) needs a float "
                                   f"[N, C, ...] input, got {x}")
    for info, what in zip(infos[1:3], ("scale", "B")):
        if info is None or info.shape != (x.shape[1],):
            raise InvalidArgumentError(
                f"node '{node.name}' (InstanceNormalization): {what} must have shape "
                f"({x.shape[1]},), got {info.shape if info else None}")
    return [(x.shape, x.dtype)]


def _instance_norm_lower(node, args, values, out, name):
    """Per (n, c): the mean, then the variance (of the centred values), over the
    spatial axes; ``scale * (x - mean) / sqrt(var + epsilon) + B``."""
    X, scale, bias = args
    shape = tuple(d.value for d in X.shape)
    axes = list(range(2, len(shape)))
    count = math.prod(shape[2:])
    eps = float(attr(node, "epsilon"))
    stats = (shape[0], shape[1], *[1] * len(axes))

    def mean_body(*i):
        read, raxes = _reading(X, shape, axes, True, i, "r")
        return reduce_sum(read, axis=raxes)
    total = compute(stats, mean_body, name=f"{name}_sum")
    mean = compute(stats, lambda *i: total[i] * (1.0 / count), name=f"{name}_mean")

    def var_body(*i):
        read, raxes = _reading(X, shape, axes, True, i, "v")
        centred = read - mean[i]
        return reduce_sum(centred * centred, axis=raxes)
    squares = compute(stats, var_body, name=f"{name}_sq")

    def body(n, c, *rest):
        at = (n, c, *[0] * len(rest))
        return scale[c] * (X[(n, c, *rest)] - mean[at]) / sqrt(
            squares[at] * (1.0 / count) + eps) + bias[c]
    return compute(out.shape, body, name=name)


register("InstanceNormalization", "reduction", {"epsilon": 1e-5}, min_inputs=3)(
    (_instance_norm_infer, _instance_norm_lower))


def _arg_reducer(largest: bool, last: bool):
    """The (index, value) reduction of ArgMax/ArgMin: the extreme value, and on a tie the
    first index (``last``: the last one); commutative and associative, so any order of
    the reduction gives the same index."""
    def fcombine(x, y):
        better = x[1] > y[1] if largest else x[1] < y[1]
        tie = all_of(x[1] == y[1], x[0] > y[0] if last else x[0] < y[0])
        keep = any_of(better, tie)  # (the value's update reads no index: see comm_reducer)
        return if_then_else(keep, x[0], y[0]), if_then_else(better, x[1], y[1])

    def fidentity(index_dtype, value_dtype):
        worst = -np.inf if largest else np.inf
        if not value_dtype.startswith("float"):
            info = np.iinfo(value_dtype)
            worst = int(info.min if largest else info.max)
        return (const(-1 if last else np.iinfo(np.int64).max, index_dtype),
                const(worst, value_dtype))
    return comm_reducer(fcombine, fidentity, name="argmax" if largest else "argmin")


def _arg_infer(node, infos, constants):
    shape = infos[0].shape
    axis = axis_in_range(node, attr(node, "axis"), len(shape))
    if shape[axis] == 0:
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): axis {axis} of "
                                   f"{shape} is empty")
    keep = attr(node, "keepdims")
    return [(tuple(1 if k == axis else d for k, d in enumerate(shape) if keep or k != axis),
             "int64")]


def _arg_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    axis = axis_in_range(node, attr(node, "axis"), len(shape))
    reducer = _arg_reducer(node.op_type == "ArgMax", bool(attr(node, "select_last_index")))

    def body(*i):
        read, (r,) = _reading(X, shape, [axis], bool(attr(node, "keepdims")), i, "r")
        return reducer((r, read), axis=r)
    index, _ = compute(out.shape, body, name=name)
    return index


for _op in ("ArgMax", "ArgMin"):
    register(_op, "reduction", {"axis": 0, "keepdims": 1, "select_last_index": 0})(
        (_arg_infer, _arg_lower))


def _hardmax_lower(node, args, values, out, name):
    """1 where the first maximum along ``axis`` is, 0 elsewhere (an ArgMax, then a
    comparison of each index with it)."""
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    axis = axis_in_range(node, attr(node, "axis"), len(shape))
    reducer = _arg_reducer(True, False)

    def arg_body(*i):
        read, (r,) = _reading(X, shape, [axis], True, i, "r")
        return reducer((r, read), axis=r)
    row = tuple(1 if k == axis else d for k, d in enumerate(shape))
    index, _ = compute(row, arg_body, name=f"{name}_arg")

    def body(*i):
        at = tuple(0 if k == axis else a for k, a in enumerate(i))
        return if_then_else(i[axis] == index[at], 1.0, 0.0).astype(X.dtype)
    return compute(out.shape, body, name=name)


register("Hardmax", "reduction", {"axis": -1})((_log_softmax_infer, _hardmax_lower))
