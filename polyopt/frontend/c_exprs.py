"""C expressions of a scop as Python kernel expressions, with C's types and conversions.

Every C expression is translated with its C type (:class:`Typed`), and explicit
conversions (``po.f64(x)``, a cast in the kernel language) are inserted where C
converts: integer promotions (``char``/``unsigned char`` operands become ``int``), the
usual arithmetic conversions (``float * 0.1`` is a double product), casts, the
argument and result types of the math functions (``sqrt`` of a float is a double,
``sqrtf`` a float) and assignments (a value stored into an ``int`` is truncated).

Integer arithmetic of loop variables, sizes and constants stays polyopt's exact index
arithmetic (C's agrees where it does not overflow, which C leaves undefined), so
indices and bounds remain affine.  C's ``/`` and ``%`` truncate toward zero: where both
operands are provably non-negative (a lower bound is tracked) they are polyopt's floor
``//`` and ``%``; elsewhere a value is computed with a branch on the signs, and an
index or a bound, which must stay affine, is refused.

>>> import polyopt as po
>>> k = po.from_c("void f(int n, float A[n], double B[n]) {\\n int i;\\n#pragma scop\\n"
...               " for (i = 0; i < n; i++) B[i] = A[i] * 0.1;\\n#pragma endscop\\n}\\n")
>>> print(k.program.statement("S0").value)
(float64)A[i] * 0.1
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, replace

import numpy as np

# C element types as polyopt's short names, and their ranks for the conversions.
INT_TYPES = ("i8", "u8", "i32", "i64")
FLOAT_TYPES = ("f32", "f64")
COND = "cond"  # a C int that is 0 or 1 (a comparison), kept as a polyopt condition
_BINOPS = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "%": ast.Mod}
_COMPARES = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE, "==": ast.Eq,
             "!=": ast.NotEq}
_MATH = {name: name for name in ("sqrt", "exp", "log", "tanh", "fabs")}
# C's math library functions computed as C's (LLVM's intrinsics): name -> arity
_LIBM = {"pow": 2, "floor": 1, "ceil": 1, "trunc": 1, "round": 1, "sin": 1, "cos": 1,
         "exp2": 1, "log2": 1, "log10": 1, "tan": 1, "asin": 1, "acos": 1, "atan": 1,
         "sinh": 1, "cosh": 1, "cbrt": 1, "expm1": 1, "log1p": 1, "erf": 1, "atan2": 2,
         "fmod": 2, "hypot": 2, "fmax": 2, "fmin": 2}
_INT_MAX, _LONG_MAX = 2 ** 31 - 1, 2 ** 63 - 1
# gcc's builtins behind <math.h>'s INFINITY, NAN and HUGE_VAL: value and C type
_BUILTIN_CONSTANTS = {
    "__builtin_inff": (float("inf"), "f32"), "__builtin_inf": (float("inf"), "f64"),
    "__builtin_huge_valf": (float("inf"), "f32"), "__builtin_huge_val": (float("inf"), "f64"),
    "__builtin_nanf": (float("nan"), "f32"), "__builtin_nan": (float("nan"), "f64")}


@dataclass(frozen=True)
class Typed:
    """A translated expression: ``node`` (Python ast) of C type ``ctype``; ``weak`` when
    ``node`` is polyopt index arithmetic (a loop variable, size or integer constant and
    their sums and products, exact) or a floating constant, which adopt the type of the
    other operand; ``low`` a proven lower bound of an integer value (or None)."""

    node: ast.expr
    ctype: str
    weak: bool = False
    low: int | None = None


def promoted(ctype: str) -> str:
    """C's integer promotion: ``char`` and ``unsigned char`` become ``int``."""
    return "i32" if ctype in ("i8", "u8", COND) else ctype


def usual(a: str, b: str) -> str:
    """C's usual arithmetic conversions of two operand types (short names)."""
    a, b = promoted(a), promoted(b)
    for wide in ("f64", "f32", "i64"):
        if wide in (a, b):
            return wide
    return "i32"


class CExpressions:
    """Mixin of :class:`~polyopt.frontend.c_translate.CTranslator`: C expressions.

    The translator provides ``error``, ``show``, ``ident``, ``_line``, ``_array_ref``,
    ``_element`` and the tables ``loops``, ``sizes``, ``types``, ``arrays``,
    ``local_scalars``, ``scalar_arrays``, ``ended_loops``."""

    affine_depth = 0  # > 0 while translating an index, a bound or an extent

    # -- entry points ---------------------------------------------------------------------
    def expr(self, node) -> ast.expr:
        """The value of a C expression (a comparison as 0 or 1)."""
        return self.value(self.typed(node)).node

    def affine(self, node) -> ast.expr:
        """An index, loop bound or extent: integer arithmetic that must stay affine."""
        self.affine_depth += 1
        try:
            return self.value(self.typed(node)).node
        finally:
            self.affine_depth -= 1

    def cond(self, node) -> ast.expr:
        """A C condition (nonzero is true)."""
        return self.condition(self.typed(node))

    # -- conversions ----------------------------------------------------------------------
    def cast(self, typed: Typed, ctype: str) -> ast.expr:
        """``typed`` converted to ``ctype`` as a strong value (``po.f64(x)``)."""
        typed = self.value(typed)
        if typed.ctype == ctype and not typed.weak:
            return typed.node
        at = {"lineno": getattr(typed.node, "lineno", 1), "col_offset": 0}
        return ast.Call(func=ast.Name(ctype, ast.Load(), **at), args=[typed.node],
                        keywords=[], **at)

    def value(self, typed: Typed) -> Typed:
        """A condition as the C int 0 or 1; anything else as it is."""
        if typed.ctype != COND:
            return typed
        at = _at(typed.node)
        return Typed(ast.IfExp(typed.node, ast.Constant(1, **at), ast.Constant(0, **at), **at),
                     "i32", weak=True, low=0)

    def condition(self, typed: Typed) -> ast.expr:
        if typed.ctype == COND:
            return typed.node
        at = _at(typed.node)
        return ast.Compare(typed.node, [ast.NotEq()], [ast.Constant(0, **at)], **at)

    def stored(self, typed: Typed, ctype: str) -> Typed:
        """``typed`` converted as C converts a value assigned to an object of ``ctype``."""
        typed = self.value(typed)
        if typed.weak and ctype not in ("i8", "u8") and \
                (typed.ctype in INT_TYPES or ctype in FLOAT_TYPES):
            return Typed(typed.node, ctype, True, typed.low)  # converted exactly on store
        low = typed.low if ctype in INT_TYPES and typed.ctype in INT_TYPES else None
        return Typed(self.cast(typed, ctype), ctype, False, 0 if ctype == "u8" else low)

    def _pair(self, left: Typed, right: Typed, ctype: str) -> tuple[ast.expr, ast.expr, bool]:
        """Both operands converted to ``ctype`` for a binary operation; whether the
        result is weak (both exact integers)."""
        if left.weak and right.weak:
            if ctype in INT_TYPES:
                return left.node, right.node, True
            # a floating constant with a weak operand: make the floating one strong
            a = self.cast(left, ctype) if left.ctype in FLOAT_TYPES else left.node
            b = self.cast(right, ctype) if left.ctype not in FLOAT_TYPES else right.node
            return a, b, False
        a = left.node if left.weak else self.cast(left, ctype)
        b = right.node if right.weak else self.cast(right, ctype)
        return a, b, False

    # -- expressions ----------------------------------------------------------------------
    def typed(self, node) -> Typed:
        from pycparser import c_ast
        at = {"lineno": self._line(node), "col_offset": 0}
        if isinstance(node, c_ast.Constant):
            return self._constant(node, at)
        if isinstance(node, c_ast.ID):
            return self._name(node, at)
        if isinstance(node, c_ast.ArrayRef):
            name, index = self._array_ref(node)
            ctype = self.types[name]
            return Typed(self._element(name, index, ast.Load(), at["lineno"]), ctype,
                         low=0 if ctype == "u8" else None)
        if isinstance(node, c_ast.BinaryOp):
            return self._binary(node, at)
        if isinstance(node, c_ast.UnaryOp):
            return self._unary(node, at)
        if isinstance(node, c_ast.TernaryOp):
            return self._ternary(node, at)
        if isinstance(node, c_ast.FuncCall):
            return self._call(node, at)
        if isinstance(node, c_ast.Cast):
            return self._cast(node)
        raise self.error(node, f"the expression '{self.show(node)}' is not supported")

    def _constant(self, node, at) -> Typed:
        text, kind = node.value, node.type
        try:
            if kind in ("double", "float"):
                value = float(text.rstrip("fFlL"))
                ctype = "f32" if text[-1] in "fF" else "f64"
                if ctype == "f32":
                    value = float(np.float32(value))
                return Typed(ast.Constant(value, **at), ctype, weak=True)
            if kind == "char":
                value = _char_value(text)
                return Typed(ast.Constant(value, **at), "i32", weak=True, low=value)
            if kind.endswith("int") and "unsigned" not in kind and "u" not in text.lower():
                digits = text.rstrip("lL")
                value = int(digits, 8) if digits.startswith("0") and \
                    not digits.lower().startswith("0x") and digits != "0" else int(digits, 0)
                decimal = not digits.lower().startswith("0") or digits == "0"
                if value <= _INT_MAX and not text.lower().endswith("l"):
                    ctype = "i32"
                elif value <= _LONG_MAX and (decimal or value > 2 ** 32 - 1
                                             or text.lower().endswith("l")):
                    ctype = "i64"
                else:
                    ctype = None
                if ctype is not None:
                    return Typed(ast.Constant(value, **at), ctype, weak=True, low=value)
        except ValueError:
            pass
        raise self.error(node, f"the constant {text} is not supported; use decimal integers "
                               "that fit a long (no unsigned constants) and floating point "
                               "numbers")

    def _name(self, node, at) -> Typed:
        name = self.ident(node.name, node)
        if name in self.loops:
            reverse, ctype, low = self.loops[name], self.loop_types[name], self.loop_lows[name]
            load = ast.Name(name, ast.Load(), **at)
            return Typed(ast.UnaryOp(ast.USub(), load, **at) if reverse else load, ctype,
                         weak=True, low=low)
        if name in self.ended_loops and name not in self.sizes:
            raise self.error(node, f"'{node.name}' is read after its loop (line "
                                   f"{self.ended_loops[name]}) has ended; a loop variable "
                                   "exists only inside its loop: write the value it ends at "
                                   "instead (the loop's bound), or put the statement inside "
                                   "the loop")
        if name in self.sizes:
            return Typed(ast.Name(name, ast.Load(), **at), self.types[name], weak=True, low=0)
        if name in self.local_scalars and name not in self.scalar_arrays:
            weak = self.weak_scalars.get(name, False)
            return Typed(ast.Name(name, ast.Load(), **at), self.types[name], weak=weak)
        if name in self.arrays and (self.arrays[name] == 0 or name in self.scalar_arrays) \
                or name in self.scalar_arrays:
            ctype = self.types[name]
            return Typed(self._element(name, None, ast.Load(), at["lineno"]), ctype,
                         low=0 if ctype == "u8" else None)
        if name in self.arrays:
            raise self.error(node, f"array '{node.name}' is used without an index")
        raise self.error(node, f"'{node.name}' is not a parameter, a local variable or a loop "
                               "variable of the function (macros must be defined in the file "
                               "or with defines=)")

    def _unary(self, node, at) -> Typed:
        if node.op == "!":
            return Typed(ast.UnaryOp(ast.Not(), self.cond(node.expr), **at), COND)
        if node.op not in ("-", "+"):
            raise self.error(node, f"the operator '{node.op}' in '{self.show(node)}' is not "
                                   "supported in an expression")
        inner = self.value(self.typed(node.expr))
        ctype = promoted(inner.ctype)
        operand = inner.node if inner.weak or inner.ctype == ctype else self.cast(inner, ctype)
        if node.op == "+":
            return Typed(operand, ctype, inner.weak, inner.low)
        low = -inner.low if inner.low is not None and inner.low <= 0 and \
            isinstance(operand, ast.Constant) else None
        return Typed(ast.UnaryOp(ast.USub(), operand, **at), ctype, inner.weak, low)

    def _binary(self, node, at) -> Typed:
        op = node.op
        if op in ("&&", "||"):
            return Typed(ast.BoolOp(ast.And() if op == "&&" else ast.Or(),
                                    [self.cond(node.left), self.cond(node.right)], **at), COND)
        left, right = self.value(self.typed(node.left)), self.value(self.typed(node.right))
        ctype = usual(left.ctype, right.ctype)
        a, b, weak = self._pair(left, right, ctype)
        if op in _COMPARES:
            return Typed(ast.Compare(a, [_COMPARES[op]()], [b], **at), COND)
        if op not in _BINOPS:
            raise self.error(node, f"the operator '{op}' in '{self.show(node)}' is not "
                                   "supported")
        if op in ("/", "%") and ctype in INT_TYPES:
            return Typed(self._truncating(node, op, a, b, left, right, at), ctype, weak,
                         0 if _nonnegative(left) and positive_int(right) else None)
        if op == "%":
            raise self.error(node, f"'%' needs integer operands in '{self.show(node)}'")
        return Typed(ast.BinOp(a, _BINOPS[op](), b, **at), ctype, weak,
                     _low(op, left, right) if ctype in INT_TYPES else None)

    def _truncating(self, node, op: str, a, b, left: Typed, right: Typed, at) -> ast.expr:
        """C's ``/`` or ``%`` of integers, which truncate toward zero."""
        floor = ast.FloorDiv if op == "/" else ast.Mod
        if _nonnegative(left) and positive_int(right):
            return ast.BinOp(a, floor(), b, **at)
        if self.affine_depth:
            raise self.error(node, f"'{self.show(node)}': C's '{op}' truncates toward zero, "
                                   "which an index or a loop bound can follow only when the "
                                   "dividend is provably non-negative and the divisor "
                                   "positive; rewrite it so (e.g. add a multiple of the "
                                   "divisor to the dividend)")
        dup = copy.deepcopy

        def neg(e):
            return ast.UnaryOp(ast.USub(), dup(e), **at)

        def floor_of(x, y):
            return ast.BinOp(dup(x), floor(), dup(y), **at)

        def compare(x, kind):
            return ast.Compare(dup(x), [kind()], [ast.Constant(0, **at)], **at)

        divisor = b.value if isinstance(b, ast.Constant) else None
        if divisor is not None and divisor < 0:  # a / -c == -(a / c), a % -c == a % c
            positive = ast.Constant(-divisor, **at)
            inner = self._truncating(node, op, a, positive, left,
                                     replace(right, node=positive, low=-divisor), at)
            return neg(inner) if op == "/" else inner
        if divisor is not None:  # a positive constant: by the dividend's sign
            return ast.IfExp(compare(a, ast.GtE), floor_of(a, b), neg(floor_of(neg(a), b)),
                             **at)
        magnitude = ast.Call(func=ast.Name("abs", ast.Load(), **at), args=[dup(b)],
                             keywords=[], **at)
        if op == "%":  # the sign of the dividend, the magnitude of |a| % |b|
            return ast.IfExp(compare(a, ast.GtE), floor_of(a, magnitude),
                             neg(floor_of(neg(a), magnitude)), **at)
        quotient = floor_of(ast.Call(func=ast.Name("abs", ast.Load(), **at), args=[dup(a)],
                                     keywords=[], **at), magnitude)
        same_sign = ast.BoolOp(ast.Or(), [
            ast.BoolOp(ast.And(), [compare(a, ast.GtE), compare(b, ast.Gt)], **at),
            ast.BoolOp(ast.And(), [compare(a, ast.Lt), compare(b, ast.Lt)], **at)], **at)
        return ast.IfExp(same_sign, quotient, neg(quotient), **at)

    def _ternary(self, node, at) -> Typed:
        from pycparser import c_ast
        cond = node.cond
        left, right = self.value(self.typed(node.iftrue)), self.value(self.typed(node.iffalse))
        ctype = usual(left.ctype, right.ctype)
        a, b, weak = self._pair(left, right, ctype)
        low = min(left.low, right.low) if left.low is not None and right.low is not None \
            else None
        if isinstance(cond, c_ast.BinaryOp) and cond.op in ("<", "<=", ">", ">="):
            pair = (self.show(cond.left), self.show(cond.right))
            branches = (self.show(node.iftrue), self.show(node.iffalse))
            if branches in (pair, pair[::-1]):
                smaller_first = cond.op in ("<", "<=")
                picks_min = smaller_first == (branches == pair)
                call = ast.Call(func=ast.Name("min" if picks_min else "max", ast.Load(), **at),
                                args=[a, b], keywords=[], **at)
                return Typed(call, ctype, weak, low)
        return Typed(ast.IfExp(self.cond(cond), a, b, **at), ctype, weak, low)

    def _call(self, node, at) -> Typed:
        from pycparser import c_ast
        if not isinstance(node.name, c_ast.ID):
            raise self.error(node, f"calling '{self.show(node.name)}' is not supported")
        func = node.name.name
        args = list(node.args.exprs) if node.args is not None else []
        if func in _BUILTIN_CONSTANTS:  # INFINITY, NAN, HUGE_VAL of the system headers
            value, ctype = _BUILTIN_CONSTANTS[func]
            constant = Typed(ast.Constant(value, **at), ctype, weak=True)
            return Typed(self.cast(constant, ctype), ctype)
        base, ctype = (func[:-1], "f32") if func.endswith("f") and \
            func[:-1] in {**_MATH, **_LIBM} else (func, "f64")
        if base in _LIBM:
            if len(args) != _LIBM[base]:
                raise self.error(node, f"{func}() takes {_LIBM[base]} argument(s)")
            values = [self.cast(self.typed(a), ctype) for a in args]
            target = ast.Attribute(ast.Name("libm", ast.Load(), **at), base, ast.Load(), **at)
            return Typed(ast.Call(func=target, args=values, keywords=[], **at), ctype)
        if base in _MATH:
            if len(args) != 1:
                raise self.error(node, f"{func}() takes one argument")
            name = "abs" if base == "fabs" else base
            target = ast.Attribute(ast.Name("math", ast.Load(), **at), name, ast.Load(), **at) \
                if name != "abs" else ast.Name("abs", ast.Load(), **at)
            value = self.cast(self.typed(args[0]), ctype)
            return Typed(ast.Call(func=target, args=[value], keywords=[], **at), ctype)
        raise self.error(node, f"calling '{func}' is not supported; the scop may call sqrt, "
                               "exp, log, tanh, fabs, fmin, fmax, pow, floor, ceil, trunc, "
                               "round, sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, "
                               "exp2, log2, log10, expm1, log1p, cbrt, erf, fmod, hypot, "
                               "their float forms "
                               "(sqrtf, ...), and min/max macros written as a < b ? a : b")

    def _cast(self, node) -> Typed:
        names = tuple(n for n in self._base_type(node.to_type.type) if n != "const")
        ctype = self.element_types.get(names)
        if ctype is None or getattr(node.to_type.type, "__class__").__name__ != "TypeDecl":
            raise self.error(node, f"the cast '{self.show(node)}' is not supported; cast to "
                                   "double, float, long, int, char or unsigned char")
        inner = self.value(self.typed(node.expr))
        if inner.ctype == ctype or (inner.weak and inner.ctype in INT_TYPES
                                    and ctype in ("i32", "i64")):
            return Typed(inner.node, ctype, inner.weak, inner.low)
        low = inner.low if ctype in INT_TYPES and inner.ctype in INT_TYPES \
            and ctype != "i8" else None
        return Typed(self.cast(inner, ctype), ctype, False, 0 if ctype == "u8" else low)


def _at(node) -> dict:
    return {"lineno": getattr(node, "lineno", 1), "col_offset": 0}


def _nonnegative(typed: Typed) -> bool:
    return typed.low is not None and typed.low >= 0


def positive_int(typed: Typed) -> bool:
    return typed.low is not None and typed.low >= 1


def _low(op: str, left: Typed, right: Typed):
    """A lower bound of ``left op right`` from the operands' (+, - by a constant, * of
    non-negative values)."""
    a, b = left.low, right.low
    if a is None or b is None:
        return None
    if op == "+":
        return a + b
    if op == "-" and isinstance(right.node, ast.Constant):
        return a - right.node.value
    if op == "*" and a >= 0 and b >= 0:
        return a * b
    return None


def _char_value(text: str) -> int:
    """The value of a C character constant such as ``'a'`` or ``'\\n'``."""
    body = text[1:-1]
    escapes = {"\\n": 10, "\\t": 9, "\\0": 0, "\\\\": 92, "\\'": 39, '\\"': 34, "\\r": 13}
    if len(body) == 1 and body != "\\":
        return ord(body)
    if body in escapes:
        return escapes[body]
    raise ValueError(text)
