"""A fused group of operators becomes one polyopt program, scheduled by the templates.

:func:`lower_group` writes the group's operators as tensor expressions (the group's
inputs are placeholders ``in0, in1, ...``; names depend only on the operators, so two
identical groups share one compiled kernel) and :func:`schedule_group` schedules it:

* a convolution or matrix product (``complex``) with the conv or matmul template, and its
  elementwise epilogue (bias, batch norm, activation, residual add) inlined into one
  vectorized parallel loop nest after it, in the same program;
* an elementwise chain as :func:`~polyopt.schedules.nn_templates.injective_chain_template`
  does it (producers inlined, one vectorized parallel loop nest; checked once);
* softmax and layer norm with the row-reduction template (one parallel pass over rows);
* anything a template refuses with a plain schedule (outer loops fused and parallel,
  the innermost vectorized where it carries no dependence).

Every template step is a checked primitive: the program computes what the unscheduled
one does, by polyopt's exact dependence check.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from ..build import build
from ..errors import PolyoptError, PolyoptWarning
from ..te.tensor import ComputeOp, Tensor, compute, placeholder
from ..schedules.nn_templates import (producers, row_reduction_template,
                                      vectorize_and_parallelize)
from ..schedules.conv_templates import conv2d_channel_template, conv2d_template
from ..transform.schedule import create_schedule
from ..schedules.templates import matmul_template
from ..machine import TargetInfo
from ..schedules.amx_conv import schedule_wide_conv
from ..schedules.tensorized import int8_conv2d_template, int8_matmul_template
from .registry import OPS, storage_dtype
from .blocked import schedule_blocked_depthwise, schedule_blocked_pool
from .layouts import NARROW_POINTWISE, schedule_packed_conv
from .operators_int8 import INT8_KERNELS
from .operators_nn import ROW_WISE, rows_and_columns
from .operators_reduce import REDUCTIONS

# inputs read as values at compile time (shapes, slice bounds, clip limits), not as data
_ATTRIBUTE_INPUTS = {"Reshape": (1,), "Slice": (1, 2, 3, 4), "Clip": (1, 2),
                     "Squeeze": (1,), "Unsqueeze": (1,), "QLinearConv": (1, 6),
                     "Pad": (1, 2, 3), "Expand": (1,), "Tile": (1,), "Gather": (1,),
                     **{op: (1,) for op in REDUCTIONS}}


def data_inputs(node) -> list[str]:
    """The inputs of ``node`` read as tensors (not the constant shape or bound inputs)."""
    skip = _ATTRIBUTE_INPUTS.get(node.op_type, ())
    return [name for k, name in enumerate(node.inputs) if name and k not in skip]


@dataclass
class LoweredGroup:
    """The tensor expressions of a group: its placeholders (one per external input
    tensor, with the shape the kernel sees), its output and the template used."""

    inputs: list[str]                 # graph tensor names, in argument order
    placeholders: list[Tensor]
    output: Tensor
    kernel_shapes: list[tuple]        # of the inputs, then of the output
    template: str = "default"
    warnings: list = field(default_factory=list)


def group_arguments(g, nodes, output: str) -> tuple[list[str], list[tuple]]:
    """The group's input tensors in argument order and the shapes its kernel sees (of
    the inputs, then of ``output``), known without lowering the group."""
    row_wise = len(nodes) == 1 and nodes[0].op_type in ROW_WISE
    produced: set[str] = set()
    arguments: dict[str, tuple] = {}
    for node in nodes:
        for k, name in enumerate(node.inputs):
            if not name or k in _ATTRIBUTE_INPUTS.get(node.op_type, ()) \
                    or name in produced or name in arguments:
                continue
            shape = g.tensors[name].shape or (1,)
            if row_wise:
                rows, cols = rows_and_columns(g.tensors[node.inputs[0]].shape)
                shape = (rows, cols) if k == 0 else (cols,)
            arguments[name] = shape
        produced.add(node.outputs[0])
    out_shape = g.tensors[output].shape
    out_shape = rows_and_columns(out_shape) if row_wise else (out_shape or (1,))
    return list(arguments), [*arguments.values(), tuple(out_shape)]


def lower_group(g, nodes, output: str) -> LoweredGroup:
    """The group ``nodes`` (in execution order) of graph ``g`` as tensor expressions
    computing the tensor ``output``."""
    names, shapes = group_arguments(g, nodes, output)
    placeholders = [placeholder(shape, name=f"in{k}", dtype=storage_dtype(
        g.tensors[name].dtype)) for k, (name, shape) in enumerate(zip(names, shapes))]
    # a float16 tensor is stored as float16 and computed in float32 (as onnxruntime's CPU
    # kernels do): read widened (exact), each operator's result rounded to float16
    env: dict[str, Tensor] = {name: _widened(p) if p.dtype == "float16" else p
                              for name, p in zip(names, placeholders)}
    row_wise = len(nodes) == 1 and nodes[0].op_type in ROW_WISE
    for position, node in enumerate(nodes):
        args = [env[name] if name and k not in _ATTRIBUTE_INPUTS.get(node.op_type, ())
                else None for k, name in enumerate(node.inputs)]
        values = [g.constants.get(name) if name else None for name in node.inputs]
        info = g.tensors[node.outputs[0]]
        if row_wise:
            info = type(info)(info.name, rows_and_columns(info.shape), info.dtype)
        elif not info.shape:
            info = type(info)(info.name, (1,), info.dtype)
        name = f"{node.op_type.lower()}{position}" if node.outputs[0] != output else "out"
        if info.dtype == "float16":
            value = OPS[node.op_type].lower(node, args, values, type(info)(
                info.name, info.shape, "float32"), f"{name}_f32")
            last = node.outputs[0] == output  # stored; else read on, widened again
            env[node.outputs[0]] = compute(value.shape, lambda *i, v=value, last=last: v[
                i].astype("float16") if last else v[i].astype("float16").astype("float32"),
                name=name)
            continue
        env[node.outputs[0]] = OPS[node.op_type].lower(node, args, values, info, name)
    result = env[output]
    if result.name != "out" or not isinstance(result.op, ComputeOp):
        result = _copy(result, "out")
    kernel_shapes = shapes[:-1] + [tuple(d.value for d in result.shape)]
    return LoweredGroup(names, placeholders, result, kernel_shapes)


def _widened(stored: Tensor) -> Tensor:
    """A float16 placeholder read as float32 (exact)."""
    return compute(stored.shape, lambda *i: stored[i].astype("float32"),
                   name=f"{stored.name}_f32")


def _copy(source: Tensor, name: str) -> Tensor:
    return compute(source.shape, lambda *i: source[i], name=name)


def schedule_group(lowered: LoweredGroup, kind: str, nodes: list,
                   target_info: TargetInfo | None = None, knobs: dict | None = None):
    """A schedule of the group's program (see the module's docstring) for the machine
    ``target_info`` (vector lanes, registers, caches; the host by default); sets
    ``lowered.template`` to the name of the template used.  ``knobs``: keyword arguments
    of the group's template (a tuned point, :mod:`polyopt.graph.tuning`); a template
    refusing them raises instead of falling back to the plain schedule."""
    out = lowered.output
    info = target_info or TargetInfo.host()
    try:
        s = create_schedule(out)
        lowered.template = _apply_template(s, out, kind, nodes, info, knobs or {})
        return s
    except PolyoptError:
        if knobs:
            raise
        s = create_schedule(out)
        _plain_schedule(s, out, info)
        lowered.template = "plain"
        return s


def _apply_template(s, out: Tensor, kind: str, nodes: list, info: TargetInfo,
                    knobs: dict) -> str:
    op_types = [n.op_type for n in nodes]
    lanes = info.lanes(out.dtype)
    narrow = max(lanes, NARROW_POINTWISE)  # see layouts.NARROW_POINTWISE
    if op_types[0] == "DepthwiseBlocked":
        return schedule_blocked_depthwise(s, out, lanes)
    if kind == "complex":
        anchor = next((t for t in [*producers(out), out] if t.op.reduce_axis), None)
        if anchor is None:  # a grouped conv written as an explicit sum: elementwise
            _unrolled_conv_schedule(s, out, lanes=lanes)
            return "grouped_conv_unrolled"
        if op_types[0] in INT8_KERNELS:
            return _int8_schedule(s, out, anchor, op_types[0], info)
        if op_types[0] == "ConvPacked":  # weights blocked at compile time
            schedule_packed_conv(s, out, anchor, target_info=info, **knobs)
            return "conv2d_blocked"
        if op_types[0] == "Conv" and nodes[0].attrs.get("group", 1) > 1:
            _depthwise_schedule(s, anchor, lanes=lanes)
            template = "grouped_conv"
        elif op_types[0] == "Conv" and anchor is not out and not _narrow_pointwise(anchor, narrow):
            _inline_into(s, out, anchor)
            loops = conv2d_template(s, anchor, epilogue=out, target_info=info, **knobs)
            return "conv2d+epilogue_in_tiles" if loops["epilogue"] == "fused" \
                else "conv2d+epilogue"
        elif op_types[0] == "Conv" and _narrow_pointwise(anchor, narrow):
            # measured: 1.2-2.5x faster than conv2d_template's choice (the pointwise
            # template) for 1x1 layers on 7x7 and 14x14 (MobileNetV2's)
            conv2d_channel_template(s, anchor, target_info=info, **knobs)
            template = "conv2d_channel"
        elif op_types[0] == "Conv":
            conv2d_template(s, anchor, target_info=info, **knobs)
            template = "conv2d"
        elif op_types[0] == "MatMulPacked":  # B's panels packed at compile time
            matmul_template(s, anchor, pack=False, cols=anchor.op.inputs[1].shape[2].value,
                            target_info=info, **knobs)
            template = "matmul_packed"
        else:
            rows = _constant_extent(anchor.shape[-2])
            if rows is not None and rows < 6:  # a matrix-vector product: no packing
                matmul_template(s, anchor, rows=rows, pack=False, target_info=info,
                                cols=_streaming_columns(anchor, rows, lanes=lanes,
                                                        l1_bytes=info.l1_bytes // 2))
            else:
                matmul_template(s, anchor, target_info=info, **knobs)
            template = "matmul"
        if anchor is not out:
            inline_epilogue(s, out, anchor, target_info=info)
            template += "+epilogue"
        return template
    if kind == "injective":  # injective_chain_template, checked once at the end
        for tensor in reversed(producers(out)):
            s[tensor].compute_inline(check=False)
        vectorize_and_parallelize(s, out, check=False, target_info=info)
        s.check()
        return "injective_chain"
    if op_types[0] in ("MaxPoolBlocked", "GlobalAveragePoolBlocked"):
        return schedule_blocked_pool(s, out, lanes)
    if op_types == ["MaxPool"] and not out.op.reduce_axis:  # written out tap by tap
        _unrolled_conv_schedule(s, out, lanes=lanes)
        return "pool_unrolled"
    if op_types == ["Softmax"] or op_types == ["LayerNormalization"]:
        row_reduction_template(s, out, target_info=info)
        return "row_reduction"
    _plain_schedule(s, out, info)
    return "plain"


def _int8_schedule(s, out: Tensor, anchor: Tensor, op_type: str, info: TargetInfo) -> str:
    """An ``Int8Conv`` or ``Int8MatMul`` group: its epilogue (dequantization, residual
    add, activation, quantization) inlined into ``out``, which the template computes
    from the int32 tile (:mod:`polyopt.schedules.tensorized`): VNNI register tiles, or
    for a matmul AMX tiles where the machine ``info`` has them and the shapes suit
    (``TargetInfo.tensor_unit``; compile for ``-mattr=-amx-int8`` to keep VNNI)."""
    upstream = {id(t) for t in producers(anchor)} | {id(anchor)}
    for tensor in reversed(producers(out)):
        if id(tensor) not in upstream:
            s[tensor].compute_inline(check=False)
    if op_type == "Int8Conv" and anchor.ndim == 2:  # the wide layout (amx_conv_layout)
        schedule_wide_conv(s, anchor, out, parallel=True, info=info)
        return "int8_conv_amx"
    if op_type == "Int8Conv":
        int8_conv2d_template(s, anchor, epilogue=out, target_info=info)
        return "int8_conv_vnni"
    loops = int8_matmul_template(s, anchor, cols=anchor.op.inputs[1].shape[2].value,
                                 epilogue=out, target_info=info)
    return "int8_matmul_amx" if loops["unit"] == "amx" else "int8_matmul_vnni"


def _narrow_pointwise(conv: Tensor, columns: int) -> bool:
    """A 1x1 convolution whose output rows are narrower than ``columns``."""
    width = _constant_extent(conv.shape[-1])
    return (width is not None and width < columns and len(conv.op.reduce_axis) == 3
            and all(_constant_extent(r.hi) == 1 for r in conv.op.reduce_axis[1:]))


def _streaming_columns(product: Tensor, rows: int, *, lanes: int, l1_bytes: int) -> int | None:
    """The column block of a matrix-vector product: all its columns (rounded up to a
    vector of ``lanes``) when their sums fit in ``l1_bytes`` (half the L1), so that it
    reads the weight matrix row after row, one contiguous stream (blocks of 64 columns
    read 256 bytes every 4 KB: a 1280 x 1000 classifier with cold weights took 0.5 ms,
    0.34 ms in one block); None (the template's block) for wider ones."""
    width = _constant_extent(product.shape[-1])
    if width is None:
        return None
    cols = -(-width // lanes) * lanes
    return cols if cols * rows * 4 <= l1_bytes else None


def _constant_extent(extent) -> int | None:
    return extent.value if hasattr(extent, "value") else None


def _depthwise_schedule(s, conv: Tensor, *, lanes: int) -> None:
    """A grouped (depthwise) convolution: the zero padding on its own (vectorized,
    parallel); then per channel (``n`` and ``f`` fused, in parallel) and output row,
    blocks of ``lanes`` columns vectorized inside the small reduction ``rc, ry, rx``."""
    for tensor in producers(conv):
        vectorize_and_parallelize(s, tensor, vector=lanes, check=False)
    stage = s[conv]
    n, f, y, x = conv.op.axis
    rc, ry, rx = conv.op.reduce_axis
    channels = stage.fuse(n, f, check=False)
    xo, xi = stage.split(x, factor=lanes, check=False)
    stage.reorder(channels, y, xo, rc, ry, rx, xi, check=False)
    stage.vectorize(xi, check=False)
    stage.parallel(channels, check=False)
    s.check()


def _unrolled_conv_schedule(s, out: Tensor, *, lanes: int) -> None:
    """A grouped convolution whose sum is written out (no reduction): the convolution
    and its epilogue inlined into ``out``, computed per channel (``n`` and ``f`` fused,
    in parallel) and row, blocks of ``lanes`` columns vectorized: each output is summed
    in registers and stored once.  The zero padding is computed per channel, right
    before the channel's rows (``compute_at``): the padded channel stays in cache (a
    whole padded tensor went through memory, twice the traffic of the convolution)."""
    padding = [t for t in producers(out) if not producers(t)]  # reads inputs only
    padded = {id(t) for t in padding}
    for tensor in reversed(producers(out)):
        if id(tensor) not in padded:
            s[tensor].compute_inline(check=False)
    stage = s[out]
    n, f, y, x = out.op.axis
    channels = stage.fuse(n, f, check=False)
    _, inner = stage.split(x, factor=lanes, check=False)
    stage.vectorize(inner, check=False)
    stage.parallel(channels, check=False)
    for tensor in padding:
        s[tensor].compute_at(stage, channels, check=False)
        _padding_rows(s, tensor)
    s.check()


def _padding_rows(s, padded: Tensor) -> None:
    """The rows of a padded channel, each row one vectorized loop (split in blocks of a
    vector, LLVM made the guarded copy gathers and scatters: 3x the time of the
    convolution).  A stride-2 layer's padding is split in even and odd columns
    (``[n, c, h, 2, w]``): both halves in one vectorized loop over ``w`` (``p`` unrolled
    inside it), so that LLVM reads the input row with contiguous loads and shuffles them
    apart (one half at a time, it gathered every other element)."""
    stage = s[padded]
    axes = padded.op.axis
    if len(axes) == 5:
        stage.reorder(axes[2], axes[4], axes[3], check=False)
        stage.unroll(axes[3], check=False)
    stage.vectorize(axes[-1], check=False)


def _inline_into(s, out: Tensor, anchor: Tensor) -> None:
    """Inline the elementwise stages between ``anchor`` and ``out`` into ``out``."""
    upstream = {id(t) for t in producers(anchor)} | {id(anchor)}
    for tensor in reversed(producers(out)):
        if id(tensor) not in upstream:
            s[tensor].compute_inline(check=False)


def inline_epilogue(s, out: Tensor, anchor: Tensor,
                    target_info: TargetInfo | None = None) -> None:
    """Inline the elementwise stages between ``anchor`` and ``out`` into ``out``, then
    vectorize ``out`` (the lanes of ``target_info``, the host by default) and run it in
    parallel."""
    _inline_into(s, out, anchor)
    vectorize_and_parallelize(s, out, check=False, target_info=target_info)
    s.check()  # each checked step would re-check every marked loop: check once


def _plain_schedule(s, out: Tensor, info: TargetInfo) -> None:
    """Elementwise producers inlined into their readers; every other stage with its
    outer loops fused and parallel, and (without reduction) its innermost loop
    vectorized.  A step that the checks refuse is left out."""
    inlined = set()
    for tensor in reversed(producers(out)):
        if not tensor.op.reduce_axis:
            try:
                s[tensor].compute_inline()
                inlined.add(id(tensor))
            except PolyoptError:
                pass
    for tensor in [*producers(out), out]:
        if id(tensor) in inlined:
            continue
        try:
            if tensor.op.reduce_axis:
                stage = s[tensor]
                data = list(stage.axes[:len(tensor.op.axis)])
                first = stage.fuse(data[0], data[1]) if len(data) > 1 else data[0]
                stage.parallel(first)
            else:
                vectorize_and_parallelize(s, tensor, target_info=info)
        except PolyoptError:
            pass


def build_group(lowered: LoweredGroup, schedule, *, num_threads: int = 0, cache=None,
                request: str | None = None, meta: dict | None = None):
    """The compiled kernel ``f(*inputs, out)`` of a scheduled group, through the disk
    ``cache`` (a :class:`~.kernel_cache.KernelCache`, remembered under ``request``) when
    one is given, with ``meta`` stored beside it.  Warnings of the build (a loop LLVM left scalar) are kept in
    ``lowered.warnings``, not printed."""
    args = [*lowered.placeholders, lowered.output]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PolyoptWarning)
        if cache is None:
            kernel = build(schedule, args, target="llvm", num_threads=num_threads)
        else:
            kernel, _ = cache.build(schedule, args, num_threads=num_threads, request=request,
                                    meta={"template": lowered.template, **(meta or {})})
    lowered.warnings = [str(w.message) for w in caught]
    return kernel


def as_stored(array: np.ndarray) -> np.ndarray:
    """``array`` as a kernel reads it: a bool array as uint8 (the same bytes)."""
    return array.view(np.uint8) if array.dtype == np.bool_ else array


def evaluate_nodes(g, nodes, output: str, arrays: dict) -> np.ndarray:
    """Run ``nodes`` of ``g`` once (default schedule) on ``arrays`` (tensor name ->
    value); used by constant folding."""
    lowered = lower_group(g, nodes, output)
    kernel = build(create_schedule(lowered.output), [*lowered.placeholders, lowered.output])
    args = [as_stored(np.ascontiguousarray(arrays[name]).reshape(shape))
            for name, shape in zip(lowered.inputs, lowered.kernel_shapes)]
    info = g.tensors[output]
    result = np.empty(lowered.kernel_shapes[-1], info.dtype)
    kernel(*args, as_stored(result))
    return result.reshape(info.shape)
