"""Data-movement operators of ONNX with constant shape inputs: Pad (constant, reflect,
edge and wrap modes, negative pads crop), Expand, Tile, Gather (constant indices).
polyopt computes static shapes and affine reads, so ``pads``, ``shape``,
``repeats`` and Gather's ``indices`` must be constants (initializers or folded).

>>> from polyopt.graph.registry import OPS
>>> OPS["Pad"].attrs, OPS["Tile"].kind
({'mode': 'constant'}, 'injective')
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError
from ..te.tensor import all_of, compute, if_then_else
from .graph_errors import UnsupportedAttributeValueError, UnsupportedCombinationError
from .registry import attr, axis_in_range, broadcast_read, constant_value, register

PAD_MODES = ("constant", "reflect", "edge", "wrap")
GATHER_TERMS = 64  # Gather with more indices than this, not an arithmetic progression: refused


def _constants(node, values) -> dict:
    return {n: v for n, v in zip(node.inputs, values) if v is not None}


def pad_widths(node, constants, shape) -> list[tuple[int, int]]:
    """``(before, after)`` per axis of a Pad node (its ``pads`` and ``axes`` inputs)."""
    pads = constant_value(node, constants, 1, "pads")
    rank = len(shape)
    axes = constant_value(node, constants, 3, "axes")
    axes = list(range(rank)) if axes is None else \
        [axis_in_range(node, int(a), rank, "axes") for a in np.ravel(axes)]
    pads = [int(p) for p in np.ravel(pads)]
    if len(pads) != 2 * len(axes) or len(set(axes)) != len(axes):
        raise InvalidArgumentError(
            f"node '{node.name}' (Pad): pads has {len(pads)} values; it needs two per axis "
            f"({2 * len(axes)} for axes {axes})")
    widths = [(0, 0)] * rank
    for k, axis in enumerate(axes):
        widths[axis] = (pads[k], pads[k + len(axes)])
    return widths


def _pad_infer(node, infos, constants):
    shape = infos[0].shape
    mode = attr(node, "mode")
    if mode not in PAD_MODES:
        raise UnsupportedAttributeValueError(node.name, node.op_type, "mode", mode, PAD_MODES)
    widths = pad_widths(node, constants, shape)
    out = tuple(d + b + e for d, (b, e) in zip(shape, widths))
    if min(out, default=1) < 0:
        raise InvalidArgumentError(f"node '{node.name}' (Pad): pads {widths} crop more than "
                                   f"the input {shape} holds")
    for d, (b, e) in zip(shape, widths):
        if mode != "constant" and (b > 0 or e > 0) and d == 0:
            raise InvalidArgumentError(f"node '{node.name}' (Pad): mode {mode} pads an empty axis")
        if mode in ("reflect", "wrap") and max(b, e) > d - (mode == "reflect"):
            raise UnsupportedCombinationError(node.name, node.op_type, "wide_pads", mode=mode,
                                              pads=widths, shape=shape,
                                              most=d - (mode == "reflect"))
    value = constant_value(node, constants, 2, "constant_value")
    if value is not None and value.size != 1:
        raise InvalidArgumentError(f"node '{node.name}' (Pad): constant_value must be one "
                                   f"value, got shape {value.shape}")
    return [(out, infos[0].dtype)]


def _pad_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    widths = pad_widths(node, _constants(node, values), shape)
    mode = attr(node, "mode")
    if mode != "constant":  # one stage per padded axis, each read affine under its guard
        padded = [k for k, (b, e) in enumerate(widths) if b > 0 or e > 0]
        cropped = [(b, e) if k not in padded else (0, 0) for k, (b, e) in enumerate(widths)]
        if any(b or e for b, e in cropped):
            X = _constant_pad(X, shape, cropped, 0, f"{name}_crop", None)
            shape = tuple(d + b + e for d, (b, e) in zip(shape, cropped))
        for n, axis in enumerate(padded):
            last = n == len(padded) - 1
            X = _mode_pad(X, shape, axis, widths[axis], mode, name if last else f"{name}_{axis}")
            shape = tuple(d + sum(widths[axis]) if k == axis else d for k, d in enumerate(shape))
        return X if padded else compute(out.shape, lambda *i: X[i], name=name)
    fill = values[2] if len(values) > 2 and values[2] is not None else np.zeros(1)
    fill = fill.reshape(-1)[0]
    fill = int(fill) if dtypes.is_int(X.dtype) else float(fill)
    return _constant_pad(X, shape, widths, fill, name, out.shape)


def _constant_pad(X, shape, widths, fill, name, out_shape):
    out_shape = out_shape or tuple(d + b + e for d, (b, e) in zip(shape, widths))

    def body(*i):
        index = tuple(a - b for a, (b, _) in zip(i, widths))
        guards = [c for a, d, (b, e) in zip(index, shape, widths) if b > 0 or e > 0
                  for c in (a >= 0, a < d)]
        return if_then_else(all_of(*guards), X[index], fill) if guards else X[index]
    return compute(out_shape, body, name=name)


def _mode_pad(X, shape, axis, width, mode, name):
    """``X`` padded on ``axis`` by ``width`` in ``mode`` (edge, reflect, wrap)."""
    before, after = width
    size = shape[axis]
    out_shape = tuple(d + before + after if k == axis else d for k, d in enumerate(shape))

    def body(*i):
        at = i[axis] - before

        def read(position):
            return X[tuple(position if k == axis else a for k, a in enumerate(i))]
        if mode == "edge":
            low, high = read(0), read(size - 1)
        elif mode == "reflect":
            low, high = read(-at), read(2 * (size - 1) - at)
        else:  # wrap
            low, high = read(at + size), read(at - size)
        return if_then_else(at < 0, low, if_then_else(at >= size, high, read(at)))
    return compute(out_shape, body, name=name)


register("Pad", "injective", {"mode": "constant"}, max_inputs=4)((_pad_infer, _pad_lower))


def _expand_infer(node, infos, constants):
    shape = [int(d) for d in np.ravel(constant_value(node, constants, 1, "shape"))]
    try:
        out = np.broadcast_shapes(infos[0].shape, tuple(shape))
    except ValueError as err:
        raise InvalidArgumentError(f"node '{node.name}' (Expand): the input {infos[0].shape} "
                                   f"does not broadcast to {tuple(shape)}") from err
    return [(tuple(out), infos[0].dtype)]


def _expand_lower(node, args, values, out, name):
    X = args[0]
    if X.ndim == 0:
        return compute(out.shape, lambda *i: X[()], name=name)
    return compute(out.shape, lambda *i: broadcast_read(X, i, out.shape), name=name)


register("Expand", "injective", min_inputs=2)((_expand_infer, _expand_lower))


def _repeats(node, constants, rank: int) -> list[int]:
    repeats = [int(r) for r in np.ravel(constant_value(node, constants, 1, "repeats"))]
    if len(repeats) != rank or min(repeats, default=0) < 0:
        raise InvalidArgumentError(f"node '{node.name}' (Tile): repeats {repeats} must be "
                                   f"{rank} integers >= 0 (one per axis)")
    return repeats


def _tile_infer(node, infos, constants):
    shape = infos[0].shape
    repeats = _repeats(node, constants, len(shape))
    return [(tuple(d * r for d, r in zip(shape, repeats)), infos[0].dtype)]


def _tile_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    return compute(out.shape, lambda *i: X[tuple(a % d if d > 1 else 0
                                                for a, d in zip(i, shape))], name=name)


register("Tile", "injective", min_inputs=2)((_tile_infer, _tile_lower))


def _gather_indices(node, constants, shape) -> tuple[int, np.ndarray]:
    axis = axis_in_range(node, attr(node, "axis"), len(shape))
    indices = constant_value(node, constants, 1, "indices")
    if indices.dtype.kind not in "iu":
        raise InvalidArgumentError(f"node '{node.name}' (Gather): indices must be integers, "
                                   f"got {indices.dtype}")
    size = shape[axis]
    if indices.size and (indices.min() < -size or indices.max() >= size):
        raise InvalidArgumentError(f"node '{node.name}' (Gather): indices outside "
                                   f"[{-size}, {size - 1}] for axis {axis} of {shape}")
    return axis, np.where(indices < 0, indices + size, indices).astype(np.int64)


def _gather_infer(node, infos, constants):
    shape = infos[0].shape
    axis, indices = _gather_indices(node, constants, shape)
    flat = indices.reshape(-1)
    step = flat[1] - flat[0] if flat.size > 1 else 0
    if flat.size > GATHER_TERMS and np.any(flat != flat[0] + step * np.arange(flat.size)):
        raise UnsupportedCombinationError(node.name, node.op_type, "gather_indices",
                                          count=int(flat.size), most=GATHER_TERMS)
    return [(shape[:axis] + indices.shape + shape[axis + 1:], infos[0].dtype)]


def _gather_lower(node, args, values, out, name):
    X = args[0]
    shape = tuple(d.value for d in X.shape)
    axis, indices = _gather_indices(node, _constants(node, values), shape)
    flat = indices.reshape(-1)
    step = int(flat[1] - flat[0]) if flat.size > 1 else 0
    progression = not np.any(flat != flat[0] + step * np.arange(flat.size))
    depth = indices.ndim

    def body(*i):
        if len(i) != X.ndim - 1 + depth:  # a 0-d output, computed as (1,)
            i = ()
        position = 0
        for a, d in zip(i[axis:axis + depth], indices.shape):
            position = position * d + a
        if depth == 0:
            position = 0

        def read(source):
            return X[i[:axis] + (source,) + i[axis + depth:]]
        if progression:
            return read(int(flat[0]) + step * position if flat.size > 1 else int(flat[0]))
        value = read(int(flat[-1]))
        for k in range(flat.size - 2, -1, -1):
            value = if_then_else(position == k, read(int(flat[k])), value)
        return value
    return compute(out.shape if out.shape else (1,), body, name=name)


register("Gather", "injective", {"axis": 0}, min_inputs=2)((_gather_infer, _gather_lower))
