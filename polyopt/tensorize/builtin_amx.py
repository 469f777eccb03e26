"""Ready intrinsic declarations for Intel AMX tiles (``amx-tile``, ``amx-int8``,
``amx-bf16``): a register block of ``tiles_m x tiles_n`` accumulator tiles of 16 rows x
16 int32/float32 columns, updated by ``tdpbusd`` (or its signed/unsigned variants) or
``tdpbf16ps`` over ``ksteps`` tiles of the reduction (64 bytes of a row each).

* :func:`amx_gemm_int8`: ``c[r, j] (int32) += sum_{g, t<4} a[r, 4g + t] * b[g, j, t]``,
  a and b uint8 or int8 (``tdpbusd`` u8 x s8, ``tdpbssd``, ``tdpbsud``, ``tdpbuud``);
  :func:`amx_gemm_u8s8` the u8 x s8 one;
* :func:`amx_gemm_bf16`: ``c[r, j] (float32) += sum_{g, t<2} a[r, 2g + t] * b[g, j, t]``
  (bfloat16, ``tdpbf16ps``).

``b`` is in the VNNI layout ``pack_vnni_numpy`` makes (``Wp[..., K/4, cols, 4]``): one
B tile is 16 groups (rows) x 16 columns x 4 bytes (64 bytes a row), any group stride.
The code is written with LLVM's AMX intrinsics (:mod:`polyopt.target.llvm.amx`): LLVM
configures the tiles (``ldtilecfg``) once per function, outside the loops.

Integer results equal the scalar code bit for bit (the int32 sums of ``tdpbusd`` wrap,
without saturation, like the scalar int32 additions); bf16 sums differ from the scalar
code's order by float32 rounding (the products are exact in float32; denormals are
flushed).

>>> intrin = amx_gemm_u8s8(tiles_m=2, tiles_n=2, ksteps=1)
>>> intrin.output.shape, [b.shape for b in intrin.inputs]
((32, 32), [(32, 64), (16, 32, 4)])
"""

from __future__ import annotations

import functools

from ..errors import InvalidArgumentError, public
from ..machine import AMX_TILE_BYTES, AMX_TILE_REGISTERS, AMX_TILE_ROWS
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum, var
from .intrin import LLVMEmitter, decl_buffer, decl_tensor_intrin

# the instruction of each (a, b) pair of int8 types
INT8_INSTRUCTIONS = {("uint8", "int8"): "tdpbusd", ("int8", "int8"): "tdpbssd",
                     ("int8", "uint8"): "tdpbsud", ("uint8", "uint8"): "tdpbuud"}
COLUMNS = AMX_TILE_BYTES // 4  # the 32-bit columns of an accumulator tile (16)


def _amx_tile(kind: str, tiles_m: int, tiles_n: int, ksteps: int, in_dtypes: tuple,
              acc: str, group: int, instruction: str):
    """The intrinsic ``c[16 tiles_m, 16 tiles_n] += sum_{g < 16 ksteps, t < group}
    a[r, group g + t] * b[g, j, t]`` (a and c with a row stride, b with a group
    stride), emitted by ``amx_gemm`` with ``instruction``."""
    check_amx_block(tiles_m, tiles_n, ksteps)
    rows, cols = AMX_TILE_ROWS * tiles_m, COLUMNS * tiles_n
    groups = (AMX_TILE_BYTES // (group * _size(in_dtypes[0]))) * ksteps
    a = placeholder((rows, group * groups), name="a", dtype=in_dtypes[0])
    b = placeholder((groups, cols, group), name="b", dtype=in_dtypes[1])
    g = reduce_axis((0, groups), name="g")
    t = reduce_axis((0, group), name="t")
    c = compute((rows, cols), lambda r, j: reduce_sum(
        a[r, group * g + t].astype(acc) * b[g, j, t].astype(acc), axis=[g, t]), name="c")
    binds = {a: decl_buffer(a.shape, in_dtypes[0], "a", strides=[var("lda"), 1]),
             b: decl_buffer(b.shape, in_dtypes[1], "b", strides=[var("ldb"), group, 1]),
             c: decl_buffer((rows, cols), acc, "c", strides=[var("ldc"), 1])}
    params = (("instruction", instruction), ("ksteps", ksteps), ("tiles_m", tiles_m),
              ("tiles_n", tiles_n))

    def implementation(ins, outs):
        return tuple(LLVMEmitter(None, "amx_gemm", part, params)
                     for part in ("body", "reset", "update"))

    return decl_tensor_intrin(c.op, implementation, binds=binds,
                              name=f"{kind}_{tiles_m}x{tiles_n}x{ksteps}",
                              key=f"{kind}(tiles_m={tiles_m}, tiles_n={tiles_n}, "
                                  f"ksteps={ksteps}{_dtype_key(kind, in_dtypes)})")


def _dtype_key(kind: str, in_dtypes) -> str:
    if kind != "amx_gemm_int8":
        return ""
    return f", a_dtype={in_dtypes[0]!r}, b_dtype={in_dtypes[1]!r}"


def _size(dtype: str) -> int:
    return 2 if dtype == "bfloat16" else 1


@public
def amx_gemm_int8(tiles_m: int = 2, tiles_n: int = 2, ksteps: int = 1,
                  a_dtype: str = "uint8", b_dtype: str = "int8"):
    """A block of ``tiles_m x tiles_n`` int32 tiles (16 x 16 each) += a[16 tiles_m,
    64 ksteps] x b[16 ksteps, 16 tiles_n, 4] (the VNNI layout), a and b uint8 or int8:
    ``tiles_m * tiles_n * ksteps`` ``tdpbusd`` (u8 x s8), ``tdpbssd``, ``tdpbsud`` or
    ``tdpbuud``.

    >>> amx_gemm_int8(1, 2, 4, "int8", "int8").name
    'amx_gemm_int8_1x2x4'
    """
    return _amx_gemm_int8(tiles_m, tiles_n, ksteps, a_dtype, b_dtype)


@functools.cache  # (positional: the same declaration however the arguments are named)
def _amx_gemm_int8(tiles_m, tiles_n, ksteps, a_dtype, b_dtype):
    instruction = INT8_INSTRUCTIONS.get((a_dtype, b_dtype))
    if instruction is None:
        raise InvalidArgumentError(f"AMX int8 tiles multiply uint8 or int8 operands, got "
                                   f"a {a_dtype!r} and b {b_dtype!r}")
    return _amx_tile("amx_gemm_int8", tiles_m, tiles_n, ksteps, (a_dtype, b_dtype),
                     "int32", 4, instruction)


@public
def amx_gemm_u8s8(tiles_m: int = 2, tiles_n: int = 2, ksteps: int = 1):
    """:func:`amx_gemm_int8` of uint8 x int8 (``tdpbusd``, the operands of
    :func:`~polyopt.tensorize.builtin.gemm_u8s8`)."""
    return amx_gemm_int8(tiles_m, tiles_n, ksteps, "uint8", "int8")


@public
def amx_gemm_bf16(tiles_m: int = 2, tiles_n: int = 2, ksteps: int = 1):
    """A block of ``tiles_m x tiles_n`` float32 tiles (16 x 16 each) += a[16 tiles_m,
    32 ksteps] x b[16 ksteps, 16 tiles_n, 2] (bfloat16 pairs): ``tdpbf16ps``.

    >>> amx_gemm_bf16(2, 2, 2).inputs[1].shape
    (32, 32, 2)
    """
    return _amx_gemm_bf16(tiles_m, tiles_n, ksteps)


@functools.cache
def _amx_gemm_bf16(tiles_m, tiles_n, ksteps):
    return _amx_tile("amx_gemm_bf16", tiles_m, tiles_n, ksteps, ("bfloat16", "bfloat16"),
                     "float32", 2, "tdpbf16ps")


def check_amx_block(tiles_m, tiles_n, ksteps) -> None:
    """Refuse a block whose tiles (``tiles_m * tiles_n`` accumulators, ``tiles_m`` A
    and ``tiles_n`` B tiles) do not fit in AMX's 8 tile registers."""
    for what, value in (("tiles_m", tiles_m), ("tiles_n", tiles_n), ("ksteps", ksteps)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{what} must be a positive int, got {value!r}")
    used = tiles_m * tiles_n + tiles_m + tiles_n
    if used > AMX_TILE_REGISTERS:
        raise InvalidArgumentError(
            f"a block of {tiles_m} x {tiles_n} AMX tiles needs {used} tile registers "
            f"({tiles_m * tiles_n} accumulators, {tiles_m} A and {tiles_n} B tiles); AMX "
            f"has {AMX_TILE_REGISTERS} (2 x 2 is the largest square block)")


@public
def amx_conv_int8(tiles_m: int = 2, tiles_n: int = 2, ksteps: int = 1, kernel=(3, 3),
                  width: int = 16):
    """A conv's block of ``tiles_m x tiles_n`` int32 tiles (16 pixels x 16 channels
    each) += the whole reduction over the kernel's taps and ``64 ksteps`` input channels:
    ``c[r, j] += sum_{ry, rx, g, t} a[r + ry * width + rx, 4g + t] * b[ry, rx, g, j, t]``
    (``a``: pixels of a channels-last input rows ``width`` apart, uint8; ``b``: the
    VNNI-packed int8 weights of each tap): ``R * S * ksteps`` tile products per
    accumulator, zeroed first and stored once (the wide layout of
    :mod:`polyopt.te.quantized_amx`).

    >>> amx_conv_int8(2, 2, 1, (3, 3), 8).inputs[0].shape
    (50, 64)
    """
    kernel = tuple(kernel) if isinstance(kernel, (tuple, list)) else kernel
    if not (isinstance(kernel, tuple) and len(kernel) == 2 and all(
            isinstance(k, int) and not isinstance(k, bool) and k >= 1 for k in kernel)):
        raise InvalidArgumentError(f"kernel must be (R, S), two positive ints, got {kernel!r}")
    if isinstance(width, bool) or not isinstance(width, int) or width < kernel[1]:
        raise InvalidArgumentError(f"width must be an int >= the kernel's width "
                                   f"{kernel[1]}, got {width!r}")
    return _amx_conv_int8(tiles_m, tiles_n, ksteps, kernel, width)


@functools.cache
def _amx_conv_int8(tiles_m, tiles_n, ksteps, kernel, width):
    check_amx_block(tiles_m, tiles_n, ksteps)
    (r_, s_), rows, cols = kernel, AMX_TILE_ROWS * tiles_m, COLUMNS * tiles_n
    groups = AMX_TILE_ROWS * ksteps
    a = placeholder((rows + (r_ - 1) * width + s_ - 1, 4 * groups), name="a", dtype="uint8")
    b = placeholder((r_, s_, groups, cols, 4), name="b", dtype="int8")
    ry, rx = reduce_axis((0, r_), name="ry"), reduce_axis((0, s_), name="rx")
    g, t = reduce_axis((0, groups), name="g"), reduce_axis((0, 4), name="t")
    c = compute((rows, cols), lambda r, j: reduce_sum(
        a[r + ry * width + rx, 4 * g + t].astype("int32")
        * b[ry, rx, g, j, t].astype("int32"), axis=[ry, rx, g, t]), name="c")
    binds = {a: decl_buffer(a.shape, "uint8", "a", strides=[var("lda"), 1]),
             b: decl_buffer(b.shape, "int8", "b",
                            strides=[var("ldb_r"), var("ldb_s"), var("ldb"), 4, 1]),
             c: decl_buffer((rows, cols), "int32", "c", strides=[var("ldc"), 1])}
    params = (("instruction", "tdpbusd"), ("kernel", kernel), ("ksteps", ksteps),
              ("tiles_m", tiles_m), ("tiles_n", tiles_n), ("width", width))

    def implementation(ins, outs):
        return tuple(LLVMEmitter(None, "amx_gemm", part, params)
                     for part in ("body", "reset", "update"))

    name = f"amx_conv_int8_{tiles_m}x{tiles_n}x{ksteps}_{r_}x{s_}_w{width}"
    return decl_tensor_intrin(c.op, implementation, binds=binds, name=name,
                              key=f"amx_conv_int8(tiles_m={tiles_m}, tiles_n={tiles_n}, "
                                  f"ksteps={ksteps}, kernel={kernel}, width={width})")


AMX_BUILTINS = {"amx_conv_int8": amx_conv_int8, "amx_gemm_int8": amx_gemm_int8, "amx_gemm_u8s8": amx_gemm_u8s8,
                "amx_gemm_bf16": amx_gemm_bf16}
