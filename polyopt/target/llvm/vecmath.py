"""Vector math for vectorized loops: glibc's libmvec variants of ``exp``, ``log``, ``tanh``.

Without a vector math library, LLVM vectorizes a loop calling ``llvm.exp.f32`` but then
splits ``llvm.exp.v16f32`` into 16 calls of the scalar ``expf``, which is about 4x
slower than a SIMD ``exp``.  Where glibc's libmvec is installed and the CPU has AVX-512
(or AVX2), each such call is given the ``vector-function-abi-variant`` attribute naming
libmvec's vector function (``_ZGVeN16v_expf``: AVX-512, 16 lanes), so that the loop
vectorizer calls it instead; libmvec is then loaded for the JIT.  Results stay within
libmvec's accuracy (4 ULP).  Set ``POLYOPT_NO_LIBMVEC=1`` to keep the scalar calls.

>>> text = 'declare float @"llvm.exp.f32"(float %".1")'
>>> with_vector_math(text, {"f32": ("e", 16)}, {"_ZGVeN16v_expf"}) == text  # no call
True
>>> call = '  %".3" = call float @"llvm.exp.f32"(float %".2")'
>>> print(with_vector_math(call, {"f32": ("e", 16)}, {"_ZGVeN16v_expf"}))
  %".3" = call float @"llvm.exp.f32"(float %".2") #90000
declare <16 x float> @_ZGVeN16v_expf(<16 x float>)
attributes #90000 = { "vector-function-abi-variant"="_ZGV_LLVM_N16v_llvm.exp.f32(_ZGVeN16v_expf)" }
@llvm.compiler.used = appending global [1 x ptr] [ptr @_ZGVeN16v_expf], section "llvm.metadata"
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import re

FUNCTIONS = ("exp", "log", "tanh")
_CALL = re.compile(r'(call [a-z ]*?(float|double) @"llvm\.(' + "|".join(FUNCTIONS)
                   + r')\.(f32|f64)"\([^)]*\))')
_FIRST_ATTRIBUTE_GROUP = 90000  # far above the groups llvmlite's IR text uses (none)


@functools.cache
def _libmvec() -> str | None:
    if os.environ.get("POLYOPT_NO_LIBMVEC"):
        return None
    return ctypes.util.find_library("mvec")


def math_library() -> str:
    """The vector math library kernels call (``libmvec``'s file name) or ``none``: part
    of the target's cache key, so that ``POLYOPT_NO_LIBMVEC`` never loads a kernel built
    with the other choice."""
    return os.path.basename(_libmvec() or "none")


@functools.cache
def host_variants() -> tuple[dict, frozenset]:
    """``({"f32": (isa letter, lanes), "f64": ...}, available symbols)`` for this CPU and
    this libmvec; empty when either is missing."""
    import llvmlite.binding as llvm

    path = _libmvec()
    if path is None:
        return {}, frozenset()
    features = llvm.get_host_cpu_features()
    if features.get("avx512f"):
        isa = {"f32": ("e", 16), "f64": ("e", 8)}
    elif features.get("avx2"):
        isa = {"f32": ("d", 8), "f64": ("d", 4)}
    else:
        return {}, frozenset()
    library = ctypes.CDLL(path)
    names = frozenset(name for name in (_vector_name(f, s, isa) for f in FUNCTIONS
                                        for s in isa) if hasattr(library, name))
    if names:
        llvm.load_library_permanently(path)
    return isa, names


def _vector_name(func: str, suffix: str, isa: dict) -> str:
    letter, lanes = isa[suffix]
    return f"_ZGV{letter}N{lanes}v_{func}{'f' if suffix == 'f32' else ''}"


def with_vector_math(ir_text: str, isa: dict | None = None, available=None) -> str:
    """``ir_text`` with libmvec variants attached to its calls of exp, log and tanh
    (unchanged when there are none, or no libmvec for this CPU)."""
    if isa is None:
        isa, available = host_variants()
    groups: dict[str, int] = {}

    def attach(match: re.Match) -> str:
        func, suffix = match.group(3), match.group(4)
        if suffix not in isa or _vector_name(func, suffix, isa) not in available:
            return match.group(0)
        key = f"{func}.{suffix}"
        groups.setdefault(key, _FIRST_ATTRIBUTE_GROUP + len(groups))
        return f"{match.group(0)} #{groups[key]}"

    text = _CALL.sub(attach, ir_text)
    if not groups:
        return ir_text
    lines, used = [], []
    for key, group in groups.items():
        func, suffix = key.split(".")
        name, lanes = _vector_name(func, suffix, isa), isa[suffix][1]
        vector = f"<{lanes} x {'float' if suffix == 'f32' else 'double'}>"
        lines += [f"declare {vector} @{name}({vector})",
                  f'attributes #{group} = {{ "vector-function-abi-variant"='
                  f'"_ZGV_LLVM_N{lanes}v_llvm.{key}({name})" }}']
        used.append(f"ptr @{name}")
    lines.append(f"@llvm.compiler.used = appending global [{len(used)} x ptr] "
                 f"[{', '.join(used)}], section \"llvm.metadata\"")
    return text + "\n" + "\n".join(lines)
