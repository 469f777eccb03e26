"""Render expressions as readable infix text with as few parentheses as needed.

>>> from .expr import Var
>>> n, m = Var("n"), Var("m")
>>> render((n + 1) * m), render(n - (m - 1))
('(n + 1) * m', 'n - (m - 1)')
"""

from __future__ import annotations

from typing import Callable

from .expr import (BinOp, Call, Cast, Compare, Const, Expr, IterVar, Logical, Reduce,
                   Select, TensorRead, Var)

_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "<": 4, "<=": 4, ">": 4, ">=": 4, "==": 4,
               "!=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6}
_ATOM = 10

NameOf = Callable[[Expr], str | None]


def render(expr: Expr, name_of: NameOf | None = None, tensor_name=None) -> str:
    """Text of ``expr``; ``name_of`` may replace any node (e.g. an axis) by a string and
    ``tensor_name`` may rename tensors."""
    hook = name_of or (lambda _: None)
    if tensor_name is not None:
        inner = hook

        def hook(node):
            if isinstance(node, TensorRead):
                indices = ", ".join(render(i, inner) for i in node.indices)
                return f"{tensor_name(node.tensor)}{'.flat' * node.flat}[{indices}]"
            return inner(node)
    return _render(expr, hook)[0]


def _const_text(value: int | float, dtype: str) -> str:
    if isinstance(value, float):
        text = repr(value)
        if text in ("inf", "-inf", "nan"):
            return text
        return text + ("f" if dtype == "float32" else "")
    return str(value)


def _render(expr: Expr, name_of: NameOf) -> tuple[str, int]:
    replaced = name_of(expr)
    if replaced is not None:
        return replaced, _ATOM
    if isinstance(expr, Const):
        text = _const_text(expr.value, expr.dtype)
        return text, (_ATOM if not text.startswith("-") else 7)
    if isinstance(expr, (Var, IterVar)):
        return expr.name, _ATOM
    if isinstance(expr, TensorRead):
        inner = ", ".join(_render(i, name_of)[0] for i in expr.indices)
        return f"{expr.tensor.name}{'.flat' * expr.flat}[{inner}]", _ATOM
    if isinstance(expr, (BinOp, Compare)):
        op, right_expr = expr.op, expr.b
        if op in "+-" and isinstance(right_expr, Const) and right_expr.value < 0 \
                and name_of(right_expr) is None:  # i + -1 reads better as i - 1
            op = "-" if op == "+" else "+"
            right_expr = Const(-right_expr.value, right_expr.dtype, right_expr.weak)
        prec = _PRECEDENCE[op]
        left = _wrap(_render(expr.a, name_of), prec, strict=False)
        right = _wrap(_render(right_expr, name_of), prec, strict=True)
        return f"{left} {op} {right}", prec
    if isinstance(expr, Logical):
        prec = _PRECEDENCE[expr.op]
        if expr.op == "not":
            return "!" + _wrap(_render(expr.args[0], name_of), prec, strict=True), prec
        parts = [_wrap(_render(a, name_of), prec, strict=False) for a in expr.args]
        return f" {'&&' if expr.op == 'and' else '||'} ".join(parts), prec
    if isinstance(expr, Call):
        if expr.func == "neg":
            return "-" + _wrap(_render(expr.args[0], name_of), 7, strict=True), 7
        args = ", ".join(_render(a, name_of)[0] for a in expr.args)
        return f"{expr.func}({args})", _ATOM
    if isinstance(expr, Cast):
        return f"({expr.dtype})" + _wrap(_render(expr.value, name_of), 7, strict=True), 7
    if isinstance(expr, Select):
        cond, then, other = (_render(e, name_of)[0] for e in (expr.cond, expr.then,
                                                               expr.otherwise))
        return f"({cond} ? {then} : {other})", _ATOM
    if isinstance(expr, Reduce):
        axes = ", ".join(a.name for a in expr.axes)
        where = "" if expr.where is None else f", where={_render(expr.where, name_of)[0]}"
        if expr.init is not None:
            where += f", init={_render(expr.init, name_of)[0]}"
        sources = getattr(expr.combiner, "sources", None)  # a reduction over a tuple
        source = (_render(expr.source, name_of)[0] if sources is None else
                  "(" + ", ".join(_render(s, name_of)[0] for s in sources) + ")")
        return f"{expr.combiner}({source}, axis=[{axes}]{where})", _ATOM
    raise TypeError(f"cannot render {type(expr).__name__}")


def _wrap(rendered: tuple[str, int], prec: int, *, strict: bool) -> str:
    text, own = rendered
    if own < prec or (strict and own == prec):
        return f"({text})"
    return text
