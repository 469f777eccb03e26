"""Scan a program's scheduled domains with isl's AST builder into polyopt's loop AST.

Loops take the name of the statement dimension they enumerate (``i``, ``k``) when one
does, so the printed program reads like the source.

>>> import polyopt as po
>>> A = po.placeholder((3,), name="A")
>>> B = po.compute((3,), lambda i: A[i] + 1, name="B")
>>> loop_ast(po.create_schedule(B).program)
For(var='i', init=Int(value=0), cond=Op(op='lt', args=(Name(name='i'), Int(value=3))), step=1, body=Run(stmt='B', args=(Name(name='i'),), reassociate=False), kind='serial', dim=2, hints=())
"""

from __future__ import annotations

from typing import Callable

import islpy as isl

from ..domain.memo import IdentityMemo
from ..domain.program import Program
from ..domain.schedule import band_of_members, fixed_entry
from ..errors import InternalError
from ..names import sanitize
from ..te.fold import fold
from .nodes import Block, For, If, Int, Name, Node, Op, Run, rename, runs

_OPS = {
    isl.ast_expr_op_type.and_: "and", isl.ast_expr_op_type.and_then: "and",
    isl.ast_expr_op_type.or_: "or", isl.ast_expr_op_type.or_else: "or",
    isl.ast_expr_op_type.max: "max", isl.ast_expr_op_type.min: "min",
    isl.ast_expr_op_type.minus: "neg", isl.ast_expr_op_type.add: "add",
    isl.ast_expr_op_type.sub: "sub", isl.ast_expr_op_type.mul: "mul",
    isl.ast_expr_op_type.div: "div", isl.ast_expr_op_type.fdiv_q: "fdiv_q",
    isl.ast_expr_op_type.pdiv_q: "pdiv_q", isl.ast_expr_op_type.pdiv_r: "pdiv_r",
    isl.ast_expr_op_type.zdiv_r: "zdiv_r", isl.ast_expr_op_type.cond: "select",
    isl.ast_expr_op_type.select: "select", isl.ast_expr_op_type.eq: "eq",
    isl.ast_expr_op_type.le: "le", isl.ast_expr_op_type.lt: "lt",
    isl.ast_expr_op_type.ge: "ge", isl.ast_expr_op_type.gt: "gt",
}


def loop_ast(program: Program) -> Node:
    """The loop AST that executes ``program``'s statements in its schedule's order
    (memoized: a program is a value, and ``po.lower`` then ``po.build`` scan it twice)."""
    return _SCANNED.get((program,), lambda: _loop_ast(program))


def _loop_ast(program: Program) -> Node:
    build = isl.AstBuild.from_context(program.context)
    derived = {s.name: [f for _, f in s.derived] for s in program.statements if s.derived}
    build, _callback_handle = build.set_at_each_domain(
        lambda node, build: _to_call(node, build, derived))
    counter = [0]
    nodes = [_mark_isl_names(_node(build.node_from_schedule(_atomic_tile_loops(part))),
                             counter, dims)
             for part, dims in _root_groups(program)]
    del _callback_handle  # the callback must stay alive until the AST is built
    node = nodes[0] if len(nodes) == 1 else Block(tuple(
        item for n in nodes for item in (n.items if isinstance(n, Block) else (n,))))
    reserved = frozenset(program.param_names + tuple(a.name for a in program.arrays))
    return _name_loops(node, program, reserved)


_SCANNED = IdentityMemo(size=4)
_STAGE_OF = IdentityMemo(size=8)
SEQUENCE_FROM = 2  # root groups from which the schedule is scanned as a sequence (3mm's
# six nests: 0.43 s scanned whole, 0.20 s one by one, the same code)


def _root_groups(program: Program) -> list[tuple[isl.Schedule, Callable[[int], int]]]:
    """The schedule, as the schedules of the groups of statements that share their
    entry in the first column that tells them apart (a constant per statement), in
    order, when there are several: each is scanned on
    its own (isl's scan of one band over a chain of K statements, or of a sequence of
    K filters, takes time growing with K squared).  The order is the same, and so is
    the code of each group.

    A group's band keeps only the columns that order its statements (a constant that
    all of them share orders nothing; isl's scan takes twice as long with the 2d+1
    schedule's constant columns, and 100 times as long after 100 splits), and comes
    with the function from a band column to its schedule dimension (isl scans a
    non-injective schedule's instances with loops after the band's columns)."""
    band = program.schedule.get_root().child(0)
    whole = [(program.schedule, lambda column: column)]
    if band.get_type() != isl.schedule_node_type.band or \
            band.child(0).get_type() != isl.schedule_node_type.leaf:
        return whole  # only the single band that stages build is split
    rows = program.schedule_rows()
    if any(rows.get(stmt.name) is None for stmt in program.statements):
        return whole
    column = _sequence_column([rows[stmt.name] for stmt in program.statements])
    groups: dict[int, list[str]] = {}
    for stmt in program.statements:
        value = None if column is None else fixed_entry(rows[stmt.name], column)
        if value is None:
            return whole
        groups.setdefault(value, []).append(stmt.name)
    if len(groups) < SEQUENCE_FROM:
        groups = {0: [stmt.name for stmt in program.statements]}
    partial = band.band_get_partial_schedule()
    width = partial.dim(isl.dim_type.set)
    members = [partial.get_union_pw_aff(dim) for dim in range(width)]
    domains = {s.name: s.domain for s in program.statements}
    schedules = []
    for _, names in sorted(groups.items()):
        columns = _ordering_columns([rows[name] for name in names])
        schedule = _group_band(names, domains, members, columns, program.context)
        if schedule is not None:
            schedules.append((schedule, _dims_of(columns, width)))
    return schedules or whole


def _atomic_tile_loops(schedule: isl.Schedule) -> isl.Schedule:
    """``schedule`` with its loops over tiles scanned "atomic": each instance in one copy
    of the loop, where isl would split the loop's range wherever the set of statements
    or their bounds change (fdtd-2d's time-tiled band: 0.6 s of scanning, 0.2 s atomic,
    the same speed).  A tile loop is a band member that, for every statement, is a sum
    of divisions of the loop variables (``floor(t / 32) + floor((t + i) / 64)``); the
    point loops keep isl's default, and polyopt separates full tiles itself
    (:func:`~polyopt.ast.tiles.separate_full_tiles`)."""
    band = schedule.get_root().child(0)
    if band.get_type() != isl.schedule_node_type.band:
        return schedule
    partial = band.band_get_partial_schedule()
    for member in range(band.band_n_member()):
        if _is_tile_index(partial.get_union_pw_aff(member)):
            band = band.band_member_set_ast_loop_type(member, isl.ast_loop_type.atomic)
    return band.get_schedule()


def _is_tile_index(function: isl.UnionPwAff) -> bool:
    """Whether every piece of ``function`` is a sum of integer divisions with no term in
    the iteration variables themselves."""
    functions = function.get_pw_aff_list()
    found = False
    for index in range(functions.n_pw_aff()):
        for _, aff in functions.get_at(index).get_pieces():
            if any(not aff.get_coefficient_val(isl.dim_type.in_, k).is_zero()
                   for k in range(aff.dim(isl.dim_type.in_))):
                return False
            if all(aff.get_coefficient_val(isl.dim_type.div, k).is_zero()
                   for k in range(aff.dim(isl.dim_type.div))):
                return False
            found = True
    return found


def _sequence_column(rows: list[isl.Map]) -> int | None:
    """The first schedule column whose values are not one constant shared by every
    statement (the columns before it order nothing): the groups' order, when every
    statement has a constant there."""
    width = min(row.dim(isl.dim_type.out) for row in rows)
    for dim in range(width):
        values = {fixed_entry(row, dim) for row in rows}
        if len(values) > 1 or None in values:
            return dim
    return None


def _group_band(names: list[str], domains: dict, members: list, columns: tuple[int, ...],
                context: isl.Set) -> isl.Schedule | None:
    """The band of the statements ``names`` with only the members ``columns``: the
    schedule's own functions of each statement, looked up by its space (rebuilt from
    the rows, a tiled copy's row with local variables made isl's scan run for more
    than 10 minutes).  None when no instance of the group runs."""
    space = context.get_space()
    domain = isl.UnionSet.empty(space)
    parts = [None] * len(columns)
    for name in names:
        # the schedule's functions need only cover the sizes the context allows (a
        # symbolic split's pieces say nothing of a negative size)
        within = domains[name].intersect_params(context)
        if within.is_empty():
            continue
        domain = domain.union(isl.UnionSet.from_set(within))
        function_space = domains[name].get_space().from_domain().add_dims(isl.dim_type.out, 1)
        for position, dim in enumerate(columns):
            value = isl.UnionPwAff.from_pw_aff(members[dim].extract_pw_aff(function_space))
            parts[position] = value if parts[position] is None else \
                parts[position].union_add(value)
    if parts[0] is None:
        return None
    return isl.Schedule.from_domain(domain).insert_partial_schedule(
        band_of_members(parts, domain.get_space()))



def _ordering_columns(rows: list[isl.Map]) -> tuple[int, ...]:
    """The columns of ``rows`` that are not one constant shared by all of them."""
    width = rows[0].dim(isl.dim_type.out)
    kept = []
    for dim in range(width):
        values = {fixed_entry(row, dim) for row in rows}
        if len(values) > 1 or None in values:
            kept.append(dim)
    return tuple(kept) or (width - 1,)  # a band needs a column


def _dims_of(columns: tuple[int, ...], width: int) -> Callable[[int], int]:
    """Column k of a band that kept ``columns`` of ``width`` scans schedule dimension
    ``columns[k]``; isl's loops after the band's columns scan the instances it leaves
    apart, as they would after the whole band."""
    return lambda k: columns[k] if k < len(columns) else width + k - len(columns)


def _to_call(node: isl.AstNode, build: isl.AstBuild, derived: dict) -> isl.AstNode:
    """Replace isl's statement placeholder by a call carrying the instance's indices,
    then its derived variables (isl simplifies them in the loops' context, so that
    ``i - 6 * floor(i / 6)`` at ``i = 6 * i_outer + i_inner`` is ``i_inner``)."""
    schedule = isl.Map.from_union_map(build.get_schedule())
    iterators = isl.PwMultiAff.from_map(schedule.reverse())
    name = iterators.get_tuple_name(isl.dim_type.out)
    call = iterators
    for function in derived.get(name, ()):
        value = function.pullback_pw_multi_aff(iterators)
        call = call.flat_range_product(isl.PwMultiAff.from_pw_aff(value))
    if call is not iterators:
        call = call.set_tuple_id(isl.dim_type.out, iterators.get_tuple_id(isl.dim_type.out))
    return isl.AstNode.user_from_expr(build.call_from_pw_multi_aff(call))


def _node(root: isl.AstNode) -> Node:
    """polyopt's loop AST of an isl AST, built without recursion (isl nests the blocks
    of a sequence of K statements K deep); nested blocks become one block."""
    def children(node: isl.AstNode) -> list[isl.AstNode]:
        kind = node.get_type()
        if kind == isl.ast_node_type.for_:
            return [node.for_get_body()]
        if kind == isl.ast_node_type.if_:
            return [node.if_get_then_node()] + (
                [node.if_get_else_node()] if node.if_has_else_node() else [])
        if kind == isl.ast_node_type.block:
            items = node.block_get_children()
            return [items.get_at(k) for k in range(items.n_ast_node())]
        if kind == isl.ast_node_type.mark:
            return [node.mark_get_node()]
        return []

    def combine(node: isl.AstNode, inner: list[Node]) -> Node:
        kind = node.get_type()
        if kind == isl.ast_node_type.for_:
            step = _expr(node.for_get_inc())
            if not isinstance(step, Int):
                raise InternalError(f"isl produced a loop with a non-constant step: {step}")
            return For(node.for_get_iterator().get_id().get_name(),
                       _expr(node.for_get_init()), _expr(node.for_get_cond()), step.value,
                       inner[0])
        if kind == isl.ast_node_type.if_:
            return If(_expr(node.if_get_cond()), inner[0], inner[1] if len(inner) > 1 else None)
        if kind == isl.ast_node_type.block:
            return Block(tuple(item for child in inner for item in (
                child.items if isinstance(child, Block) else (child,))))
        if kind == isl.ast_node_type.user:
            call = _expr(node.user_get_expr())
            return Run(call.args[0].name, call.args[1:])
        if kind == isl.ast_node_type.mark:
            return inner[0]
        raise InternalError(f"unexpected isl AST node type {kind}")

    return fold(root, children, combine)


def index_expr(expr: isl.AstExpr):
    """An isl AST expression as polyopt's index expression (:class:`Int`, :class:`Name`,
    :class:`Op`)."""
    return _expr(expr)


def _expr(root: isl.AstExpr):
    def children(expr: isl.AstExpr) -> list[isl.AstExpr]:
        if expr.get_type() != isl.ast_expr_type.op:
            return []
        return [expr.op_get_arg(k) for k in range(expr.op_get_n_arg())]

    def combine(expr: isl.AstExpr, args: list):
        kind = expr.get_type()
        if kind == isl.ast_expr_type.int:
            return Int(expr.int_get_val().to_python())
        if kind == isl.ast_expr_type.id:
            return Name(expr.id_get_id().get_name())
        op_type = expr.op_get_type()
        if op_type == isl.ast_expr_op_type.call:
            return Op("call", tuple(args))
        if op_type not in _OPS:
            raise InternalError(f"unexpected isl AST operation {op_type}")
        return _simplify(Op(_OPS[op_type], tuple(args)))

    return fold(root, children, combine)


def _simplify(expr: Op):
    """``x <= e - 1`` reads better as ``x < e``."""
    if expr.op == "le":
        lhs, rhs = expr.args
        if isinstance(rhs, Op) and rhs.op == "sub" and rhs.args[1] == Int(1):
            return Op("lt", (lhs, rhs.args[0]))
        if isinstance(rhs, Int):
            return Op("lt", (lhs, Int(rhs.value + 1)))
    return expr


def _name_loops(node: Node, program: Program, taken: frozenset[str]) -> Node:
    """Rename isl's ``c0, c1, ...`` after the statement dimension each loop enumerates.

    A name is unique among the enclosing loops, parameters and arrays; sibling nests
    may reuse it.  Loops enumerating no dimension are called ``c``.
    """
    if isinstance(node, Block):
        return Block(tuple(_name_loops(n, program, taken) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else _name_loops(node.otherwise, program, taken)
        return If(node.cond, _name_loops(node.then, program, taken), other)
    if isinstance(node, Run):
        return node
    axis = _axis_of(node, program)
    wanted = sanitize(axis.name if axis else _dim_enumerated(node, program) or "c")
    new, counter = wanted, 0
    while new in taken:
        counter += 1
        new = f"{wanted}_{counter}"
    renamed = rename(node, node.var, new)
    return For(new, renamed.init, renamed.cond, renamed.step,
               _name_loops(renamed.body, program, taken | {new}),
               axis.kind if axis else renamed.kind, int(node.var[1:].split(".")[0]))


def _mark_isl_names(node: Node, counter: list[int], dim_of: Callable[[int], int]) -> Node:
    """Give every loop a placeholder name that no real name can equal and that keeps
    the schedule dimension it scans: isl's ``c3`` becomes ``%<dim_of(3)>.<n>``."""
    if isinstance(node, Block):
        return Block(tuple(_mark_isl_names(n, counter, dim_of) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else \
            _mark_isl_names(node.otherwise, counter, dim_of)
        return If(node.cond, _mark_isl_names(node.then, counter, dim_of), other)
    if isinstance(node, Run):
        return node
    counter[0] += 1
    renamed = rename(node, node.var, f"%{dim_of(int(node.var[1:]))}.{counter[0]}")
    return For(renamed.var, renamed.init, renamed.cond, renamed.step,
               _mark_isl_names(renamed.body, counter, dim_of), renamed.kind)


def _axis_of(loop: For, program: Program):
    """The stage loop behind an isl loop ``%<schedule dimension>.<n>``: preferably as
    the stage that owns it names it (not a stage that shares it)."""
    dim = int(loop.var[1:].split(".")[0])
    stages = program.stages
    stage_of = _STAGE_OF.get((stages,), lambda: {
        n: s for s in stages for n in (s.main, s.init) if n})
    found = []
    for run in runs(loop.body):
        axis = program.axis_at(run.stmt, dim)
        if axis is not None:
            stage = stage_of.get(run.stmt)
            shared = stage is not None and any(
                a is axis for a in stage.axes[:stage.attach.depth])
            found.append((shared, axis))
    return min(found, key=lambda pair: pair[0])[1] if found else None


def _dim_enumerated(loop: For, program: Program) -> str | None:
    for run in runs(loop.body):
        dims = program.statement(run.stmt).dims
        for position, arg in enumerate(run.args[:len(dims)]):
            if arg == Name(loop.var):
                return dims[position]
    return None
