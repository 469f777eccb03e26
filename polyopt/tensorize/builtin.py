"""Ready intrinsic declarations for this CPU family (AVX-512 with VNNI and BF16).

Each function returns a :class:`~polyopt.tensorize.intrin.TensorIntrin` whose
implementation is a named LLVM emitter of :mod:`polyopt.target.llvm.intrinsics`:

* :func:`dot_16x4_u8s8`: ``vpdpbusd``, 16 int32 lanes each accumulating a dot product of
  4 uint8 x 4 int8 (``c[i] += sum_k a[k] * b[i, k]``);
* :func:`gemm_u8s8`: a ``rows x cols`` register tile of ``vpdpbusd`` over one group of 4
  (``c[r, j] += sum_t a[r, t] * b[j, t]``, b in the VNNI layout ``[j, t]``);
* :func:`gemm_u8s8_nchw`: ``vpdpbusd`` with its lanes along pixels, for outputs stored
  channels first (``c[j, y, x] += sum_t a[y, x, t] * b[j, t]``: the pixels' 4 channels
  loaded as one vector, each output channel's 4 weights broadcast);
* :func:`gemm_f32_rows`: fp32 FMA micro-kernel rows (``c[r, j] += a[r, 0] * b[0, j]``).

Integer results equal the scalar code bit for bit (vpdpbusd's int32 sums wrap like the
scalar int32 additions; the products of u8 x s8 fit in 16 bits with no saturation).

>>> intrin = gemm_u8s8(rows=2, cols=32)
>>> intrin.output.shape, [b.shape for b in intrin.inputs]
((2, 32), [(2, 4), (32, 4)])
"""

from __future__ import annotations

import ast
import functools

from ..errors import InvalidArgumentError, public
from ..machine import TargetInfo
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum, var
from .intrin import LLVMEmitter, decl_buffer, decl_tensor_intrin


def _emitters(name: str, **params):
    """(body, reset, update) of the named LLVM emitter (``params`` parameterize it)."""
    def make(part):
        return LLVMEmitter(None, name, part, tuple(sorted(params.items())))
    return make("body"), make("reset"), make("update")


@functools.cache
def dot_16x4_u8s8():
    """``c[16] int32 += sum_{k<4} a[k] (uint8) * b[i, k] (int8)``: one ``vpdpbusd``."""
    a = placeholder((4,), name="a", dtype="uint8")
    b = placeholder((16, 4), name="b", dtype="int8")
    k = reduce_axis((0, 4), name="k")
    c = compute((16,), lambda i: reduce_sum(a[k].astype("int32") * b[i, k].astype("int32"),
                                            axis=k), name="c")
    return decl_tensor_intrin(c.op, lambda ins, outs: _emitters("vnni_gemm", rows=1, cols=16),
                              name="dot_16x4_u8s8", key="dot_16x4_u8s8()")


def _dot_tile(kind: str, rows: int, cols: int, group: int, in_dtype: tuple, acc: str,
              emitter: str):
    """The intrinsic ``c[rows, cols] += sum over t < group of a[r, t] * b[j, t]`` (b dense,
    a and c with a row stride), implemented by ``emitter``; shared by the dot-product
    instructions."""
    _check_tile(rows, cols)
    a = placeholder((rows, group), name="a", dtype=in_dtype[0])
    b = placeholder((cols, group), name="b", dtype=in_dtype[1])
    t = reduce_axis((0, group), name="t")
    c = compute((rows, cols), lambda r, j: reduce_sum(
        a[r, t].astype(acc) * b[j, t].astype(acc), axis=t), name="c")
    binds = {a: decl_buffer((rows, group), in_dtype[0], "a", strides=[var("lda"), 1]),
             c: decl_buffer((rows, cols), acc, "c", strides=[var("ldc"), 1])}
    return decl_tensor_intrin(c.op, lambda ins, outs: _emitters(emitter, rows=rows,
                                                                cols=cols),
                              binds=binds, name=f"{kind}_{rows}x{cols}",
                              key=f"{kind}(rows={rows}, cols={cols})")


@public
@functools.cache
def gemm_u8s8(rows: int = 6, cols: int = 64):
    """A ``rows x cols`` int32 tile += a[rows, 4] (uint8, any row stride) x b[cols, 4]
    (int8, dense: the VNNI layout of 4 consecutive k per column): ``rows * cols / 16``
    ``vpdpbusd``.

    >>> gemm_u8s8(6, 64).name
    'gemm_u8s8_6x64'
    """
    return _dot_tile("gemm_u8s8", rows, cols, 4, ("uint8", "int8"), "int32", "vnni_gemm")


@public
@functools.cache
def gemm_u8s8_nchw(channels: int = 4, rows: int = 4, width: int = 28):
    """``c[j, y, x] (int32) += sum_{t<4} a[y, x, t] (uint8) * b[j, t] (int8)`` for a tile
    of ``channels`` output channels x ``rows * width`` pixels: the lanes of each
    ``vpdpbusd`` run along the pixels (16 of them, their 4 input channels one 64-byte
    vector of ``a``, dense), each channel's 4 weights are broadcast, and each channel's
    pixels are contiguous in ``c`` (rows of ``width``, any channel stride), so an NCHW
    output needs no transpose.  ``rows * width`` must be a multiple of 16;
    ``channels * rows * width / 16`` accumulators.

    >>> gemm_u8s8_nchw(4, 4, 28).name
    'gemm_u8s8_nchw_4x4x28'
    """
    _positive_ints(channels=channels, rows=rows, width=width)
    pixels = rows * width
    if pixels % LANES:
        raise InvalidArgumentError(f"rows * width ({rows} x {width}) must be a multiple of "
                                   f"{LANES} (the pixels of whole vectors)")
    _check_accumulators(channels * pixels // LANES, f"a tile of {channels} channels x "
                        f"{pixels} pixels")
    a = placeholder((rows, width, 4), name="a", dtype="uint8")
    b = placeholder((channels, 4), name="b", dtype="int8")
    t = reduce_axis((0, 4), name="t")
    c = compute((channels, rows, width), lambda j, y, x: reduce_sum(
        a[y, x, t].astype("int32") * b[j, t].astype("int32"), axis=t), name="c")
    binds = {b: decl_buffer((channels, 4), "int8", "b", strides=[var("ldb"), 1]),
             c: decl_buffer((channels, rows, width), "int32", "c",
                            strides=[var("ldc"), width, 1])}
    return decl_tensor_intrin(
        c.op, lambda ins, outs: _emitters("vnni_pixels", channels=channels, pixels=pixels),
        binds=binds, name=f"gemm_u8s8_nchw_{channels}x{rows}x{width}",
        key=f"gemm_u8s8_nchw(channels={channels}, rows={rows}, width={width})")


@public
@functools.cache
def gemm_bf16(rows: int = 6, cols: int = 64):
    """A ``rows x cols`` float32 tile += a[rows, 2] x b[cols, 2] (bfloat16 pairs, b dense):
    ``rows * cols / 16`` ``vdpbf16ps``.  Rounding: the instruction multiplies the pairs
    and adds them to the accumulator in float32 with round-to-nearest-even (and flushes
    denormals), so sums differ from the scalar code's order by float32 rounding only."""
    return _dot_tile("gemm_bf16", rows, cols, 2, ("bfloat16", "bfloat16"), "float32",
                     "dpbf16_gemm")


@public
@functools.cache
def gemm_f32_rows(rows: int = 6, cols: int = 64):
    """fp32 FMA rows: ``c[r, j] += a[r, 0] * b[0, j]`` for a ``rows x cols`` tile."""
    _check_tile(rows, cols)
    a = placeholder((rows, 1), name="a")
    b = placeholder((1, cols), name="b")
    t = reduce_axis((0, 1), name="t")
    c = compute((rows, cols), lambda r, j: reduce_sum(a[r, t] * b[t, j], axis=t), name="c")
    binds = {a: decl_buffer((rows, 1), "float32", "a", strides=[var("lda"), 1]),
             b: decl_buffer((1, cols), "float32", "b", strides=[var("ldb"), 1]),
             c: decl_buffer((rows, cols), "float32", "c", strides=[var("ldc"), 1])}
    return decl_tensor_intrin(c.op, lambda ins, outs: _emitters("fma_rows", rows=rows,
                                                                cols=cols),
                              binds=binds, name=f"gemm_f32_rows_{rows}x{cols}",
                              key=f"gemm_f32_rows(rows={rows}, cols={cols})")


LANES = 16  # 32-bit lanes of the AVX-512 vectors the emitters write
# the machine the emitters write code for, whatever CPU builds it: AVX-512, 32 registers
EMITTED_FOR = TargetInfo.for_cpu("x86-64-v4")


def accumulator_budget(info=None) -> int:
    """How many vector registers a register tile may hold as accumulators on ``info``
    (a :class:`~polyopt.machine.TargetInfo`; by default ``EMITTED_FOR``, the AVX-512
    machine the built-in emitters write for): all but 4, for the loaded and broadcast
    operands (32 on AVX-512 -> 28)."""
    info = info or EMITTED_FOR
    return max(1, info.vector_registers - 4)


def max_tile_rows(cols: int, info=None) -> int:
    """The most rows a ``rows x cols`` int32/float32 tile may have on ``info``."""
    return max(1, accumulator_budget(info) // max(1, cols // LANES))


def _positive_ints(**values) -> None:
    for what, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{what} must be a positive int, got {value!r}")


def _check_tile(rows, cols) -> None:
    _positive_ints(rows=rows, cols=cols)
    if cols % LANES:
        raise InvalidArgumentError(f"cols must be a multiple of {LANES} (one AVX-512 vector "
                                   f"of 32-bit lanes), got {cols}")
    _check_accumulators(rows * cols // LANES, f"a {rows} x {cols} tile",
                        f": at most {max_tile_rows(cols)} rows of {cols}")


def _check_accumulators(count: int, tile: str, hint: str = "") -> None:
    """Refuse a tile whose ``count`` accumulators do not fit in the registers of the
    AVX-512 code the emitters write (the same on every CPU that can run it)."""
    if count > accumulator_budget():
        raise InvalidArgumentError(
            f"{tile} needs {count} accumulator registers; the AVX-512 code of the built-in "
            f"intrinsics has {EMITTED_FOR.vector_registers} vector registers (keep <= "
            f"{accumulator_budget()}{hint})")


BUILTINS = {"dot_16x4_u8s8": dot_16x4_u8s8, "gemm_u8s8": gemm_u8s8,
            "gemm_u8s8_nchw": gemm_u8s8_nchw, "gemm_bf16": gemm_bf16,
            "gemm_f32_rows": gemm_f32_rows}
from .builtin_amx import AMX_BUILTINS  # noqa: E402  (AMX tiles: their own module)

BUILTINS.update(AMX_BUILTINS)


def from_key(key: str):
    """The built-in intrinsic a recorded key such as ``"gemm_u8s8(rows=6, cols=64)"``
    names (made again), or None when the key is not a built-in's."""
    try:
        call = ast.parse(key, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id in BUILTINS and not call.args):
        return None
    try:
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except ValueError:
        return None
    try:
        return BUILTINS[call.func.id](**kwargs)
    except TypeError as err:
        raise InvalidArgumentError(f"intrinsic '{key}': {err}") from None
