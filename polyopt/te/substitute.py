"""Rebuild expressions with some nodes replaced (inlining, index changes).

>>> from .expr import Var, IterVar, Const
>>> from .tensor import placeholder
>>> i = IterVar("i", Const(0, "int64", True), Var("n")); j = IterVar("j", Const(0, "int64", True), Var("n"))
>>> A = placeholder((10,), name="A")
>>> str(substitute(A[i] + i, {i: j * 2}))
'A[j * 2] + j * 2'
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .expr import (BinOp, Call, Cast, Compare, Expr, Logical, Reduce, Select, TensorRead)


def transform(expr: Expr, replace: Callable[[Expr], Expr | None]) -> Expr:
    """``expr`` rebuilt bottom-up; ``replace(node)`` may return a node to use instead."""
    rebuilt = _rebuild_children(expr, lambda child: transform(child, replace))
    result = replace(rebuilt)
    return rebuilt if result is None else result


def substitute(expr: Expr, mapping: dict) -> Expr:
    """Replace axes (or any nodes) by expressions; keys are matched by identity."""
    by_id = {id(k): v for k, v in mapping.items()}
    return transform(expr, lambda node: by_id.get(id(node)))


def _rebuild_children(node: Expr, visit) -> Expr:
    if isinstance(node, (BinOp, Compare)):
        a, b = visit(node.a), visit(node.b)
        return node if (a is node.a and b is node.b) else _remake(node, a=a, b=b)
    if isinstance(node, (Logical, Call)):
        args = tuple(visit(a) for a in node.args)
        return node if all(x is y for x, y in zip(args, node.args)) else _remake(node, args=args)
    if isinstance(node, Cast):
        value = visit(node.value)
        return node if value is node.value else dataclasses.replace(node, value=value)
    if isinstance(node, Select):
        parts = (visit(node.cond), visit(node.then), visit(node.otherwise))
        if all(x is y for x, y in zip(parts, (node.cond, node.then, node.otherwise))):
            return node
        return Select(*parts, node.dtype, node.weak)
    if isinstance(node, TensorRead):
        indices = tuple(visit(i) for i in node.indices)
        if all(x is y for x, y in zip(indices, node.indices)):
            return node
        return dataclasses.replace(node, indices=indices)
    if isinstance(node, Reduce):
        where = None if node.where is None else visit(node.where)
        sources = getattr(node.combiner, "sources", None)
        if sources is None:
            init = None if node.init is None else visit(node.init)
            return dataclasses.replace(node, source=visit(node.source), where=where,
                                       init=init)
        sources = tuple(visit(s) for s in sources)  # a reduction over a tuple
        combiner = dataclasses.replace(node.combiner, sources=sources)
        return dataclasses.replace(node, combiner=combiner, source=sources[combiner.index],
                                   where=where)
    return node


def _remake(node: Expr, **changes) -> Expr:
    """Rebuild with the same operation, recomputing dtypes where they derive from operands."""
    if isinstance(node, BinOp):
        return BinOp.make(node.op, changes.get("a", node.a), changes.get("b", node.b))
    if isinstance(node, Compare):
        return Compare.make(node.op, changes.get("a", node.a), changes.get("b", node.b))
    if isinstance(node, Logical):
        return Logical.make(node.op, *changes["args"])
    return Call.make(node.func, *changes["args"])
