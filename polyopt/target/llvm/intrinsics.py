"""LLVM code for tensorized sub-nests (:class:`polyopt.ast.intrinsic_calls.IntrinsicCall`).

The call's buffers are bound at the tile's first instance: each buffer's pointer is the
address of the element its access touches there, and a stride that the declaration
leaves open (a ``po.var``) is measured as the address difference one step along the
intrinsic dimension that moves that buffer dimension.  The implementation parts are
then emitted: an external call (``call_extern``), a user's :class:`LLVMEmitter`
function, or one of the named built-in emitters below (AVX-512 VNNI ``vpdpbusd`` tiles,
fp32 FMA rows) or of :mod:`.amx` (AMX tiles).  Code an intrinsic imports (:func:`link_imports`) is linked into the
module (LLVM IR) or compiled into a shared library loaded into the process (C).

>>> sorted(BUILTIN_EMITTERS)
['amx_gemm', 'dpbf16_gemm', 'fma_rows', 'vnni_gemm', 'vnni_pixels']
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile

import llvmlite.binding as llvm
from llvmlite import ir

from ...errors import BackendError, InternalError
from ...te.expr import TensorRead
from ...te.tensor import children
from ...private_folder import private_folder, verified_file, write_verified
from .amx import AMX_EMITTERS, amx_features
from .jit import symbol_address
from .memory import itemsize
from .values import I64, intrinsic, llvm_type

I32 = ir.IntType(32)


class EmitContext:
    """What an implementation emitter gets: ``builder``, ``module``, the bound buffers
    (``pointer(i)``, ``stride(i, dim)`` for the intrinsic's i-th buffer, inputs first)
    and the intrinsic."""

    def __init__(self, builder, module, intrin, pointers, strides, imports=()):
        self.builder, self.module, self.intrin = builder, module, intrin
        self._pointers, self._strides = pointers, strides
        self.imports = tuple(imports)  # the code the program imports (program_imports)

    def _index(self, buffer) -> int:
        return buffer if isinstance(buffer, int) else list(self.intrin.buffers).index(buffer)

    def pointer(self, buffer) -> ir.Value:
        return self._pointers[self._index(buffer)]

    def stride(self, buffer, dim: int) -> ir.Value:
        return self._strides[self._index(buffer)][dim]

    def element(self, buffer, *index) -> ir.Value:
        """The address of ``buffer[index]`` (ints)."""
        b = self.builder
        i = self._index(buffer)
        offset = ir.Constant(I64, 0)
        for dim, value in enumerate(index):
            if value:
                offset = b.add(offset, b.mul(self.stride(i, dim), ir.Constant(I64, value)))
        etype = llvm_type(self.intrin.buffers[i].dtype)
        return b.gep(self.pointer(i), [offset], inbounds=True, source_etype=etype)


def emit_intrinsic_call(emitter, call) -> None:
    """Emit ``call`` (an IntrinsicCall) with the function emitter's state."""
    found = call.match
    intrin = found.intrin
    emitter._write_pending()
    b = emitter.builder
    pointers, strides = {}, {}
    with emitter.bound(call) as stmt:
        accesses = _accesses(stmt)
        for operand in found.operands:
            if operand.stmt != stmt.name or operand.buffer in pointers:
                continue
            pointers[operand.buffer] = emitter._address(accesses[operand.position])
    for operand in found.operands:
        if operand.stmt != found.main or operand.buffer in strides:
            continue
        values = []
        for dim, stride in enumerate(operand.strides):
            if isinstance(stride, int):
                values.append(ir.Constant(I64, stride))
                continue
            unit = call.units[operand.unit_dims[dim]] if operand.unit_dims[dim] >= 0 else None
            if unit is None:
                values.append(ir.Constant(I64, 0))  # extent 1: never stepped along
                continue
            with emitter.bound(unit) as stmt:
                moved = emitter._address(_accesses(stmt)[operand.position])
            base = pointers[operand.buffer]
            size = ir.Constant(I64, itemsize(intrin.buffers[operand.buffer].dtype))
            delta = b.sub(b.ptrtoint(moved, I64), b.ptrtoint(base, I64))
            values.append(b.sdiv(delta, size))
        strides[operand.buffer] = values
    missing = [buf.name for k, buf in enumerate(intrin.buffers) if k not in pointers]
    if missing:
        raise InternalError(f"intrinsic '{intrin.name}': no access binds buffer(s) "
                            f"{', '.join(missing)}")
    context = EmitContext(b, emitter.module, intrin, pointers, strides,
                          program_imports(emitter.program))
    for item in _parts(intrin, found.part):
        _emit_item(context, item)
    emitter._known_in = (0, {})  # the intrinsic wrote memory: nothing is known


def _parts(intrin, part: str) -> tuple:
    if part == "update":
        return intrin.update
    return intrin.body if intrin.body else intrin.reset + intrin.update


def _accesses(stmt) -> dict:
    """The statement's reads in pre-order by position, and its write under None."""
    reads: list[TensorRead] = []

    def visit(expr):
        if isinstance(expr, TensorRead):
            reads.append(expr)
            return
        for child in children(expr):
            visit(child)

    visit(stmt.value)
    found = dict(enumerate(reads))
    found[None] = stmt.target
    return found


def _emit_item(ctx: EmitContext, item) -> None:
    from ...tensorize.intrin import ExternCall, PointerArg, StrideArg

    if isinstance(item, ExternCall):
        b = ctx.builder
        args, types = [], []
        for arg in item.args:
            if isinstance(arg, PointerArg):
                args.append(ctx.pointer(arg.buffer)); types.append(ir.PointerType())
            elif isinstance(arg, StrideArg):
                args.append(ctx.stride(arg.buffer, arg.dim)); types.append(I64)
            else:
                args.append(ir.Constant(I64, arg)); types.append(I64)
        ret = ir.VoidType() if item.ret_dtype in (None, "void") else llvm_type(item.ret_dtype)
        defined = _imported_type(ctx.imports, item.name)
        if defined is not None:  # as the imported IR defines it (C's int is i32)
            ret, types, args = _as_defined(b, item, defined, args)
        b.call(intrinsic(ctx.module, item.name, ret, types), args)
        return
    emit = item.emit if item.emit is not None else BUILTIN_EMITTERS.get(item.name)
    if emit is None:
        raise BackendError(f"no LLVM emitter named '{item.name}' (known: "
                           f"{', '.join(sorted(BUILTIN_EMITTERS))})")
    if item.emit is None:
        emit(ctx, item.part, **dict(item.params))
    else:
        emit(ctx)


# -- built-in emitters ---------------------------------------------------------------------
def _splat(b: ir.IRBuilder, value: ir.Value, lanes: int) -> ir.Value:
    vector = ir.VectorType(value.type, lanes)
    one = b.insert_element(ir.Constant(vector, None), value, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(vector, None),
                            ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))


def _tile(ctx: EmitContext, part: str, rows: int, cols: int, element: ir.Type, step):
    """A ``rows x cols`` tile of 16-lane accumulators in c (the last buffer): zeroed
    (reset), updated by ``step(acc, row, vector)`` (update), or both (body)."""
    b = ctx.builder
    c = len(ctx.intrin.buffers) - 1
    rank_c = len(ctx.intrin.buffers[c].shape)
    vector = ir.VectorType(element, 16)
    for r in range(rows):
        for v in range(cols // 16):
            index = (r, 16 * v) if rank_c == 2 else (16 * v,)
            address = ctx.element(c, *index)
            if part == "reset":
                b.store(ir.Constant(vector, None), address, align=4)
                continue
            acc = ir.Constant(vector, None) if part == "body" else \
                b.load(address, typ=vector, align=4)
            b.store(step(acc, r, v), address, align=4)


def vnni_gemm(ctx: EmitContext, part: str, rows: int, cols: int) -> None:
    """``c[r, j] += sum_t a[r, t] * b[j, t]`` (u8 x s8 -> s32) with ``vpdpbusd``."""
    b = ctx.builder
    v16 = ir.VectorType(I32, 16)
    dot = intrinsic(ctx.module, "llvm.x86.avx512.vpdpbusd.512", v16, [v16, v16, v16])
    rank_a = len(ctx.intrin.buffers[0].shape)
    a_rows = [_splat(b, b.load(ctx.element(0, *((r, 0) if rank_a == 2 else (0,))), typ=I32,
                               align=1), 16) for r in range(rows)] if part != "reset" else []
    b_vectors = [b.load(ctx.element(1, 16 * v, 0), typ=v16, align=1)
                 for v in range(cols // 16)] if part != "reset" else []
    _tile(ctx, part, rows, cols, I32, lambda acc, r, v: b.call(dot, [acc, a_rows[r],
                                                                     b_vectors[v]]))


def vnni_pixels(ctx: EmitContext, part: str, channels: int, pixels: int) -> None:
    """``c[j, p] += sum_t a[p, t] * b[j, t]`` (u8 x s8 -> s32) with ``vpdpbusd`` lanes
    along the pixels ``p`` (a dense, c's pixels contiguous per channel ``j``): each
    vector of 16 pixels' 4 channels is loaded once, each channel's 4 weights broadcast."""
    b = ctx.builder
    v16 = ir.VectorType(I32, 16)
    dot = intrinsic(ctx.module, "llvm.x86.avx512.vpdpbusd.512", v16, [v16, v16, v16])
    vectors = pixels // 16
    a_vectors = [b.load(b.gep(ctx.pointer(0), [ir.Constant(I64, 64 * v)], inbounds=True,
                              source_etype=ir.IntType(8)), typ=v16, align=1)
                 for v in range(vectors)] if part != "reset" else []
    weights = [_splat(b, b.load(ctx.element(1, j, 0), typ=I32, align=1), 16)
               for j in range(channels)] if part != "reset" else []
    for j in range(channels):
        row = ctx.element(2, j, 0, 0)
        for v in range(vectors):
            address = b.gep(row, [ir.Constant(I64, 16 * v)], inbounds=True, source_etype=I32)
            if part == "reset":
                b.store(ir.Constant(v16, None), address, align=4)
                continue
            acc = ir.Constant(v16, None) if part == "body" else \
                b.load(address, typ=v16, align=4)
            b.store(b.call(dot, [acc, a_vectors[v], weights[j]]), address, align=4)


def fma_rows(ctx: EmitContext, part: str, rows: int, cols: int) -> None:
    """``c[r, j] += a[r, 0] * b[0, j]`` (fp32) with 16-lane FMAs."""
    b = ctx.builder
    f16 = ir.VectorType(ir.FloatType(), 16)
    fma = intrinsic(ctx.module, "llvm.fma.v16f32", f16, [f16, f16, f16])
    a_rows = [_splat(b, b.load(ctx.element(0, r, 0), typ=ir.FloatType(), align=4), 16)
              for r in range(rows)] if part != "reset" else []
    b_vectors = [b.load(ctx.element(1, 0, 16 * v), typ=f16, align=4)
                 for v in range(cols // 16)] if part != "reset" else []
    _tile(ctx, part, rows, cols, ir.FloatType(),
          lambda acc, r, v: b.call(fma, [a_rows[r], b_vectors[v], acc]))


class _BFloat(ir.types.Type):
    """LLVM's ``bfloat`` (llvmlite has no class for it)."""

    def _to_string(self):
        return "bfloat"


def dpbf16_gemm(ctx: EmitContext, part: str, rows: int, cols: int) -> None:
    """``c[r, j] += sum_t a[r, t] * b[j, t]`` (bfloat16 pairs -> float32) with
    ``vdpbf16ps``."""
    b = ctx.builder
    f16 = ir.VectorType(ir.FloatType(), 16)
    pairs = ir.VectorType(_BFloat(), 32)
    v16 = ir.VectorType(I32, 16)
    dot = intrinsic(ctx.module, "llvm.x86.avx512bf16.dpbf16ps.512", f16, [f16, pairs, pairs])
    a_rows = [b.bitcast(_splat(b, b.load(ctx.element(0, r, 0), typ=I32, align=2), 16), pairs)
              for r in range(rows)] if part != "reset" else []
    b_vectors = [b.bitcast(b.load(ctx.element(1, 16 * v, 0), typ=v16, align=2), pairs)
                 for v in range(cols // 16)] if part != "reset" else []
    _tile(ctx, part, rows, cols, ir.FloatType(),
          lambda acc, r, v: b.call(dot, [acc, a_rows[r], b_vectors[v]]))


BUILTIN_EMITTERS = {"vnni_gemm": vnni_gemm, "vnni_pixels": vnni_pixels, "fma_rows": fma_rows,
                    "dpbf16_gemm": dpbf16_gemm}
# the CPU features each built-in emitter's instructions need (LLVM names)
EMITTER_FEATURES = {"vnni_gemm": ("avx512f", "avx512vnni"),
                    "vnni_pixels": ("avx512f", "avx512vnni"),
                    "fma_rows": ("avx512f",), "dpbf16_gemm": ("avx512f", "avx512bf16")}
BUILTIN_EMITTERS.update(AMX_EMITTERS)  # AMX tiles (.amx), whose features depend on the op


def check_emitters_supported(program, machine) -> None:
    """Refuse a program tensorized with a built-in intrinsic whose instructions the CPU
    code is compiled for (``machine``, a TargetInfo) lacks: LLVM would abort the process
    on them."""
    from ...lowering_errors import MissingInstructionsError
    from ...tensorize.intrin import ExternCall

    for stage, axis, intrin in getattr(program, "tensorized", ()):
        for item in (*intrin.body, *intrin.reset, *intrin.update):
            if isinstance(item, ExternCall) or item.emit is not None:
                continue
            needed = amx_features(item) or EMITTER_FEATURES.get(item.name, ())
            missing = [f for f in needed if not machine.has(f)]
            if missing:
                raise MissingInstructionsError(tuple(missing), machine.name, stage=stage,
                                               intrinsic=intrin.name)


# -- imported code -----------------------------------------------------------------------------
_LOADED: dict[str, str] = {}


def program_imports(program) -> list:
    """The code ``program`` imports (its intrinsics' and its pragmas'), each once."""
    found = {}
    for _, _, intrin in program.tensorized:
        for item in intrin.imports:
            found.setdefault(item.key, item)
    for _, _, item in program.imports:
        found.setdefault(item.key, item)
    return list(found.values())


def link_imports(func, ir_text: str) -> str:
    """``ir_text`` with the LLVM IR the function imports (its intrinsics' imports and
    ``pragma import_llvm``) linked in; C sources (``import_c``) are compiled
    (``cc -shared``) and loaded into the process once."""
    imports = program_imports(func.program)
    _check_calls_resolve(func.program, imports)
    if not imports:
        return ir_text
    module = None
    for item in imports:
        if item.language == "c":
            _load_c(item)
            continue
        if module is None:
            module = llvm.parse_assembly(ir_text)
        try:
            extra = llvm.parse_assembly(item.code)
        except RuntimeError as err:
            raise BackendError(f"imported LLVM IR does not parse: {err}") from None
        module.link_in(extra)
    return ir_text if module is None else str(module)


def _check_calls_resolve(program, imports) -> None:
    """Raise :class:`BackendError` unless every function the intrinsics call
    (``call_extern``) is defined by imported code or by the process (a C library, an
    ``import_c`` library loaded before): the JIT would leave the call jumping to 0."""
    from ...tensorize.intrin import ExternCall

    names = {item.name for _, _, intrin in program.tensorized
             for item in (*intrin.body, *intrin.reset, *intrin.update)
             if isinstance(item, ExternCall)}
    for item in imports:
        if item.language == "c":
            _load_c(item)
    for name in sorted(names):
        if _imported_type(imports, name) is not None or symbol_address(name):
            continue
        defined = [f for item in imports if item.language == "llvm"
                   for f in _SIGNATURES.get(item.key, ())]
        close = [f for f in defined if name in f]
        hint = (f"; the imported IR defines {', '.join(close)}: C++ names functions by "
                f"their arguments, declare it extern \"C\"" if close else "")
        raise BackendError(f"call_extern '{name}': no imported code and nothing in the "
                           f"process defines it; give its code with s[C].pragma(axis, "
                           f"'import_llvm' or 'import_c', code) or the intrinsic's "
                           f"imports=[...]{hint}")


_SIGNATURES: dict[str, dict] = {}


def _imported_type(imports, name: str) -> tuple | None:
    """``(return type, parameter types)`` (LLVM's text) of the function ``name`` as
    imported LLVM IR defines it, or None."""
    for item in imports:
        if item.language != "llvm":
            continue
        if item.key not in _SIGNATURES:
            try:
                module = llvm.parse_assembly(item.code)
            except RuntimeError:
                module = None  # link_imports reports it
            _SIGNATURES[item.key] = {} if module is None else {
                f.name: tuple(str(t) for t in f.global_value_type.elements)
                for f in module.functions if not f.is_declaration}
        if name in _SIGNATURES[item.key]:
            ret, *params = _SIGNATURES[item.key][name]
            return ret, params
    return None


def _as_defined(b, item, defined, args) -> tuple:
    """The call's return type, parameter types and arguments converted to the types the
    imported definition has (integers truncated or extended; pointers as they are)."""
    ret, params = defined
    if len(params) != len(args):
        raise BackendError(f"call_extern '{item.name}' passes {len(args)} arguments, but the "
                           f"imported LLVM IR defines it with {len(params)}: "
                           f"{ret} ({', '.join(params)})")
    types, converted = [], []
    for arg, param in zip(args, params):
        if param == "ptr" and isinstance(arg.type, ir.PointerType):
            types.append(ir.PointerType()); converted.append(arg)
            continue
        if not (param.startswith("i") and param[1:].isdigit()) or \
                not isinstance(arg.type, ir.IntType):
            raise BackendError(f"call_extern '{item.name}': the imported LLVM IR takes "
                               f"{param} where the call passes {arg.type}; pass pointers "
                               "(access_ptr) for ptr and ints or strides for integers")
        wanted = ir.IntType(int(param[1:]))
        types.append(wanted)
        if isinstance(arg, ir.Constant):
            converted.append(ir.Constant(wanted, arg.constant))
        elif wanted.width < arg.type.width:
            converted.append(b.trunc(arg, wanted))
        else:
            converted.append(b.sext(arg, wanted) if wanted.width > arg.type.width else arg)
    return _parsed_type(ret), types, converted


def _parsed_type(text: str) -> ir.Type:
    """An llvmlite type for LLVM's text of a scalar return type."""
    simple = {"void": ir.VoidType(), "float": ir.FloatType(), "double": ir.DoubleType(),
              "ptr": ir.PointerType()}
    if text in simple:
        return simple[text]
    if text.startswith("i") and text[1:].isdigit():
        return ir.IntType(int(text[1:]))
    raise BackendError(f"an imported function returns {text}; call_extern supports void, "
                       "integers, float, double and pointers")


def _load_c(item) -> None:
    if item.key in _LOADED:
        return
    folder = private_folder("imports")  # never a folder another user can write
    library = os.path.join(folder, f"{item.key}.so")
    if not verified_file(library):
        compiler = os.environ.get("CC", "cc")
        with tempfile.TemporaryDirectory(dir=folder) as work:
            source, partial = os.path.join(work, "k.c"), os.path.join(work, "k.so")
            with open(source, "w", encoding="utf-8") as handle:
                handle.write(item.code)
            try:
                subprocess.run([compiler, *item.flags, "-shared", "-fPIC", "-o", partial,
                                source], check=True, capture_output=True, text=True)
            except FileNotFoundError:
                raise BackendError(f"import_c needs a C compiler: '{compiler}' was not found "
                                   "(install gcc, or set CC)") from None
            except subprocess.CalledProcessError as err:
                raise BackendError(f"the C source imported by an intrinsic does not compile:"
                                   f"\n{err.stderr}") from None
            with open(partial, "rb") as handle:
                write_verified(library, handle.read())
    ctypes.CDLL(library)
    llvm.load_library_permanently(library)
    _LOADED[item.key] = library
