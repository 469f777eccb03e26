"""Vector math for vectorized loops: glibc's libmvec variants of ``exp``, ``log``, ``tanh``.

Without a vector math library, LLVM vectorizes a loop calling ``llvm.exp.f32`` but then
splits ``llvm.exp.v16f32`` into 16 calls of the scalar ``expf``, which is about 4x
slower than a SIMD ``exp``.  Where glibc's libmvec is installed and the CPU has AVX-512
(or AVX2), each such call is given the ``vector-function-abi-variant`` attribute naming
libmvec's vector function (``_ZGVeN16v_expf``: AVX-512, 16 lanes), so that the loop
vectorizer calls it instead; libmvec is then loaded for the JIT.  Results stay within
libmvec's accuracy (4 ULP), so a vectorized schedule's results may differ from the
default schedule's by that much.  Set ``POLYOPT_NO_LIBMVEC=1`` to keep the scalar calls;
programs with ``scalar_math`` (the C front end's, which compute gcc's numbers bit for bit)
and schedules with ``strict_fp=True`` (bit-identical under every schedule) always keep
them.

Two steps: the LLVM target's ``vector_math`` lowering pass (:func:`vector_math_for`)
decides which variants the function's calls go to (``func.decision("vector_math")``,
printed with the function); after emission, :func:`attach_vector_math` adds the
attributes, the declarations and ``@llvm.compiler.used`` to the llvmlite module.

>>> from llvmlite import ir
>>> m = ir.Module(); f32 = ir.FloatType()
>>> exp = ir.Function(m, ir.FunctionType(f32, [f32]), "llvm.exp.f32")
>>> fn = ir.Function(m, ir.FunctionType(f32, [f32]), "f")
>>> b = ir.IRBuilder(fn.append_basic_block()); _ = b.ret(b.call(exp, fn.args))
>>> attach_vector_math(m, VectorMath((("llvm.exp.f32", "_ZGVeN16v_expf", 16),)))
>>> text = str(m)
>>> '"vector-function-abi-variant"="_ZGV_LLVM_N16v_llvm.exp.f32(_ZGVeN16v_expf)"' in text
True
>>> 'declare <16 x float> @"_ZGVeN16v_expf"(<16 x float> %".1")' in text
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
from dataclasses import dataclass

from llvmlite import ir
from llvmlite.ir.instructions import CallInstrAttributes

from ...te.expr import Call
from ...te.tensor import walk

FUNCTIONS = ("exp", "log", "tanh")


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


@dataclass(frozen=True)
class VectorMath:
    """The decision of the ``vector_math`` pass: ``variants`` maps LLVM's scalar
    intrinsics to libmvec's vector functions, as ``(intrinsic, vector function, lanes)``;
    ``why`` says why calls stay scalar (no variant)."""

    variants: tuple[tuple[str, str, int], ...] = ()
    why: str = ""

    def __str__(self) -> str:
        if not self.variants:
            return f"scalar calls ({self.why})"
        return ", ".join(f"{name} -> {vector} ({lanes} lanes)"
                         for name, vector, lanes in self.variants)


def vector_math_for(cpu=None):
    """The ``vector_math`` pass for code compiled for ``cpu`` (a ``jit.CPU``; None or
    one naming no CPU: the host): records which libmvec variant each exp, log and tanh
    the function calls goes to.  Named CPUs keep scalar calls (the variants are chosen
    for the host's vector width)."""
    def vector_math(func):
        called = sorted({(node.func, "f32" if node.dtype == "float32" else "f64")
                         for stmt in func.program.statements for node in walk(stmt.value)
                         if isinstance(node, Call) and node.func in FUNCTIONS
                         and node.dtype in ("float32", "float64")})
        if not called:
            return func
        if func.program.scalar_math:
            return func.decide("vector_math", VectorMath(
                why="the program calls libm's scalar functions, as C compilers do"))
        if func.strict_fp:  # every schedule's bits: one function for every element
            return func.decide("vector_math", VectorMath(
                why="strict_fp: libm's scalar functions in every loop"))
        if cpu is not None and cpu.name:
            return func.decide("vector_math", VectorMath(why=f"compiled for -mcpu={cpu.name}"))
        isa, available = host_variants()
        variants = tuple((f"llvm.{name}.{suffix}", _vector_name(name, suffix, isa),
                          isa[suffix][1]) for name, suffix in called
                         if suffix in isa and _vector_name(name, suffix, isa) in available)
        why = "POLYOPT_NO_LIBMVEC is set" if os.environ.get("POLYOPT_NO_LIBMVEC") else \
            "no libmvec variant for this CPU and library"
        return func.decide("vector_math", VectorMath(variants, "" if variants else why))

    return vector_math


class _CallAttributes(CallInstrAttributes):
    """A call's attributes, string attributes (``"key"="value"``) allowed."""

    def add(self, name):
        if name.startswith('"'):
            return set.add(self, name)
        return super().add(name)


def attach_vector_math(module: ir.Module, decision: VectorMath | None) -> None:
    """Give the calls of ``module`` to the intrinsics ``decision`` names their vector
    variant (the ``vector-function-abi-variant`` attribute), declare the vector
    functions and keep them in ``@llvm.compiler.used`` (LLVM's vectorizer adds the calls;
    the declarations must outlive the optimizer until then)."""
    if decision is None or not decision.variants:
        return
    used = []
    for name, vector, lanes in decision.variants:
        scalar = module.globals.get(name)
        if not isinstance(scalar, ir.Function):
            continue
        mapping = f'"vector-function-abi-variant"="_ZGV_LLVM_N{lanes}v_{name}({vector})"'
        calls = [instr for fn in module.functions for block in fn.blocks
                 for instr in block.instructions
                 if isinstance(instr, ir.CallInstr) and instr.callee is scalar]
        for call in calls:
            attributes = _CallAttributes(call.attributes)
            attributes.add(mapping)
            call.attributes = attributes
        if calls:
            element = scalar.function_type.return_type
            vector_type = ir.VectorType(element, lanes)
            used.append(ir.Function(module, ir.FunctionType(vector_type, [vector_type]),
                                    vector))
    if used:
        array = ir.ArrayType(ir.PointerType(), len(used))
        keep = ir.GlobalVariable(module, array, "llvm.compiler.used")
        keep.linkage = "appending"
        keep.section = "llvm.metadata"
        keep.initializer = ir.Constant(array, used)
