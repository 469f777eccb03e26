"""What ``tvm.lower`` returns: TVM's module of lowered functions, as a view of polyopt's
loop AST (``mod["main"].body``), for code that inspects the loops it made.

The statement classes carry TVM's names and fields (``For.loop_var``, ``.min``,
``.extent``, ``.kind``, ``.body``; ``IfThenElse.condition``, ``.then_case``,
``.else_case``; ``SeqStmt.seq``; ``BufferStore.buffer`` and ``.stmt``, one instance of
a statement; ``Evaluate.value``, a target's own code such as a tensorized nest) over
the loops polyopt lowered: what they show is what runs.  ``post_order_visit`` walks
them as ``tvm.tir.stmt_functor.post_order_visit`` does.

>>> import polyopt as po
>>> from polyopt import tvm
>>> A = po.placeholder((10, 8), name="A")
>>> B = po.compute((10, 8), lambda i, j: A[i, j] + 1, name="B")
>>> s = po.create_schedule(B)
>>> xo, xi = s[B].split(B.op.axis[0], factor=5)
>>> body = tvm.lower(s, [A, B])["main"].body
>>> isinstance(body, tvm.tir.For), body.loop_var.name, body.extent, body.body.extent
(True, 'i_outer', 2, 5)
>>> found = []
>>> tvm.tir.stmt_functor.post_order_visit(body, lambda n: found.append(type(n).__name__))
>>> found
['BufferStore', 'For', 'For', 'For']
"""

from __future__ import annotations

import types

from ..ast import nodes as ast
from ..ast.printer import index_text
from ..errors import InvalidArgumentError, public_methods


class Stmt:
    """A statement of the lowered function (TVM's ``tvm.tir.Stmt``)."""

    __slots__ = ()


class LoopVar:
    """A loop's variable (``For.loop_var``): its ``name``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


def _index(expr: ast.IndexExpr):
    """An index as TVM code reads it: an int when constant, else its text."""
    return expr.value if isinstance(expr, ast.Int) else index_text(expr)


class For(Stmt):
    """A loop ``for loop_var in [min, min + extent)`` (``kind``: serial, parallel,
    vectorized, unrolled, or a thread binding)."""

    __slots__ = ("loop_var", "min", "extent", "kind", "body", "node")

    def __init__(self, node: ast.For, body: Stmt):
        self.node, self.body, self.kind = node, body, node.kind
        self.loop_var = LoopVar(node.var)
        self.min = _index(node.init)
        bound = ast.upper_bound(node)
        if bound is None:
            self.extent = index_text(node.cond)  # (a condition that is no bound)
        else:
            last, exclusive = bound
            count = ast.Op("sub", (last, node.init))
            if not exclusive:
                count = ast.Op("add", (count, ast.Int(1)))
            difference = ast.constant_difference(last, node.init)
            self.extent = (difference + (0 if exclusive else 1)) if difference is not None \
                else index_text(count)


class IfThenElse(Stmt):
    """``if condition: then_case else: else_case`` (``else_case`` may be None)."""

    __slots__ = ("condition", "then_case", "else_case")

    def __init__(self, condition: str, then_case: Stmt, else_case: Stmt | None):
        self.condition, self.then_case, self.else_case = condition, then_case, else_case


class SeqStmt(Stmt):
    """Statements in sequence: ``seq`` (also indexable)."""

    __slots__ = ("seq",)

    def __init__(self, seq: tuple):
        self.seq = seq

    def __getitem__(self, index: int) -> Stmt:
        return self.seq[index]

    def __len__(self) -> int:
        return len(self.seq)


class BufferStore(Stmt):
    """One instance of statement ``stmt`` storing into array ``buffer``."""

    __slots__ = ("buffer", "stmt", "indices")

    def __init__(self, buffer: str, stmt: str, indices: tuple):
        self.buffer, self.stmt, self.indices = buffer, stmt, indices


class Evaluate(Stmt):
    """Code of the target's own (``value``: its name; ``body``: what it computes)."""

    __slots__ = ("value", "body")

    def __init__(self, value: str, body: Stmt):
        self.value, self.body = value, body


def view(node: ast.Node, program) -> Stmt:
    """The TIR view of a polyopt loop AST node."""
    if isinstance(node, ast.For):
        return For(node, view(node.body, program))
    if isinstance(node, ast.Wrapped):
        return view(node.loop, program)
    if isinstance(node, ast.If):
        other = None if node.otherwise is None else view(node.otherwise, program)
        return IfThenElse(index_text(node.cond), view(node.then, program), other)
    if isinstance(node, ast.Block):
        items = tuple(view(n, program) for n in node.items)
        return items[0] if len(items) == 1 else SeqStmt(items)
    if isinstance(node, ast.Intrinsic):
        return Evaluate(node.name, view(node.body, program))
    if isinstance(node, ast.Run):
        target = program.statement(node.stmt).writes[0].array
        return BufferStore(target, node.stmt, tuple(_index(a) for a in node.args))
    raise InvalidArgumentError(f"no TIR view of a {type(node).__name__} node")


def post_order_visit(stmt: Stmt, visit) -> None:
    """Call ``visit`` on every statement under ``stmt``, children first."""
    children = ()
    if isinstance(stmt, (For, Evaluate)):
        children = (stmt.body,)
    elif isinstance(stmt, IfThenElse):
        children = (stmt.then_case,) + (() if stmt.else_case is None else (stmt.else_case,))
    elif isinstance(stmt, SeqStmt):
        children = stmt.seq
    for child in children:
        post_order_visit(child, visit)
    visit(stmt)


class PrimFunc:
    """A lowered function as TVM's ``mod["main"]``: ``body`` (the TIR view), ``params``
    (the arrays and vars it takes, by name)."""

    def __init__(self, lowered):
        self.lowered = lowered
        self.body = view(lowered.body, lowered.program)
        self.params = tuple(a.name for a in lowered.args)

    def __str__(self) -> str:
        return str(self.lowered)


@public_methods
class IRModule:
    """``tvm.lower(s, args)``: polyopt's lowered function (printed as it prints; every
    attribute of :class:`polyopt.lower.LoweredFunc`), and ``mod["main"]``."""

    def __init__(self, lowered):
        self.lowered = lowered

    def __getitem__(self, name: str) -> PrimFunc:
        if name not in ("main", self.lowered.name):
            raise InvalidArgumentError(f"the lowered module has one function, 'main' "
                                       f"('{self.lowered.name}'), not {name!r}")
        return PrimFunc(self.lowered)

    def __getattr__(self, name: str):
        if name == "lowered":
            raise AttributeError(name)
        return getattr(self.lowered, name)

    def __str__(self) -> str:
        return str(self.lowered)

    def __repr__(self) -> str:
        return repr(self.lowered)


stmt = types.SimpleNamespace(For=For, IfThenElse=IfThenElse, SeqStmt=SeqStmt,
                             BufferStore=BufferStore, Evaluate=Evaluate, Stmt=Stmt)
stmt_functor = types.SimpleNamespace(post_order_visit=post_order_visit)
