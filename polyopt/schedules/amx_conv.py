"""int8 convolutions on AMX tiles: :func:`amx_conv2d_template` schedules
``po.ops.conv2d_u8s8_wide`` (a channels-last packed input, a wide accumulator: see
:mod:`polyopt.te.quantized_amx`) with
:func:`~polyopt.tensorize.builtin_amx.amx_gemm_int8` blocks of 16-pixel x 16-channel
int32 tiles.

>>> import polyopt as po
>>> X = po.placeholder((1, 64, 8, 8), name="X", dtype="uint8")
>>> W = po.placeholder((1, 16, 3, 3, 64, 4), name="W", dtype="int8")
>>> Y = po.ops.conv2d_u8s8_wide(X, W, padding=1, name="Y")
>>> s = po.create_schedule(Y)
>>> spr = po.TargetInfo.for_cpu("sapphirerapids")
>>> amx_conv2d_template(s, Y, target_info=spr)["intrinsic"]
'amx_conv_int8_2x2x1_3x3_w10'
"""

from __future__ import annotations

from ..errors import InvalidArgumentError
from ..machine import AMX_TILE_ROWS, TargetInfo
from .tensorized import _fused_epilogue, require_instructions

MOST_KSTEPS = 8  # tiles of input channels per call (512 channels)


def amx_conv_fits(Y) -> bool:
    """Whether ``Y = conv2d_u8s8_wide(X, Wp)`` has AMX's shapes: input channels in whole
    tiles (a multiple of 64) and the weights' blocks of output channels a multiple of
    16."""
    weights = Y.op.inputs[0].op.inputs[1]
    groups, block = (int(getattr(e, "value", e)) for e in (weights.shape[1], weights.shape[4]))
    return groups % AMX_TILE_ROWS == 0 and block % 16 == 0


def _wide_width(packed, acc, weights) -> int:
    """The padded width of a wide accumulator: its packed input holds its rows, then
    ``(R - 1) * width + S - 1`` pixels."""
    r, s = int(weights.shape[2].value), int(weights.shape[3].value)
    extra = packed.shape[0].value - acc.shape[0].value - (s - 1)
    return extra // (r - 1) if r > 1 else max(s, 1)


def amx_conv2d_template(s, Y, *, parallel: bool = True, epilogue=None,
                        target_info: TargetInfo | None = None) -> dict:
    """``Y = po.ops.conv2d_u8s8_wide(X, Wp, ...)`` on AMX tiles: the wide accumulator
    (``<name>_acc[OH * Wp, F]``) in blocks of 32 pixels x 32 channels (2 x 2 tiles;
    16 channels where the weights' block is 16), each a ``cache_write`` buffer
    computed by one :func:`~polyopt.tensorize.builtin_amx.amx_conv_int8` call over
    every tap and input channel (zeroed and kept in tile registers, stored once) where
    the channels are at most ``MOST_KSTEPS`` x 64, else updated per tap and block of
    channels by :func:`~polyopt.tensorize.builtin_amx.amx_gemm_int8`; the blocks of
    pixels run in parallel, the last partial block as scalar code.  ``Y`` (NCHW, the
    valid columns of the accumulator) or the ``epilogue`` computed from it (e.g.
    ``po.ops.requantize(Y, ..., axis=1)``) is written by a vectorized loop.  A machine
    without AMX-INT8 is refused (``MissingInstructionsError``)."""
    info = require_instructions(target_info, "has_amx_int8", "AMX-INT8 (tdpbusd)")
    acc = Y.op.inputs[0]
    out = _fused_epilogue(s, Y, epilogue)
    return schedule_wide_conv(s, acc, out, parallel=parallel, info=info)


def schedule_wide_conv(s, acc, out, *, parallel: bool, info: TargetInfo) -> dict:
    """The schedule of :func:`amx_conv2d_template` given the wide accumulator ``acc``
    and the NCHW tensor ``out`` computed from it (the conv's result with it inlined, or
    an epilogue: the graph layer's fused group)."""
    from ..tensorize.builtin_amx import amx_conv_int8, amx_gemm_int8

    packed, weights = acc.op.inputs
    groups, block = int(weights.shape[1].value), int(weights.shape[4].value)
    if groups % AMX_TILE_ROWS or block % 16 or acc.shape[0].value < AMX_TILE_ROWS:
        raise InvalidArgumentError(
            f"'{acc.name}' does not fit AMX tiles: its input channels must be a multiple "
            f"of 64, its weights packed in blocks of 16, 32 or 64 output channels and "
            f"its output at least 16 pixels (of the padded width)")
    tiles = groups // AMX_TILE_ROWS
    tiles_n = 2 if block % 32 == 0 else 1
    tiles_m = 2 if acc.shape[0].value >= 2 * AMX_TILE_ROWS else 1
    rows, cols = AMX_TILE_ROWS * tiles_m, 16 * tiles_n
    kernel = (int(weights.shape[2].value), int(weights.shape[3].value))
    width = _wide_width(packed, acc, weights)
    local = s.cache_write(acc, "local")
    q, f = acc.op.axis
    qo, fo, qi, fi = s[acc].tile(q, f, rows, cols)
    s[local].compute_at(s[acc], fo)
    lq, lf = local.op.axis
    ry, rx, cg, ci = local.op.reduce_axis
    if tiles <= MOST_KSTEPS:  # every tap and channel in one call: the accumulators
        # zeroed and kept in tile registers to the end, stored once
        intrinsic = amx_conv_int8(tiles_m, tiles_n, tiles, kernel, width)
        s[local].reorder(lq, lf, ry, rx, cg, ci)
    else:  # per tap and block of MOST_KSTEPS x 64 channels (loaded and stored each)
        ksteps = next(k for k in range(MOST_KSTEPS, 0, -1) if tiles % k == 0)
        intrinsic = amx_gemm_int8(tiles_m, tiles_n, ksteps, "uint8", "int8")
        cgo, cgi = s[local].split(cg, factor=AMX_TILE_ROWS * ksteps)
        s[local].reorder(ry, rx, cgo, lq, lf, cgi, ci)
    s[local].tensorize(lq, intrinsic)
    s[acc].vectorize(fi)
    s[out].vectorize(out.op.axis[3])
    s[packed].vectorize(s[packed].op.axis[1])
    if parallel:
        s[acc].parallel(qo)
        s[out].parallel(out.op.axis[1])
        s[packed].parallel(s[packed].op.axis[0])
    return {"rows": rows, "cols": cols, "local": local, "unit": "amx",
            "intrinsic": intrinsic.name}
