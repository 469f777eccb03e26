"""Convolution templates (``po.templates.conv2d_template``, ``conv2d_pointwise_template``,
``conv2d_channel_template``): register tiles of output channels and columns sized from the
machine (a ``TargetInfo``), the padding and the epilogue scheduled with the convolution.

>>> import polyopt as po
>>> X = po.placeholder((1, 8, 10, 10), name="X"); W = po.placeholder((16, 8, 3, 3), name="W")
>>> Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
>>> loops = conv2d_template(po.create_schedule(Y), Y, target_info=po.TargetInfo.for_cpu("znver4"))
>>> loops["f.outer"].kind
'parallel'
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, public
from ..machine import TargetInfo
from ..te.expr import Const, TensorRead
from ..te.tensor import Tensor, walk
from .nn_templates import positive_int, producers, target_facts, vectorize_and_parallelize


def _constant(extent) -> int | None:
    """A constant extent as an int, else None."""
    if isinstance(extent, int):
        return extent
    return extent.value if isinstance(extent, Const) else None


def _largest_divisor(extent: int | None, at_most: int) -> int:
    """The largest divisor of ``extent`` that is at most ``at_most`` (1 if unknown)."""
    if extent is None:
        return 1
    return max(d for d in range(1, min(extent, at_most) + 1) if extent % d == 0)


def _vector_pieces(columns: int, lanes: int) -> int:
    """Vector registers holding ``columns`` floats: 28 -> 16 + 8 + 4, three."""
    return columns // lanes + bin(columns % lanes).count("1")


@public
def conv2d_template(s, out: Tensor, *, tile_f: int = 4, max_tile: int | None = None,
                    registers: int | None = None, lanes: int | None = None,
                    channel_tile: int | None = None, channel_cols: int = 7,
                    parallel: bool = True, target_info: TargetInfo | None = None,
                    epilogue: Tensor | None = None) -> dict:
    """Direct NCHW convolution (``po.ops.conv2d_nchw``), ``out[n, f, y, x] = sum over
    rc, ry, rx``.  A 1x1 kernel is a matrix product over the output points
    (:func:`conv2d_pointwise_template`).  Narrow layers (output rows of fewer than
    ``lanes`` columns) and strided ones (the input row is not read contiguously)
    vectorize across output channels (:func:`conv2d_channel_template`); the others,
    below, across the columns of an output row.

    ``lanes`` (float32 lanes of a vector), ``registers`` (vector registers),
    ``max_tile`` (4 vectors of columns) and ``channel_tile`` (2 vectors) default to
    what ``target_info`` (the host by default) says: 16, 32, 64 and 32 with AVX-512.

    Across columns: a register tile of ``tf`` output channels by ``ty`` output rows
    by ``tx`` output columns held in vector registers through the whole reduction:

    * ``tx``: the whole row when it has at most ``max_tile`` columns, else its largest
      divisor that does; ``ty``: as many whole rows as fit in ``max_tile`` columns
      (1 x 56, 2 x 28, 4 x 14 -> 2 x 14, 7 x 7);
    * ``tf``: ``tile_f``, halved while the tile needs more than ``registers`` vector
      registers (a 7-column row takes three: 4 + 2 + 1 lanes).

    Loops ``n, f.outer, y.outer, x.outer, rc, ry, rx, f.inner, y.inner, x.inner``, the
    last four unrolled (``x.inner`` vectorized instead when ``tx`` is at most 2 vectors,
    32 columns with AVX-512: unrolled, LLVM
    would rather widen the reduction loop, with gathers): each weight is broadcast once
    per tile, a row of the input is a few vector loads, and the sums are stored once.
    The output-channel tiles run in parallel.  Where no tile fits (``tile_f`` does not
    divide the output channels, a width of unknown size or without a divisor of at
    least 8), the loops are
    ``n, f.outer, y, rc, ry, rx, f.inner, x`` with ``x`` vectorized and the sums in
    memory (a third of the speed or less).  A zero-padding stage is computed first, on
    its own, vectorized and in parallel (:func:`vectorize_and_parallelize`).

    ``epilogue``: a tensor computed element by element from ``out`` (its other
    producers inlined).  The 1x1 template computes it from its register tiles (see
    it); otherwise it is its own vectorized parallel pass after the convolution
    (computed at the register tiles of the code below, the sums were kept in memory:
    3x slower).  The result's ``"epilogue"`` says which: ``"fused"`` or ``"separate"``.

    >>> import polyopt as po
    >>> X = po.placeholder((1, 8, 10, 16), name="X")
    >>> W = po.placeholder((16, 8, 3, 3), name="W")
    >>> Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
    >>> s = po.create_schedule(Y)
    >>> _ = conv2d_template(s, Y, max_tile=32)
    >>> [(a.name, a.kind) for a in s[Y].axes]  # doctest: +NORMALIZE_WHITESPACE
    [('n', 'serial'), ('f.outer', 'parallel'), ('y.outer', 'serial'), ('rc', 'serial'),
     ('ry', 'serial'), ('rx', 'unrolled'), ('f.inner', 'unrolled'), ('y.inner', 'unrolled'),
     ('x', 'vectorized')]
    """
    info = target_facts(target_info)
    lanes = info.lanes("float32") if lanes is None else lanes
    registers = info.vector_registers if registers is None else registers
    max_tile = 4 * lanes if max_tile is None else max_tile
    channel_tile = 2 * lanes if channel_tile is None else channel_tile
    for value, what in ((tile_f, "tile_f"), (max_tile, "max_tile"), (registers, "registers")):
        positive_int(value, what)
    _check_conv(out, "conv2d_template")
    for value, what in ((lanes, "lanes"), (channel_tile, "channel_tile"),
                        (channel_cols, "channel_cols")):
        positive_int(value, what)
    channels, height, width = (_constant(d) for d in out.shape[1:])
    stride = _input_stride(out)
    if _is_pointwise(out) and None not in (height, width):
        return conv2d_pointwise_template(s, out, lanes=lanes, parallel=parallel,
                                         target_info=info, epilogue=epilogue)
    if width is not None and (width < lanes or stride > 1):
        loops = conv2d_channel_template(s, out, channel_tile=channel_tile, lanes=lanes,
                                        cols=channel_cols, parallel=parallel,
                                        target_info=info)
        return _separate_epilogue(s, epilogue, loops, parallel, info)
    # each checked step re-checks every marked loop so far: check the result once
    _schedule_padding(s, out, parallel, info)
    stage = s[out]
    n, f, y, x = out.op.axis
    rc, ry, rx = out.op.reduce_axis
    tx = _largest_divisor(width, max_tile)
    ty = _largest_divisor(height, max_tile // tx) if tx == width else 1
    tf = tile_f
    while tf % 2 == 0 and tf * ty * _vector_pieces(tx, lanes) > registers:
        tf //= 2
    tiled = (channels is not None and channels % tf == 0 and tx >= min(8, width or 8)
             and _constant(rx.hi) is not None)
    if tiled:
        fo, fi = stage.split(f, factor=tf, check=False)
        yo, yi = stage.split(y, factor=ty, check=False) if ty > 1 else (y, None)
        xo, xi = stage.split(x, factor=tx, check=False) if tx < width else (None, x)
        outer = [loop for loop in (n, fo, yo, xo) if loop is not None]
        inner = [loop for loop in (fi, yi, xi) if loop is not None]
        stage.reorder(*outer, rc, ry, rx, *inner, check=False)
        for loop in (rx, *inner[:-1]):
            stage.unroll(loop, check=False)
        # a wide row as straight-line code (LLVM packs it into vectors), a narrow one
        # as a vectorized loop (unrolled, LLVM would widen the reduction loop instead)
        (stage.unroll if tx > 2 * lanes else stage.vectorize)(xi, check=False)
    else:
        fo, fi = stage.split(f, factor=tile_f, check=False)
        stage.reorder(n, fo, y, rc, ry, rx, fi, x, check=False)
        stage.vectorize(x, check=False)
    if parallel:
        stage.parallel(fo, check=False)
    loops = {axis.name: axis for axis in stage.axes}
    return _separate_epilogue(s, epilogue, loops, parallel, info)


def _separate_epilogue(s, epilogue: Tensor | None, loops: dict, parallel: bool,
                       info: TargetInfo) -> dict:
    """The epilogue (if any) as its own vectorized parallel pass; ``s`` checked."""
    if epilogue is not None:
        vectorize_and_parallelize(s, epilogue, parallel=parallel, check=False,
                                  target_info=info)
    s.check()
    return {**loops, "epilogue": "separate"} if epilogue is not None else loops


def conv2d_pointwise_template(s, out: Tensor, *, tile_f: int | None = None, vectors: int = 3,
                              lanes: int | None = None, parallel: bool = True,
                              target_info: TargetInfo | None = None,
                              epilogue: Tensor | None = None) -> dict:
    """A 1x1 convolution (``po.ops.conv2d_nchw`` with a 1x1 kernel, any stride) is a
    matrix product ``out[f, p] = sum over rc of weight[f, rc] * input[rc, p]`` over the
    output points ``p = y * width + x``: the output rows are fused into one loop, so a
    vector spans rows (a 28-column row would fill 16 + 8 + 4 lanes; here 784 points are
    49 full vectors).  A strided layer (a ResNet downsample) first copies the input
    points it reads into a contiguous ``[c, p]`` block (``cache_read`` with a layout,
    at ``n``: only the points read; returned as ``"packed"``).

    Register tile: ``tile_f`` output channels (halved until it divides the channels) by
    ``vectors`` vectors of ``lanes`` points (by default from ``target_info``, the host
    by default: ``lanes`` float32 lanes and ``tile_f`` a quarter of the vector
    registers, 8 x 3 zmm accumulators with AVX-512, with 3 loads and 8 broadcasts per
    input channel), summed over all input channels.  Loops
    ``n, f.outer, p.outer, rc, f.inner, p.vector, p.lane``, the last three unrolled,
    unrolled and vectorized; the output-channel tiles run in parallel.  The tile of the
    output is zeroed, then LLVM keeps it in registers through the whole ``rc`` loop and
    stores it once (a ``cache_write`` buffer measured no faster).  The last tile of
    points is partial: 784 points are 16 tiles of 48 and one of 16 (8 x 1 vector, its
    own straight code: 1 load and 8 FMAs per input channel).  The fused loop addresses
    memory by flat offsets (``A.flat[...]`` in the printed program), so the division
    by the row width disappears.

    ``epilogue``: a tensor computed element by element from ``out`` (bias, activation,
    residual add; its other producers already inlined), tiled the same way, with each
    tile of the convolution computed at it (``compute_at``, a buffer of the tile's
    rows): the sums go from the registers through the epilogue to memory once (a
    separate pass read and wrote the whole output again: 1.25x the time on a
    96 x 112 x 112 layer).  Not for a strided layer (its packed input is per call).

    >>> import polyopt as po
    >>> X = po.placeholder((1, 8, 14, 14), name="X")
    >>> W = po.placeholder((16, 8, 1, 1), name="W")
    >>> Y = po.ops.conv2d_nchw(X, W, stride=2, name="Y")
    >>> s = po.create_schedule(Y)
    >>> loops = conv2d_pointwise_template(s, Y)
    >>> [(a.name, a.kind) for a in s[Y].axes]  # doctest: +NORMALIZE_WHITESPACE
    [('n', 'serial'), ('f.outer', 'parallel'), ('y.x.fused.outer', 'serial'),
     ('rc', 'serial'), ('ry', 'serial'), ('rx', 'serial'), ('f.inner', 'unrolled'),
     ('y.x.fused.inner.outer', 'unrolled'), ('y.x.fused.inner.inner', 'vectorized')]
    """
    info = target_facts(target_info)
    lanes = info.lanes("float32") if lanes is None else lanes
    tile_f = max(1, info.vector_registers // 4) if tile_f is None else tile_f
    for value, what in ((tile_f, "tile_f"), (vectors, "vectors"), (lanes, "lanes")):
        positive_int(value, what)
    _check_conv(out, "conv2d_pointwise_template")
    if not _is_pointwise(out):
        raise InvalidArgumentError(
            f"conv2d_pointwise_template needs a 1x1 kernel; '{out.name}' has a "
            f"{out.op.reduce_axis[1].hi}x{out.op.reduce_axis[2].hi} one (use conv2d_template)")
    channels, height, width = (_constant(d) for d in out.shape[1:])
    if None in (height, width):
        raise InvalidArgumentError(
            f"conv2d_pointwise_template needs a constant output size; '{out.name}' is "
            f"{out.shape[2]} x {out.shape[3]}")
    stride = _input_stride(out)
    while channels is not None and channels % tile_f and tile_f > 1:
        tile_f //= 2
    _schedule_padding(s, out, parallel, info)
    if epilogue is not None and stride == 1:
        loops = _pointwise_at_epilogue(s, out, epilogue, tile_f, lanes, vectors, parallel)
        return {**loops, "epilogue": "fused"}
    stage = s[out]
    n, f, y, x = out.op.axis
    rc, ry, rx = out.op.reduce_axis
    points = stage.fuse(y, x, check=False)
    fo, fi = stage.split(f, factor=tile_f, check=False)
    po_, pi = stage.split(points, factor=lanes * vectors, check=False)
    pv, pl = stage.split(pi, factor=lanes, check=False)
    stage.reorder(n, fo, po_, rc, ry, rx, fi, pv, pl, check=False)
    stage.unroll(fi, check=False)
    stage.unroll(pv, check=False)
    stage.vectorize(pl, check=False)
    packed = _pack_strided_input(s, out, stride, width, parallel) if stride > 1 else None
    if parallel:
        stage.parallel(fo, check=False)
    loops = {axis.name: axis for axis in stage.axes}
    loops = {**loops, "packed": packed} if packed is not None else loops
    return _separate_epilogue(s, epilogue, loops, parallel, info)


def _pointwise_at_epilogue(s, conv: Tensor, epilogue: Tensor, tile_f: int, lanes: int,
                           vectors: int, parallel: bool) -> dict:
    """:func:`conv2d_pointwise_template`'s tiles with the epilogue: the epilogue's
    loops ``n, f.outer, p.outer, f.inner, p.vector, p.lane``, and at ``p.outer`` the
    convolution's tile over ``rc, f, p.vector, p.lane``."""
    stage, local = s[epilogue], s[conv]
    n, f, y, x = epilogue.op.axis
    points = stage.fuse(y, x, check=False)
    fo, fi = stage.split(f, factor=tile_f, check=False)
    po_, pi = stage.split(points, factor=lanes * vectors, check=False)
    pv, pl = stage.split(pi, factor=lanes, check=False)
    stage.reorder(n, fo, po_, fi, pv, pl, check=False)
    stage.unroll(fi, check=False)
    stage.unroll(pv, check=False)
    stage.vectorize(pl, check=False)
    cn, cf, cy, cx = conv.op.axis
    rc, ry, rx = conv.op.reduce_axis
    cp = local.fuse(cy, cx, check=False)
    local.compute_at(stage, po_, check=False)
    cv, cl = local.split(cp, factor=lanes, check=False)
    local.reorder(cn, rc, ry, rx, cf, cv, cl, check=False)
    local.unroll(cf, check=False)
    local.unroll(cv, check=False)
    local.vectorize(cl, check=False)
    if parallel:
        stage.parallel(fo, check=False)
    s.check()
    return {axis.name: axis for axis in stage.axes}


def _is_pointwise(out: Tensor) -> bool:
    """Whether the convolution's kernel is 1x1."""
    return all(_constant(r.hi) == 1 for r in out.op.reduce_axis[1:])


def _pack_strided_input(s, out: Tensor, stride: int, width: int, parallel: bool) -> Tensor:
    """A strided 1x1 convolution reads every ``stride``-th row and column of its input:
    copy those (``cache_read`` computed at ``n``, so only the points read) into a
    contiguous ``[c, p]`` block, ``p = y * width + x`` over the output points."""
    data, _ = _conv_operands(out)
    packed = s.cache_read(data.tensor, "global", [out], check=False, layout=(
        f"{{ [n, c, h, w] -> [n, h mod {stride}, w mod {stride}, c, "
        f"{width} * floor(h / {stride}) + floor(w / {stride})] }}"))
    s[packed].compute_at(s[out], out.op.axis[0], check=False)
    if parallel:
        s[packed].parallel(s[packed].axes[-3], check=False)  # the channels
    return packed


def _check_conv(out: Tensor, template: str) -> None:
    """Refuse anything but ``out[n, f, y, x] = sum over (rc, ry, rx)``."""
    if len(out.op.axis) != 4 or len(out.op.reduce_axis) != 3:
        raise InvalidArgumentError(
            f"{template} needs a convolution out[n, f, y, x] = sum over (rc, ry, rx), "
            f"as built by po.ops.conv2d_nchw; '{out.name}' has {len(out.op.axis)} axes and "
            f"{len(out.op.reduce_axis)} reduce axes")


def _schedule_padding(s, out: Tensor, parallel: bool, info: TargetInfo) -> None:
    """The zero-padding stage (if any) on its own, vectorized and in parallel."""
    for tensor in producers(out):
        vectorize_and_parallelize(s, tensor, parallel=parallel, check=False,
                                  target_info=info)


def _conv_operands(out: Tensor) -> tuple[TensorRead, TensorRead]:
    """The reads of the (padded) input and of the weights, ``weight[f, rc, ry, rx]``."""
    f = out.op.axis[1]
    reads = [node for node in walk(out.op.body) if isinstance(node, TensorRead)]
    weights = [r for r in reads if len(r.indices) == 4 and r.indices[0] is f]
    inputs = [r for r in reads if len(r.indices) == 4 and r.indices[0] is not f]
    if len(weights) != 1 or len(inputs) != 1:
        raise InvalidArgumentError(
            f"'{out.name}' does not read one input and one weight[f, rc, ry, rx] as "
            "po.ops.conv2d_nchw builds them")
    return inputs[0], weights[0]


def _input_stride(out: Tensor) -> int:
    """The horizontal stride, from the widths of the (padded) input and of the output
    (1 when unknown)."""
    data, _ = _conv_operands(out)
    width_in = _constant(data.tensor.shape[-1])
    width_out = _constant(out.shape[-1])
    kernel = _constant(out.op.reduce_axis[2].hi)
    if None in (width_in, width_out, kernel) or width_out < 2:
        return 1
    return max(1, (width_in - kernel) // (width_out - 1))


def conv2d_channel_template(s, out: Tensor, *, channel_tile: int | None = None,
                            lanes: int | None = None, cols: int = 7, reduce_tile: int = 32,
                            parallel: bool = True,
                            target_info: TargetInfo | None = None) -> dict:
    """Direct NCHW convolution vectorized across output channels, for layers whose rows
    are too narrow (7 or 14 columns) or too strided (a stride-2 3x3 layer) to fill
    vectors along a row.  ``lanes`` (float32 lanes) and ``channel_tile`` (2 vectors)
    default to what ``target_info`` (the host by default) says: 16 and 32 with
    AVX-512.  For each block of ``channel_tile`` output channels (fewer when the layer
    has fewer, rounded up to a multiple of ``lanes``), run in parallel:

    * the sums of the whole block (every row and column) are a ``cache_write`` buffer
      stored ``[y, x, f]``, computed at the block, over ``rc.outer, y, x.outer,
      rc.inner, ry, rx, x.inner, f``: a register tile of ``channel_tile`` channels by
      ``tx`` columns of one row (``tx``: the largest divisor of the width up to
      ``cols``; 2 x 7 zmm accumulators by default), columns unrolled and channels
      vectorized, each input value broadcast once per column.  The tile is loaded and
      stored once per ``reduce_tile`` input channels (``rc.outer``), then copied out to
      the NCHW output once per block;
    * the weights of the block are packed ``reduce_tile`` input channels at a time
      (``cache_read`` with a layout, computed at ``rc.outer``) as ``[rc, ry, rx, f]``,
      so a weight vector is ``channel_tile / 16`` contiguous loads.  A packed piece
      (32 x 32 x 3 x 3 floats, 36 KB) stays in L1 while every row of the block reads
      it; packing the whole block first (590 KB for 512 input channels) wrote it to L2
      and read it back from there.  The copy is a transpose of ``[f, (rc, ry, rx)]``:
      its loops are ``f.outer, k.outer, k.inner, f.inner`` over ``k = (rc, ry, rx)``
      fused, ``lanes`` by ``lanes`` blocks (``k.inner`` unrolled, ``f.inner``
      vectorized) that the LLVM backend moves through registers (contiguous loads
      along ``k``, shuffles, contiguous stores along ``f``; see
      :mod:`polyopt.target.llvm.transpose`).  A 512-channel 3 x 3 layer packs 9.4 MB
      per call: moved one weight at a time, that took about 0.4 ms of its 1.5 ms on one
      core.

    Returns ``out``'s loops by name with ``"local"`` (the sums) and ``"packed"`` (the
    packed weights).

    >>> import polyopt as po
    >>> X = po.placeholder((1, 8, 7, 7), name="X")
    >>> W = po.placeholder((40, 8, 3, 3), name="W")
    >>> Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
    >>> s = po.create_schedule(Y)
    >>> loops = conv2d_channel_template(s, Y, channel_tile=16)
    >>> [(a.name, a.kind) for a in s[loops["local"]].axes][-7:]  # doctest: +NORMALIZE_WHITESPACE
    [('rc.outer', 'serial'), ('y', 'serial'), ('rc.inner', 'serial'), ('ry', 'serial'),
     ('rx', 'serial'), ('x', 'unrolled'), ('f', 'vectorized')]
    """
    info = target_facts(target_info)
    lanes = info.lanes("float32") if lanes is None else lanes
    channel_tile = 2 * lanes if channel_tile is None else channel_tile
    for value, what in ((channel_tile, "channel_tile"), (lanes, "lanes"), (cols, "cols"),
                        (reduce_tile, "reduce_tile")):
        positive_int(value, what)
    _check_conv(out, "conv2d_channel_template")
    channels, width = _constant(out.shape[1]), _constant(out.shape[-1])
    if channels is not None:
        channel_tile = min(channel_tile, -(-channels // lanes) * lanes)
    if width is None:
        raise InvalidArgumentError(
            f"conv2d_channel_template needs a constant output width; '{out.name}' has "
            f"{out.shape[-1]}")
    _schedule_padding(s, out, parallel, info)
    _, weight = _conv_operands(out)
    packed = s.cache_read(weight.tensor, "global", [out], check=False, layout=(
        f"{{ [f, c, a, b] -> [floor(f / {channel_tile}), c, a, b, f mod {channel_tile}] }}"))
    local = s.cache_write(out, "local", layout="{ [n, f, y, x] -> [n, y, x, f] }",
                          check=False)
    stage = s[out]
    n, f, y, x = out.op.axis
    fo, fi = stage.split(f, factor=channel_tile, check=False)
    stage.reorder(n, fo, fi, y, x, check=False)
    s[local].compute_at(stage, fo, check=False)
    _, lf, ly, lx = local.op.axis
    rc_outer = channel_register_tile(s, local, lf, ly, lx, width=width,
                                     tx=_largest_divisor(width, cols), reduce_tile=reduce_tile)
    s[packed].compute_at(s[local], rc_outer, check=False)
    _copy_transposed(s, packed, lanes)
    if parallel:
        stage.parallel(fo, check=False)
    s.check()
    return {**{axis.name: axis for axis in stage.axes}, "local": local, "packed": packed}


def channel_register_tile(s, local: Tensor, f, y, x, *, width: int, tx: int,
                          reduce_tile: int):
    """The loops of a block's sums vectorized across output channels (``local``, with
    axes ``f``, ``y``, ``x``; ``width`` columns): ``rc.outer, y, x.outer, rc.inner, ry,
    rx, x.inner, f`` (``x.outer`` only when ``tx`` is not the whole row), ``x.inner``
    unrolled and ``f`` vectorized: a register tile of ``tx`` columns by the block's
    channels.  Used by :func:`conv2d_channel_template` and by the graph's convolutions
    with blocked weights.  Returns ``rc.outer``."""
    stage = s[local]
    rc, ry, rx = local.op.reduce_axis
    rco, rci = stage.split(rc, factor=reduce_tile, check=False)
    register_tile_loops(stage, rco, (rci, ry, rx), f, y, x, width=width, tx=tx)
    return rco


def register_tile_loops(stage, outer, inner: tuple, f, y, x, *, width: int, tx: int
                        ) -> None:
    """Order ``outer, y, x.outer, *inner, x.inner, f`` (``x.outer`` only when ``tx`` is
    not the whole row of ``width``), ``x.inner`` unrolled and ``f`` vectorized: a register
    tile of ``tx`` columns by the vector ``f``, summed over the ``inner`` reductions."""
    if tx < width:
        xo, xi = stage.split(x, factor=tx, check=False)
        stage.reorder(outer, y, xo, *inner, xi, f, check=False)
    else:
        xi = x
        stage.reorder(outer, y, *inner, xi, f, check=False)
    stage.unroll(xi, check=False)
    stage.vectorize(f, check=False)


def _copy_transposed(s, packed: Tensor, lanes: int) -> None:
    """The weight copy ``packed[k, f] = weight[f, k]`` over ``k = (rc, ry, rx)`` in
    ``lanes`` x ``lanes`` blocks: ``f.outer, k.outer, k.inner, f.inner``, the last two
    unrolled and vectorized (a transpose in registers where the blocks are full)."""
    stage = s[packed]
    pf, pc, py, px = stage.axes[-4:]
    stage.reorder(pf, pc, py, px, check=False)
    k = stage.fuse(stage.fuse(pc, py, check=False), px, check=False)
    ko, ki = stage.split(k, factor=lanes, check=False)
    fo, fi = stage.split(pf, factor=lanes, check=False)
    stage.reorder(fo, ko, ki, fi, check=False)
    stage.unroll(ki, check=False)
    stage.vectorize(fi, check=False)
