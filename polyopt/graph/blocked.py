"""Activations in a blocked layout between blocked convolutions (NCHWc).

A ``ConvPacked`` convolution (:mod:`.layouts`) computes its sums blocked, ``[n, F / b,
y, x, b]``, and used to copy them back to NCHW (a transpose per row) for the next
operator, which read them channel by channel.  :func:`block_activations` keeps such
tensors blocked, ``[N, C / b, H, W, b]``, wherever every operator that writes or reads
them can work on that layout: blocked convolutions (which then read their input
``b`` channels at a time, and write their output without the transpose), ``Relu``,
``Clip`` and same-shape ``Add`` (elementwise: any layout), and max and global average
pooling (``MaxPoolBlocked``, ``GlobalAveragePoolBlocked``: vectorized across the
block's channels).  Everything else (graph outputs, reshapes, other operators) sees
NCHW, so the graph computes what it did; ResNet-18 is blocked from its first
convolution's output to its global average pool.

>>> import numpy as np, polyopt as po
>>> from polyopt.graph.layouts import pack_conv_weights
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 8, 14, 14))
>>> y = b.op("Relu", [b.op("Conv", [x, b.constant("w", np.ones((32, 8, 3, 3), "float32"))],
...                        pads=[1] * 4)])
>>> z = b.op("GlobalAveragePool", [y])
>>> avx512 = po.TargetInfo.for_cpu("znver4")  # 16 lanes, 32 registers: 2-vector blocks
>>> g = block_activations(pack_conv_weights(b.build([z]), target_info=avx512))
>>> [(n.op_type, g.tensors[n.outputs[0]].shape) for n in g.nodes]
[('ConvPacked', (1, 1, 14, 14, 32)), ('Relu', (1, 1, 14, 14, 32)), ('GlobalAveragePoolBlocked', (1, 32, 1, 1))]
"""

from __future__ import annotations

import numpy as np

from ..te.tensor import all_of, compute, if_then_else, maximum, reduce_axis, reduce_sum
from .ir import Graph, OpNode, TensorInfo
from .registry import attr, register
from .operators_nn import _CONV_ATTRS, _POOL_ATTRS, _pool_infer, window

ELEMENTWISE = ("Relu", "Clip", "Add")
READERS = ("ConvPacked", *ELEMENTWISE, "MaxPool", "GlobalAveragePool")
SAME_LAYOUT = (*ELEMENTWISE, "MaxPool", "Depthwise")  # blocked in and out, or neither


def _role(g: Graph, node) -> str:
    """``node``'s operator type, ``"Depthwise"`` for a depthwise convolution with
    constant weights (one channel per group, as many outputs as inputs)."""
    if node.op_type != "Conv" or node.inputs[1] not in g.constants:
        return node.op_type
    weight = g.constants[node.inputs[1]]
    channels = g.tensors[node.inputs[0]].shape[1]
    bias = node.inputs[2] if len(node.inputs) > 2 else ""
    if weight.ndim == 4 and weight.shape[:2] == (channels, 1) and \
            attr(node, "group") == channels and (not bias or bias in g.constants):
        return "Depthwise"
    return node.op_type


def block_activations(g: Graph) -> Graph:
    """``g`` with the float tensors between blocked convolutions kept blocked (see the
    module's docstring); ``g`` itself when there are none."""
    blocked = _blockable(g)
    if not blocked:
        return g
    tensors = dict(g.tensors)
    nodes = []
    for name, block in blocked.items():
        n, c, h, w = g.tensors[name].shape
        tensors[name] = TensorInfo(name, (n, c // block, h, w, block), g.tensors[name].dtype)
    constants = dict(g.constants)
    for node in g.nodes:
        out = node.outputs[0]
        attrs = dict(node.attrs)
        op_type, inputs = node.op_type, node.inputs
        if op_type == "ConvPacked" and out in blocked:
            attrs["blocked_output"] = 1
        elif op_type in ("MaxPool", "GlobalAveragePool") and node.inputs[0] in blocked:
            op_type += "Blocked"
        elif op_type == "Conv" and out in blocked:  # a depthwise convolution
            op_type = "DepthwiseBlocked"
            name = f"{node.inputs[1]}_depthwise{blocked[out]}"
            if name not in constants:
                constants[name] = pack_depthwise(g.constants[node.inputs[1]], blocked[out])
            inputs = (node.inputs[0], name, *node.inputs[2:])
            attrs.pop("group", None)
        nodes.append(OpNode(node.name, op_type, inputs, node.outputs, attrs))
    for name, value in constants.items():
        tensors.setdefault(name, TensorInfo(name, value.shape, value.dtype.name))
    return Graph(nodes, tensors, constants, g.inputs, g.outputs, name=g.name)


def plain_pointwise(g: Graph, original: Graph, lanes: int) -> Graph:
    """``g`` with its blocked 1x1 stride-1 convolutions on rows at least ``lanes`` wide
    that neither read nor write a blocked tensor back to the ``Conv`` of ``original``
    (the pointwise template computes them, their epilogue from its register tiles:
    blocked weights pay only between blocked tensors)."""
    nodes, constants, changed = [], dict(g.constants), False
    for node in g.nodes:
        plain = original.node(node.name) if node.op_type == "ConvPacked" else None
        if plain is not None and plain.op_type == "Conv" and \
                original.constants[plain.inputs[1]].shape[2:] == (1, 1) and \
                list(attr(plain, "strides") or (1, 1)) == [1, 1] and \
                len(g.tensors[node.inputs[0]].shape) == len(g.tensors[node.outputs[0]].shape) \
                == 4 and g.tensors[node.outputs[0]].shape[-1] >= lanes:
            constants[plain.inputs[1]] = original.constants[plain.inputs[1]]
            node, changed = plain, True
        nodes.append(node)
    return g.replace(nodes=nodes, constants=constants) if changed else g


def pack_depthwise(weight: np.ndarray, block: int) -> np.ndarray:
    """``W[C, 1, kh, kw]`` -> ``Wb[C / block, kh, kw, block]``: a tap's weights for a
    block of channels are one vector."""
    c, _, kh, kw = weight.shape
    return np.ascontiguousarray(weight.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1))


def _blockable(g: Graph) -> dict[str, int]:
    """Tensor name -> block of the tensors that can be blocked: written by a blocked
    convolution (or an elementwise operator or max pool of blocked tensors), read only
    by operators that take the blocked layout, not a graph output; removed until every
    elementwise operator and max pool has all its tensors blocked alike."""
    candidates: dict[str, int] = {}
    for node in g.nodes:
        out = node.outputs[0]
        info = g.tensors[out]
        if len(info.shape) != 4 or info.dtype != "float32" or out in g.outputs or \
                any(_role(g, c) not in (*READERS, "Depthwise") for c in g.consumers(out)):
            continue
        if node.op_type == "ConvPacked" and not attr(node, "channels"):
            candidates[out] = g.constants[node.inputs[1]].shape[4]
        elif _role(g, node) in SAME_LAYOUT and node.inputs[0] in candidates:
            candidates[out] = candidates[node.inputs[0]]
    changed = True
    while changed:
        changed = False
        for node in g.nodes:
            role = _role(g, node)
            if role not in SAME_LAYOUT:
                continue
            tensors = [n for n in node.inputs[:1 if role != "Add" else 2]]
            tensors.append(node.outputs[0])
            blocks = {candidates.get(t) for t in tensors}
            shapes = {g.tensors[t].shape for t in tensors[:-1]} if role == "Add" \
                else set()
            if (len(blocks) > 1 or len(shapes) > 1) and any(t in candidates for t in tensors):
                for t in tensors:
                    candidates.pop(t, None)
                changed = True
    return candidates


# -- pooling on blocked tensors ------------------------------------------------------------------

def _blocked_pool_infer(node, infos, constants):
    n, cb, h, w, b = infos[0].shape
    plain = type(infos[0])(infos[0].name, (n, cb * b, h, w), infos[0].dtype)
    [(shape, dtype)] = _pool_infer(node, [plain], constants)
    return [((n, cb, *shape[2:], b), dtype)]


def _max_pool_blocked_lower(node, args, values, out, name):
    """``out[n, c, y, x, i]``: the maximum over the window, each tap one vector of the
    block's ``i`` (the padding as guards on the tap's row and column), the taps combined
    as a balanced tree (:func:`maximum_tree`)."""
    X = args[0]
    kh, kw = attr(node, "kernel_shape")
    H, W = X.shape[2].value, X.shape[3].value
    (top, left, _, _), (sy, sx), (dy, dx), _ = window(node, [H, W], (kh, kw))

    def value(n, c, y, x, i):
        return maximum_tree([term for _, _, term in _taps(
            X, (n, c, y, x, i), (kh, kw), (top, left), (sy, sx), (dy, dx), float("-inf"))])
    return compute(out.shape, value, name=name)


def maximum_tree(terms: list):
    """The maximum of ``terms`` as a balanced tree of ``maximum``: the same value as the
    chain ``maximum(maximum(t0, t1), t2)...`` (``maximum`` is associative and commutative,
    NaN included), in ``log2`` steps of dependent instructions instead of one per term (a
    3x3 max pool waited on a chain of 8, 3 instructions each).

    >>> str(maximum_tree([1.0, 2.0, 3.0]))
    'maximum(maximum(1.0, 2.0), 3.0)'
    """
    while len(terms) > 1:
        terms = [maximum(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k]
                 for k in range(0, len(terms), 2)]
    return terms[0]


def _taps(X, point, kernel, start, stride, dilation, fill):
    """``(a, b, read)`` for each tap of the window at ``point = (n, c, y, x, i)`` of a
    blocked tensor ``X``: its element, or ``fill`` where the tap is in the padding."""
    n, c, y, x, i = point
    H, W = X.shape[2].value, X.shape[3].value
    for a, b in np.ndindex(*kernel):
        row = y * stride[0] + a * dilation[0] - start[0]
        col = x * stride[1] + b * dilation[1] - start[1]
        yield a, b, if_then_else(all_of(row >= 0, row < H, col >= 0, col < W),
                                 X[n, c, row, col, i], fill)


register("MaxPoolBlocked", "reduction", {**_POOL_ATTRS, "storage_order": 0}, internal=True)(
    (_blocked_pool_infer, _max_pool_blocked_lower))


def _global_pool_blocked_infer(node, infos, constants):
    n, cb, _, _, b = infos[0].shape
    return [((n, cb * b, 1, 1), infos[0].dtype)]


def _global_pool_blocked_lower(node, args, values, out, name):
    """The sums ``total[n, c, i]`` over the rows and columns (``i``: the block's
    channels, a vector), then ``out[n, c b + i, 0, 0]`` in NCHW."""
    X = args[0]
    N, CB, H, W, B = (d.value for d in X.shape)
    ry, rx = reduce_axis((0, H), name="ry"), reduce_axis((0, W), name="rx")
    total = compute((N, CB, B), lambda n, c, i: reduce_sum(X[n, c, ry, rx, i], axis=[ry, rx]),
                    name=f"{name}_sum")
    return compute(out.shape, lambda n, c, y, x: total[n, c // B, c % B] * (1.0 / (H * W)),
                   name=name)


register("GlobalAveragePoolBlocked", "reduction", internal=True)(
    (_global_pool_blocked_infer, _global_pool_blocked_lower))


def _depthwise_infer(node, infos, constants):
    n, cb, h, w, b = infos[0].shape
    kh, kw = infos[1].shape[1:3]
    _, _, _, size = window(node, [h, w], (kh, kw))
    return [((n, cb, *size, b), infos[0].dtype)]


def _depthwise_lower(node, args, values, out, name):
    """``out[n, c, y, x, i]``: the window's taps summed in order, each tap one vector of
    the block's channels times its weights ``Wb[c, a, b, i]`` (:func:`pack_depthwise`),
    read from ``X`` zero-padded (``{name}_pad[n, c, h, w, i]``, computed per channel
    block: the guards are there and the sums have none, so each tap is one plain vector
    load) when :func:`reads_padded`; else with the padding as guards on the tap's row
    and column.  Measured (one thread, the two kernels alternated in one process): the
    7 x 7 layers of MobileNetV2 (960 channels) 0.022 ms padded against 0.117 guarded
    (LLVM made the guarded taps masked loads and gathers), 28 x 28 x 192 0.062 against
    0.139, 112 x 112 x 32 0.17 against 0.25, 56 x 56 x 144 0.153-0.160 against
    0.158-0.225."""
    X, Wb, bias = (list(args) + [None])[:3]
    _, kh, kw, B = (d.value for d in Wb.shape)
    N, CB, H, W = (d.value for d in X.shape[:4])
    (top, left, _, _), (sy, sx), (dy, dx), _ = window(node, [H, W], (kh, kw))
    height, width = out.shape[2], out.shape[3]
    rows = (height - 1) * sy + (kh - 1) * dy + 1
    columns = (width - 1) * sx + (kw - 1) * dx + 1

    def padded_read(n, c, h, w, i):
        return if_then_else(all_of(h >= top, h < H + top, w >= left, w < W + left),
                            X[n, c, h - top, w - left, i], 0.0)
    if reads_padded((sy, sx)):
        padded = compute((N, CB, rows, columns, B), padded_read, name=f"{name}_pad")

        def tap(n, c, y, x, i, a, b):
            return padded[n, c, y * sy + a * dy, x * sx + b * dx, i]
    else:
        def tap(n, c, y, x, i, a, b):
            return padded_read(n, c, y * sy + a * dy, x * sx + b * dx, i)

    def value(n, c, y, x, i):
        total = None
        for a, b in np.ndindex(kh, kw):
            term = tap(n, c, y, x, i, a, b) * Wb[c, a, b, i]
            total = term if total is None else total + term
        return total if bias is None else total + bias[c * B + i]
    return compute(out.shape, value, name=name)


def reads_padded(strides) -> bool:
    """Whether a blocked depthwise convolution reads its input zero-padded rather than
    with guards on every tap: with stride 1.  (With stride 2 the padded copy is four
    times the output, and the guarded sums were faster: 0.114 against 0.215 ms for a
    112 x 112 x 96 input, 0.020 against 0.032 for 28 x 28 x 192.)"""
    return tuple(strides) == (1, 1)


register("DepthwiseBlocked", "complex", {k: v for k, v in _CONV_ATTRS.items() if k != "group"},
         min_inputs=2, internal=True)((_depthwise_infer, _depthwise_lower))


def schedule_blocked_depthwise(s, out, lanes: int, *, columns: int = 4,
                               parallel_blocks: int = 4) -> str:
    """A depthwise convolution on blocked tensors, its epilogue inlined: the largest
    divisor of the row up to ``columns`` columns unrolled around the block's channels
    vectorized (independent sums to hide the multiply-add latency), over the
    zero-padded input (``*_pad``) computed per channel block; the blocks in parallel
    when there are ``parallel_blocks`` or more, else the rows of each block.  With
    guarded taps (:func:`reads_padded`): the rows of every block in parallel.  (Up to
    4 columns: MobileNetV2 took 7.13 ms, 7.36 with 8, measured in one process.)"""
    from ..schedules.nn_templates import producers

    padded = next((t for t in producers(out) if t.name.endswith("_pad")), None)
    for tensor in reversed(producers(out)):
        if tensor is not padded:
            s[tensor].compute_inline(check=False)
    stage = s[out]
    n, c, y, x, i = out.op.axis
    blocks = out.shape[1].value
    fused = stage.fuse(n, c, check=False)
    if padded is None:  # rows in parallel
        fused = stage.fuse(fused, y, check=False)
    width = out.shape[3].value
    tile = max(d for d in range(1, columns + 1) if width % d == 0)
    xo, xi = stage.split(x, factor=tile, check=False)
    io, iv = stage.split(i, factor=lanes, check=False)
    stage.reorder(fused, *([y] if padded is not None else []), xo, xi, io, iv, check=False)
    stage.unroll(xi, check=False)
    stage.unroll(io, check=False)
    stage.vectorize(iv, check=False)
    if padded is not None:
        s[padded].compute_at(stage, fused, check=False)
        _vector_block(s[padded], padded.op.axis[-1], lanes)
    stage.parallel(fused if padded is None or blocks >= parallel_blocks else y, check=False)
    s.check()
    return "depthwise_blocked"


def schedule_blocked_pool(s, out, lanes: int) -> str:
    """A pool on blocked tensors: the block's channels vectorized innermost, the rows
    of every channel block in parallel (for the global pool: the channel blocks, with
    the rows and columns summed outside the vectors)."""
    from ..schedules.nn_templates import producers

    sums = [t for t in producers(out) if t.op.reduce_axis]
    if sums:  # GlobalAveragePoolBlocked
        total = sums[0]
        stage = s[total]
        n, c, i = total.op.axis
        ry, rx = total.op.reduce_axis
        fused = stage.fuse(n, c, check=False)
        stage.reorder(fused, ry, rx, i, check=False)
        _vector_block(stage, i, lanes)
        stage.parallel(fused, check=False)
        s.check()
        return "global_pool_blocked"
    stage = s[out]
    n, c, y, x, i = out.op.axis
    fused = stage.fuse(stage.fuse(n, c, check=False), y, check=False)  # rows in parallel
    _vector_block(stage, i, lanes)
    stage.parallel(fused, check=False)
    s.check()
    return "pool_blocked"


def _vector_block(stage, i, lanes: int) -> None:
    """The block's channels ``i``: vectors of ``lanes``, unrolled when there are two or more."""
    outer, inner = stage.split(i, factor=lanes, check=False)
    stage.unroll(outer, check=False)
    stage.vectorize(inner, check=False)
