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

import functools
from dataclasses import dataclass, field, replace
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
    """One instance of statement ``stmt``; ``reassociate``: a target pass decided that
    its accumulation may be reassociated (LLVM: ``reassoc`` on the combining node)."""

    stmt: str
    args: tuple[IndexExpr, ...]
    reassociate: bool = field(default=False, kw_only=True)  # (IntrinsicCall adds fields)


@dataclass(frozen=True, slots=True)
class For:
    var: str
    init: IndexExpr
    cond: IndexExpr
    step: int
    body: "Node"
    kind: str = "serial"  # serial | parallel | vectorized | unrolled | blockIdx.x ...
    dim: int | None = None  # the schedule dimension the loop enumerates (when known)
    hints: tuple[str, ...] = ()  # what target passes decided for its code (printed)


@dataclass(frozen=True, slots=True)
class If:
    cond: IndexExpr
    then: "Node"
    otherwise: "Node | None" = None


@dataclass(frozen=True, slots=True)
class Block:
    items: tuple["Node", ...]


@dataclass(frozen=True, slots=True)
class Unrolled:
    """``loop`` (``trips`` iterations at most) emitted as one copy of its body per
    iteration; when ``guarded`` (a partial tile), each copy runs only if ``loop.cond``
    holds for it.  Made by a target's unrolling pass."""

    loop: For
    trips: int
    guarded: bool = False


@dataclass(frozen=True, slots=True)
class Widened:
    """A partial vectorized ``loop`` run for all ``trips`` iterations of a full tile, its
    stores made conditional (see :func:`polyopt.ast.tiles.can_widen`)."""

    loop: For
    trips: int


@dataclass(frozen=True, slots=True)
class Outlined:
    """A parallel ``loop`` run by a team of threads (its body outlined into a function);
    ``private`` names the temporaries that get one buffer per thread."""

    loop: For
    private: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Intrinsic:
    """``body`` computed by the target's own code sequence ``name`` (a transposed block
    copy, a tensorized sub-nest); ``body`` says what it computes."""

    name: str
    body: "Node"


# nodes that wrap one loop the target emits its own way
Wrapped = (Unrolled, Widened, Outlined)
Node = Union[For, If, Block, Run, Unrolled, Widened, Outlined, Intrinsic]


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
        return replace(node, args=tuple(sub(a) for a in node.args))
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
    elif isinstance(node, Wrapped):
        yield from walk(node.loop)
    elif isinstance(node, Intrinsic):
        yield from walk(node.body)


def runs(node: Node):
    """Every :class:`Run` below ``node``, in program order."""
    return (n for n in walk(node) if isinstance(n, Run))


def loops(node: Node):
    """Every :class:`For` at or below ``node``, outermost first."""
    return (n for n in walk(node) if isinstance(n, For))


def linear_form(expr: IndexExpr) -> dict[str, int] | None:
    """``expr`` as ``{name: coefficient, "": constant}`` when it is a sum of names times
    integers; None otherwise (min, max, divisions...).

    >>> linear_form(Op("add", (Op("mul", (Int(8), Name("io"))), Int(7))))
    {'io': 8, '': 7}
    """
    if isinstance(expr, Int):
        return {"": expr.value}
    if isinstance(expr, Name):
        return {expr.name: 1}
    if expr.op == "neg":
        inner = linear_form(expr.args[0])
        return None if inner is None else {k: -v for k, v in inner.items()}
    if expr.op in ("add", "sub") and len(expr.args) == 2:
        a, b = linear_form(expr.args[0]), linear_form(expr.args[1])
        if a is None or b is None:
            return None
        sign = 1 if expr.op == "add" else -1
        result = dict(a)
        for key, value in b.items():
            result[key] = result.get(key, 0) + sign * value
        return {k: v for k, v in result.items() if v or k == ""}
    if expr.op == "mul" and len(expr.args) == 2:
        a, b = linear_form(expr.args[0]), linear_form(expr.args[1])
        if a is None or b is None:
            return None
        for x, y in ((a, b), (b, a)):
            if set(x) <= {""}:
                return {k: v * x.get("", 0) for k, v in y.items()}
    return None


def offset_in_loop(expr: IndexExpr, var: str, start: dict[str, int] | None, *,
                   form: dict[str, int] | None = None) -> int | None:
    """``c`` when ``expr`` is ``var - start + c`` (``start`` a :func:`linear_form`): the
    position ``c`` relative to the loop's first iteration; None otherwise.  ``form``:
    ``expr``'s :func:`linear_form`, when the caller has it (tests against many loops).

    >>> offset_in_loop(Op("add", (Op("mul", (Int(-64), Name("jo"))), Name("j"))), "j",
    ...                {"jo": 64})
    0
    """
    if form is None:
        form = linear_form(expr)
    if form is None or start is None or form.get(var) != 1:
        return None
    rest = {k: form.get(k, 0) + start.get(k, 0) for k in (set(form) | set(start)) - {var}}
    if any(v != 0 for k, v in rest.items() if k != ""):
        return None
    return rest.get("", 0)


@functools.lru_cache(maxsize=4096)
def names_in(expr: IndexExpr) -> tuple[str, ...]:
    """The variable names ``expr`` reads, each once.

    >>> names_in(Op("add", (Name("i"), Op("mul", (Int(2), Name("i"))))))
    ('i',)
    """
    if isinstance(expr, Name):
        return (expr.name,)
    if isinstance(expr, Op):
        return tuple(dict.fromkeys(n for arg in expr.args for n in names_in(arg)))
    return ()


def constant_difference(a: IndexExpr, b: IndexExpr) -> int | None:
    """``a - b`` when it is the same integer for all values of the names, else None."""
    fa, fb = linear_form(a), linear_form(b)
    if fa is None or fb is None:
        return None
    keys = set(fa) | set(fb)
    if any(fa.get(k, 0) != fb.get(k, 0) for k in keys - {""}):
        return None
    return fa.get("", 0) - fb.get("", 0)


def upper_bound(loop: For) -> tuple[IndexExpr, bool] | None:
    """``(bound, exclusive)`` when the loop condition is ``var < bound`` or ``var <= bound``
    with a bound that does not use the loop variable; else None.

    >>> upper_bound(For("i", Int(0), Op("lt", (Name("i"), Name("n"))), 1, Block(())))
    (Name(name='n'), True)
    """
    cond = loop.cond
    if not (isinstance(cond, Op) and cond.op in ("lt", "le") and cond.args[0] == Name(loop.var)):
        return None
    bound = cond.args[1]
    uses = []
    map_exprs(bound, lambda e: uses.append(e) if e == Name(loop.var) else None)
    return None if uses else (bound, cond.op == "lt")
