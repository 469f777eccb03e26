"""Affine integer expressions as coefficients of their variables.

>>> from polyopt.te.expr import Var
>>> n = Var("n")
>>> linear_terms(2 * n + 3 - n) == {id(n): 1, None: 3}
True
>>> linear_terms(n * n) is None
True
"""

from __future__ import annotations

from .expr import BinOp, Const, IterVar, Var


def linear_terms(e) -> dict | None:
    """``{id(var): coefficient, None: constant}`` of an affine integer expression over
    vars and index variables (zero coefficients dropped), or None when it is not one."""
    if isinstance(e, Const):
        if isinstance(e.value, bool) or not isinstance(e.value, int):
            return None
        return {None: e.value} if e.value else {}
    if isinstance(e, (Var, IterVar)):
        return {id(e): 1}
    if not isinstance(e, BinOp) or e.op not in ("+", "-", "*"):
        return None
    a, b = linear_terms(e.a), linear_terms(e.b)
    if a is None or b is None:
        return None
    if e.op == "*":
        if set(a) <= {None}:
            a, b = b, a
        if not set(b) <= {None}:
            return None  # a product of two variables is not affine
        factor = b.get(None, 0)
        return {k: v * factor for k, v in a.items() if v * factor}
    sign = 1 if e.op == "+" else -1
    total = dict(a)
    for k, v in b.items():
        total[k] = total.get(k, 0) + sign * v
    return {k: v for k, v in total.items() if v}
