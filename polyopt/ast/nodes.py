"""polyopt's own small loop AST, produced from isl's AST and consumed by the targets.

Index expressions are :class:`Int`, :class:`Name` (a loop variable or a parameter)
and :class:`Op`; statements are :class:`For`, :class:`If`, :class:`Block` and
:class:`Run` (one instance of a program statement, its dimensions given as index
expressions).

>>> loop = For("i", Int(0), Op("lt", (Name("i"), Name("n"))), 1, Run("S", (Name("i"),)))
>>> loop.var, loop.kind
('i', 'serial')
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Union


@dataclass(frozen=True, slots=True)
class Int:
    value: int


@dataclass(frozen=True, slots=True)
class Name:
    name: str


@dataclass(frozen=True, slots=True)
class Op:
    """``op`` is one of add sub mul neg min max fdiv_q pdiv_q pdiv_r zdiv_r div eq le lt ge
    gt and or select."""

    op: str
    args: tuple["IndexExpr", ...]


IndexExpr = Union[Int, Name, Op]


@dataclass(frozen=True, slots=True)
class Run:
    stmt: str
    args: tuple[IndexExpr, ...]


@dataclass(frozen=True, slots=True)
class For:
    var: str
    init: IndexExpr
    cond: IndexExpr
    step: int
    body: "Node"
    kind: str = "serial"  # serial | parallel | vectorized | unrolled | blockIdx.x ...
    dim: int | None = None  # the schedule dimension the loop enumerates (when known)


@dataclass(frozen=True, slots=True)
class If:
    cond: IndexExpr
    then: "Node"
    otherwise: "Node | None" = None


@dataclass(frozen=True, slots=True)
class Block:
    items: tuple["Node", ...]


Node = Union[For, If, Block, Run]


def map_exprs(expr: IndexExpr, fn: Callable[[IndexExpr], IndexExpr | None]) -> IndexExpr:
    """Rebuild ``expr`` bottom-up, replacing each node where ``fn`` returns non-None."""
    if isinstance(expr, Op):
        expr = Op(expr.op, tuple(map_exprs(a, fn) for a in expr.args))
    result = fn(expr)
    return expr if result is None else result


def rename(node: Node, old: str, new: str) -> Node:
    """``node`` with every use of the variable ``old`` renamed to ``new``."""
    def sub(e: IndexExpr) -> IndexExpr:
        return map_exprs(e, lambda x: Name(new) if x == Name(old) else None)

    if isinstance(node, Run):
        return Run(node.stmt, tuple(sub(a) for a in node.args))
    if isinstance(node, Block):
        return Block(tuple(rename(n, old, new) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else rename(node.otherwise, old, new)
        return If(sub(node.cond), rename(node.then, old, new), other)
    var = new if node.var == old else node.var
    return replace(node, var=var, init=sub(node.init), cond=sub(node.cond),
                   body=rename(node.body, old, new))


def walk(node: Node):
    """``node`` and every node below it, in program order (parents first)."""
    yield node
    if isinstance(node, Block):
        for item in node.items:
            yield from walk(item)
    elif isinstance(node, If):
        yield from walk(node.then)
        if node.otherwise is not None:
            yield from walk(node.otherwise)
    elif isinstance(node, For):
        yield from walk(node.body)


def runs(node: Node):
    """Every :class:`Run` below ``node``, in program order."""
    return (n for n in walk(node) if isinstance(n, Run))


def loops(node: Node):
    """Every :class:`For` at or below ``node``, outermost first."""
    return (n for n in walk(node) if isinstance(n, For))
