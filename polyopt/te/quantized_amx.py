"""The int8 convolution in the shape AMX tiles take (``po.ops.conv2d_u8s8_wide``).

A tile row is 64 contiguous bytes of one pixel: 64 input channels.  The input is packed
channels last and zero padded (``<name>_packed[pixel, C]``, pixels of the padded image
in row-major order), and the accumulator is computed on the *wide* output: one row per
pixel ``q = y * Wp + x`` of the padded width ``Wp`` (``<name>_acc[Q, F]``, int32, ``Q``
``OH * Wp`` rounded up to whole blocks of 32 pixels, so no block is partial),
so that for each kernel tap (the outer reduction loops; the channels inner) the 16 pixels of a tile are 16 consecutive packed pixels
(one constant row stride, across output rows too).  The ``Wp - OW`` columns past each
output row are computed and never read: the result ``Y[1, F, OH, OW]`` (int32, NCHW)
reads the valid ones.  Weights as :func:`~polyopt.te.quantized.pack_conv_vnni_numpy`
packs them (``Wp[F/cb, C/4, R, S, cb, 4]``).  Stride 1, or a 1x1 conv of any stride
without padding (only the points read are packed).

>>> import polyopt as po
>>> X = po.placeholder((1, 64, 6, 6), name="X", dtype="uint8")
>>> W = po.placeholder((1, 16, 3, 3, 64, 4), name="W", dtype="int8")
>>> Y = conv2d_u8s8_wide(X, W, padding=1, name="Y")
>>> [int(e.value) for e in Y.shape], [int(e.value) for e in Y.op.inputs[0].shape]
([1, 64, 6, 6], [64, 64])
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, public
from .quantized import VNNI_GROUP, _check, _int
from .tensor import Tensor, compute, if_then_else, reduce_axis, reduce_sum

WIDE_BLOCK = 32  # the wide accumulator's rows come in blocks of 2 AMX tiles


@public
def conv2d_u8s8_wide(data: Tensor, Wp: Tensor, *, stride: int = 1, padding: int = 0,
                     pad_value: int = 0, name: str = "conv") -> Tensor:
    """int8 NCHW convolution (batch 1) through a channels-last packed input and a wide
    accumulator (see the module): ``data[1, C, H, W]`` uint8 (C a multiple of 4),
    weights packed by ``pack_conv_vnni_numpy``, int32 output ``[1, F, OH, OW]``;
    ``pad_value`` (0 to 255) fills the padding.  What
    :func:`~polyopt.schedules.amx_conv.amx_conv2d_template` schedules on AMX tiles."""
    _check(data, "uint8", 4, "data")
    _check(Wp, "int8", 6, "Wp (packed by pack_conv_vnni_numpy)")
    n, c, h, w = (_int(e) for e in data.shape)
    blocks, groups, r, s, cb = (_int(e) for e in Wp.shape[:5])
    if n != 1 or c != groups * VNNI_GROUP:
        raise InvalidArgumentError(f"conv2d_u8s8_wide takes batch 1 and weights packed for "
                                   f"its {c} channels, a multiple of 4 (got batch {n}, "
                                   f"{groups * VNNI_GROUP} channels)")
    if isinstance(pad_value, bool) or not isinstance(pad_value, int) or not 0 <= pad_value <= 255:
        raise InvalidArgumentError(f"pad_value must be a uint8 value (0 to 255), got "
                                   f"{pad_value!r}")
    for what, value in (("stride", stride), ("padding", padding)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (what == "stride"):
            raise InvalidArgumentError(f"{what} must be an int >= {int(what == 'stride')}, "
                                       f"got {value!r}")
    p = padding
    oh, ow = (h + 2 * p - r) // stride + 1, (w + 2 * p - s) // stride + 1
    if stride > 1 and not (r == s == 1 and p == 0):
        raise InvalidArgumentError("conv2d_u8s8_wide takes stride 1, or a 1x1 conv without "
                                   "padding of any stride; use conv2d_u8s8_nchw")
    if stride > 1:  # a strided 1x1: the points read, packed as an image of the output
        width, image, (src_h, src_w), p = ow, oh * ow, (oh, ow), 0
    else:
        width, image, (src_h, src_w) = w + 2 * p, (h + 2 * p) * (w + 2 * p), (h, w)
    # the wide accumulator's rows, whole blocks of WIDE_BLOCK pixels (no partial block),
    # and the packed pixels its last taps touch past the image (pad_value)
    acc_rows = -(-oh * width // WIDE_BLOCK) * WIDE_BLOCK
    pixels = acc_rows + (r - 1) * width + s - 1

    def value(q, k):
        y, x = q // width - p, q % width - p
        inside = (y >= 0) & (y < src_h) & (x >= 0) & (x < src_w) & (q < image)
        return if_then_else(inside, data[0, k, y * stride, x * stride], pad_value)

    packed = compute((pixels, c), value, name=f"{name}_packed")
    cg = reduce_axis((0, groups), name="cg")
    ry = reduce_axis((0, r), name="ry")
    rx = reduce_axis((0, s), name="rx")
    ci = reduce_axis((0, VNNI_GROUP), name="ci")
    acc = compute((acc_rows, blocks * cb), lambda q, f: reduce_sum(
        packed[q + ry * width + rx, VNNI_GROUP * cg + ci].astype("int32")
        * Wp[f // cb, cg, ry, rx, f % cb, ci].astype("int32"), axis=[ry, rx, cg, ci]),
        name=f"{name}_acc")
    return compute((1, blocks * cb, oh, ow), lambda b, f, y, x: acc[y * width + x, f],
                   name=name)
