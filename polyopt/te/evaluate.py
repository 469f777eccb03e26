"""Evaluate integer (index) expressions for concrete var values.

>>> from .expr import Var
>>> n = Var("n")
>>> evaluate(n * 2 + n // 3 - 1, {"n": 7})
15
"""

from __future__ import annotations

import operator

from ..errors import InvalidArgumentError
from .expr import BinOp, Call, Cast, Const, Expr, Var

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv,
        "%": operator.mod}


def evaluate(expr: Expr, values: dict[str, int]) -> int:
    """The integer value of ``expr``; vars are looked up by name in ``values``."""
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, Var):
        if expr.name not in values:
            raise InvalidArgumentError(f"var '{expr.name}' has no value")
        return values[expr.name]
    if isinstance(expr, Cast):
        return evaluate(expr.value, values)
    if isinstance(expr, Call) and expr.func in ("neg", "maximum", "minimum"):
        args = [evaluate(a, values) for a in expr.args]
        return {"neg": lambda: -args[0], "maximum": lambda: max(args),
                "minimum": lambda: min(args)}[expr.func]()
    if isinstance(expr, BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        a, b = evaluate(expr.a, values), evaluate(expr.b, values)
        if expr.op in ("//", "%") and b == 0:
            raise InvalidArgumentError(f"division by zero evaluating '{expr}'")
        return _OPS[expr.op](a, b)
    raise InvalidArgumentError(f"'{expr}' is not an integer expression of vars")
