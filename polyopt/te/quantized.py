"""Quantized operators (``po.ops``): int8 matrix products and convolutions with int32
accumulation in the VNNI weight layout, and requantization epilogues.

The VNNI layout groups 4 consecutive reduction elements per output column:
``W[k, n]`` is stored as ``Wp[k // 4, n, k % 4]`` (``pack_vnni``), so that one
``vpdpbusd`` multiplies 4 uint8 activations with the 4 int8 weights of each of 16
columns.  Pack weights once, ahead of time (:func:`pack_vnni_numpy`).

>>> import polyopt as po
>>> A = po.placeholder((6, 8), name="A", dtype="uint8")
>>> W = po.placeholder((2, 16, 4), name="W", dtype="int8")
>>> C = po.ops.matmul_u8s8(A, W)
>>> C.shape, C.dtype
((<Const 6>, <Const 16>), 'int32')
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, public
from .tensor import (Tensor, compute, if_then_else, maximum, minimum, reduce_axis,
                     reduce_sum)

VNNI_GROUP = 4


@public
def pack_vnni_numpy(weight: np.ndarray, *, columns: int = 1, blocked: bool = False,
                    group: int = VNNI_GROUP) -> np.ndarray:
    """``W[K, N]`` int8 -> ``Wp[ceil(K/4), N', 4]`` (zeros where K or N is padded; N is
    padded to a multiple of ``columns``; ``group=2`` for bfloat16 pairs); ``blocked``:
    ``Wp[N'/columns, ceil(K/4), columns, 4]``, each block of columns contiguous (what a
    register tile of that width streams through, without the conflicts of a long row).

    >>> pack_vnni_numpy(np.arange(8, dtype=np.int8).reshape(4, 2))[0].tolist()
    [[0, 2, 4, 6], [1, 3, 5, 7]]
    """
    weight = np.asarray(weight)
    if weight.ndim != 2:
        raise InvalidArgumentError(f"pack_vnni_numpy takes a 2-D [K, N] array, got shape "
                                   f"{weight.shape}")
    k, n = weight.shape
    groups = -(-k // group)
    padded_n = -(-n // columns) * columns
    out = np.zeros((groups * group, padded_n), weight.dtype)
    out[:k, :n] = weight
    packed = out.reshape(groups, group, padded_n).transpose(0, 2, 1)
    if blocked:
        packed = packed.reshape(groups, padded_n // columns, columns, group
                                ).transpose(1, 0, 2, 3)
    return np.ascontiguousarray(packed)


@public
def matmul_u8s8(A: Tensor, Wp: Tensor, name: str = "C") -> Tensor:
    """``C[i, j] (int32) = sum_k A[i, k] (uint8) * W[k, j] (int8)`` with the weights in the
    VNNI layout ``Wp[K/4, N, 4]``, or blocked by columns ``Wp[N/cb, K/4, cb, 4]``
    (:func:`pack_vnni_numpy`); A's width is ``4 * (K/4)`` (pad K with zeros)."""
    _check(A, "uint8", 2, "A")
    return _grouped_matmul(A, Wp, "int8", VNNI_GROUP, "int32", name)


@public
def matmul_bf16(A: Tensor, Wp: Tensor, name: str = "C") -> Tensor:
    """``C[i, j] (float32) = sum_k A[i, k] * W[k, j]``, both bfloat16 (converted exactly
    to float32), the weights in pairs ``Wp[K/2, N, 2]`` or ``Wp[N/cb, K/2, cb, 2]``
    (``pack_vnni_numpy(to_bfloat16_bits(w), group=2, ...)``)."""
    _check(A, "bfloat16", 2, "A")
    return _grouped_matmul(A, Wp, "bfloat16", 2, "float32", name)


def _grouped_matmul(A: Tensor, Wp: Tensor, dtype: str, group: int, out: str, name: str):
    if Wp.dtype != dtype or Wp.ndim not in (3, 4):
        raise InvalidArgumentError(f"Wp must be a 3-D or 4-D {dtype} tensor (pack_vnni_numpy), "
                                   f"got {Wp.ndim}-D {Wp.dtype}")
    blocked = Wp.ndim == 4
    groups = Wp.shape[1] if blocked else Wp.shape[0]
    ko = reduce_axis((0, groups), name="ko")
    ki = reduce_axis((0, group), name="ki")
    if blocked:
        block = _int(Wp.shape[2])
        width = _plus_mul(Wp.shape[0], block)
        return compute((A.shape[0], width), lambda i, j: reduce_sum(
            A[i, group * ko + ki].astype(out)
            * Wp[j // block, ko, j % block, ki].astype(out), axis=[ko, ki]), name=name)
    return compute((A.shape[0], Wp.shape[1]), lambda i, j: reduce_sum(
        A[i, group * ko + ki].astype(out) * Wp[ko, j, ki].astype(out),
        axis=[ko, ki]), name=name)


def _plus_mul(extent, factor: int):
    value = getattr(extent, "value", extent)
    return value * factor if isinstance(value, int) else extent * factor


@public
def pack_conv_vnni_numpy(weight: np.ndarray, *, columns: int = 64) -> np.ndarray:
    """Conv weights ``W[F, C, R, S]`` int8 -> ``Wp[F/cols, C/4, R, S, cols, 4]``: for each
    block of ``columns`` output channels and each kernel tap, the 4 input channels of a
    group next to each other (the VNNI layout), blocks contiguous.  F must be a multiple
    of ``columns`` and C of 4."""
    weight = np.asarray(weight)
    f, c, r, s = weight.shape
    if f % columns or c % VNNI_GROUP:
        raise InvalidArgumentError(f"pack_conv_vnni_numpy: {f} output channels must be a "
                                   f"multiple of {columns} and {c} input channels of 4")
    blocked = weight.reshape(f // columns, columns, c // VNNI_GROUP, VNNI_GROUP, r, s)
    return np.ascontiguousarray(blocked.transpose(0, 2, 4, 5, 1, 3))


@public
def conv2d_u8s8_nchw(data: Tensor, Wp: Tensor, *, stride: int = 1, padding: int = 0,
                     pad_value: int = 0, name: str = "conv") -> Tensor:
    """int8 NCHW convolution (batch 1): ``data[1, C, H, W]`` uint8, weights packed once by
    :func:`pack_conv_vnni_numpy` (``Wp[F/cb, C/4, R, S, cb, 4]`` int8), int32 output
    ``[1, F, OH, OW]``.  The input is first copied, zero padded, into groups of 4
    channels (``<name>_packed[C/4, H + 2p, W + 2p, 4]``), so that the 4 activations one
    ``vpdpbusd`` lane multiplies are contiguous; with padding (or a ragged last group),
    through ``<name>_padded[4 * (C/4), H + 2p, W + 2p]`` (NCHW, padded), so that both
    copies are plain vector loops (:func:`~polyopt.schedules.tensorized.int8_conv2d_template`
    computes it per group of 4 channels, or inlines it).  ``pad_value`` (0 to 255) fills the
    padding: a quantized graph pads with the input's zero point.  C need not be a
    multiple of 4: weights packed for the next multiple (zeros in the missing channels,
    e.g. an RGB input's first layer) read ``pad_value`` there."""
    _check(data, "uint8", 4, "data")
    _check(Wp, "int8", 6, "Wp (packed by pack_conv_vnni_numpy)")
    n, c, h, w = (_int(e) for e in data.shape)
    blocks, groups, r, s, cb = (_int(e) for e in Wp.shape[:5])
    if n != 1 or not c <= groups * VNNI_GROUP < c + VNNI_GROUP:
        raise InvalidArgumentError(f"conv2d_u8s8_nchw takes batch 1 and weights packed for "
                                   f"{c} channels (got batch {n}, {groups * VNNI_GROUP})")
    ragged = c % VNNI_GROUP != 0  # the last group's missing channels read pad_value
    if isinstance(pad_value, bool) or not isinstance(pad_value, int) or not 0 <= pad_value <= 255:
        raise InvalidArgumentError(f"pad_value must be a uint8 value (0 to 255), got "
                                   f"{pad_value!r}")
    p = padding
    oh, ow = (h + 2 * p - r) // stride + 1, (w + 2 * p - s) // stride + 1
    if r == s == 1 and p == 0 and stride > 1:  # a strided 1x1: pack only the points read
        packed = compute((groups, oh, ow, VNNI_GROUP), lambda g, y, x, t: if_then_else(
                         VNNI_GROUP * g + t < c, data[0, VNNI_GROUP * g + t, y * stride,
                                                      x * stride], pad_value)
                         if ragged else data[0, VNNI_GROUP * g + t, y * stride, x * stride],
                         name=f"{name}_packed")
        stride = 1
    elif p == 0 and not ragged:
        packed = compute((groups, h, w, VNNI_GROUP), lambda g, y, x, t:
                         data[0, VNNI_GROUP * g + t, y, x], name=f"{name}_packed")
    else:  # padded first, channel by channel (contiguous rows), then grouped
        padded = compute((groups * VNNI_GROUP, h + 2 * p, w + 2 * p), lambda k, y, x:
                         if_then_else((y >= p) & (y < h + p) & (x >= p) & (x < w + p)
                                      & (k < c) if ragged else
                                      (y >= p) & (y < h + p) & (x >= p) & (x < w + p),
                                      data[0, k, y - p, x - p], pad_value),
                         name=f"{name}_padded")
        packed = compute((groups, h + 2 * p, w + 2 * p, VNNI_GROUP), lambda g, y, x, t:
                         padded[VNNI_GROUP * g + t, y, x], name=f"{name}_packed")
    cg = reduce_axis((0, groups), name="cg")
    ry = reduce_axis((0, r), name="ry")
    rx = reduce_axis((0, s), name="rx")
    ci = reduce_axis((0, VNNI_GROUP), name="ci")
    return compute((1, blocks * cb, oh, ow), lambda b, f, y, x: reduce_sum(
        packed[cg, y * stride + ry, x * stride + rx, ci].astype("int32")
        * Wp[f // cb, cg, ry, rx, f % cb, ci].astype("int32"), axis=[cg, ry, rx, ci]),
        name=name)


@public
def requantize(acc: Tensor, scale: float, zero_point: int = 0, *, dtype: str = "uint8",
               relu: bool = False, bias: Tensor | None = None, axis: int = -1,
               rounding: str = "even", name: str = "requant") -> Tensor:
    """``clip(round(acc * scale) + zero_point)`` to uint8/int8 (``relu``: clip at the
    zero point from below); ``bias[c]`` (int32) is added to ``acc`` first, ``c`` the
    index of dimension ``axis`` (the columns of a matmul; ``axis=1`` for the channels
    of an NCHW conv).  ``acc * scale`` is computed in float32.  ``rounding="even"``
    (the default, ONNX's ``QuantizeLinear`` semantics): to nearest, ties to even, as
    onnxruntime's ``QLinearConv`` and PyTorch's quantization (pass ``scale`` as
    onnxruntime's float32 ``x_scale * w_scale / y_scale`` for its results, bit for
    bit); ``"away"``: to nearest, ties away from zero (``floor(x + 0.5)`` on the
    magnitude, in float32; TFLite's reference kernels).

    >>> import polyopt as po
    >>> A = po.placeholder((4,), name="A", dtype="int32")
    >>> Q = po.ops.requantize(A, 0.5, 10)
    >>> f = po.build(po.create_schedule(Q), [A, Q])
    >>> q = np.zeros(4, np.uint8); f(np.array([1, 3, -5, 1000], np.int32), q); q.tolist()
    [10, 12, 8, 255]
    >>> Q = po.ops.requantize(A, 0.5, 10, rounding="away")
    >>> f = po.build(po.create_schedule(Q), [A, Q])
    >>> f(np.array([1, 3, -5, 1000], np.int32), q); q.tolist()
    [11, 12, 7, 255]
    """
    lo, hi = {"uint8": (0, 255), "int8": (-128, 127)}.get(dtype, (None, None))
    if lo is None:
        raise InvalidArgumentError(f"requantize produces uint8 or int8, not {dtype!r}")
    if isinstance(axis, bool) or not isinstance(axis, int) or not -acc.ndim <= axis < acc.ndim:
        raise InvalidArgumentError(f"requantize: axis must be an int in [{-acc.ndim}, "
                                   f"{acc.ndim}), got {axis!r}")
    if rounding not in ("away", "even"):
        raise InvalidArgumentError(f"requantize: rounding must be 'away' (ties away from "
                                   f"zero) or 'even' (ties to even), got {rounding!r}")
    if relu:
        lo = max(lo, zero_point)

    def value(*index):
        total = acc[index]
        if bias is not None:
            total = total + bias[index[axis]]
        scaled = total.astype("float32") * float(scale)
        if rounding == "even":
            return _rounded_even_plus(scaled, zero_point, lo, dtype)
        rounded = if_then_else(scaled >= 0, (scaled + 0.5).astype("int32"),
                               (scaled - 0.5).astype("int32"))
        return maximum(minimum(rounded + zero_point, hi), lo).astype(dtype)

    return compute(acc.shape, value, name=name)


# 1.5 * 2^23: float32 numbers from 2^23 to 2^24 are the integers, so ``(v + M) - M`` is
# ``v`` rounded to the nearest integer, ties to even, for |v| < 2^22 (and keeps the sign
# of larger ones, which saturate anyway)
ROUNDING_MAGIC = 12582912.0


def _rounded_even_plus(scaled, zero_point: int, lo: int, dtype: str):
    """``clip(round_half_even(scaled) + zero_point, lo, dtype's top)`` as ``dtype``, all
    in float32 up to the one saturating conversion to ``dtype`` (which clips): an even
    ``zero_point`` joins the magic number (an even shift keeps ties even), an odd one
    is added after the rounding (exact on integers)."""
    even = zero_point % 2 == 0
    shift = ROUNDING_MAGIC + (zero_point if even else 0)
    q = (scaled + shift) - ROUNDING_MAGIC
    if not even:
        q = q + float(zero_point)
    floor = {"uint8": 0, "int8": -128}[dtype]
    if lo > floor:  # relu: the zero point from below (the conversion clips the rest)
        q = if_then_else(q > float(lo), q, float(lo))
    return q.astype(dtype)


def _check(tensor: Tensor, dtype: str, ndim: int, what: str) -> None:
    if tensor.dtype != dtype or tensor.ndim != ndim:
        raise InvalidArgumentError(f"{what} must be a {ndim}-D {dtype} tensor, got "
                                   f"{tensor.ndim}-D {tensor.dtype}")


def _int(extent) -> int:
    value = getattr(extent, "value", extent)
    if not isinstance(value, int):
        raise InvalidArgumentError(f"conv2d_u8s8_nchw needs constant sizes, got {extent}")
    return value
