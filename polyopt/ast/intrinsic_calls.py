"""Tensorized sub-nests in the loop AST: each becomes one :class:`IntrinsicCall`.

An :class:`IntrinsicCall` is a :class:`~polyopt.ast.nodes.Run` of the tile's first
instance (so every analysis that looks for the statements a loop runs still finds it)
that the targets emit as the intrinsic's implementation instead of the scalar statement.
``units[q]`` is the instance one step further along the intrinsic's dimension ``q``
(what buffer strides that are only known at run time are measured with).

:func:`tensorize_calls` is the lowering step (a pass of ``polyopt.lower``): it re-matches
each tensorized stage on the lowered program (whose temporaries are contracted to their
footprints, which changes their strides) and replaces the loop nests.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..errors import REPORT, InternalError
from ..tensorize.match import match
from ..tensorize.match_result import Match
from .from_isl import index_expr
from .nodes import Block, For, If, IndexExpr, Int, Name, Node, Op, Run, map_exprs
from .printer import index_text


@dataclass(frozen=True, slots=True)
class IntrinsicCall(Run):
    match: Match = None
    units: tuple = ()   # per intrinsic dimension: a Run one step further, or None

    def text(self) -> str:
        origin = ", ".join(index_text(a) for a in self.args)
        return (f"{self.match.intrin.name}.{self.match.part}({self.stmt}[{origin}]);  "
                f"// intrinsic #{id(self.match.intrin):x} for loops "
                f"{self.match.axis} and inside")


def tensorize_calls(program, body: Node) -> Node:
    """``body`` with each tensorized sub-nest of ``program`` replaced by a call (in a
    partial tile, ``if (the tile is full) call; else <the scalar loops>``)."""
    for stage, axis, intrin in program.tensorized:
        found = match(program, None, stage, axis, intrin)
        replaced = []
        body = _replace(body, found, replaced, ())
        if not replaced:
            # (the tensorize is checked after every later step: the loop exists)
            raise InternalError(f"the loop '{axis}' of stage '{stage}' tensorized with "
                                f"'{intrin.name}' is not in the generated code")
    return body


def _replace(node: Node, found: Match, replaced: list, outer: tuple[For, ...]) -> Node:
    if isinstance(node, For):
        # the loop of ``axis``, or the outermost loop inside it when isl left out loops
        # of one iteration
        if node.dim is not None and node.dim >= found.dim and _runs_stmt(node, found.main):
            call = _call(node, found)
            replaced.append(call)
            return _guarded(call, node, found, outer)
        before = len(replaced)
        body = _replace(node.body, found, replaced, outer + (node,))
        if len(replaced) > before and node.kind == "vectorized":
            # a call is not a scalar statement LLVM could vectorize across iterations
            return _with(node, body=body, kind="serial")
        return _with(node, body=body)
    if isinstance(node, Block):
        return Block(tuple(_replace(n, found, replaced, outer) for n in node.items))
    if isinstance(node, If):
        other = (None if node.otherwise is None
                 else _replace(node.otherwise, found, replaced, outer))
        return If(node.cond, _replace(node.then, found, replaced, outer), other)
    if isinstance(node, Run) and node.stmt == found.main:  # every inner loop left out
        call = _call(node, found)
        replaced.append(call)
        return _guarded(call, node, found, outer)
    return node


def _guarded(call: IntrinsicCall, scalar: Node, found: Match, outer: tuple[For, ...]) -> Node:
    """``call`` in the tiles the intrinsic runs, ``scalar`` (the sub-nest's own loops)
    in the partial ones."""
    if found.full is None:
        return call
    condition = full_tile_test(found.full, outer)
    if condition is None:
        return call
    return If(condition, call, scalar)


def full_tile_test(full: isl.Set, outer: tuple[For, ...]) -> IndexExpr | None:
    """``full`` (values of the first schedule dimensions) as a test on the variables of
    the loops ``outer`` that enumerate them (None: always true).  A dimension without a
    loop has one value wherever the sub-nest runs, so it is projected out."""
    names = {loop.dim: loop.var for loop in outer if loop.dim is not None}
    test = full
    for d in reversed(range(full.dim(isl.dim_type.set))):
        if d in names:
            test = test.set_dim_name(isl.dim_type.set, d, names[d])
        else:
            test = test.project_out(isl.dim_type.set, d, 1)
    test = test.move_dims(isl.dim_type.param, test.dim(isl.dim_type.param),
                          isl.dim_type.set, 0, test.dim(isl.dim_type.set)).coalesce()
    if test.plain_is_universe():
        return None
    if test.is_empty():
        raise InternalError(f"a tensorized sub-nest runs in no full tile; {REPORT}")
    build = isl.AstBuild.from_context(isl.Set.universe(test.get_space()))
    return index_expr(build.expr_from_set(test))


def _with(loop: For, **changes) -> For:
    from dataclasses import replace
    return replace(loop, **changes)


def _runs_stmt(node: Node, stmt: str) -> bool:
    if isinstance(node, Run):
        return node.stmt == stmt
    if isinstance(node, Block):
        return any(_runs_stmt(n, stmt) for n in node.items)
    if isinstance(node, If):
        return _runs_stmt(node.then, stmt) or (
            node.otherwise is not None and _runs_stmt(node.otherwise, stmt))
    if isinstance(node, For):
        return _runs_stmt(node.body, stmt)
    return False


def _call(loop: For | Run, found: Match) -> IntrinsicCall:
    path: list[For] = []
    run = loop if isinstance(loop, Run) else _find(loop, found.main, path)
    starts = {f.var: f.init for f in path}
    by_dim = {f.dim: f for f in path}
    origin = _substitute(run.args, starts)
    units = []
    for dim in found.inner_dims:
        step = by_dim.get(dim)
        if step is None:
            units.append(None)
            continue
        moved = dict(starts)
        moved[step.var] = Op("add", (step.init, Int(step.step)))
        units.append(Run(run.stmt, _substitute(run.args, moved)))
    return IntrinsicCall(run.stmt, origin, found, tuple(units))


def _find(node: Node, stmt: str, path: list) -> Run:
    if isinstance(node, Run) and node.stmt == stmt:
        return node
    if isinstance(node, For):
        path.append(node)
        found = _find(node.body, stmt, path)
        if found is not None:
            return found
        path.pop()
        return None
    items = node.items if isinstance(node, Block) else (
        (node.then,) + (() if node.otherwise is None else (node.otherwise,))
        if isinstance(node, If) else ())
    for item in items:
        found = _find(item, stmt, path)
        if found is not None:
            return found
    return None


def _substitute(args: tuple[IndexExpr, ...], values: dict[str, IndexExpr]):
    def sub(expr):
        return map_exprs(expr, lambda e: values.get(e.name) if isinstance(e, Name) else None)
    # loop starts may use enclosing loops of the sub-nest: substitute until none is left
    result = tuple(args)
    for _ in range(len(values) + 1):
        result = tuple(sub(a) for a in result)
    return result
