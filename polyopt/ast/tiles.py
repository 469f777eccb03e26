"""Full tiles without guards: version a loop on whether its tile is full.

A loop marked unrolled or vectorized whose bound is ``min(init + c, e)`` (the last,
partial tile of a size that the tile does not divide) has a constant trip count in
every full tile.  Right inside the loop that defines the variables of the test, the
body is versioned: ``if (init + c <= e) <body with the bound init + c> else <body>``,
so that full tiles (almost all of them) unroll and vectorize with constant counts and
no guard, and the partial tile keeps the exact bounds.  Perfectly nested loops that
both define tests (a register tile's column block and row block) are versioned once,
at the inner one, on all the tests: one full copy and one general copy, not four.  An
innermost unrolled loop starting at ``max(0, e)`` (rows jammed below a stencil's
vector loop) is versioned on ``e <= 0`` too, and the general copy runs such guarded
rows as plain loops.  :func:`most_trips` gives a
loop's (largest) trip count; :func:`can_widen` says when code generation may run a
partial vectorized tile at full width with conditional stores into buffers the
thread owns (so a register tile stays in registers in the partial tile too).

>>> from .nodes import For, Int, Name, Op, Run
>>> inner = For("i", Op("mul", (Int(4), Name("io"))), Op("le", (Name("i"), Op("min", (
...     Op("add", (Op("mul", (Int(4), Name("io"))), Int(3))), Name("n"))))), 1,
...     Run("S", (Name("i"),)), "unrolled")
>>> outer = For("io", Int(0), Op("lt", (Name("io"), Name("m"))), 1, inner)
>>> versioned = separate_full_tiles(outer)
>>> versioned.body.cond.op, versioned.body.then.cond.args[1].op
('le', 'add')
"""

from __future__ import annotations

import dataclasses
import math

from ..te.expr import TensorRead
from ..te.tensor import walk
from .nodes import (Block, For, If, IndexExpr, Int, Name, Node, Op, Run, constant_difference,
                    linear_form, map_exprs, offset_in_loop, upper_bound)

SPECIALIZED = ("unrolled", "vectorized")


def separate_full_tiles(node: Node, pending: tuple = ()) -> Node:
    """``node`` with loops versioned on full tiles (see the module docstring).

    A loop whose body is a single loop that is versioned too passes its tests down
    (``pending``): the inner loop is versioned once on all of them, one full version
    and one general, rather than a version per combination (3mm's register tiles: 2
    copies of each nest instead of 4, for a quarter less LLVM time)."""
    if isinstance(node, Block):
        return Block(tuple(separate_full_tiles(n) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else separate_full_tiles(node.otherwise)
        return If(node.cond, separate_full_tiles(node.then), other)
    if not isinstance(node, For):
        return node
    inner = _loop_vars(node.body)
    tests: list[IndexExpr] = []
    _collect(node.body, node.var, inner, tests)
    body = node.body
    if tests and isinstance(body, For) and _has_tests(body):
        return dataclasses.replace(node, body=separate_full_tiles(
            body, pending + ((node.var, tuple(tests)),)))
    versions = pending + (((node.var, tuple(tests)),) if tests else ())
    if versions:
        full = body
        for var, _ in versions:  # (the loops inside each test's loop, as collected)
            full = _specialize(full, var, inner if var == node.var else inner | {node.var})
        condition = None
        for _, group in versions:
            for test in group:
                condition = test if condition is None else Op("and", (condition, test))
        body = If(condition, full, _scalar_partial_rows(body))
    return dataclasses.replace(node, body=separate_full_tiles(body))


def _scalar_partial_rows(node: Node) -> Node:
    """The general copy with each vectorized loop around an unrolled loop with guarded
    copies (a partial row block of a jammed stencil: they do not vectorize) left as
    ordinary loops, rolled: the full copy is the vector code."""
    if isinstance(node, Block):
        return Block(tuple(_scalar_partial_rows(n) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else _scalar_partial_rows(node.otherwise)
        return If(node.cond, _scalar_partial_rows(node.then), other)
    if not isinstance(node, For):
        return node
    if node.kind == "vectorized" and _partial_rows_inside(node.body):
        return dataclasses.replace(node, kind="serial", body=_rolled(node.body))
    return dataclasses.replace(node, body=_scalar_partial_rows(node.body))


def _rolled(node: Node) -> Node:
    """``node`` with its guarded unrolled loops as loops (less code)."""
    if isinstance(node, Block):
        return Block(tuple(_rolled(n) for n in node.items))
    if isinstance(node, If):
        return If(node.cond, _rolled(node.then),
                  None if node.otherwise is None else _rolled(node.otherwise))
    if not isinstance(node, For):
        return node
    kind = "serial" if _partial_rows(node) else node.kind
    return dataclasses.replace(node, kind=kind, body=_rolled(node.body))


def _partial_rows_inside(node: Node) -> bool:
    if isinstance(node, Block):
        return any(_partial_rows_inside(n) for n in node.items)
    if isinstance(node, If):
        return _partial_rows_inside(node.then) or (
            node.otherwise is not None and _partial_rows_inside(node.otherwise))
    return isinstance(node, For) and (_partial_rows(node) or _partial_rows_inside(node.body))


def _partial_rows(loop: For) -> bool:
    """An unrolled loop with bounds ``max(..)`` or ``min(..)``: guarded copies."""
    if loop.kind != "unrolled":
        return False
    found = most_trips(loop)
    return bool(_full_start(loop)[1]) or (found is not None and found[1])


def _has_tests(loop: For) -> bool:
    found: list[IndexExpr] = []
    _collect(loop.body, loop.var, _loop_vars(loop.body), found)
    return bool(found)


def _full_bound(loop: For, var: str, inner: set[str], ranges: dict | None = None):
    """``(full bound, test, start)`` when ``loop`` is specialized, its bound is a ``min``
    with one argument at a constant distance from its start, and the test uses ``var``
    and no variable of the loops in ``inner``, except those of enclosing unrolled loops
    with a constant range (``ranges``: name -> (first, last)) when the test is linear
    in them: it is then required at both ends of their ranges (a register tile's rows
    against a triangle's diagonal, syrk), so it holds for every row."""
    cond = loop.cond
    if loop.kind not in SPECIALIZED or not (isinstance(cond, Op) and cond.op in ("le", "lt")
                                            and cond.args[0] == Name(loop.var)):
        return None
    start, tests = _full_start(loop)
    limit = cond.args[1]
    limits = limit.args if isinstance(limit, Op) and limit.op == "min" else (limit,)
    full = [a for a in limits if constant_difference(a, start) is not None]
    if not full or (len(limits) == 1 and not tests):
        return None
    tests += [Op("le", (full[0], a)) for a in limits if a is not full[0]]
    test = tests[0]
    for other in tests[1:]:
        test = Op("and", (test, other))
    used = _names(test)
    if var not in used:
        return None
    if used & inner:
        test = _at_range_ends(test, used & inner, ranges or {})
        if test is None:
            return None
    return full[0], test, start


def _full_start(loop: For) -> tuple[IndexExpr, list]:
    """``(start, tests)``: an innermost unrolled loop starting at ``max(a, b, ..)``
    starts at ``a`` (a constant) in full tiles, where ``b <= a`` ...: its copies then
    need no guard (the first rows jammed in a stencil's tile, below its vector loop;
    a register tile's row loop, around its vector loop, keeps its guards)."""
    init = loop.init
    if loop.kind != "unrolled" or not (isinstance(init, Op) and init.op == "max") or \
            _loop_vars(loop.body):
        return init, []
    first = next((a for a in init.args if linear_form(a) is not None and
                  set(linear_form(a)) <= {""}), None)
    if first is None:
        return init, []
    return first, [Op("le", (a, first)) for a in init.args if a is not first]


def _at_range_ends(test, names: set[str], ranges: dict):
    """``test`` (a conjunction of linear ``a <= b``) required at both ends of the range
    of each of ``names``; None unless each has a range and the test is linear."""
    if not names <= set(ranges) or not _linear_test(test):
        return None
    for name in sorted(names):
        first, last = ranges[name]
        ends = [map_exprs(test, lambda e, v=value: Int(v) if e == Name(name) else None)
                for value in (first, last)]
        test = ends[0] if first == last else Op("and", tuple(ends))
    return test


def _linear_test(test) -> bool:
    if test.op == "and":
        return all(_linear_test(a) for a in test.args)
    return test.op == "le" and all(linear_form(a) is not None for a in test.args)


def _collect(node: Node, var: str, inner: set[str], tests: list, ranges=None) -> None:
    if isinstance(node, Block):
        for item in node.items:
            _collect(item, var, inner, tests, ranges)
    elif isinstance(node, If):
        _collect(node.then, var, inner, tests, ranges)
        if node.otherwise is not None:
            _collect(node.otherwise, var, inner, tests, ranges)
    elif isinstance(node, For):
        found = _full_bound(node, var, inner, ranges)
        if found is not None and found[1] not in tests:
            tests.append(found[1])
        _collect(node.body, var, inner, tests, _with_range(ranges, node))


def _with_range(ranges: dict | None, loop: For) -> dict | None:
    """``ranges`` and, for an unrolled loop from a constant start, its widest range."""
    found = most_trips(loop) if loop.kind == "unrolled" else None
    if found is None or not isinstance(loop.init, Int) or loop.step != 1:
        return ranges
    return {**(ranges or {}), loop.var: (loop.init.value, loop.init.value + found[0] - 1)}


def _specialize(node: Node, var: str, inner: set[str], ranges=None) -> Node:
    if isinstance(node, Block):
        return Block(tuple(_specialize(n, var, inner, ranges) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else _specialize(node.otherwise, var, inner,
                                                                 ranges)
        return If(node.cond, _specialize(node.then, var, inner, ranges), other)
    if not isinstance(node, For):
        return node
    found = _full_bound(node, var, inner, ranges)
    body = _specialize(node.body, var, inner, _with_range(ranges, node))
    if found is None:
        return dataclasses.replace(node, body=body)
    return dataclasses.replace(node, init=found[2], cond=Op(node.cond.op, (
        Name(node.var), found[0])), body=body)


def _loop_vars(node: Node) -> set[str]:
    if isinstance(node, Block):
        return set().union(*(_loop_vars(n) for n in node.items))
    if isinstance(node, If):
        other = set() if node.otherwise is None else _loop_vars(node.otherwise)
        return _loop_vars(node.then) | other
    if isinstance(node, For):
        return {node.var} | _loop_vars(node.body)
    return set()


def most_trips(loop: For) -> tuple[int, bool] | None:
    """``(trips, partial)``: the most iterations of ``loop`` when its bound is its start
    plus a constant, or the ``min`` of that and other bounds (then ``partial``)."""
    bound = upper_bound(loop)
    if bound is None or loop.step <= 0:
        return None
    limit, exclusive = bound
    candidates = limit.args if isinstance(limit, Op) and limit.op == "min" else (limit,)
    counts = [constant_difference(c, loop.init) for c in candidates]
    known = [c for c in counts if c is not None]
    if not known:
        return None
    last = min(known) - (1 if exclusive else 0)  # largest offset from init
    trips = last // loop.step + 1 if last >= 0 else 0
    return trips, len(known) < len(counts)


def constant_trips(loop: For) -> int | None:
    found = most_trips(loop)
    return None if found is None or found[1] else found[0]


def can_widen(loop: For, program, buffers: dict[str, tuple[int, ...]]) -> bool:
    """Whether a partial vectorized ``loop`` (bound ``min(init + c, e)``) may run all
    ``c + 1`` iterations with each store made conditional (``x = in range ? new : old``),
    so that a register tile keeps constant offsets in the last, partial tile too.

    It may when its body is statements only, each writing one of ``buffers`` (name ->
    constant extents: temporaries this thread owns), and every access whose index
    depends on the loop variable is to such a buffer, at ``var - init + constant``
    within the buffer's extent: the extra iterations then read and write inside the
    buffers only, and write back what they read.  (The caller runs the loop only when
    it has a real iteration, so accesses that do not depend on the variable are those
    of a real iteration.)
    """
    found = most_trips(loop)
    if found is None or not found[1] or loop.step != 1:
        return False
    trips = found[0]
    body = loop.body.items if isinstance(loop.body, Block) else (loop.body,)
    if not all(isinstance(item, Run) for item in body):
        return False
    start = linear_form(loop.init)
    if start is None:
        return False
    for run in body:
        stmt = program.statement(run.stmt)
        offsets = {}  # id(index var) -> its offset from the loop variable, or None
        for var, arg in zip(stmt.index_vars, run.args):
            if loop.var in _names(arg):
                offsets[id(var)] = offset_in_loop(arg, loop.var, start)
        if program.array_of(stmt.target.tensor).name not in buffers:
            return False
        for access in [stmt.target] + [n for n in walk(stmt.value) if isinstance(n, TensorRead)]:
            if not _stays_inside(access, offsets, trips, program, buffers):
                return False
    return True


def _stays_inside(access, offsets: dict, trips: int, program, buffers) -> bool:
    name = program.array_of(access.tensor).name
    for dim, index in enumerate(access.indices):
        uses = [n for n in walk(index) if id(n) in offsets]
        if not uses:
            continue
        if name not in buffers or index is not uses[0] or offsets[id(index)] is None:
            return False
        offset = offsets[id(index)]
        extent = math.prod(buffers[name]) if access.flat else buffers[name][dim]
        if offset < 0 or offset + trips > extent:
            return False
    return True


def _names(expr: IndexExpr) -> set[str]:
    found: set[str] = set()
    map_exprs(expr, lambda e: found.add(e.name) if isinstance(e, Name) else None)
    return found
