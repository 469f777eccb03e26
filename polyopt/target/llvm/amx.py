"""LLVM code for the AMX tile intrinsics (:mod:`polyopt.tensorize.builtin_amx`).

``amx_gemm`` writes LLVM's shape-carrying AMX intrinsics (``llvm.x86.tileloadd64.internal``,
``llvm.x86.tdpbusd.internal`` and its variants, ``llvm.x86.tdpbf16ps.internal``,
``llvm.x86.tilezero.internal``, ``llvm.x86.tilestored64.internal``) on values of type
``x86_amx``.  The shapes are constants, so LLVM's tile configuration passes write one
``ldtilecfg`` at the function's entry (outside every loop) and a ``tilerelease`` at its
exits; the tile registers are allocated by LLVM.  Strides are in bytes.

>>> sorted(AMX_EMITTERS), AMX_FEATURES["tdpbf16ps"]
(['amx_gemm'], ('amx-tile', 'amx-bf16'))
"""

from __future__ import annotations

from llvmlite import ir

from ...machine import AMX_TILE_BYTES, AMX_TILE_ROWS
from .values import I64, intrinsic

I16 = ir.IntType(16)
# the CPU features each tile instruction needs (LLVM names)
AMX_FEATURES = {**{op: ("amx-tile", "amx-int8")
                   for op in ("tdpbusd", "tdpbssd", "tdpbsud", "tdpbuud")},
                "tdpbf16ps": ("amx-tile", "amx-bf16")}


class _Tile(ir.types.Type):
    """LLVM's ``x86_amx`` (llvmlite has no class for it)."""

    def _to_string(self):
        return "x86_amx"


TILE = _Tile()


def _i16(value: int) -> ir.Constant:
    return ir.Constant(I16, value)


def amx_gemm(ctx, part: str, instruction: str, tiles_m: int, tiles_n: int,
             ksteps: int, kernel: tuple = (), width: int = 0) -> None:
    """``c[r, j] += sum_{g, t} a[r, group g + t] * b[g, j, t]`` on a block of
    ``tiles_m x tiles_n`` accumulator tiles: zeroed (``reset``), loaded, updated by
    ``ksteps`` tile products each and stored (``update``), or zeroed and updated
    (``body``).  With a conv's ``kernel`` (R, S) and ``width``: for each tap (ry, rx),
    ``a``'s rows ``ry * width + rx`` further and ``b[ry, rx]``'s weights."""
    b = ctx.builder
    module = ctx.module
    a_buf, b_buf, c_buf = ctx.intrin.buffers
    esize = 2 if a_buf.dtype == "bfloat16" else 1
    group = b_buf.shape[-1]
    pixels_apart = width  # (the conv's row width; "width" below is a tile's bytes)
    rows, width = _i16(AMX_TILE_ROWS), _i16(AMX_TILE_BYTES)
    load = intrinsic(module, "llvm.x86.tileloadd64.internal", TILE, [I16, I16, ir.PointerType(),
                                                                    I64])
    store = intrinsic(module, "llvm.x86.tilestored64.internal", ir.VoidType(),
                      [I16, I16, ir.PointerType(), I64, TILE])
    zero = intrinsic(module, "llvm.x86.tilezero.internal", TILE, [I16, I16])
    dot = intrinsic(module, f"llvm.x86.{instruction}.internal", TILE,
                    [I16, I16, I16, TILE, TILE, TILE])
    c_stride = b.mul(ctx.stride(2, 0), ir.Constant(I64, 4))
    c_tiles = {(m, n): ctx.element(2, AMX_TILE_ROWS * m, 16 * n)
               for m in range(tiles_m) for n in range(tiles_n)}
    if part == "reset":
        for address in c_tiles.values():
            b.call(store, [rows, width, address, c_stride, b.call(zero, [rows, width])])
        return
    if part == "body":
        acc = {key: b.call(zero, [rows, width]) for key in c_tiles}
    else:
        acc = {key: b.call(load, [rows, width, address, c_stride])
               for key, address in c_tiles.items()}
    taps = [(ry, rx) for ry in range(kernel[0]) for rx in range(kernel[1])] if kernel \
        else [None]
    tap_dims = 2 if kernel else 0  # b's leading tap dimensions
    a_stride = b.mul(ctx.stride(0, 0), ir.Constant(I64, esize))
    b_stride = b.mul(ctx.stride(1, tap_dims), ir.Constant(I64, esize))
    a_columns = AMX_TILE_BYTES // esize      # a's elements in one tile row
    b_groups = AMX_TILE_BYTES // (group * esize)  # b's groups (tile rows) per step
    for tap in taps:
        shift = tap[0] * pixels_apart + tap[1] if tap else 0
        for step in range(ksteps):
            a_tiles = [b.call(load, [rows, width, ctx.element(
                0, AMX_TILE_ROWS * m + shift, a_columns * step), a_stride])
                for m in range(tiles_m)]
            b_tiles = [b.call(load, [_i16(b_groups), width, ctx.element(
                1, *(tap or ()), b_groups * step, 16 * n, 0), b_stride])
                for n in range(tiles_n)]
            for (m, n), value in acc.items():
                acc[m, n] = b.call(dot, [rows, width, width, value, a_tiles[m],
                                         b_tiles[n]])
    for key, address in c_tiles.items():
        b.call(store, [rows, width, address, c_stride, acc[key]])


AMX_EMITTERS = {"amx_gemm": amx_gemm}


def amx_features(item) -> tuple[str, ...]:
    """The CPU features a built-in AMX emitter item (an ``LLVMEmitter``) needs, or ()."""
    if item.name not in AMX_EMITTERS:
        return ()
    return AMX_FEATURES.get(dict(item.params).get("instruction"), ("amx-tile",))


def ir_uses_amx(ir_text: str) -> bool:
    """Whether LLVM IR text computes on AMX tiles (an artefact made from it records it:
    whoever loads it asks for the tile state before running it)."""
    return "x86_amx" in ir_text


def uses_amx(program) -> bool:
    """Whether ``program`` is tensorized with an AMX tile intrinsic (its process then
    needs the tile state: :func:`polyopt.target.amx_state.request_amx`)."""
    return any(getattr(item, "name", None) in AMX_EMITTERS and item.emit is None
               for _, _, intrin in getattr(program, "tensorized", ())
               for item in (*intrin.body, *intrin.reset, *intrin.update))
