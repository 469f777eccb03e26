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
from ..domain.schedule import init_hoisted
from .dataflow import Dependences
from .exact_updates import relaxed_updates

_RELAXED = IdentityMemo()


def reassociated(program: Program, deps: Dependences) -> Dependences:
    """``deps`` with the accumulation order of every reduction relaxed (see above), and
    that of an in-place kernel's exact updates (:mod:`.exact_updates`)."""
    deps = relaxed_updates(program, deps)
    groups = _reduction_groups(program)
    if not groups:
        return deps
    key = (deps,) + tuple(x for updates, outer in groups for x in (*updates, outer))
    return _RELAXED.get(key, lambda: _relax(deps, *_same_element_relations(groups)))


def _reduction_groups(program: Program) -> list:
    """The update statements of every reduction (one per stage with an init that writes
    one array; all the outputs' updates for a reduction over a tuple, whose stages share
    every loop), with the number of leading dimensions that say which recomputation
    they belong to (a stage computed at a loop of another recomputes per iteration)."""
    found: dict[str, tuple[list, int]] = {}
    for stage in program.stages:
        if stage.init is None:
            continue
        update = program.statement(stage.main)
        if len(update.writes) != 1:
            continue
        owner = stage.attach.stage if init_hoisted(stage) else stage.name
        found.setdefault(owner, ([], stage.attach.outer_dims))[0].append(update)
    return [(tuple(updates), outer) for updates, outer in found.values()]


def _same_element_relations(groups):
    """For each update ``U`` of a reduction and each accumulator ``A`` of it:
    ``{ U[x] -> U[y] }`` for the instances that update the same element in the same
    recomputation; and for two updates of one reduction, ``{ U[x] -> V[x] }`` (one
    instance of a reduction over a tuple updates all its outputs in a fixed order)."""
    relations, same_instance = {}, {}
    for updates, outer in groups:
        accumulators = [u.writes[0].array for u in updates]
        for update in updates:
            write = update.writes[0].relation.intersect_domain(update.domain)
            same = write.apply_range(write.reverse())
            for dim in range(outer):
                same = same.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim)
            for array in accumulators:
                relations[(update.name, array)] = same
            identity = isl.Map.identity(update.domain.get_space().map_from_set())
            for other in updates:
                same_instance[(update.name, other.name)] = identity.set_tuple_name(
                    isl.dim_type.out, other.name)
    return relations, same_instance


def _relax(deps: Dependences, same_element: dict[tuple[str, str], isl.Map],
           same_instance: dict[tuple[str, str], isl.Map]) -> Dependences:
    kept = []
    for dep in deps:
        internal = same_instance.get((dep.source, dep.sink))
        if internal is not None and (dep.source, dep.array) in same_element:
            # the order of the accumulation itself: only the order inside one instance
            # (of the updates of a reduction over a tuple) stays
            relation = dep.relation.intersect(internal)
            if not relation.is_empty():
                kept.append(dataclasses.replace(dep, relation=relation, elements=dep.elements))
            continue
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
