"""Emit LLVM IR for the values of statements (tensor-expression nodes).

Each node is computed in its own dtype and converted where its parent needs another
(so ``A[i] * (i + 1)`` computes ``i + 1`` in int64, then converts it to A's dtype);
Python constants are emitted directly in the dtype their parent needs.  The arithmetic
that combines an accumulation (``C[i] = C[i] + x``, ``maximum(C[i], x)``: a reduction's
update) may be reassociated (``reassoc contract nsz``) so that reductions vectorize;
everything else is computed exactly as written, so legal schedules of statements that
are not reductions give bit-identical results.  NaN and infinity keep their IEEE meaning.

>>> str(llvm_type("float32")), str(llvm_type("uint8"))
('float', 'i8')
"""

from __future__ import annotations

import hashlib
from typing import Callable

from llvmlite import ir

from ... import dtypes
from ...errors import InternalError
from ...te.expr import (LIBC_CALLS, BinOp, Call, Cast, Compare, Const, Expr, IterVar,
                        Logical, Select, TensorRead, Var)

FAST = ("reassoc", "contract", "nsz")  # accumulations: lets LLVM vectorize reductions
EXACT = ()  # everything else: the same rounding under every schedule
I64 = ir.IntType(64)
I1 = ir.IntType(1)


NAME_LIMIT = 64  # LLVM refuses local names over 1,024 characters (300 nested splits)


def ir_name(name: str) -> str:
    """``name`` for an LLVM local value or block: long names are clipped, with a hash
    of the whole name so that clipped names stay distinct and deterministic.

    >>> ir_name("i_outer"), len(ir_name("i" + "_outer" * 300))
    ('i_outer', 64)
    """
    if len(name) <= NAME_LIMIT:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:15]
    return f"{name[:NAME_LIMIT - 16]}.{digest}"


def llvm_type(dtype: str) -> ir.Type:
    if dtype == "float32":
        return ir.FloatType()
    if dtype == "float64":
        return ir.DoubleType()
    if dtype == dtypes.BOOL:
        return I1
    return ir.IntType(dtypes.bits(dtype))  # integers, and bfloat16's bits (i16)


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    """Declare (once) and return the function ``name`` of type ``ret(args)``."""
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def vector_suffix(vector: ir.VectorType) -> str:
    """The overloaded-intrinsic suffix of a vector type (``v16f32``, ``v8i64``).

    >>> vector_suffix(ir.VectorType(ir.FloatType(), 16))
    'v16f32'
    """
    element = vector.element
    if isinstance(element, ir.IntType):
        name = f"i{element.width}"
    else:
        name = {ir.FloatType: "f32", ir.DoubleType: "f64", ir.HalfType: "f16"}[type(element)]
    return f"v{vector.count}{name}"


class ValueEmitter:
    """Emits one statement's value; ``address(read)`` gives the pointer of a tensor read."""

    def __init__(self, builder: ir.IRBuilder, module: ir.Module,
                 index: Callable[[Expr], ir.Value], address: Callable[[TensorRead], ir.Value]):
        self.b = builder
        self.module = module
        self.index = index      # integer index expressions -> i64
        self.address = address  # tensor reads -> element pointer
        self.reduction = None   # the node combining an accumulation (may be reassociated)
        self.tag: Callable[[ir.Instruction], None] = lambda load: None  # e.g. access groups
        self.read: Callable[[TensorRead], ir.Value] = self.load  # may reuse known values

    def load(self, read: TensorRead) -> ir.Value:
        """A load of the element ``read``."""
        load = self.b.load(self.address(read), typ=llvm_type(read.dtype))
        self.tag(load)
        return load

    def emit(self, expr: Expr, dtype: str) -> ir.Value:
        """The value of ``expr`` converted to ``dtype``."""
        if isinstance(expr, Const):
            return _constant(expr.value, dtype)
        value = self._native(expr)
        return self.convert(value, expr.dtype, dtype)

    def _native(self, expr: Expr) -> ir.Value:
        if isinstance(expr, (IterVar, Var)):
            return self.index(expr)
        if isinstance(expr, TensorRead):
            return self.read(expr)
        if isinstance(expr, BinOp):
            return self._binop(expr)
        if isinstance(expr, Compare):
            return self._compare(expr)
        if isinstance(expr, Logical):
            args = [self.emit(a, dtypes.BOOL) for a in expr.args]
            if expr.op == "not":
                return self.b.xor(args[0], ir.Constant(I1, 1))
            result = args[0]
            for arg in args[1:]:
                result = (self.b.and_ if expr.op == "and" else self.b.or_)(result, arg)
            return result
        if isinstance(expr, Select):
            return self._select(expr)
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, Cast):
            return self.emit(expr.value, expr.dtype)
        raise InternalError(f"cannot emit {type(expr).__name__} '{expr}'")

    def _flags(self, expr: Expr) -> tuple[str, ...]:
        """Reductions combine with FAST flags; their direct operands may be contracted
        into it (a multiply-add becomes an FMA); nothing else is changed."""
        if self.reduction is None:
            return EXACT
        if expr is self.reduction:
            return FAST
        if any(expr is child for child in _operands(self.reduction)):
            return ("contract",)
        return EXACT

    def _binop(self, expr: BinOp) -> ir.Value:
        dtype = expr.dtype
        a, b = self.emit(expr.a, dtype), self.emit(expr.b, dtype)
        if dtypes.is_float(dtype):
            method = {"+": self.b.fadd, "-": self.b.fsub, "*": self.b.fmul,
                      "/": self.b.fdiv}[expr.op]
            return method(a, b, flags=self._flags(expr))
        if expr.op in ("+", "-", "*"):
            return {"+": self.b.add, "-": self.b.sub, "*": self.b.mul}[expr.op](a, b)
        return self.floor_divmod(expr.op, a, b, dtypes.is_signed(dtype))

    def floor_divmod(self, op: str, a: ir.Value, b: ir.Value, signed: bool) -> ir.Value:
        """Python's floor ``//`` and ``%``; division by zero gives 0 and the least integer
        ``// -1`` wraps to itself (as NumPy does) instead of trapping."""
        zero, one = ir.Constant(a.type, 0), ir.Constant(a.type, 1)
        is_zero = self.b.icmp_unsigned("==", b, zero)
        if not signed:
            safe = self.b.select(is_zero, one, b)
            result = (self.b.udiv if op == "//" else self.b.urem)(a, safe)
            return self.b.select(is_zero, zero, result)
        # x // -1 is -x and x % -1 is 0: divide by 1 instead, since the CPU traps on
        # least_int / -1 (sdiv/srem overflow)
        is_minus_one = self.b.icmp_signed("==", b, ir.Constant(a.type, -1))
        safe = self.b.select(self.b.or_(is_zero, is_minus_one), one, b)
        q, r = self.b.sdiv(a, safe), self.b.srem(a, safe)
        needs_fix = self.b.and_(self.b.icmp_signed("!=", r, zero),
                                self.b.icmp_signed("!=", self.b.icmp_signed("<", r, zero),
                                                   self.b.icmp_signed("<", safe, zero)))
        if op == "//":
            result = self.b.sub(q, self.b.zext(needs_fix, a.type))
            result = self.b.select(is_minus_one, self.b.neg(a), result)
        else:
            result = self.b.select(needs_fix, self.b.add(r, safe), r)
        return self.b.select(is_zero, zero, result)

    def _compare(self, expr: Compare) -> ir.Value:
        dtype = expr.operand_dtype
        a, b = self.emit(expr.a, dtype), self.emit(expr.b, dtype)
        if dtypes.is_float(dtype):
            if expr.op == "!=":
                return self.b.fcmp_unordered("!=", a, b)
            return self.b.fcmp_ordered(expr.op, a, b)
        compare = self.b.icmp_signed if dtypes.is_signed(dtype) else self.b.icmp_unsigned
        return compare(expr.op, a, b)

    def _select(self, expr: Select) -> ir.Value:
        """Branches, so that a read guarded by the condition never happens outside it."""
        cond = self.emit(expr.cond, dtypes.BOOL)
        then_block = self.b.append_basic_block("then")
        else_block = self.b.append_basic_block("else")
        join = self.b.append_basic_block("join")
        self.b.cbranch(cond, then_block, else_block)
        results = []
        for block, branch in ((then_block, expr.then), (else_block, expr.otherwise)):
            self.b.position_at_end(block)
            results.append((self.emit(branch, expr.dtype), self.b.block))
            self.b.branch(join)
        self.b.position_at_end(join)
        phi = self.b.phi(llvm_type(expr.dtype))
        for value, block in results:
            phi.add_incoming(value, block)
        return phi

    def _call(self, expr: Call) -> ir.Value:
        dtype = expr.dtype
        args = [self.emit(a, dtype) for a in expr.args]
        ty = llvm_type(dtype)
        if dtypes.is_float(dtype):
            if expr.func == "neg":
                return self.b.fneg(args[0])
            name = {"abs": "fabs", "maximum": "maximum", "minimum": "minimum",
                    "fmax": "maxnum", "fmin": "minnum"}.get(expr.func, expr.func)
            suffix = "f32" if dtype == "float32" else "f64"
            if name in LIBC_CALLS:  # no intrinsic: the C library's atan / atanf
                fn = intrinsic(self.module, name + ("f" if dtype == "float32" else ""), ty,
                               [ty] * len(args))
                return self.b.call(fn, args)
            fn = intrinsic(self.module, f"llvm.{name}.{suffix}", ty, [ty] * len(args))
            return self.b.call(fn, args, fastmath=self._flags(expr))
        signed = dtypes.is_signed(dtype)
        if expr.func == "neg":
            return self.b.neg(args[0])
        if expr.func == "abs":
            if not signed:
                return args[0]
            negative = self.b.icmp_signed("<", args[0], ir.Constant(ty, 0))
            return self.b.select(negative, self.b.neg(args[0]), args[0])
        if expr.func in ("maximum", "minimum"):
            compare = self.b.icmp_signed if signed else self.b.icmp_unsigned
            first = compare(">" if expr.func == "maximum" else "<", args[0], args[1])
            return self.b.select(first, args[0], args[1])
        if expr.func == "popcount":
            return self.b.ctpop(args[0])
        raise InternalError(f"{expr.func} of integers reached code generation")

    def convert(self, value: ir.Value, src: str, dst: str) -> ir.Value:
        if src == dst:
            return value
        if src == dtypes.BFLOAT16:  # the upper half of a float32: exact
            wide = self.b.shl(self.b.zext(value, ir.IntType(32)), ir.Constant(ir.IntType(32), 16))
            return self.convert(self.b.bitcast(wide, ir.FloatType()), "float32", dst)
        if src == dtypes.FLOAT16:  # exact (see half_to_float)
            return self.convert(half_to_float(self.b, value), "float32", dst)
        if dst == dtypes.FLOAT16:  # through float32, rounded to nearest even
            return float_to_half(self.b, self.convert(value, src, "float32"))
        if dst == dtypes.BFLOAT16:  # through float32, rounded to nearest even
            bits = self.b.bitcast(self.convert(value, src, "float32"), ir.IntType(32))
            odd = self.b.and_(self.b.lshr(bits, ir.Constant(ir.IntType(32), 16)),
                              ir.Constant(ir.IntType(32), 1))
            rounded = self.b.add(self.b.add(bits, ir.Constant(ir.IntType(32), 0x7FFF)), odd)
            return self.b.trunc(self.b.lshr(rounded, ir.Constant(ir.IntType(32), 16)),
                                ir.IntType(16))
        ty = llvm_type(dst)
        if src == dtypes.BOOL:
            return self.b.uitofp(value, ty) if dtypes.is_float(dst) else self.b.zext(value, ty)
        if dst == dtypes.BOOL:
            raise InternalError(f"cannot convert {src} to a condition")
        if dtypes.is_float(src) and dtypes.is_float(dst):
            return self.b.fpext(value, ty) if dst == "float64" else self.b.fptrunc(value, ty)
        if dtypes.is_int(src) and dtypes.is_float(dst):
            return (self.b.sitofp if dtypes.is_signed(src) else self.b.uitofp)(value, ty)
        if dtypes.is_float(src):
            return _saturating_to_int(self.b, value, src, dst, ty)
        if dtypes.bits(dst) > dtypes.bits(src):
            return (self.b.sext if dtypes.is_signed(src) else self.b.zext)(value, ty)
        if dtypes.bits(dst) < dtypes.bits(src):
            return self.b.trunc(value, ty)
        return value


def _i32(value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(32), value)


def half_to_float(b: ir.IRBuilder, bits: ir.Value) -> ir.Value:
    """IEEE half bits (i16) -> float32, exactly, in integer and float32 operations only
    (no F16C instruction or compiler-runtime call): the exponent and mantissa moved into
    float32's fields and scaled by 2**112 (which also makes subnormals normal), the
    exponent of an infinity or NaN set to all ones, and the sign put back."""
    word = b.zext(bits, ir.IntType(32))
    magnitude = b.shl(b.and_(word, _i32(0x7FFF)), _i32(13))
    scaled = b.fmul(b.bitcast(magnitude, ir.FloatType()),
                    b.bitcast(_i32(0x77800000), ir.FloatType()))  # 2 ** 112
    special = b.icmp_unsigned(">=", magnitude, _i32(0x0F800000))  # half exponent 31
    value = b.select(special, b.or_(magnitude, _i32(0x7F800000)),
                     b.bitcast(scaled, ir.IntType(32)))
    sign = b.shl(b.and_(word, _i32(0x8000)), _i32(16))
    return b.bitcast(b.or_(value, sign), ir.FloatType())


def float_to_half(b: ir.IRBuilder, value: ir.Value) -> ir.Value:
    """float32 -> IEEE half bits (i16), rounded to nearest even as NumPy rounds: beyond
    the largest half after rounding -> infinity, NaN -> a quiet NaN, below the smallest
    normal half -> a subnormal (rounded by one float32 addition of 0.5, whose rounding
    is to nearest even), else the mantissa rounded in integers."""
    word = b.bitcast(value, ir.IntType(32))
    sign = b.lshr(b.and_(word, _i32(0x80000000)), _i32(16))
    magnitude = b.and_(word, _i32(0x7FFFFFFF))
    overflow = b.select(b.icmp_unsigned(">", magnitude, _i32(0x7F800000)), _i32(0x7E00),
                        _i32(0x7C00))
    magic = b.bitcast(_i32(0x3F000000), ir.FloatType())  # 0.5: aligns half subnormals
    small = b.sub(b.bitcast(b.fadd(b.bitcast(magnitude, ir.FloatType()), magic),
                            ir.IntType(32)), _i32(0x3F000000))
    odd = b.and_(b.lshr(magnitude, _i32(13)), _i32(1))
    rebased = b.add(magnitude, _i32(((15 - 127) << 23) + 0xFFF))
    normal = b.lshr(b.add(rebased, odd), _i32(13))
    result = b.select(b.icmp_unsigned(">=", magnitude, _i32(0x47800000)), overflow,
                      b.select(b.icmp_unsigned("<", magnitude, _i32(0x38800000)), small,
                               normal))
    return b.trunc(b.or_(result, sign), ir.IntType(16))


def _saturating_to_int(b: ir.IRBuilder, value: ir.Value, src: str, dst: str,
                       ty: ir.Type) -> ir.Value:
    """``value`` converted like ``llvm.fpto[su]i.sat`` (NaN -> 0, beyond the range ->
    its nearest end), written as compares, selects and a plain conversion, which LLVM
    vectorizes (x86 expands the ``.sat`` intrinsics into scalar branches: a vectorized
    requantization ran 3x slower)."""
    low, high, top = _saturation_bounds(src, dst)
    lo, hi, beyond = (ir.Constant(value.type, v) for v in (low, high, top + 1.0))
    clamped = b.select(b.fcmp_ordered("<", value, lo), lo, value)
    clamped = b.select(b.fcmp_ordered(">", clamped, hi), hi, clamped)
    converted = (b.fptosi if dtypes.is_signed(dst) else b.fptoui)(clamped, ty)
    if high != top:  # else the clamp to ``high`` already gives ``top`` (8-bit targets)
        converted = b.select(b.fcmp_ordered(">=", value, beyond), ir.Constant(ty, top),
                             converted)
    return b.select(b.fcmp_unordered("uno", value, value), ir.Constant(ty, 0), converted)


def _saturation_bounds(src: str, dst: str) -> tuple[float, float, int]:
    """``(low, high, top)``: the ends of integer ``dst``'s range as ``src`` floats, the
    upper one rounded down to a representable value (its conversion is in range), and
    the range's top (what values from ``top + 1``, a power of two, saturate to)."""
    bits = dtypes.bits(dst)
    lo, top = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtypes.is_signed(dst) else \
        (0, (1 << bits) - 1)
    hi, mantissa = top, 24 if src == "float32" else 53
    if hi.bit_length() > mantissa:
        hi = (hi >> (hi.bit_length() - mantissa)) << (hi.bit_length() - mantissa)
    return float(lo), float(hi), top


def _operands(expr: Expr) -> tuple[Expr, ...]:
    return (expr.a, expr.b) if isinstance(expr, BinOp) else getattr(expr, "args", ())


def _fsuffix(dtype: str) -> str:
    return "f32" if dtype == "float32" else "f64"


def _constant(value: int | float, dtype: str) -> ir.Constant:
    ty = llvm_type(dtype)
    if dtypes.is_float(dtype):
        return ir.Constant(ty, float(value))
    if dtype == dtypes.BOOL:
        return ir.Constant(ty, int(bool(value)))
    if isinstance(value, float):
        value = int(value)  # a Python float constant stored into an integer tensor
    bits = dtypes.bits(dtype)
    wrapped = value & ((1 << bits) - 1)
    return ir.Constant(ty, wrapped - (1 << bits) if wrapped >= 1 << (bits - 1) else wrapped)
