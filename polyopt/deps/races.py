"""Memory conflicts between iterations of a loop meant to run in parallel.

Dependences say what must stay ordered; a parallel loop also needs that no two of its
iterations touch the same element when one of them writes it.  For ordinary programs
that is what carried dependences already say.  It matters when stages are recomputed
per tile (``compute_at``): overlapping tiles write the same elements of a shared buffer
(harmless in sequence, a race in parallel).

>>> import polyopt as po
>>> A = po.placeholder((10,), name="A")
>>> B = po.compute((10,), lambda i: A[i] * 2, name="B")
>>> C = po.compute((8,), lambda i: B[i] + B[i + 2], name="C")
>>> s = po.create_schedule(C)
>>> io, ii = s[C].split(C.op.axis[0], factor=4)
>>> s[B].compute_at(s[C], io)
>>> print(racing_access(s.program, "C", 2))  # dimension 2: the loop i.outer
B[i_outer=0, i=4] writes B[4], which C[i=4] also reads in another iteration
"""

from __future__ import annotations

import islpy as isl

from ..domain.affine import parts
from ..domain.program import AccessKind, Program
from .legality import instance_text, other_iteration, shares_loop


def racing_access(program: Program, stmt: str, dim: int,
                  private: frozenset[str] = frozenset()) -> str | None:
    """A description of two iterations of the loop at schedule dimension ``dim`` of
    ``stmt`` that touch one element, one of them writing it; None when there are none.
    Arrays named in ``private`` are skipped: each iteration has its own copy (a buffer
    in a work-group's ``__local`` memory, when the loop is bound to work-groups)."""
    time = program.schedule_of(stmt)
    inside = [s.name for s in program.statements if shares_loop(program, s.name, stmt, dim)]
    rows = isl.UnionMap.empty(time.get_space().params())
    for name in inside:
        rows = rows.union(isl.UnionMap.from_map(program.schedule_of(name)))
    apart = rows.apply_range(isl.UnionMap.from_map(
        other_iteration(time.get_space().range(), dim))).apply_range(rows.reverse())
    for array in program.arrays:
        if array.name in private:
            continue
        writes = _accesses(program, inside, array.name, AccessKind.WRITE)
        if writes.is_empty():
            continue
        touches = _accesses(program, inside, array.name, None)
        conflicts = writes.apply_range(touches.reverse()).intersect(apart)
        conflicts = conflicts.intersect_params(program.context)
        if not conflicts.is_empty():
            return _describe(program, conflicts, writes)
    return None


def _accesses(program: Program, stmts, array: str, kind) -> isl.UnionMap:
    result = isl.UnionMap.empty(program.context.get_space())
    for name in stmts:
        for access in program.statement(name).accesses:
            if access.array == array and kind in (None, access.kind):
                result = result.union(isl.UnionMap.from_map(access.relation))
    return result


def _describe(program: Program, conflicts: isl.UnionMap, writes: isl.UnionMap) -> str:
    maps = parts(conflicts)
    pair = maps[0]
    point = pair.wrap().sample_point()
    n_in = pair.dim(isl.dim_type.in_)
    coords = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
              for k in range(n_in + pair.dim(isl.dim_type.out))]
    first = instance_text(program, pair.get_tuple_name(isl.dim_type.in_), coords[:n_in])
    second_name = pair.get_tuple_name(isl.dim_type.out)
    second = instance_text(program, second_name, coords[n_in:])
    instance = isl.Set.universe(pair.get_space().domain())
    for pos, value in enumerate(coords[:n_in]):
        instance = instance.fix_val(isl.dim_type.set, pos, isl.Val(value))
    params = point.get_space().get_var_names(isl.dim_type.param)
    for pos, _ in enumerate(params):
        instance = instance.fix_val(isl.dim_type.param, pos,
                                    point.get_coordinate_val(isl.dim_type.param, pos))
    element = isl.UnionSet.from_set(instance).apply(writes)
    elements = parts(element)
    target = elements[0].sample_point()
    index = [target.get_coordinate_val(isl.dim_type.set, k).to_python()
             for k in range(elements[0].dim(isl.dim_type.set))]
    verb = "writes" if any(
        a.kind is AccessKind.WRITE for a in program.statement(second_name).accesses
        if a.array == elements[0].get_tuple_name()) else "reads"
    return (f"{first} writes {elements[0].get_tuple_name()}[{', '.join(map(str, index))}], "
            f"which {second} also {verb} in another iteration")

