"""Schedule templates built on the intrinsics: int8 matrix products with ``vpdpbusd``
register tiles (plain schedule code; every step checked, the tensorize matched exactly).

>>> import polyopt as po
>>> A = po.placeholder((12, 8), name="A", dtype="uint8")
>>> W = po.placeholder((2, 64, 4), name="W", dtype="int8")
>>> C = po.ops.matmul_u8s8(A, W)
>>> s = po.create_schedule(C)
>>> znver4 = TargetInfo.for_cpu("znver4")  # the host may lack VNNI: a CPU that has it
>>> loops = int8_matmul_template(s, C, rows=6, cols=64, parallel=False, target_info=znver4)
>>> s.program.tensorized[0][:2]
('C_local', 'i')
"""

from __future__ import annotations

from ..lowering_errors import MissingInstructionsError
from ..machine import AMX_TILE_ROWS, TargetInfo
from ..te.expr import Select
from ..te.tensor import walk
from ..tensorize.builtin import LANES, gemm_u8s8, gemm_u8s8_nchw, max_tile_rows


def int8_matmul_template(s, C, *, rows: int | None = None, cols: int = 64,
                         parallel: bool = True, epilogue=None,
                         target_info: TargetInfo | None = None,
                         tensor_unit: str | None = None) -> dict:
    """``C = po.ops.matmul_u8s8(A, Wp)``: a ``rows x cols`` int32 accumulator tile
    (``cache_write`` computed at the tile, in registers) updated by one
    :func:`~polyopt.tensorize.builtin.gemm_u8s8` call per group of 4 reduction elements
    (``rows * cols / 16`` ``vpdpbusd``); the column blocks run in parallel.

    C's width must be a multiple of ``cols`` (pack the weights with
    ``pack_vnni_numpy(w, columns=cols, blocked=True)``: the padded columns are zero, and
    the caller reads ``c[:, :N]``); ``rows`` defaults to the largest of 6, 4, 3, 2
    that divides C's height, else 4 (the last, partial tile of rows runs as scalar code).

    ``epilogue``: a tensor computed element by element from C, such as
    ``po.ops.requantize(C, scale, zero_point, relu=True)`` (the schedule's output): it
    is computed from the int32 tile right after the tile's last update, in the same
    loop nest (C itself is never stored).  ``target_info``: the machine (the host by
    default); one without AVX-512 VNNI is refused with a :class:`TensorizeError`.

    ``tensor_unit``: ``"amx"`` (AMX tiles, :func:`amx_matmul_template`), ``"avx512"``
    (``vpdpbusd``) or None: what the machine model chooses
    (``target_info.tensor_unit("int8")``: AMX where the CPU has it and the shapes suit
    its tiles, see :func:`amx_fits`).  ``rows`` and ``cols`` are the VNNI tile's."""
    info = target_info or TargetInfo.host()
    if _chosen_unit(info, "int8", tensor_unit, C) == "amx":
        return amx_matmul_template(s, C, parallel=parallel, epilogue=epilogue,
                                   target_info=info)
    info = require_instructions(info, "has_vnni", "AVX-512 VNNI (vpdpbusd)")
    return {**_packed_matmul(s, C, gemm_u8s8, rows, cols, parallel, info, epilogue),
            "unit": "avx512"}


def bf16_matmul_template(s, C, *, rows: int | None = None, cols: int = 64,
                         parallel: bool = True,
                         target_info: TargetInfo | None = None,
                         tensor_unit: str | None = None) -> dict:
    """``C = po.ops.matmul_bf16(A, Wp)``: as :func:`int8_matmul_template`, with
    :func:`~polyopt.tensorize.builtin.gemm_bf16` (``vdpbf16ps`` on pairs; a machine
    without AVX-512 BF16 is refused), or AMX tiles (``tdpbf16ps``) where the machine
    model chooses them or ``tensor_unit="amx"`` asks."""
    from ..tensorize.builtin import gemm_bf16

    info = target_info or TargetInfo.host()
    if _chosen_unit(info, "bf16", tensor_unit, C) == "amx":
        return amx_matmul_template(s, C, parallel=parallel, target_info=info)
    info = require_instructions(info, "has_bf16", "AVX-512 BF16 (vdpbf16ps)")
    return {**_packed_matmul(s, C, gemm_bf16, rows, cols, parallel, info), "unit": "avx512"}


def _chosen_unit(info: TargetInfo, kind: str, forced, C) -> str:
    """The unit a matmul template uses: ``forced`` (checked), else the machine model's
    choice, AMX only where C's shapes suit its tiles."""
    from ..errors import InvalidArgumentError

    if forced is not None:
        unit = info.tensor_unit(kind, prefer=forced)  # (refuses unknown units)
        if unit is None:
            fact = ("has_amx_int8" if kind == "int8" else "has_amx_bf16") \
                if forced == "amx" else ("has_vnni" if kind == "int8" else "has_bf16")
            require_instructions(info, fact, f"{forced} ({kind})")
        if unit == "amx" and not amx_fits(C):
            raise InvalidArgumentError(
                f"tensor_unit='amx': '{C.name}' does not fit AMX tiles (its reduction "
                f"must be a multiple of 64 bytes of a row and its weights' column block a "
                f"multiple of 16); pad K and pack with pack_vnni_numpy(..., columns=32)")
        return unit
    unit = info.tensor_unit(kind)
    return "amx" if unit == "amx" and amx_fits(C) else "avx512"


def require_instructions(target_info: TargetInfo | None, fact: str, what: str) -> TargetInfo:
    """The machine (``target_info``, the host by default), refused (``TensorizeError``)
    when a template's intrinsics need ``what`` and it lacks it (``fact``: a TargetInfo
    property)."""
    info = target_info or TargetInfo.host()
    if not getattr(info, fact):
        raise MissingInstructionsError((what,), info.name, fact=fact)
    return info


def _packed_matmul(s, C, intrinsic, rows, cols, parallel, info, epilogue=None) -> dict:
    height = getattr(C.shape[0], "value", None)
    if rows is None:
        rows = _default_rows((6, 4, 3, 2), height, cols, info)
    stage, local, io, jo, ji = _output_tiles(s, C, epilogue, rows, cols)
    li, lj = local.op.axis
    ko, ki = local.op.reduce_axis
    s[local].reorder(ko, li, lj, ki)
    s[local].tensorize(li, intrinsic(rows, cols))
    stage.vectorize(ji)
    if parallel:
        stage.parallel(jo)
    return {"j.outer": jo, "i.outer": io, "local": local, "rows": rows}


def _output_tiles(s, C, epilogue, rows: int, cols: int):
    """``C``'s sums accumulated in a local tile of ``rows x cols`` computed inside the
    output's tiles (columns of tiles outermost): ``(stage, local, i.outer, j.outer,
    j.inner)``."""
    local = s.cache_write(C, "local")
    out = _fused_epilogue(s, C, epilogue)
    stage = s[out]
    i, j = out.op.axis
    io, jo, ii, ji = stage.tile(i, j, rows, cols)
    stage.reorder(jo, io, ii, ji)
    s[local].compute_at(stage, io)
    return stage, local, io, jo, ji


def amx_fits(C) -> bool:
    """Whether ``C = matmul_u8s8(A, Wp)`` or ``matmul_bf16`` has the shapes of AMX
    tiles: whole tiles of the reduction (16 groups of 4 bytes, or of 2 bfloat16) and
    weight columns in blocks of 16 (``Wp[..., cols, group]``, cols a multiple of 16)."""
    weights = C.op.inputs[1]
    groups = _extent(weights.shape[-3])
    cols = _extent(weights.shape[-2])
    return (isinstance(groups, int) and groups % AMX_TILE_ROWS == 0
            and isinstance(cols, int) and cols % 16 == 0)


def _extent(value):
    return getattr(value, "value", value)


MOST_KSTEPS = 32  # tile products of the reduction one AMX call unrolls (K <= 2048 int8)


def amx_matmul_template(s, C, *, parallel: bool = True, epilogue=None,
                        target_info: TargetInfo | None = None) -> dict:
    """``C = po.ops.matmul_u8s8(A, Wp)`` or ``matmul_bf16`` on AMX tiles: blocks of
    ``tiles_m x tiles_n`` accumulator tiles (16 x 16 each; 2 x 2 where the shapes
    allow: 8 tile registers) in a ``cache_write`` buffer, updated by one
    :func:`~polyopt.tensorize.builtin_amx.amx_gemm_u8s8` (``tdpbusd``) or
    :func:`~polyopt.tensorize.builtin_amx.amx_gemm_bf16` (``tdpbf16ps``) call over the
    whole reduction where it has at most ``MOST_KSTEPS`` tiles (the accumulators zeroed
    and kept in tile registers, stored once), else one call per ``ksteps`` tiles (the
    accumulators loaded and stored once per call); the column blocks run in parallel.  Weights in the VNNI layout
    (``pack_vnni_numpy(w, columns=32, blocked=True)``); the last partial block of rows
    runs as scalar code.  ``epilogue``: as in :func:`int8_matmul_template`.  A machine
    without AMX is refused (:class:`MissingInstructionsError`)."""
    from ..errors import InvalidArgumentError
    from ..tensorize.builtin_amx import amx_gemm_bf16, amx_gemm_int8

    bf16 = C.dtype == "float32"
    require_instructions(target_info, "has_amx_bf16" if bf16 else "has_amx_int8",
                         "AMX-BF16 (tdpbf16ps)" if bf16 else "AMX-INT8 (tdpbusd)")
    if not amx_fits(C):
        raise InvalidArgumentError(
            f"'{C.name}' does not fit AMX tiles: its reduction must be whole tiles (K a "
            f"multiple of 64 bytes) and its weight columns blocks of 16; pad K and pack "
            f"with pack_vnni_numpy(..., columns=32)")
    a, weights = C.op.inputs
    block = _extent(weights.shape[-2])
    tiles = _extent(weights.shape[-3]) // AMX_TILE_ROWS
    tiles_n = 2 if block % 32 == 0 else 1
    height = _extent(C.shape[0])
    tiles_m = 2 if not isinstance(height, int) or height >= 2 * AMX_TILE_ROWS else 1
    # the whole reduction in one call where it is at most MOST_KSTEPS tiles: the
    # accumulators stay in tile registers from zero to the end, and the tile's zeroing is
    # the intrinsic's (a zeroing loop that LLVM makes a memset call would need the tile
    # configuration loaded again after it, inside the loop over blocks)
    ksteps = tiles if tiles <= MOST_KSTEPS else next(
        k for k in range(MOST_KSTEPS, 0, -1) if tiles % k == 0)
    if bf16:
        intrinsic = amx_gemm_bf16(tiles_m, tiles_n, ksteps)
    else:
        intrinsic = amx_gemm_int8(tiles_m, tiles_n, ksteps, a.dtype, weights.dtype)
    rows, cols = AMX_TILE_ROWS * tiles_m, 16 * tiles_n
    stage, local, io, jo, ji = _output_tiles(s, C, epilogue, rows, cols)
    li, lj = local.op.axis
    ko, ki = local.op.reduce_axis
    if ksteps == tiles:
        s[local].reorder(li, lj, ko, ki)
    else:
        koo, koi = s[local].split(ko, factor=AMX_TILE_ROWS * ksteps)
        s[local].reorder(koo, li, lj, koi, ki)
    s[local].tensorize(li, intrinsic)
    stage.vectorize(ji)
    if parallel:
        stage.parallel(jo)
    return {"j.outer": jo, "i.outer": io, "local": local, "rows": rows, "cols": cols,
            "unit": "amx", "intrinsic": intrinsic.name}


def _default_rows(preferred, extent, cols: int, info: TargetInfo) -> int:
    """The first of ``preferred`` that divides ``extent`` and whose tile fits the
    registers of ``info`` (:func:`~polyopt.tensorize.builtin.max_tile_rows`), else the
    largest that fits of 4 or fewer (its last tile partial, run as scalar code)."""
    most = max_tile_rows(cols, info)
    if isinstance(extent, int) and extent < min(4, most):  # a matrix-vector product
        return extent  # (a tile taller than the matrix has no loop over its rows)
    fitting = [r for r in preferred if r <= most]
    return next((r for r in fitting if isinstance(extent, int) and extent % r == 0),
                min(4, most))


def _square_block(rows: int, cols: int) -> int:
    """The channels per block of the tile's transposed copy: the smallest of
    ``SQUARE_BLOCKS`` holding ``rows`` pixels that divides ``cols``, else 16."""
    return next((b for b in SQUARE_BLOCKS if b >= rows and cols % b == 0), 16)


def _fused_epilogue(s, C, epilogue):
    """The stage the template schedules: C's copy out of its accumulator tile, or, with
    an ``epilogue`` reading C element by element, the epilogue with that copy inlined
    into it (so the epilogue reads the tile)."""
    if epilogue is None:
        return C
    from ..errors import InvalidArgumentError

    if not any(t is C for t in _elementwise_sources(epilogue)) or tuple(
            getattr(e, "value", e) for e in epilogue.shape) != tuple(
            getattr(e, "value", e) for e in C.shape):
        raise InvalidArgumentError(
            f"epilogue '{getattr(epilogue, 'name', epilogue)}' must be computed element by "
            f"element from '{C.name}' (same shape), e.g. po.ops.requantize({C.name}, ...)")
    s[C].compute_inline()
    return epilogue


def _elementwise_sources(T):
    """The tensors ``T`` reads, directly or through computed stages without a reduction
    (an epilogue chain whose stages the caller has inlined into ``T``)."""
    found, stack = [], list(getattr(T.op, "inputs", ()))
    while stack:
        source = stack.pop()
        if any(source is t for t in found):
            continue
        found.append(source)
        if getattr(source.op, "body", None) is not None and not source.op.reduce_axis:
            stack.extend(source.op.inputs)
    return found


# packed input rows at least this wide are copied one channel row (a vector along x)
# at a time, narrower ones 4 channels per pixel (64 channels of 56 + 2 x 58: 62 -> 39 us;
# of 28: 12 -> 13 us, of 7: 3.8 -> 4.4 us), when the copy pads (a condition per pixel)
WIDE_PACKED_ROW = 48
SQUARE_BLOCKS = (2, 4, 8, 16)  # the blocks polyopt.target.llvm.transpose copies
# padded input rows at least this wide are padded first, 4 channels at a time (plain
# vector rows), then grouped without a condition (an interleaved store of 4 vectors):
# 64x56 layer 50 -> 15 us, 128x28 22 -> 13, 256x14 10 -> 5; of 7 + 2: 6.4 -> 9.2 us
PADDED_STAGE_ROW = 16


def _schedule_packing(s, packed) -> None:
    """The copy of the input into groups of 4 channels (``conv2d_u8s8_nchw``'s
    ``<name>_packed``, read through ``<name>_padded`` when it pads): x vectorized, the 4
    channels unrolled, without a condition when it can."""
    padded = next((t for t in packed.op.inputs if getattr(t.op, "body", None) is not None),
                  None)
    gg, gy, gx, gt = s[packed].axes[-4:]  # (after a compute_at: inside the reader's loops)
    conditional = padded is not None or _has_condition(packed.op.body)
    if padded is not None and packed.shape[2].value >= PADDED_STAGE_ROW:
        s[padded].compute_at(s[packed], gg)
        s[padded].vectorize(s[padded].axes[-1])
        conditional = False
    elif padded is not None:
        s[padded].compute_inline()
    if conditional and packed.shape[2].value >= WIDE_PACKED_ROW:  # 4 channel rows,
        s[packed].reorder(gg, gy, gt, gx)                       # each vectorized
    s[packed].unroll(gt)
    s[packed].vectorize(gx)  # 4 unrolled channel copies: an interleaved store of 4


def _has_condition(expr) -> bool:
    return any(isinstance(e, Select) for e in walk(expr))


def int8_conv2d_template(s, Y, *, rows: int | None = None, cols: int | None = None,
                         parallel: bool = True, epilogue=None,
                         target_info: TargetInfo | None = None) -> dict:
    """``Y = po.ops.conv2d_u8s8_nchw(X, Wp, ...)``: for each output row, tiles of ``rows``
    output columns x ``cols`` output channels accumulated in registers (a ``cache_write``
    stored channels last) by one :func:`~polyopt.tensorize.builtin.gemm_u8s8` call per
    (group of 4 channels, kernel tap): the tile's ``rows`` pixels read their 4 packed
    channels with the conv's stride, the weights of the tap are one contiguous
    ``cols x 4`` block.  By default (:func:`conv_tile`) the tile has the most rows
    within half the vector registers, ``rows`` dividing the output width and ``cols``
    the weights' block: 8 x 32 for width 56, 7 x 32 for 28, 14 and 7 (7 x 64 spilled:
    256x14 layer 389 -> 411 GOP/s with 7 x 32).
    An explicit ``rows`` that does not divide leaves a partial tile of pixels, run as
    scalar code.  A 1x1 conv without padding packs each input row inside the loop over
    output rows (the parallel loop: one parallel region per call); by default, when
    whole output rows make whole vectors (width 28: 4 rows), it runs
    :func:`~polyopt.tensorize.builtin.gemm_u8s8_nchw` tiles instead, lanes along the
    pixels and no transpose (:func:`_pixel_lanes_conv`; the result then has
    ``"lanes": "pixels"``, ``rows`` output rows x ``cols`` channels).  ``epilogue``: as in
    :func:`int8_matmul_template` (e.g. ``po.ops.requantize(Y, s, z, relu=True,
    axis=1)``: the int32 tile is requantized to uint8 in registers, never stored).
    ``target_info``: as in :func:`int8_matmul_template`."""
    info = require_instructions(target_info, "has_vnni", "AVX-512 VNNI (vpdpbusd)")
    packed = Y.op.inputs[0]
    width, block = Y.shape[3].value, Y.op.inputs[1].shape[4].value
    # a 1x1 conv without padding reads one packed row per output row: the row is packed
    # inside the loop over output rows, in the same parallel region (64x56 -> 128, 1x1
    # s2: one region instead of two per call; the row stays in L1 for the 4 blocks of
    # 32 channels)
    row_packed = (Y.op.inputs[1].shape[2].value == Y.op.inputs[1].shape[3].value == 1
                  and not any(getattr(t.op, "body", None) is not None
                              for t in packed.op.inputs))
    if cols is not None and (isinstance(cols, bool) or not isinstance(cols, int)
                             or cols < 1 or block % cols):
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"cols={cols!r}: the tile's output channels must divide "
                                   f"the weights' block of {block} (pack_conv_vnni_numpy's "
                                   f"columns), e.g. {block} or {block // 2}")
    if rows is None and cols is None and row_packed:
        tile = pixel_tile(Y.shape[2].value, width)
        if tile is not None:  # (a tile's channels in one block of the weights)
            channels = PIXEL_TILE_CHANNELS if block % PIXEL_TILE_CHANNELS == 0 else 1
            return _pixel_lanes_conv(s, Y, packed, tile, channels, parallel, epilogue)
    if rows is None or cols is None:
        rows, cols = conv_tile(width, block, rows=rows, cols=cols, info=info)
    channels_last = "{ [n, f, y, x] -> [n, y, x, f] }"
    local = s.cache_write(Y, "local", layout=channels_last)
    Y = _fused_epilogue(s, Y, epilogue)
    if epilogue is not None:  # computed on the tile channels last (vectors along the
        # channels), then copied out transposed like the int32 tile
        out_local = s.cache_write(Y, "local", layout=channels_last)
    n, f, y, x = Y.op.axis
    fo, fi = s[Y].split(f, factor=cols)
    xo, xi = s[Y].split(x, factor=rows)
    s[Y].reorder(*((n, y, fo) if row_packed else (n, fo, y)), xo, xi, fi)
    s[local].compute_at(s[Y], xo)
    if epilogue is not None:
        s[out_local].compute_at(s[Y], xo)
        on, of, oy, ox = out_local.op.axis
        s[out_local].reorder(on, oy, ox, of)
        s[out_local].vectorize(of)
    ln, lf, ly, lx = local.op.axis
    cg, ry, rx, ci = local.op.reduce_axis
    s[local].reorder(ln, ly, cg, ry, rx, lx, lf, ci)
    s[local].tensorize(lx, gemm_u8s8(rows, cols))
    # the tile (pixels x channels) goes out transposed to NCHW (channels x pixels): in
    # blocks of channels unrolled around the pixels vectorized, square blocks of 2, 4,
    # 8 or 16 (the pixels: that many, or fewer in a masked block) are transposed through
    # registers (polyopt.target.llvm.transpose; else LLVM gathers: 64x56 -> 128, 1x1 s2
    # 172 -> ... GOP/s)
    fb, fv = s[Y].split(fi, factor=_square_block(rows, cols))
    s[Y].reorder(fb, fv, xi)
    s[Y].unroll(fv)
    s[Y].vectorize(xi)
    if row_packed:
        s[packed].compute_at(s[Y], y)
        rows_loop = s[Y]._loop(s[Y]._axis(y))
    else:
        rows_loop = s[Y].fuse(fo, y)
    _schedule_packing(s, packed)
    if parallel:
        s[Y].parallel(rows_loop)
        if not row_packed:
            s[packed].parallel(s[packed].axes[0])
    return {"rows": rows, "cols": cols, "local": local, "outer": rows_loop}


PIXEL_TILE_CHANNELS = 2  # 2 channels x 112 pixels: 14 accumulators; 4 x 112 spills
MOST_TILE_PIXELS = 128    # (64x56 -> 128, 1x1 s2, one thread: 4 x 112 200 GOP/s, 2 x 112 332)


def pixel_tile(height: int, width: int) -> int | None:
    """The output rows of :func:`gemm_u8s8_nchw`'s tile for an output ``height x width``:
    the most whole rows that are whole vectors (a multiple of 16 pixels), at most
    ``MOST_TILE_PIXELS``, dividing the height; None when none fits (the pixels x
    channels tile then).

    >>> pixel_tile(28, 28), pixel_tile(56, 56), pixel_tile(14, 14), pixel_tile(8, 8)
    (4, 2, None, 8)
    """
    return next((r for r in range(height, 0, -1) if height % r == 0
                 and (r * width) % LANES == 0 and r * width <= MOST_TILE_PIXELS), None)


def _pixel_lanes_conv(s, Y, packed, rows: int, channels: int, parallel: bool,
                      epilogue) -> dict:
    """A 1x1 conv without padding (its input packed as ``[C/4, OH, OW, 4]``): for each
    block of ``rows`` output rows (the parallel loop, which packs them), tiles of
    ``channels`` output channels x ``rows`` whole rows, accumulated by
    :func:`~polyopt.tensorize.builtin.gemm_u8s8_nchw` (``vpdpbusd`` lanes along the
    pixels, weights broadcast) in an NCHW tile, so the output (or the ``epilogue``
    computed from it) is stored without a transpose (64x56 -> 128, 1x1 s2 on one
    thread, under load: int32 out 302 -> 329 GOP/s, requantized to u8 234 -> 293)."""
    local = s.cache_write(Y, "local")
    Y = _fused_epilogue(s, Y, epilogue)
    n, f, y, x = Y.op.axis
    yo, yi = s[Y].split(y, factor=rows)
    fo, fi = s[Y].split(f, factor=channels)
    s[Y].reorder(n, yo, fo, fi, yi, x)
    s[local].compute_at(s[Y], fo)
    ln, lf, ly, lx = local.op.axis
    cg, ry, rx, ci = local.op.reduce_axis
    s[local].reorder(ln, cg, ry, rx, lf, ly, lx, ci)
    s[local].tensorize(lf, gemm_u8s8_nchw(channels, rows, Y.shape[3].value))
    s[Y].vectorize(s[Y].fuse(yi, x))  # the tile's pixels, contiguous: whole vectors
    # (vectors of a row of 28 are 16 + 8 + 4 scalars: requantized 205 -> 293 GOP/s)
    s[packed].compute_at(s[Y], yo)
    _schedule_packing(s, packed)
    rows_loop = s[Y]._loop(s[Y]._axis(yo))
    if parallel:
        s[Y].parallel(rows_loop)
    return {"rows": rows, "cols": channels, "local": local, "outer": rows_loop,
            "lanes": "pixels"}


def conv_tile(width: int, block: int, *, rows: int | None = None, cols: int | None = None,
              info=None) -> tuple[int, int]:
    """The ``(rows, cols)`` register tile of :func:`int8_conv2d_template` for an output
    ``width`` and weights packed in blocks of ``block`` channels: at most half the vector
    registers of ``info`` (the host's) as ``rows * cols / 16`` accumulators (the other
    half holds the weights and broadcasts of LLVM's unrolled taps), ``rows`` dividing
    ``width`` (no partial tile), ``cols`` a multiple of 16 dividing ``block`` and of at
    least 2 vectors when the block allows; the most ``rows`` first (each weight vector
    streamed from the caches serves that many pixels, and the tile goes out in wider
    transposed blocks: one thread, 64x56 layer 353 -> 370 GOP/s with 8 x 32 over 4 x 64,
    strided 1x1 241 -> 284 with 7 x 32), then the widest ``cols``.  A given ``rows`` or
    ``cols`` is kept.

    >>> avx512 = TargetInfo(vector_bits=512, vector_registers=32)
    >>> conv_tile(56, 64, info=avx512), conv_tile(14, 64, info=avx512)
    ((8, 32), (7, 32))
    """
    info = info or TargetInfo.host()
    budget = max(1, info.vector_registers // 2)
    widths = [cols] if cols is not None else [
        c for c in range(block, LANES - 1, -LANES)
        if block % c == 0 and (c >= 2 * LANES or block < 2 * LANES)] or [block]
    candidates = []
    for c in widths:
        vectors = max(1, c // LANES)
        heights = [rows] if rows is not None else [
            r for r in range(max(1, budget // vectors), 0, -1) if width % r == 0]
        candidates += [(heights[0], c, heights[0] * vectors)] if heights else []
    if not candidates:
        return rows or 1, cols or block
    fits = [t for t in candidates if t[2] <= budget] or [min(candidates, key=lambda t: t[2])]
    rows, cols, _ = max(fits, key=lambda t: (t[0], t[1]))
    return rows, cols
