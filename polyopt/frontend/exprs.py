"""Translate Python expressions of a kernel body into polyopt expression nodes.

Supported: numbers, loop variables, vars, scalar temporaries, array elements
``A[i, j + 1]``, arithmetic (``+ - * / // %`` and ``**`` by a small integer),
comparisons (chained too), ``and``/``or``/``not``, ``x if c else y``, and the calls
``po.exp/log/sqrt/tanh/abs/maximum/minimum/if_then_else`` (also ``math.*``,
``numpy.*`` and the builtins ``abs``, ``min``, ``max``); an element type converts
its argument (``po.f64(A[i])``, as ``.astype("float64")``).

>>> import ast
>>> from .scope import Scopes
>>> from .source import Source
>>> from ..te.tensor import placeholder, var
>>> N, A = var("N"), placeholder((8,), name="A")
>>> scopes = Scopes({"N": N, "po": __import__("polyopt")}, {}, {"A": A})
>>> translate = Translator(Source("k", "k.py", 1), scopes)
>>> str(translate.expr(ast.parse("po.exp(A[N - 1]) * 2 if 0 < N <= 8 else 0.0").body[0].value))
'(0 < N && N <= 8 ? exp(A[N - 1]) * 2 : 0.0)'
"""

from __future__ import annotations

import ast
import builtins
import math
import numbers
import types

import numpy as np

from ..errors import FrontendError, InvalidArgumentError, TemporaryScalarError
from ..te.expr import Call, Expr, Logical, TensorRead, as_expr
from ..te.tensor import (Tensor, abs_, exp, if_then_else, log, maximum, minimum, sqrt,
                         tanh)
from .scope import DeadName, LoopName, Scopes, TempName
from .source import Source
from .types import ElementType

_UNARY = {"exp": exp, "log": log, "sqrt": sqrt, "tanh": tanh, "abs": abs_}


def _libm(name: str):
    def apply(*args):
        return Call.make(name, *args)

    apply.__name__ = apply.__qualname__ = name
    return apply


# C's math library functions beyond po's (the C front end calls them as libm.NAME;
# Python kernels as math.NAME): computed as C computes them (LLVM's intrinsics).
LIBM = {name: _libm(name) for name in (
    "pow", "floor", "ceil", "trunc", "round", "sin", "cos", "exp2", "log2", "log10", "tan",
    "asin", "acos", "atan", "sinh", "cosh", "cbrt", "expm1", "log1p", "erf", "atan2",
    "fmod", "hypot", "fmax", "fmin")}
libm = types.ModuleType("libm", "C's math library functions for kernels from C")
libm.__dict__.update(LIBM)
# Callables a kernel may call, by identity: (object, polyopt function name).
_CALLABLES = (
    [(f, name) for name, f in _UNARY.items()]
    + [(getattr(math, n), n) for n in ("exp", "log", "sqrt", "tanh")] + [(math.fabs, "abs")]
    + [(getattr(np, n), n) for n in ("exp", "log", "sqrt", "tanh", "abs", "fabs",
                                      "maximum", "minimum")]
    + [(f, name) for name, f in LIBM.items()]
    + [(getattr(math, n), n) for n in LIBM if hasattr(math, n)]
    + [(builtins.abs, "abs"), (builtins.max, "max"), (builtins.min, "min"),
       (maximum, "maximum"), (minimum, "minimum"), (if_then_else, "if_then_else")]
)
_ARITY = {"maximum": 2, "minimum": 2, "if_then_else": 3, "fabs": 1, "pow": 2, "atan2": 2,
          "fmod": 2, "hypot": 2, "fmax": 2, "fmin": 2}
_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
           ast.Mod: "%"}
_COMPARES = {ast.Lt: "__lt__", ast.LtE: "__le__", ast.Gt: "__gt__", ast.GtE: "__ge__",
             ast.Eq: "__eq__", ast.NotEq: "__ne__"}
_MAX_POWER = 8
SUPPORTED_CALLS = "po.exp, po.log, po.sqrt, po.tanh, po.abs, po.maximum, po.minimum, " \
                  "po.if_then_else, abs, min, max and math.pow/floor/ceil/trunc/sin/cos/tan/" \
                  "exp2/log2/log10/..."


class Translator:
    """Turns ``ast`` expressions into :class:`~polyopt.te.expr.Expr` in a kernel's scopes."""

    def __init__(self, source: Source, scopes: Scopes, local_names=frozenset()):
        self.source = source
        self.scopes = scopes
        self.local_names = frozenset(local_names)  # every name the function assigns

    def error(self, node: ast.AST, message: str, cls: type = FrontendError,
              **attributes) -> FrontendError:
        return self.source.error(node, message, cls, **attributes)

    # -- entry points -----------------------------------------------------------------
    def expr(self, node: ast.expr) -> Expr:
        """The expression ``node`` denotes; raises FrontendError naming its line."""
        return self._located(self._expr, node)

    def element(self, node: ast.Subscript) -> TensorRead:
        """The array element ``A[i, j]`` (a read or the target of a write)."""
        return self._located(self._element, node)

    def _located(self, translate, node: ast.expr):
        try:
            return translate(node)
        except InvalidArgumentError as err:  # dtype and indexing mistakes: same class, located
            if str(err).startswith('File "'):
                raise
            raise self.source.error(node, str(err), type(err)) from err

    def is_local(self, name: str) -> bool:
        """Whether the function binds ``name`` (a parameter, loop variable or temporary)."""
        return self.scopes.lookup(name) is not None or name in self.local_names

    # -- expressions ------------------------------------------------------------------
    def _expr(self, node: ast.expr) -> Expr:
        if isinstance(node, ast.Constant):
            return self._value(node.value, node, repr(node.value))
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute):
            return self._value(self.outer_object(node), node, ast.unparse(node))
        if isinstance(node, ast.Subscript):
            return self._element(node)
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp):
            operand = self._expr(node.operand)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Not):
                return Logical.make("not", operand)
            raise self.error(node, "the bitwise operator '~' is not supported")
        if isinstance(node, ast.BoolOp):
            op = "and" if isinstance(node.op, ast.And) else "or"
            return Logical.make(op, *(self._expr(v) for v in node.values))
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.IfExp):
            return if_then_else(self._expr(node.test), self._expr(node.body),
                                self._expr(node.orelse))
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self.error(node, f"the expression '{ast.unparse(node)}' "
                               f"({type(node).__name__}) is not supported in a kernel")

    def _name(self, node: ast.Name) -> Expr:
        binding = self.scopes.lookup(node.id)
        if isinstance(binding, LoopName):
            return binding.var
        if isinstance(binding, TempName):
            stale = self.scopes.staleness(binding)
            if stale is not None:
                array, line = stale
                raise self.error(node, (
                    f"the scalar temporary '{node.id}' (assigned at line {binding.line}) reads "
                    f"array '{array}', which line {line} writes before this use (or in an "
                    "earlier loop iteration); only plain forward substitution of temporaries "
                    "is supported: recompute the value here or keep it in an array element"),
                    TemporaryScalarError, name=node.id, problem="stale")
            return binding.value
        if isinstance(binding, DeadName):
            raise self.error(node, (
                f"'{node.id}' is used after the loop at line {binding.line} re-bound it "
                "(Python would leave it at that loop's last value); give the inner loop "
                "variable another name"))
        if node.id in self.scopes.params:
            raise self.error(node, f"array '{node.id}' is used without an index; kernels "
                                   f"work element by element: {node.id}[i, ...]")
        if node.id in self.local_names:
            raise self.error(node, (
                f"'{node.id}' is used where it has no value: before it is assigned, outside "
                "the loop or branch that assigns it, or carried over from an earlier loop "
                "iteration; a scalar temporary must be assigned before its uses in the "
                "same block"), TemporaryScalarError, name=node.id, problem="no_value")
        value = self.scopes.resolve_outer(node.id)
        if Scopes.missing(value):
            raise self.error(node, f"the name '{node.id}' is not defined")
        return self._value(value, node, node.id)

    def outer_object(self, node: ast.expr):
        """The Python object that a name or a module attribute (``po.exp``) denotes."""
        if isinstance(node, ast.Name):
            if self.is_local(node.id):
                return self._name(node)
            value = self.scopes.resolve_outer(node.id)
            if Scopes.missing(value):
                raise self.error(node, f"the name '{node.id}' is not defined")
            return value
        if isinstance(node, ast.Attribute):
            local = isinstance(node.value, ast.Name) and self.is_local(node.value.id)
            base = None if local else self.outer_object(node.value)
            if isinstance(base, types.ModuleType) and hasattr(base, node.attr):
                return getattr(base, node.attr)
            raise self.error(node, f"attribute access '{ast.unparse(node)}' is not supported; "
                                   "only functions and constants of modules (po.exp, math.pi)")
        raise self.error(node, f"'{ast.unparse(node)}' cannot be called in a kernel")

    def _value(self, value, node: ast.AST, text: str) -> Expr:
        if isinstance(value, Expr):
            return value
        if isinstance(value, (bool, np.bool_)):
            raise self.error(node, f"the bool {text} cannot be used as a value; use 1 or 0, "
                                   "or a comparison")
        if isinstance(value, (numbers.Real, np.generic)):
            return as_expr(value)
        if isinstance(value, (Tensor, np.ndarray)):
            raise self.error(node, f"array '{text}' is not a parameter of kernel "
                                   f"'{self.source.kernel}'; pass it as a parameter")
        raise self.error(node, f"'{text}' ({type(value).__name__}) cannot be used in a kernel; "
                               "only numbers, po.var, loop variables, scalar temporaries and "
                               "elements of array parameters")

    def _element(self, node: ast.Subscript) -> TensorRead:
        if isinstance(node.slice, ast.Slice) or (
                isinstance(node.slice, ast.Tuple)
                and any(isinstance(e, ast.Slice) for e in node.slice.elts)):
            raise self.error(node, "slicing is not supported; loop over the elements")
        tensor = self._array(node.value)
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return tensor[tuple(self._expr(e) for e in elts)]

    def _array(self, node: ast.expr) -> Tensor:
        if isinstance(node, ast.Name) and self.scopes.lookup(node.id) is None \
                and node.id in self.scopes.params:
            return self.scopes.params[node.id]
        if isinstance(node, ast.Attribute) or (isinstance(node, ast.Name)
                                               and not self.is_local(node.id)):
            value = self.outer_object(node)  # refuses attributes of anything but modules
            if isinstance(value, (Tensor, np.ndarray, list, tuple)):
                raise self.error(node, f"array '{ast.unparse(node)}' is not a parameter of "
                                       f"kernel '{self.source.kernel}'; pass it as a parameter")
        raise self.error(node, f"'{ast.unparse(node)}' is not an array parameter and cannot "
                               "be indexed")

    def _binop(self, node: ast.BinOp) -> Expr:
        if isinstance(node.op, ast.Pow):
            exponent = node.right
            if not (isinstance(exponent, ast.Constant) and type(exponent.value) is int
                    and 1 <= exponent.value <= _MAX_POWER):
                raise self.error(node, f"'**' is supported only with a constant integer "
                                       f"exponent from 1 to {_MAX_POWER}")
            base = self._expr(node.left)
            result = base
            for _ in range(exponent.value - 1):
                result = result * base
            return result
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"the operator in '{ast.unparse(node)}' is not supported")
        a, b = self._expr(node.left), self._expr(node.right)
        return {"+": a.__add__, "-": a.__sub__, "*": a.__mul__, "/": a.__truediv__,
                "//": a.__floordiv__, "%": a.__mod__}[op](b)

    def _compare(self, node: ast.Compare) -> Expr:
        parts = []
        left = self._expr(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            method = _COMPARES.get(type(op))
            if method is None:
                raise self.error(node, f"the comparison in '{ast.unparse(node)}' is not "
                                       "supported; use < <= > >= == !=")
            right = self._expr(right_node)
            parts.append(getattr(left, method)(right))
            left = right
        return parts[0] if len(parts) == 1 else Logical.make("and", *parts)

    def _call(self, node: ast.Call) -> Expr:
        func = self.outer_object(node.func)
        name = next((n for f, n in _CALLABLES if f is func), None)
        text = ast.unparse(node.func)
        if isinstance(func, ElementType) and name is None:
            if len(node.args) != 1 or node.keywords:
                raise self.error(node, f"{text}(x) converts one value to {func.dtype}")
            return self._expr(node.args[0]).astype(func.dtype)
        if name is None:
            raise self.error(node, f"calling '{text}' is not supported; a kernel may call "
                                   f"{SUPPORTED_CALLS}")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.error(node, f"'{text}' takes positional arguments only here")
        args = [self._expr(a) for a in node.args]
        if name in ("max", "min"):
            if len(args) < 2:
                raise self.error(node, f"{text}() needs at least two values here")
            combine = maximum if name == "max" else minimum
            result = args[0]
            for arg in args[1:]:
                result = combine(result, arg)
            return result
        arity = _ARITY.get(name, 1)
        if len(args) != arity:
            raise self.error(node, f"{text}() takes {arity} argument(s), got {len(args)}")
        if name == "fabs":
            name = "abs"
        if name in _UNARY:
            return _UNARY[name](*args)
        if name in LIBM:
            return LIBM[name](*args)
        return {"maximum": maximum, "minimum": minimum, "if_then_else": if_then_else}[name](*args)
