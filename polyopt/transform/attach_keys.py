"""The key of a stage computed inside another's loops (``compute_at``, the copies of a
cache): the values of the shared loops, one dimension each, except that the two loops
of a recorded ``split(nparts=)`` (:class:`~polyopt.domain.schedule.SplitOrder`) are keyed
by the loop before the split.  The copies then have the kernel's simple dimension
(``t``, not ``t.outer, t.inner``, whose values are defined piecewise for symbolic
sizes), and isl's dataflow orders them by it, as the statements they serve (issue 32's
hang_m2: minutes of exact checking became seconds).

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> C = po.compute((n,), lambda i: B[i] + 1.0, name="C")
>>> s = po.create_schedule(C)
>>> outer, inner = s[C].split(C.op.axis[0], nparts=2)
>>> cons = s.program.stage("C")
>>> splits = whole_splits([cons], cons, 2)
>>> key_names(cons.axes[:2], splits), list(splits)
(['i'], [0])
>>> print(loop_map(s.program, cons, 2, splits)["C"])
[n] -> { C[i] -> [i] : 0 <= i < n }
"""

from __future__ import annotations

import islpy as isl

from ..domain.program import Program, Statement
from ..domain.schedule import Axis, SplitOrder, StageRecord, identity_axes, on_statement


def whole_splits(tile: list[StageRecord], cons: StageRecord, depth: int
                 ) -> dict[int, SplitOrder]:
    """The splits among the first ``depth`` loops of ``cons`` that every stage of
    ``tile`` (the stages in those loops) records as order-equivalent
    (:class:`~polyopt.domain.schedule.SplitOrder`, ``split(nparts=)``), both loops shared:
    ``{position of the outer loop: cons's record}``.  A copy computed in those loops
    is keyed by the value of the loop before the split (the same iterations, one
    dimension: ``t`` for ``t.outer, t.inner``)."""
    found: dict[int, SplitOrder] = {}
    for k in range(depth - 1):
        order = cons.axes[k].order
        if order is not None and k - 1 not in found and \
                all(_recorded_split(member.axes, k, order.token) for member in tile):
            found[k] = order
    return found


def _recorded_split(axes, k: int, token) -> bool:
    """Whether loops ``k`` and ``k + 1`` of ``axes`` are still the two loops of the
    split recorded with ``token``."""
    if k + 1 >= len(axes):
        return False
    order = axes[k].order
    return (order is not None and order.token is token and axes[k + 1].order is order
            and axes[k].value is order.outer and axes[k + 1].value is order.inner)


def key_names(loops, splits: dict) -> list[str]:
    """The names of the copies' outer dimensions: one per loop, one per split pair
    (the name of the loop that was split)."""
    names, k = [], 0
    while k < len(loops):
        if k in splits:
            names.append(splits[k].loop or loops[k].name)
            k += 2
        else:
            names.append(loops[k].name)
            k += 1
    return names


def shared_loops(copy: Statement, loops, splits: dict, own: set) -> tuple[Axis, ...]:
    """The loops a copy shares with the consumer (``loops``, its first ones), as
    functions of the copy's outer dimensions: a dimension each, and a split pair the
    same split of its dimension (with the record of the split, for the dataflow)."""
    dims = identity_axes(copy.domain)
    taken = set(own)
    result, position, k = [], 0, 0
    while k < len(loops):
        key = dims[position]
        position += 1
        if k in splits:
            order = splits[k].on(key.value)
            members = ((loops[k], order.outer, ".outer"), (loops[k + 1], order.inner, ".inner"))
            k += 2
        else:
            order = None
            members = ((loops[k], key.value, ""),)
            k += 1
        for loop, value, suffix in members:
            name, counter = loop.name, 0
            while name in taken:  # the stage has a loop of that name
                counter += 1
                name = f"{key.name}{suffix}" + (f"_{counter}" if counter > 1 else "")
            taken.add(name)
            result.append(Axis(name, value, loop.kind, order))
    return tuple(result)


def loop_map(program: Program, cons: StageRecord, depth: int, splits: dict
             ) -> dict[str, isl.Map]:
    """For each consumer statement, the map from its instances to its outer loop values
    (each split of ``splits`` by its whole loop: :func:`whole_splits`)."""
    result = {}
    for name, axes in program.loop_axes:
        if name not in (cons.init, cons.main):
            continue
        wanted = [a for a in cons.axes[:depth]]
        dims = [d for d, a in enumerate(axes) if a is not None and any(a is w for w in wanted)]
        if len(dims) != depth:
            continue  # e.g. an init outside these loops: it reads nothing of the producer
        if splits:
            result[name] = _key_map(program, cons, name, depth, splits)
            continue
        row = program.schedule_of(name)
        relation = row
        for d in reversed(range(row.dim(isl.dim_type.out))):
            if d not in dims:
                relation = relation.project_out(isl.dim_type.out, d, 1)
        result[name] = relation
    return result


def _key_map(program: Program, stage: StageRecord, name: str, depth: int, splits: dict
             ) -> isl.Map:
    """``{ instance of statement name -> key }``: the values of the first ``depth``
    loops of ``stage``, each split pair of ``splits`` by its whole loop."""
    main, stmt = program.statement(stage.main), program.statement(name)
    result = isl.Map.from_domain(stmt.domain)
    k = 0
    while k < depth:
        axis = stage.axes[k]
        value = axis.order.whole if k in splits else axis.value
        result = result.flat_range_product(isl.Map.from_pw_aff(
            on_statement(value, main, stmt)).intersect_domain(stmt.domain))
        k += 2 if k in splits else 1
    return result
