"""Reductions reassociated: the dependences that fix the order of a reduction's updates
relaxed to "every update of an element runs after its init and before its readers".

TVM treats ``sum``, ``max`` and ``min`` (and reducers declared with ``comm_reducer``) as
commutative and associative: the reduce loops of one reduction may be reordered, split
and fused freely; only the rounding of the result changes.  polyopt does the same unless
the schedule asks for ``strict_fp=True``.

Precisely, for each reduction stage (a stage with an init) whose update ``U`` writes its
accumulator ``A``: the dependences ``U -> U`` through ``A`` are dropped (those are the
ones that order the accumulation), and every other dependence that enters or leaves
``U`` is widened to all the instances of ``U`` that update the same element of ``A``
(so that all of them still run after what the first one waited for, and before what
the last one was waited for).  Every other dependence stays as it is.  A loop marked
parallel, vectorized or bound is still checked against the exact dependences (two
iterations updating one accumulator at once would race).

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
>>> s = po.create_schedule(S)
>>> [d.kind for d in s.deps if d.source == d.sink == "S_update"]
['flow', 'anti', 'output']
>>> [d.kind for d in reassociated(s.program, s.deps) if d.source == d.sink == "S_update"]
[]
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.memo import IdentityMemo
from ..domain.program import Program
from .dataflow import Dependences

_RELAXED = IdentityMemo()


def reassociated(program: Program, deps: Dependences) -> Dependences:
    """``deps`` with the accumulation order of every reduction relaxed (see above)."""
    updates = _reduction_updates(program)
    if not updates:
        return deps
    key = (deps,) + tuple(x for update, outer in updates for x in (update, outer))
    return _RELAXED.get(key, lambda: _relax(deps, _same_element_relations(updates)))


def _reduction_updates(program: Program) -> list:
    """The update statement of every reduction stage (one that writes one array), with
    the number of its leading dimensions that say which recomputation it belongs to
    (a stage computed at a loop of another recomputes its reduction per iteration)."""
    found = []
    for stage in program.stages:
        if stage.init is not None:
            update = program.statement(stage.main)
            if len(update.writes) == 1:
                found.append((update, stage.attach.outer_dims))
    return found


def _same_element_relations(updates) -> dict[tuple[str, str], isl.Map]:
    """For each reduction update (statement, accumulator): ``{ U[x] -> U[y] }`` for the
    instances that update the same element in the same recomputation."""
    relations = {}
    for update, outer in updates:
        write = update.writes[0].relation.intersect_domain(update.domain)
        same = write.apply_range(write.reverse())
        for dim in range(outer):
            same = same.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim)
        relations[(update.name, update.writes[0].array)] = same
    return relations


def _relax(deps: Dependences, same_element: dict[tuple[str, str], isl.Map]) -> Dependences:
    kept = []
    for dep in deps:
        if dep.source == dep.sink and (dep.source, dep.array) in same_element:
            continue  # the order of the accumulation itself
        relation = dep.relation
        into, out_of = (same_element.get((dep.sink, dep.array)),
                        same_element.get((dep.source, dep.array)))
        if into is not None:  # through the accumulator, into its updates
            relation = relation.apply_range(into)
        if out_of is not None:  # through the accumulator, out of its updates
            relation = out_of.apply_range(relation)
        if relation is not dep.relation:
            dep = dataclasses.replace(dep, relation=relation.coalesce(),
                                      elements=dep.elements)
        kept.append(dep)
    return Dependences(tuple(kept))
