"""Whether running each tile of a tensorize as one step keeps every dependence in order.

Inside a tile only the reduction's own accumulation may be a dependence; the others
are checked on the program with each tile's instances scheduled at the tile's first
step (:func:`polyopt.deps.legality.find_violations`).  See :mod:`.match` for an
example of a tensorize accepted.
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..deps.dataflow import Dependences
from ..deps.legality import find_violations, violation
from ..domain.program import Program
from ..tensorize_errors import IllegalTensorizeError
from .match_result import Match
from .tiles import outer_of


def check_legal(program: Program, deps: Dependences, found: Match) -> None:
    """Raise :class:`TensorizeError` unless running each tile as one step keeps every
    dependence in order (see the module)."""
    region = [found.main] + ([found.init] if found.init else [])
    outer = {name: outer_of(program, name, found.dim) for name in region}
    if found.full is not None:  # partial tiles run as scalar code: only full tiles are steps
        outer = {name: o.intersect_range(found.full.align_params(o.get_space()))
                 for name, o in outer.items()}
    output = program.statement(found.main).writes[0].array
    kept = []
    for dep in deps:
        if dep.source in region and dep.sink in region:
            same_tile = outer[dep.source].apply_range(outer[dep.sink].reverse())
            inside = dep.relation.intersect(same_tile).intersect_params(program.context)
            if not inside.is_empty() and not (
                    dep.array == output and dep.sink == found.main):
                raise IllegalTensorizeError(found.axis, violation(program, dep, inside),
                                            inside=True)
            relation = dep.relation.subtract(same_tile)
            if relation.is_empty():
                continue
            dep = dataclasses.replace(dep, relation=relation)
        kept.append(dep)
    collapsed = _collapsed_program(program, {name: o.domain() for name, o in outer.items()},
                                   found.dim)
    violations = find_violations(collapsed, Dependences(tuple(kept)), limit=1)
    if violations:
        raise IllegalTensorizeError(found.axis, violations[0], inside=False)


def _collapsed_program(program: Program, region: dict[str, isl.Set], dim: int) -> Program:
    """``program`` with the instances ``region[stmt]`` (those of the intrinsic's tiles)
    scheduled at their tile's first ``dim`` dimensions (one step each)."""
    rows = isl.UnionMap.empty(program.context.get_space())
    for stmt in program.statements:
        row = program.schedule_of(stmt.name)
        if stmt.name in region:
            width = row.dim(isl.dim_type.out)
            names = [f"t{k}" for k in range(width)]
            outs = names[:dim] + ["0"] * (width - dim)
            cut = isl.Map(f"{{ [{', '.join(names)}] -> [{', '.join(outs)}] }}")
            steps = region[stmt.name]
            row = row.intersect_domain(steps).apply_range(
                cut.align_params(row.get_space())).union(row.subtract_domain(steps))
        rows = rows.union(isl.UnionMap.from_map(row))
    schedule = isl.Schedule.from_domain(program.domains).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(rows))
    return program.replace(schedule=schedule)
