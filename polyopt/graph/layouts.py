"""Convolution and matrix-product weights in a blocked layout, packed once at compile time.

The convolutions that :func:`~polyopt.schedules.conv_templates.conv2d_channel_template`
schedules (narrow rows: 7 or 14 columns; strided 3x3 layers) vectorize across blocks of
output channels and read the weights of a block as ``[c, r, s, f]``: the template
copies them so on every call (a 512-channel 3x3 layer: 9.4 MB per call, about a
quarter of its time).  :func:`pack_conv_weights` stores the constant weights of those
convolutions blocked ``[F / b, C, R, S, b]`` once, as a ``ConvPacked`` operator: its
lowering computes the convolution blocked too, ``conv[n, F / b, y, x, b]`` (every
index affine: the generated code reads each weight vector with one load), and the
group's output reads it back in NCHW order; :func:`schedule_packed_conv` schedules it
as the template does (per block of channels, in parallel: a register tile of columns
by the block's channels, input channels in steps of 32).  A kxk (k > 1) or strided
one computes its sums over the flat output points instead, ``conv[n, F / b, p, b]``
(:mod:`.flat_conv`: register tiles of points sized from the machine's registers,
which need not divide the row).

Likewise the matmul template copies each ``K x 64`` column panel of a product's right
operand ``B[K, N]`` into a contiguous buffer on every call (a BERT feed-forward layer:
9.4 MB per call, 0.7 of its 6.4 ms); :func:`pack_matmul_weights` stores constant right
operands as those panels, ``Bp[N / 64, K, 64]``, once, as a ``MatMulPacked`` operator
that the template reads without copying.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 8, 7, 7))
>>> y = b.op("Conv", [x, b.constant("w", np.ones((64, 8, 3, 3), "float32"))], pads=[1] * 4)
>>> g = pack_conv_weights(b.build([y]), target_info=po.TargetInfo.for_cpu("znver4"))
>>> [(n.op_type, g.constants[n.inputs[1]].shape) for n in g.nodes]
[('ConvPacked', (2, 8, 3, 3, 32))]
"""

from __future__ import annotations

import numpy as np

from ..te.tensor import all_of, compute, if_then_else, reduce_axis, reduce_sum
from ..errors import InvalidArgumentError
from ..machine import TargetInfo
from .aligned import aligned_copy
from .ir import Graph, OpNode
from .registry import attr, register
from .operators_nn import _CONV_ATTRS, window
from .flat_conv import (INPUT_BLOCK, flat_points, is_blocked_padding, max_columns,
                        pad_nchw_rows, pad_to_blocks, schedule_blocked_padding,
                        schedule_flat_conv, rows_into_nchw)


def vectorizes_across_channels(node, x_shape, w_shape, out_shape, lanes: int) -> bool:
    """Whether the graph's conv schedule takes the channel template for this plain
    convolution: a 1x1 kernel on rows narrower than a vector, or a larger kernel on
    narrow rows or with a stride."""
    _, _, r, s = w_shape
    pads, strides, dilations, _ = window(node, list(x_shape[2:]), (r, s))
    plain = (attr(node, "group") == 1 and list(dilations) == [1, 1] and len(set(pads)) == 1
             and strides[0] == strides[1] and r == s and len(x_shape) == 4)
    if not plain:
        return False
    width = out_shape[-1]
    if r == 1:
        return True
    return width < lanes or strides[0] > 1 or (width <= WIDE_ROWS and row_tile(width) >= 4)


# Rows up to this wide also take the blocked template in a kxk layer with stride 1.
# Measured (one thread, CPU time interleaved with onnxruntime): ResNet-18's 3x3
# layers on 56 columns 2.28 ms blocked against 2.40 with the conv template, on 28
# columns 2.24 against 2.30 (onnxruntime 2.36 and 2.31).
WIDE_ROWS = 56
# 1x1 layers on rows narrower than this many columns (or than a vector) stay blocked, or
# take the channel template, on every machine; wider ones take the pointwise template.
# Measured on a Zen 3 (AVX2, one thread, CPU time): 64 -> 384 and 384 -> 64 on 14 x 14
# 0.31 and 0.28 ms blocked against 0.43 and 0.46 with the pointwise template.
NARROW_POINTWISE = 16


def row_tile(width: int, columns: int = 7) -> int:
    """The columns of the blocked template's register tile: the largest divisor of the
    row's ``width`` up to ``columns``."""
    return max(d for d in range(1, columns + 1) if width % d == 0)


def register_columns(width: int, columns: int) -> int:
    """The columns of a register tile on rows ``width`` wide, at most ``columns``: the
    largest divisor of the row (:func:`row_tile`), or ``columns`` with a partial last
    tile where that takes fewer tiles (28 columns, 6 at most: 5 tiles of 6, the last of
    4, not 7 of 4).  Measured on a Zen 3 (AVX2, one thread, CPU time interleaved in one
    process): ResNet-18's 1x1 stride-2 64 -> 128 layer on 28 x 28, 1.08x faster with
    6-column tiles (12 accumulators) than with 4 (8: too few to hide the FMA latency)."""
    divisor = row_tile(width, columns)
    return columns if -(-width // columns) < width // divisor else divisor


def tile_columns(columns: int, block: int, lanes: int) -> int:
    """The most columns of a register tile: ``columns`` for a block of two vectors,
    twice as many for a block of one (the same number of accumulators; measured on
    MobileNetV2, one thread, CPU time: 8.65 ms against 8.79 with 7 columns)."""
    return columns * max(1, 2 * lanes // block)


def block_vectors(info: TargetInfo, width: int) -> int:
    """Vectors of output channels per block on the machine ``info`` for rows ``width``
    wide: two with 32 vector registers; with 16 (AVX2), two where a tile of at least 4
    columns fits in the registers (:func:`max_columns`: 6), else one (14 or 7 columns).
    Measured on a Zen 3 (AVX2, CPU time, one thread): 3x3 layers on 56 and 28 columns
    3.1-3.2 ms with 4 columns x 2 vectors against 3.7-3.9 with 14 x 1 (a broadcast per
    FMA); on 14 and 7 columns 4.2 and 3.9 ms with 1 vector against 5.4 and 5.6 with 7 x 2
    (their sums spilled to the stack)."""
    if info.vector_registers >= 32:
        return 2
    return 2 if row_tile(width, max_columns(info.vector_registers, 2)) >= 4 else 1


def channel_block(channels: int, lanes: int, vectors: int = 2) -> int | None:
    """Output channels per block: ``vectors`` vectors, or one; None when neither divides."""
    return next((b for b in (vectors * lanes, lanes) if channels % b == 0), None)


def padded_channels(channels: int, lanes: int, vectors: int = 2) -> int:
    """The output channels a blocked convolution computes: ``channels``, or (when no
    block divides them, and at most a quarter would be zero) the next multiple of
    ``lanes``: 24 -> 32 (MobileNetV2's 24-channel layers)."""
    if channel_block(channels, lanes, vectors) is not None or channels <= lanes or channels % 8:
        return channels
    padded = -(-channels // lanes) * lanes
    return padded if 4 * (padded - channels) <= padded else channels


def pack_conv_weights(g: Graph, *, lanes: int | None = None,
                      target_info: TargetInfo | None = None) -> Graph:
    """Convolutions with constant weights that vectorize across output channels (and
    whose channels a block divides, maybe after zero channels are added:
    :func:`padded_channels`) become ``ConvPacked`` reading their weights blocked
    ``[F / b, C, R, S, b]``; the block (:func:`block_vectors`) and ``lanes`` (float32)
    are those of ``target_info``, the host by default."""
    info = target_info or TargetInfo.host()
    lanes = lanes or info.lanes("float32")
    constants = dict(g.constants)
    nodes = []
    changed = False
    for node in g.nodes:
        weight = g.constants.get(node.inputs[1]) if node.op_type == "Conv" else None
        if weight is None or weight.ndim != 4:
            nodes.append(node)
            continue
        points = flat_points(node, weight.shape, info)
        vectors = 2 if points else block_vectors(info, g.tensors[node.outputs[0]].shape[-1])
        channels = padded_channels(weight.shape[0], lanes, vectors)
        block = channel_block(channels, lanes, vectors)
        if block is None or not vectorizes_across_channels(
                node, g.tensors[node.inputs[0]].shape, weight.shape,
                g.tensors[node.outputs[0]].shape, lanes):
            nodes.append(node)
            continue
        name = f"{node.inputs[1]}_blocked{block}"
        attrs = dict(node.attrs)
        if channels != weight.shape[0]:
            name += f"_of{channels}"
            attrs["channels"] = int(weight.shape[0])
        if points:
            height, width = g.tensors[node.outputs[0]].shape[2:]
            attrs["points"] = flat_points(node, weight.shape, info, block // lanes,
                                          height * width)
        if name not in constants:
            zeros = np.zeros((channels - weight.shape[0], *weight.shape[1:]), weight.dtype)
            constants[name] = pack_blocked(np.concatenate([weight, zeros]), block)
        nodes.append(OpNode(node.name, "ConvPacked", (node.inputs[0], name,
                                                     *node.inputs[2:]), node.outputs, attrs))
        changed = True
    return g.replace(nodes=nodes, constants=constants) if changed else g


def pack_blocked(weight: np.ndarray, block: int) -> np.ndarray:
    """``W[F, C, R, S]`` -> ``Wb[F / block, C, R, S, block]``, on a cache-line boundary
    (NumPy's 16-byte alignment split every other 32-byte load of a block's weights, and
    every 64-byte one, across two cache lines)."""
    f = weight.shape[0]
    blocks = weight.reshape(f // block, block, *weight.shape[1:])
    return aligned_copy(blocks.transpose(0, 2, 3, 4, 1))


def _infer(node, infos, constants):
    x, packed = infos[0], infos[1]
    blocks, _, r, s, block = packed.shape
    _, _, _, size = window(node, list(x.shape[2:4]), (r, s))
    if attr(node, "blocked_output"):
        return [((x.shape[0], blocks, *size, block), x.dtype)]
    return [((x.shape[0], attr(node, "channels") or blocks * block, *size), x.dtype)]


def _lower(node, args, values, out, name):
    """The sums blocked, ``conv[n, F / b, y, x, b]``; read back in NCHW order unless the
    output stays blocked (``blocked_output``, :mod:`.blocked`).  A blocked input
    ``X[n, C / c, h, w, c]`` is read with the input channels as two reductions (block,
    channel in the block): every index stays affine.  With ``points`` (a register tile
    of that many output points, :func:`flat_points`), the sums run over the output
    points in one flat loop, ``conv[n, F / b, p, b]`` with ``p = y * width + x`` rounded
    up to whole tiles (the extra points read zero rows added below the padded input and
    are never read back): tiles need not divide the row."""
    X, Wb, bias = (list(args) + [None])[:3]
    blocks, _, r, _, block = (d.value for d in Wb.shape)
    pads, strides, _, _ = window(node, [X.shape[2].value, X.shape[3].value], (r, r))
    ry, rx = reduce_axis((0, r), name="ry"), reduce_axis((0, r), name="rx")
    stride = strides[0]
    n, height, width = out.shape[0], out.shape[2], out.shape[3]
    tile = attr(node, "points")
    h, w = (int(getattr(d, "value", d)) for d in (height, width))
    points = -(-h * w // tile) * tile if tile else 0
    # zero rows below the padded input for the points past the last row
    extra = max(0, (points - 1) // w * strides[0] + r - (X.shape[2].value + 2 * pads[0])) \
        if tile else 0

    def scaled(v):
        return v * stride if stride > 1 else v
    if len(X.shape) == 5:
        padded = _pad_blocked(X, pads[0], f"{name}_pad", extra) if pads[0] or extra else X
        rb = reduce_axis((0, X.shape[1].value), name="rb")
        ri = reduce_axis((0, X.shape[4].value), name="ri")
        width_in = X.shape[4].value

        def term(n, fb, y, x, fi):
            return padded[n, rb, scaled(y) + ry, scaled(x) + rx, ri] * \
                Wb[fb, rb * width_in + ri, ry, rx, fi]
        axes = [rb, ri, ry, rx]
    elif tile and X.shape[1].value % INPUT_BLOCK == 0 and (pads[0] or r > 1):
        # the input padded into blocks of channels: a tile's broadcasts of consecutive
        # input channels read one cache line
        c = INPUT_BLOCK
        padded = pad_to_blocks(X, pads[0], f"{name}_pad", extra, c)
        rb = reduce_axis((0, X.shape[1].value // c), name="rb")
        ri = reduce_axis((0, c), name="ri")

        def term(n, fb, y, x, fi):
            return padded[n, rb, scaled(y) + ry, scaled(x) + rx, ri] * \
                Wb[fb, rb * c + ri, ry, rx, fi]
        axes = [rb, ri, ry, rx]
    else:
        padded = pad_nchw_rows(X, pads[0], f"{name}_pad", extra) if pads[0] or extra else X
        rc = reduce_axis((0, X.shape[1].value), name="rc")

        def term(n, fb, y, x, fi):
            return padded[n, rc, scaled(y) + ry, scaled(x) + rx] * Wb[fb, rc, ry, rx, fi]
        axes = [rc, ry, rx]
    blocked_output = bool(attr(node, "blocked_output"))
    sums = name if blocked_output and bias is None and not points else f"{name}_blocked"
    if points:
        conv = compute((n, blocks, points, block), lambda n, fb, p, fi: reduce_sum(
            term(n, fb, p // w, p % w, fi), axis=axes), name=sums)

        def read(n, fb, y, x, fi):
            return conv[n, fb, y * w + x, fi]
    else:
        conv = compute((n, blocks, height, width, block),
                       lambda n, fb, y, x, fi: reduce_sum(term(n, fb, y, x, fi), axis=axes),
                       name=sums)

        def read(n, fb, y, x, fi):
            return conv[n, fb, y, x, fi]
    if blocked_output:
        if bias is None and not points:
            return conv
        return compute((n, blocks, height, width, block), lambda n, fb, y, x, fi: read(
            n, fb, y, x, fi) + (bias[fb * block + fi] if bias is not None else 0.0), name=name)
    nchw = compute(out.shape, lambda n, f, y, x: read(n, f // block, y, x, f % block),
                   name=name if bias is None else f"{name}_nchw")
    if bias is None:
        return nchw
    return compute(out.shape, lambda n, f, y, x: nchw[n, f, y, x] + bias[f], name=name)


def _pad_blocked(X, p: int, name: str, extra: int = 0):
    """``X[n, c, h, w, i]`` with ``p`` zero rows and columns on every side and ``extra``
    more zero rows below."""
    N, C, H, W, B = (d.value for d in X.shape)
    return compute((N, C, H + 2 * p + extra, W + 2 * p, B), lambda n, c, h, w, i: if_then_else(
        all_of(h >= p, h < H + p, w >= p, w < W + p), X[n, c, h - p, w - p, i], 0.0),
        name=name)


def schedule_packed_conv(s, out, conv, *, columns: int = 7, reduce_tile: int = 32,
                         lanes: int | None = None,
                         target_info: TargetInfo | None = None) -> None:
    """``out[n, f, y, x]`` (the group's output, its epilogue inlined) from
    ``conv[n, F / b, y, x, b]`` through ``nchw[n, f, y, x]`` (the sums read back in
    NCHW order): per block of output channels (in parallel), the block's sums computed
    at the block (a buffer ``[y, x, b]``, in L1; where it would not fit in L1, at each
    output row: ``[1, x, b]``), over ``rc.outer, y, x.outer,
    rc.inner, ry, rx, x.inner, b`` (``x.inner``: up to ``columns`` columns unrolled,
    twice as many for a block of one vector, at most :func:`max_columns` of the
    machine's registers, a partial last tile where that takes fewer tiles:
    :func:`register_columns`; ``b`` vectorized: a register tile); then per output row, the
    row's sums transposed to ``[b, x]`` through registers (a transposed copy: ``lanes``
    channels unrolled around ``lanes`` columns vectorized), and the epilogue vectorized
    along the row
    (read channel by channel in the blocked order, the epilogue was scalar code: a
    third of a 96 -> 576 1x1 layer's time on 14 x 14).  ``lanes`` and the L1 size are
    those of ``target_info`` (the host by default).  Flat sums ``conv[n, F / b, p, b]``:
    :func:`~polyopt.graph.flat_conv.schedule_flat_conv`."""
    from ..schedules.nn_templates import producers, vectorize_and_parallelize

    info = target_info or TargetInfo.host()
    lanes = lanes or info.lanes(out.dtype)
    for tensor in producers(conv):  # the zero padding: on its own, in parallel
        if is_blocked_padding(tensor):
            schedule_blocked_padding(s, tensor, lanes)
        else:
            vectorize_and_parallelize(s, tensor, check=False, target_info=info)
    if len(conv.shape) == 4:  # sums over flat points (``points``, :func:`_lower`)
        schedule_flat_conv(s, out, conv, info, lanes, reduce_tile)
        return
    block = conv.shape[4].value
    columns = min(tile_columns(columns, block, lanes),
                  max_columns(info.vector_registers, max(1, block // lanes)))
    if len(out.shape) == 5:
        _schedule_blocked_output(s, out, conv, columns, reduce_tile, lanes)
        return
    nchw = next(t for t in [*producers(out), out] if conv in t.op.inputs)
    upstream = {id(t) for t in producers(nchw)} | {id(nchw)}
    for tensor in reversed(producers(out)):
        if id(tensor) not in upstream:
            s[tensor].compute_inline(check=False)
    width = conv.shape[3].value
    per_row = not _sums_in_l1(conv, info.l1_bytes)
    stage = s[out]
    n, f, y, x = out.op.axis
    fo, fi = stage.split(f, factor=block, check=False)
    if per_row or nchw is not out:
        stage.reorder(n, fo, y, fi, x, check=False)
    if per_row:  # rows of every block in parallel (a layer of 64 channels: 112 rows, not 2)
        fo = y = stage.fuse(fo, y, check=False)
    s[conv].compute_at(stage, y if per_row else fo, check=False)
    _, _, ly, lx, lf = conv.op.axis
    tile = register_columns(width, columns)
    _register_tile(s, conv, lf, ly, lx, width=width, tx=tile, reduce_tile=reduce_tile)
    rows_into_nchw(s, stage, nchw, out, fi, None if per_row else y, x, y, lanes)
    stage.parallel(fo, check=False)
    s.check()


def _sums_in_l1(conv, l1_bytes: int) -> bool:
    """Whether a block's sums ``conv[n, F / b, y, x, b]`` (all rows) fit in L1."""
    _, _, height, width, block = (d.value for d in conv.shape)
    return height * width * block * np.dtype(conv.dtype).itemsize <= l1_bytes


def _schedule_blocked_output(s, out, conv, columns: int, reduce_tile: int,
                             lanes: int) -> None:
    """``out[n, F / b, y, x, b]`` (blocked, :mod:`.blocked`; its epilogue inlined): the
    rows of every block of output channels in parallel; per tile of ``columns`` columns,
    the tile's sums over all input channels and taps (``x.inner`` unrolled, ``b``
    vectorized: a register tile), then the epilogue over the tile, so the sums go from
    the registers through the epilogue to memory once (sums of a block or a row in a
    buffer read again by the epilogue were 3-20% slower, measured in one process, one
    thread: 0.51 against 0.41 ms for MobileNetV2's 16 -> 96 expansion on 112 x 112,
    0.143 against 0.137 for 960 -> 160 on 7 x 7, 2.21 against 2.16 for a 3x3 64 -> 64
    on 56 x 56).  No transposed copy.  Without an epilogue, the sums are ``out``."""
    from ..schedules.nn_templates import producers

    upstream = {id(t) for t in producers(conv)} | {id(conv)}
    for tensor in reversed(producers(out)):
        if id(tensor) not in upstream:
            s[tensor].compute_inline(check=False)
    width = conv.shape[3].value
    tile = row_tile(width, columns)
    stage = s[out]
    n, fb, y, x, fi = out.op.axis
    if conv is out:
        _register_tile(s, out, fi, y, x, width=width, tx=tile, reduce_tile=reduce_tile)
    else:  # the sums of a tile of columns at the epilogue's tile, then the epilogue
        fb = stage.fuse(fb, y, check=False)  # rows of every block in parallel
        xo, xi = stage.split(x, factor=tile, check=False) if tile < width else (None, x)
        fo, fv = stage.split(fi, factor=lanes, check=False)
        stage.reorder(fb, *([xo] if xo is not None else []), xi, fo, fv, check=False)
        stage.unroll(xi, check=False)
        stage.unroll(fo, check=False)
        stage.vectorize(fv, check=False)
        local = s[conv]
        local.compute_at(stage, xo if xo is not None else fb, check=False)
        *outer, lx, lf = conv.op.axis
        local.reorder(*outer, *conv.op.reduce_axis, lx, lf, check=False)
        local.unroll(lx, check=False)
        local.vectorize(lf, check=False)
    stage.parallel(fb, check=False)
    s.check()


def _register_tile(s, local, f, y, x, *, width: int, tx: int, reduce_tile: int) -> None:
    """:func:`~polyopt.schedules.conv_templates.channel_register_tile`, or for sums over a
    blocked input (reductions ``rb, ri, ry, rx``) its loops ``rb, y, x.outer, ri, ry,
    rx, x.inner, f`` (``x.inner`` unrolled, ``f`` vectorized)."""
    from ..schedules.conv_templates import channel_register_tile, register_tile_loops

    if len(local.op.reduce_axis) == 3:
        channel_register_tile(s, local, f, y, x, width=width, tx=tx, reduce_tile=reduce_tile)
        return
    rb, ri, ry, rx = local.op.reduce_axis
    register_tile_loops(s[local], rb, (ri, ry, rx), f, y, x, width=width, tx=tx)


register("ConvPacked", "complex", {**_CONV_ATTRS, "blocked_output": 0, "channels": 0,
                                   "points": 0},
         min_inputs=2, internal=True)(
    (_infer, _lower))


# -- matrix products --------------------------------------------------------------------------

def matmul_panel(target_info: TargetInfo | None = None) -> int:
    """The columns of the matmul template's register tile (its default panel width)."""
    info = target_info or TargetInfo.host()
    return info.register_tile()[1] * info.lanes("float32")


def pack_matmul_weights(g: Graph, *, panel: int | None = None, min_rows: int = 6,
                        target_info: TargetInfo | None = None) -> Graph:
    """``MatMul(A, B)`` with a constant 2-D float ``B[K, N]`` and at least ``min_rows``
    rows in ``A`` (narrower products stream ``B`` as it is) becomes ``MatMulPacked(A,
    Bp)``: ``Bp[N' / panel, K, panel]`` holds ``B``'s columns in panels (``N'``: ``N``
    rounded up to a panel, the extra columns zero and never read); ``panel``: by
    default :func:`matmul_panel` of ``target_info`` (the host by default).

    >>> import numpy as np, polyopt as po
    >>> b = po.graph.GraphBuilder()
    >>> x = b.input("x", (8, 16))
    >>> y = b.op("MatMul", [x, b.constant("w", np.ones((16, 100), "float32"))])
    >>> g = pack_matmul_weights(b.build([y]), panel=64)
    >>> [(n.op_type, g.constants[n.inputs[1]].shape) for n in g.nodes]
    [('MatMulPacked', (2, 16, 64))]
    """
    panel = panel or matmul_panel(target_info)
    constants = dict(g.constants)
    nodes = []
    changed = False
    for node in g.nodes:
        weight = g.constants.get(node.inputs[1]) if node.op_type == "MatMul" else None
        rows = g.tensors[node.inputs[0]].shape[-2:-1] if weight is not None else ()
        if weight is None or weight.ndim != 2 or weight.dtype != np.float32 or \
                not rows or not isinstance(rows[0], int) or rows[0] < min_rows:
            nodes.append(node)
            continue
        name = f"{node.inputs[1]}_panels{panel}"
        if name not in constants:
            constants[name] = pack_panels(weight, panel)
        nodes.append(OpNode(node.name, "MatMulPacked", (node.inputs[0], name), node.outputs,
                            {"columns": int(weight.shape[1])}))
        changed = True
    return g.replace(nodes=nodes, constants=constants) if changed else g


def pack_panels(weight: np.ndarray, panel: int) -> np.ndarray:
    """``B[K, N]`` -> ``Bp[ceil(N / panel), K, panel]`` (zero columns at the end), on a
    cache-line boundary."""
    k, n = weight.shape
    padded = np.zeros((k, -(-n // panel) * panel), weight.dtype)
    padded[:, :n] = weight
    return aligned_copy(padded.reshape(k, -1, panel).transpose(1, 0, 2))


def _matmul_infer(node, infos, constants):
    a, packed = infos[0].shape, infos[1].shape
    if len(a) < 2 or len(packed) != 3 or a[-1] != packed[1]:
        raise InvalidArgumentError(
            f"node '{node.name}' (MatMulPacked): needs A[..., M, K] and panels [N / b, K, b], "
            f"got {a} and {packed}")
    columns = attr(node, "columns") or packed[0] * packed[2]  # (0: every column)
    return [((*a[:-1], columns), infos[0].dtype)]


def _matmul_lower(node, args, values, out, name):
    A, panels = args
    width = panels.shape[2].value
    k = reduce_axis((0, A.shape[-1].value), name="k")
    return compute(out.shape, lambda *i: reduce_sum(
        A[(*i[:-1], k)] * panels[i[-1] // width, k, i[-1] % width], axis=k), name=name)


register("MatMulPacked", "complex", {"columns": 0}, min_inputs=2, internal=True)((_matmul_infer,
                                                                   _matmul_lower))
