"""Convolutions whose sums run over the flat output points, ``p = y * width + x``.

A ``ConvPacked`` convolution (:mod:`.layouts`) with the attribute ``points`` computes its
sums as ``conv[n, F / b, p, b]`` over the output points rounded up to whole register
tiles of ``points`` points by the block's ``b`` channels (the extra points read zero rows
added below the padded input, and nothing reads them back): a register tile need not
divide the row, so its shape comes from the machine's registers alone
(:func:`flat_points`: 6 points x 2 vectors of 8 channels with AVX2, 14 x 2 vectors of
16 with AVX-512), where row tiles on 56, 28, 14 or 7 columns could only be 4 x 2 or
7 x 1.  An NCHW input is padded into blocks of :data:`INPUT_BLOCK` channels
(:func:`pad_to_blocks`; row by row through a register transpose:
:func:`schedule_blocked_padding`).  :func:`schedule_flat_conv` schedules the sums on
their own (every tile whole), then the output.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 16, 7, 7))
>>> y = b.op("Conv", [x, b.constant("w", np.ones((16, 16, 3, 3), "float32"))], pads=[1] * 4)
>>> from polyopt.graph.layouts import pack_conv_weights
>>> g = pack_conv_weights(b.build([y]), target_info=po.TargetInfo.for_cpu("znver3"))
>>> [(n.op_type, n.attrs["points"]) for n in g.nodes]  # 49 points: 10 tiles of 5
[('ConvPacked', 5)]
"""

from __future__ import annotations

import numpy as np

from ..machine import TargetInfo
from ..te.tensor import all_of, compute, if_then_else
from .registry import attr

# Input channels per block of a padded NCHW input that a flat convolution reads
# (:func:`pad_to_blocks`): a 64-byte cache line of floats, so that a tile's broadcasts
# of consecutive input channels read one line.
INPUT_BLOCK = 16
# Rows of a padded input (:func:`schedule_blocked_padding`) per piece of its parallel loop:
# a 64-channel layer's 4 blocks of 16 channels are 32 pieces of work, not 4.
PADDING_ROWS = 8


def max_columns(registers: int, vectors: int) -> int:
    """The most columns of a register tile of ``vectors`` vectors of channels held in
    ``registers`` vector registers beside its weight vectors, a broadcast input and one
    spare (AVX2, 3x3 layers on 14 columns: 7 columns x 1 vector as fast as 14 or up to
    1.3x faster; 7 x 2 vectors spilled, 1.25x slower).

    >>> max_columns(16, 2), max_columns(16, 1), max_columns(32, 2)
    (6, 13, 14)
    """
    return max(1, (registers - 2 - vectors) // vectors)


def flat_points(node, w_shape, info: TargetInfo, vectors: int = 2,
                points: int | None = None) -> int:
    """The output points of a register tile of a convolution whose sums run over the
    output points in one flat loop, ``p = y * width + x``: with ``vectors`` vectors of
    channels, at most :func:`max_columns` of ``info``'s registers (two vectors: 6
    with 16 registers, 12 accumulators; 14 with 32), in
    tiles that need not divide the row (rows of 7, 14, 28 or 56 columns allowed only
    4 x 2 or 7 x 1 tiles); fewer where whole tiles would add more than 4% to the layer's
    ``points`` (49 points: 10 tiles of 5, not 9 of 6).  Two vectors: with one (13
    points on AVX2) a 256 x 14 x 14 layer took 1.5x the time.  0 (row tiles) for a
    dilated or grouped one, and for a 1x1 one (its row tiles take the epilogue from the
    registers: flat sums, on their own, made MobileNetV2 1.15x slower on a Zen 3, one
    thread, and ResNet's 64x56x56 -> 128 1x1 stride-2 layer 1.2x slower).

    >>> from polyopt.graph.ir import OpNode
    >>> conv = OpNode("c", "Conv", ("x", "w"), ("y",), {"pads": [1] * 4})
    >>> [flat_points(conv, (64, 64, 3, 3), TargetInfo.for_cpu(cpu), points=p)
    ...  for cpu in ("znver3", "znver4") for p in (3136, 49)]
    [6, 5, 14, 10]
    """
    _, _, r, s = w_shape
    if r != s or attr(node, "group") != 1 or \
            list(attr(node, "dilations") or (1, 1)) != [1, 1] or \
            r == 1:
        return 0
    most = max_columns(info.vector_registers, vectors)
    if points is None:
        return most
    return next((t for t in range(most, 1, -1) if 25 * (-(-points // t) * t) <= 26 * points),
                most)


def pad_nchw_rows(X, p: int, name: str, extra: int = 0):
    """``X[n, c, h, w]`` with ``p`` zero rows and columns on every side and ``extra`` more
    zero rows below."""
    N, C, H, W = (d.value for d in X.shape)
    return compute((N, C, H + 2 * p + extra, W + 2 * p), lambda n, c, h, w: if_then_else(
        all_of(h >= p, h < H + p, w >= p, w < W + p), X[n, c, h - p, w - p], 0.0),
        name=name)


def pad_to_blocks(X, p: int, name: str, extra: int, c: int):
    """``X[n, C, h, w]`` padded as :func:`pad_nchw_rows` into blocks of ``c`` channels,
    ``[n, C / c, h, w, c]``."""
    N, C, H, W = (d.value for d in X.shape)
    return compute((N, C // c, H + 2 * p + extra, W + 2 * p, c),
                   lambda n, b, h, w, i: if_then_else(
                       all_of(h >= p, h < H + p, w >= p, w < W + p),
                       X[n, b * c + i, h - p, w - p], 0.0), name=name)


def is_blocked_padding(tensor) -> bool:
    """Whether ``tensor`` is an NCHW tensor padded into blocks of channels
    (:func:`pad_to_blocks`): 5-D, computed from one 4-D tensor."""
    inputs = getattr(tensor.op, "inputs", ())
    return len(tensor.shape) == 5 and len(inputs) == 1 and len(inputs[0].shape) == 4


def schedule_blocked_padding(s, padded, lanes: int) -> None:
    """:func:`pad_to_blocks`'s ``padded[n, b, h, w, i]`` row by row, pieces of
    :data:`PADDING_ROWS` rows of a block in parallel: each row of the input's block of
    channels is first
    copied channels-last into a row buffer ``[w, i]`` (``cache_read`` with a layout,
    computed at the row) in ``lanes`` x ``lanes`` blocks transposed through registers
    (``w.inner`` unrolled around ``i.inner`` vectorized: contiguous loads along ``w``,
    :mod:`polyopt.target.llvm.transpose`), then the padded row is written from it a
    vector of channels at a time.  Vectorized across the channels of the input directly,
    each vector was ``lanes`` scalar loads ``H * W`` floats apart (a gather) with
    divisions in its indices: about 3% of a 64 x 56 x 56 3x3 layer's time on a Zen 3
    (profiled); the whole layer's gain was within the noise of a loaded machine
    (``benchmarks/results/experiments/conv_ab_2026-11-28.md``)."""
    source = padded.op.inputs[0]
    block = padded.shape[4].value
    rows = s.cache_read(source, "local", [padded], check=False, layout=(
        f"{{ [n, c, h, w] -> [n, floor(c / {block}), h, w, c mod {block}] }}"))
    stage = s[padded]
    n, b, h, w, i = stage.axes
    ho, hi = stage.split(h, factor=PADDING_ROWS, check=False)
    pieces = stage.fuse(stage.fuse(n, b, check=False), ho, check=False)
    vo, vi = stage.split(i, factor=lanes, check=False)
    stage.unroll(vo, check=False)
    stage.vectorize(vi, check=False)
    s[rows].compute_at(stage, hi, check=False)
    copy = s[rows]
    _, rc, _, rw = copy.axes[-4:]
    wo, wi = copy.split(rw, factor=lanes, check=False)
    co, ci = copy.split(rc, factor=lanes, check=False)
    copy.reorder(wo, co, wi, ci, check=False)
    copy.unroll(wi, check=False)
    copy.vectorize(ci, check=False)
    stage.parallel(pieces, check=False)


def schedule_flat_conv(s, out, conv, info: TargetInfo, lanes: int, reduce_tile: int) -> None:
    """Sums over flat output points, ``conv[n, F / b, p, b]``: on their own (all points,
    so every register tile is whole), loops ``n, (F / b, p.chunk) in parallel,
    rc.outer, p.tile, rc.inner, ry, rx, p.point, b`` with ``p.point`` (the tile's points)
    unrolled and ``b`` vectorized: a register tile of points by the block's channels,
    a chunk of tiles whose sums fit in half of L1 (chunks of equal size: 131 tiles in
    4 of 33, not 3 of 42 and one of 5, the pieces of the parallel loop as even as the
    chunk count allows), ``reduce_tile`` input channels at a time; then ``out`` (NCHW:
    per output row, the row's sums transposed through registers; blocked: the block's
    channels vectorized), its epilogue inlined."""
    from ..schedules.nn_templates import producers

    _, _, points, block = (d.value for d in conv.shape)
    itemsize = np.dtype(conv.dtype).itemsize
    tile = max_columns(info.vector_registers, max(1, block // lanes))
    tile = max(d for d in range(1, min(tile, points) + 1) if points % d == 0)
    chunk = max(1, info.l1_bytes // (2 * tile * block * itemsize))  # tiles per chunk
    chunk = -(-(points // tile) // -(-(points // tile) // chunk))  # as many, equal
    stage = s[conv]
    n, fb, p, fi = conv.op.axis
    first, *rest = conv.op.reduce_axis
    pm, pk = stage.split(p, factor=tile, check=False)
    pc, pm = stage.split(pm, factor=chunk, check=False) if chunk * tile < points \
        else (None, pm)
    extent = [int(getattr(a.hi, "value", a.hi)) for a in conv.op.reduce_axis]
    steps = reduce_tile if len(rest) == 2 else max(1, reduce_tile // extent[1])
    rco, rci = stage.split(first, factor=steps, check=False) if steps < extent[0] \
        else (None, first)
    outer = [a for a in (n, fb, pc, rco, pm, rci) if a is not None]
    stage.reorder(*outer, *rest, pk, fi, check=False)
    stage.unroll(pk, check=False)
    stage.vectorize(fi, check=False)
    stage.parallel(stage.fuse(fb, pc, check=False) if pc is not None else fb, check=False)
    upstream = {id(t) for t in producers(conv)} | {id(conv)}
    readers = [t for t in [*producers(out), out] if conv in t.op.inputs]
    for tensor in reversed(producers(out)):
        if id(tensor) not in upstream and tensor is not readers[0]:
            s[tensor].compute_inline(check=False)
    nchw = readers[0]
    if nchw is not out and len(out.shape) == 5:
        s[nchw].compute_inline(check=False)
    stage = s[out]
    if len(out.shape) == 5:  # blocked output: per row of a block, the channels vectorized
        n, ob, y, x, oi = out.op.axis
        rows = stage.fuse(ob, y, check=False)
        vo, vi = stage.split(oi, factor=lanes, check=False)
        stage.unroll(vo, check=False)
        stage.vectorize(vi, check=False)
        stage.parallel(rows, check=False)
        s.check()
        return
    n, f, y, x = out.op.axis
    fo, fi = stage.split(f, factor=block, check=False)
    stage.reorder(n, fo, y, fi, x, check=False)
    rows = stage.fuse(fo, y, check=False)
    rows_into_nchw(s, stage, nchw, out, fi, None, x, rows, lanes)
    stage.parallel(rows, check=False)
    s.check()


def rows_into_nchw(s, stage, nchw, out, f, y, x, at, lanes: int) -> None:
    """Write ``stage``'s blocked rows (channels ``f`` of a block, columns ``x``) in NCHW
    order: through registers (:func:`transposed_rows`) when ``stage`` computes the NCHW
    ``out`` itself or ``out`` adds a term constant along the row to it
    (:func:`adds_per_row`: the bias, added to the transposed vectors; a second pass
    over the row was about 3% of a 3x3 layer's time, profiled on a Zen 3), else
    ``stage`` vectorized along ``x`` and the NCHW copy ``nchw`` computed at its loop
    ``at``, transposed there."""
    if nchw is out or adds_per_row(out, nchw):
        if nchw is not out:  # ``out = nchw + bias``: transposed and added in one pass
            s[nchw].compute_inline(check=False)
        transposed_rows(stage, f, y, x, lanes)
        return
    _, xi = stage.split(x, factor=lanes, check=False)
    stage.vectorize(xi, check=False)
    s[nchw].compute_at(stage, at, check=False)
    _, cf, _, cx = nchw.op.axis
    transposed_rows(s[nchw], cf, None, cx, lanes)


def adds_per_row(out, nchw) -> bool:
    """Whether ``out[n, f, y, x]`` is ``nchw[n, f, y, x]`` plus a term that reads
    neither ``nchw`` nor ``x`` (a bias ``b[f]``).

    >>> from polyopt.te.tensor import compute, placeholder
    >>> a, b = placeholder((1, 2, 3, 4), name="a"), placeholder((2,), name="b")
    >>> adds_per_row(compute(a.shape, lambda n, f, y, x: a[n, f, y, x] + b[f]), a)
    True
    >>> adds_per_row(compute(a.shape, lambda n, f, y, x: a[n, f, y, x] * b[f]), a)
    False
    """
    from ..te.expr import BinOp, TensorRead
    from ..te.tensor import walk

    body = out.op.body
    body = body[0] if isinstance(body, (list, tuple)) and len(body) == 1 else body
    x = out.op.axis[-1]
    if not isinstance(body, BinOp) or body.op != "+":
        return False
    for read, term in ((body.a, body.b), (body.b, body.a)):
        if isinstance(read, TensorRead) and read.tensor is nchw and \
                list(read.indices) == list(out.op.axis) and \
                read.dtype == body.dtype == term.dtype and \
                not any(node is x or getattr(node, "tensor", None) is nchw
                        for node in walk(term)):
            return True
    return False


def transposed_rows(stage, f, y, x, lanes: int) -> None:
    """Loops ``[y,] f.outer, x.outer, f.inner, x.inner`` of a copy from ``[.., x, f]`` to
    ``[.., f, x]`` order: ``f.inner`` (``lanes`` channels) unrolled around ``x.inner``
    (``lanes`` columns) vectorized, the copy's block transposed in registers."""
    fo, fi = stage.split(f, factor=lanes, check=False)
    xo, xi = stage.split(x, factor=lanes, check=False)
    stage.reorder(*([y] if y is not None else []), fo, xo, fi, xi, check=False)
    stage.unroll(fi, check=False)
    stage.vectorize(xi, check=False)
