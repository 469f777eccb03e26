"""OpenCL C text for the values of statements (tensor-expression nodes).

Each node is computed in its own dtype and converted where its parent needs another,
as in the LLVM backend: float to integer conversions saturate (``convert_int_sat``),
integer ``//`` and ``%`` are Python's floor division and modulo (0 for a zero
divisor), ``po.if_then_else`` evaluates only the chosen side.

>>> from polyopt.te.expr import Var
>>> n = Var("n")
>>> ValuePrinter(lambda e: e.name, None).emit(n * 2 + 1, "float32")
'(float)(((n * 2L) + 1L))'
"""

from __future__ import annotations

import math
from typing import Callable

from ... import dtypes
from ...errors import DTypeError, InternalError
from ...te.expr import (BinOp, Call, Cast, Compare, Const, Expr, IterVar, Logical, Select,
                        TensorRead, Var)

CL_TYPES = {"float32": "float", "float64": "double", "int8": "char", "uint8": "uchar",
            "int16": "short", "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long", "uint64": "ulong",
            dtypes.BOOL: "int"}

# Helpers of every OpenCL program: float maximum/minimum that propagate NaN (as NumPy's
# and the LLVM backend's do); Python's floor division and modulo on 64-bit integers (0
# when dividing by 0; x // -1 is -x without the trap of LONG_MIN / -1), used by integer
# // and % and by isl's floord
HELPERS = """\
#define po_fmax(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmax((a), (b)))
#define po_fmin(a, b) ((isnan(a) || isnan(b)) ? (a) + (b) : fmin((a), (b)))
inline long po_floordiv(long a, long b) {
  if (b == 0) return 0;
  if (b == -1) return -a;
  long q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
inline long po_floormod(long a, long b) {
  if (b == 0 || b == -1) return 0;
  long r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
"""


def cl_type(dtype: str) -> str:
    if dtype not in CL_TYPES:
        raise DTypeError(f"the OpenCL target has no {dtype} arrays (a storage type); build "
                         "for the CPU (\"llvm\"), or convert the data to float32 first")
    return CL_TYPES[dtype]


def constant(value, dtype: str) -> str:
    """A literal of ``dtype``: ``1.5f``, ``INFINITY``, ``((char)-3)``."""
    if dtypes.is_float(dtype):
        value = float(value)
        if math.isnan(value):
            text = "NAN"
        elif math.isinf(value):
            text = "INFINITY" if value > 0 else "(-INFINITY)"
        else:
            text = repr(value) + ("f" if dtype == "float32" else "")
        return text if dtype == "float32" or not text.isalpha() else f"((double){text})"
    if dtype == dtypes.BOOL:
        return "1" if value else "0"
    value = int(value)
    if dtype == "int64":
        return f"{value}L" if value != -(1 << 63) else "(-9223372036854775807L - 1)"
    return f"(({cl_type(dtype)}){value})"


class ValuePrinter:
    """Prints one statement's value; ``index(expr)`` gives the text of an axis or var
    (a ``long``) and ``address(read)`` the text of a tensor element."""

    def __init__(self, index: Callable[[Expr], str], address: Callable[[TensorRead], str]):
        self.index = index
        self.address = address
        self.reduction = None  # the node combining an accumulation: a multiply-add is fused


    def emit(self, expr: Expr, dtype: str) -> str:
        """The text of ``expr`` converted to ``dtype``."""
        if isinstance(expr, Const):
            return constant(expr.value, dtype)
        return self.convert(self._native(expr), expr.dtype, dtype)

    def _native(self, expr: Expr) -> str:
        if isinstance(expr, (IterVar, Var)):
            return self.index(expr)
        if isinstance(expr, TensorRead):
            return self.address(expr)
        if isinstance(expr, BinOp):
            return self._binop(expr)
        if isinstance(expr, Compare):
            dtype = expr.operand_dtype
            return f"({self.emit(expr.a, dtype)} {expr.op} {self.emit(expr.b, dtype)})"
        if isinstance(expr, Logical):
            args = [self.emit(a, dtypes.BOOL) for a in expr.args]
            if expr.op == "not":
                return f"(!{args[0]})"
            return "(" + (" && " if expr.op == "and" else " || ").join(args) + ")"
        if isinstance(expr, Select):
            return (f"({self.emit(expr.cond, dtypes.BOOL)} ? {self.emit(expr.then, expr.dtype)}"
                    f" : {self.emit(expr.otherwise, expr.dtype)})")
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, Cast):
            return self.emit(expr.value, expr.dtype)
        raise InternalError(f"cannot print {type(expr).__name__} '{expr}' as OpenCL C")

    def _binop(self, expr: BinOp) -> str:
        dtype = expr.dtype
        fused = self._fused(expr)
        if fused is not None:
            return fused
        a, b = self.emit(expr.a, dtype), self.emit(expr.b, dtype)
        if dtypes.is_float(dtype):
            if expr.op not in "+-*/":
                raise InternalError(f"float operation '{expr.op}' reached code generation")
            return f"({a} {expr.op} {b})"
        if expr.op in ("//", "%"):
            helper = "po_floordiv" if expr.op == "//" else "po_floormod"
            text = f"{helper}((long)({a}), (long)({b}))"
        else:
            text = f"({a} {expr.op} {b})"
        return text if dtype == "int64" else f"(({cl_type(dtype)}){text})"

    def _fused(self, expr: BinOp) -> str | None:
        """``fma(x, y, acc)`` for the accumulation ``acc + x * y``: programs are built
        with FP_CONTRACT OFF (every other value rounds exactly as written, as on the LLVM
        backend, which lets only accumulations contract)."""
        if expr is not self.reduction or expr.op != "+" or not dtypes.is_float(expr.dtype):
            return None
        for acc, other in ((expr.a, expr.b), (expr.b, expr.a)):
            if isinstance(other, BinOp) and other.op == "*" and other.dtype == expr.dtype:
                return (f"fma({self.emit(other.a, expr.dtype)}, {self.emit(other.b, expr.dtype)}"
                        f", {self.emit(acc, expr.dtype)})")
        return None

    def _call(self, expr: Call) -> str:
        dtype = expr.dtype
        args = [self.emit(a, dtype) for a in expr.args]
        if expr.func == "neg":
            text = f"(-{args[0]})"
            return text if dtypes.is_float(dtype) or dtype == "int64" else \
                f"(({cl_type(dtype)}){text})"
        if dtypes.is_float(dtype):
            name = {"abs": "fabs", "maximum": "po_fmax", "minimum": "po_fmin"}.get(
                expr.func, expr.func)
            return f"{name}({', '.join(args)})"
        if expr.func == "abs":
            if not dtypes.is_signed(dtype):
                return args[0]
            return f"(({cl_type(dtype)})({args[0]} < 0 ? -{args[0]} : {args[0]}))"
        if expr.func in ("maximum", "minimum"):
            return f"{'max' if expr.func == 'maximum' else 'min'}({args[0]}, {args[1]})"
        if expr.func == "popcount":
            return f"(({cl_type(dtype)})popcount({args[0]}))"
        raise InternalError(f"{expr.func} of integers reached code generation")

    @staticmethod
    def convert(text: str, src: str, dst: str) -> str:
        if src == dst:
            return text
        if dst == dtypes.BOOL:
            raise InternalError(f"cannot convert {src} to a condition")
        if dtypes.is_float(src) and dtypes.is_int(dst):
            return f"convert_{cl_type(dst)}_sat({text})"
        return f"({cl_type(dst)})({text})"


def combine(op: str, a: str, b: str, dtype: str) -> str:
    """The text combining two partial results of an accumulation."""
    if op in "+*":
        text = f"({a} {op} {b})"
        return text if dtypes.is_float(dtype) or dtype == "int64" else \
            f"(({cl_type(dtype)}){text})"
    if dtypes.is_float(dtype):
        return f"{'po_fmax' if op == 'maximum' else 'po_fmin'}({a}, {b})"
    return f"{'max' if op == 'maximum' else 'min'}({a}, {b})"
