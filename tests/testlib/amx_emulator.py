"""Run a kernel built for an AMX CPU on any x86-64 host, its tile instructions emulated.

The kernel's generated LLVM IR (``f.llvm_ir``, before LLVM's tile passes) is rewritten:
each ``x86_amx`` value becomes a pointer to a 1 KB tile (16 rows x 64 bytes) and each
shape-carrying AMX intrinsic a call of a C function that does what Intel's manual says
the instruction does (``tileloadd``, ``tilestored``, ``tilezero``, ``tdpbusd`` and its
signed/unsigned variants, ``tdpbf16ps``).  The rewritten IR is compiled for the host
and run, so a test checks everything polyopt decides (the tensorize match, the tiles'
addresses, strides and shapes, the blocks and the epilogue) against NumPy; only the
instructions' own arithmetic is taken from the manual instead of the silicon.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess

import llvmlite.binding as llvm

_C_SOURCE = r"""
#include <stdint.h>
#include <string.h>
#define RING 4096
static __thread unsigned char ring[RING][1024];
static __thread unsigned next_tile;
static unsigned char *fresh(void) { unsigned char *t = ring[next_tile++ % RING];
                                    memset(t, 0, 1024); return t; }
void *amx_emu_tileloadd64(int16_t rows, int16_t colbytes, const unsigned char *base,
                          int64_t stride) {
  unsigned char *t = fresh();
  for (int r = 0; r < rows; r++) memcpy(t + 64 * r, base + r * stride, colbytes);
  return t;
}
void *amx_emu_tilezero(int16_t rows, int16_t colbytes) { return fresh(); }
void amx_emu_tilestored64(int16_t rows, int16_t colbytes, unsigned char *base,
                          int64_t stride, const unsigned char *t) {
  for (int r = 0; r < rows; r++) memcpy(base + r * stride, t + 64 * r, colbytes);
}
#define DOT(NAME, TA, TB)                                                            \
void *NAME(int16_t m, int16_t n, int16_t k, const unsigned char *c,                   \
           const unsigned char *a, const unsigned char *b) {                          \
  unsigned char *t = fresh(); memcpy(t, c, 1024);                                     \
  for (int i = 0; i < m; i++) for (int j = 0; j < n / 4; j++) {                        \
    uint32_t acc; memcpy(&acc, t + 64 * i + 4 * j, 4);                                \
    for (int g = 0; g < k / 4; g++) for (int e = 0; e < 4; e++)                        \
      acc += (uint32_t)((int32_t)(TA)a[64 * i + 4 * g + e]                            \
                        * (int32_t)(TB)b[64 * g + 4 * j + e]);                         \
    memcpy(t + 64 * i + 4 * j, &acc, 4);                                              \
  }                                                                                   \
  return t;                                                                           \
}
DOT(amx_emu_tdpbusd, uint8_t, int8_t)
DOT(amx_emu_tdpbssd, int8_t, int8_t)
DOT(amx_emu_tdpbsud, int8_t, uint8_t)
DOT(amx_emu_tdpbuud, uint8_t, uint8_t)
static float bf16(const unsigned char *p) {
  uint32_t bits = (uint32_t)(p[0] | (p[1] << 8)) << 16; float f; memcpy(&f, &bits, 4);
  return f;
}
void *amx_emu_tdpbf16ps(int16_t m, int16_t n, int16_t k, const unsigned char *c,
                        const unsigned char *a, const unsigned char *b) {
  unsigned char *t = fresh(); memcpy(t, c, 1024);
  for (int i = 0; i < m; i++) for (int j = 0; j < n / 4; j++) {
    float acc; memcpy(&acc, t + 64 * i + 4 * j, 4);
    for (int g = 0; g < k / 4; g++) for (int e = 0; e < 2; e++)
      acc += bf16(a + 64 * i + 4 * g + 2 * e) * bf16(b + 64 * g + 4 * j + 2 * e);
    memcpy(t + 64 * i + 4 * j, &acc, 4);
  }
  return t;
}
"""

_LOADED: list[str] = []


def _load(folder: str) -> None:
    if _LOADED:
        return
    source, library = os.path.join(folder, "amx_emu.c"), os.path.join(folder, "amx_emu.so")
    with open(source, "w", encoding="utf-8") as handle:
        handle.write(_C_SOURCE)
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", library,
                    source], check=True, capture_output=True)
    ctypes.CDLL(library)
    llvm.load_library_permanently(library)
    _LOADED.append(library)


def emulated_ir(ir_text: str) -> str:
    """``ir_text`` with its AMX intrinsics turned into calls of the emulation."""
    text = re.sub(r'^declare .*@"?llvm\.x86\.(tile|tdp)\S*\(.*\n', "", ir_text,
                  flags=re.MULTILINE)
    text = re.sub(r'@"?llvm\.x86\.(tileloadd64|tilestored64|tilezero|tdpb\w+)\.internal"?',
                  r'@amx_emu_\1', text)
    text = text.replace("x86_amx", "ptr")
    names = sorted(set(re.findall(r"@amx_emu_(\w+)", text)))
    declared = {
        "tileloadd64": "declare ptr @amx_emu_tileloadd64(i16, i16, ptr, i64)",
        "tilestored64": "declare void @amx_emu_tilestored64(i16, i16, ptr, i64, ptr)",
        "tilezero": "declare ptr @amx_emu_tilezero(i16, i16)"}
    lines = [declared.get(n, f"declare ptr @amx_emu_{n}(i16, i16, i16, ptr, ptr, ptr)")
             for n in names]
    return text + "\n" + "\n".join(lines) + "\n"


def emulated_kernel(kernel, folder: str):
    """A host kernel running ``kernel`` (built for an AMX CPU) with emulated tiles."""
    from polyopt.target.llvm.jit import HOST, jit, optimize
    from polyopt.target.llvm.target import LLVMKernel

    _load(folder)
    ir_text = emulated_ir(kernel.llvm_ir)
    assert "x86_amx" not in ir_text and "llvm.x86.t" not in ir_text
    module = optimize(ir_text, HOST, kernel.func.decision("optimization"))
    engine, address = jit(module, kernel.func.name, HOST)
    return LLVMKernel(kernel.func, engine, address, ir_text, str(module), HOST)
