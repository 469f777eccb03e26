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

from dataclasses import dataclass

import islpy as isl

from ..domain.program import Program, Statement
from ..domain.schedule import Axis, SplitOrder, StageRecord, identity_axes, on_statement


@dataclass(frozen=True)
class KeyedSplit:
    """Loops that run the instances in the order of one loop before its splits: the
    split ``order`` (``split(nparts=)``) of that loop, and the keyed splits of its two
    loops where they were split again (``split(nparts=)`` of ``t.inner``: None for a
    loop that was not).  The copies are keyed by ``order.whole``, one dimension."""

    order: SplitOrder
    outer: "KeyedSplit | None" = None
    inner: "KeyedSplit | None" = None

    @property
    def width(self) -> int:
        """The number of loops."""
        return sum(1 if part is None else part.width for part in (self.outer, self.inner))

    @property
    def loop(self) -> str:
        """The name of the loop before the splits."""
        return self.order.loop

    def tokens(self) -> tuple:
        """The splits, outermost first (stages split together share them)."""
        return (self.order.token,) + tuple(
            () if part is None else part.tokens() for part in (self.outer, self.inner))

    def loops(self, whole: isl.PwAff) -> list[tuple[isl.PwAff, SplitOrder]]:
        """The value and split record of each loop, where the loop before the splits is
        ``whole`` (a function on another statement's instances)."""
        order = self.order.on(whole)
        result = []
        for part, value in ((self.outer, order.outer), (self.inner, order.inner)):
            result += [(value, order)] if part is None else part.loops(value)
        return result


def whole_splits(tile: list[StageRecord], cons: StageRecord, depth: int
                 ) -> dict[int, KeyedSplit]:
    """The splits among the first ``depth`` loops of ``cons`` that every stage of
    ``tile`` (the stages in those loops) records as order-equivalent
    (:class:`~polyopt.domain.schedule.SplitOrder`, ``split(nparts=)``, also nested:
    one of a split's loops split again), all their loops shared:
    ``{position of the first loop: the keyed split}``.  A copy computed in those
    loops is keyed by the value of the loop before the splits (the same iterations,
    one dimension: ``t`` for ``t.outer, t.inner``, or ``t.outer, t.inner.outer,
    t.inner.inner``)."""
    found = _keyed(cons.axes[:depth])
    for member in tile:
        theirs = _keyed(member.axes[:depth])
        found = {k: keyed for k, keyed in found.items()
                 if k in theirs and theirs[k].tokens() == keyed.tokens()}
    return found


def _keyed(axes) -> dict[int, KeyedSplit]:
    """The keyed splits of ``axes``: adjacent loops (or keyed splits) that are still
    the two loops of a recorded split, merged until none are."""
    items = [(axis.value, None, axis.order) for axis in axes]  # value, keyed, record
    merged = True
    while merged:
        merged = False
        for k in range(len(items) - 1):
            (outer, outer_keyed, left), (inner, inner_keyed, right) = items[k], items[k + 1]
            for order in (left, right):  # a loop (not a merged split) carries the record
                if order is not None and outer is order.outer and inner is order.inner:
                    items[k:k + 2] = [(order.whole, KeyedSplit(order, outer_keyed,
                                                               inner_keyed), None)]
                    merged = True
                    break
            if merged:
                break
    result, position = {}, 0
    for _, keyed, _ in items:
        if keyed is not None:
            result[position] = keyed
        position += 1 if keyed is None else keyed.width
    return result


def key_names(loops, splits: dict) -> list[str]:
    """The names of the copies' outer dimensions: one per loop, one per keyed split
    (the name of the loop that was split)."""
    names, k = [], 0
    while k < len(loops):
        if k in splits:
            names.append(splits[k].loop or loops[k].name)
            k += splits[k].width
        else:
            names.append(loops[k].name)
            k += 1
    return names


def shared_loops(copy: Statement, loops, splits: dict, own: set) -> tuple[Axis, ...]:
    """The loops a copy shares with the consumer (``loops``, its first ones), as
    functions of the copy's outer dimensions: a dimension each, and a keyed split the
    same splits of its dimension (with their records, for the dataflow)."""
    dims = identity_axes(copy.domain)
    taken = set(own)
    result, position, k = [], 0, 0
    while k < len(loops):
        key = dims[position]
        position += 1
        if k in splits:
            keyed = splits[k]
            group = loops[k:k + keyed.width]
            members = [(loop, value, order, _suffix(loop.name, keyed.loop))
                       for loop, (value, order) in zip(group, keyed.loops(key.value))]
            k += keyed.width
        else:
            members = [(loops[k], key.value, None, "")]
            k += 1
        for loop, value, order, suffix in members:
            name, counter = loop.name, 0
            while name in taken:  # the stage has a loop of that name
                counter += 1
                name = f"{key.name}{suffix}" + (f"_{counter}" if counter > 1 else "")
            taken.add(name)
            result.append(Axis(name, value, loop.kind, order))
    return tuple(result)


def _suffix(name: str, whole: str) -> str:
    """``.inner.outer`` for the loop ``t.inner.outer`` of a split of ``t``."""
    return name[len(whole):] if whole and name.startswith(whole + ".") else ".part"


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
    own = _keyed(stage.axes[:depth])  # the same splits, on the stage's own loops
    k = 0
    while k < depth:
        axis = stage.axes[k]
        value = own[k].order.whole if k in splits else axis.value
        result = result.flat_range_product(isl.Map.from_pw_aff(
            on_statement(value, main, stmt)).intersect_domain(stmt.domain))
        k += splits[k].width if k in splits else 1
    return result
