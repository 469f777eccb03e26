"""Conflicts in an OpenCL kernel: refused between work-groups, barriers within one.

Two accesses to one element, one a write, conflict.  Between work-groups nothing
orders them: refused (:func:`_check_groups`).  Between work-items of one group, a
barrier goes at the end of each loop that carries the conflict, in uniform code
(outside every ``threadIdx`` loop), else refused (:func:`_place_barriers`).  A value
of a scoped buffer must be read by the group or work-item that wrote it
(:func:`check_scoped_flows`).  See :mod:`.plan` for an example.
"""

from __future__ import annotations

import islpy as isl

from ...deps.dataflow import Dependence, Dependences, compute_dependences
from ...deps.counterexample import Counterexample, find_pair
from ...deps.legality import carried_pairs
from ...deps.races import memory_conflicts
from ...domain.program import Program
from ...lowering_errors import WorkItemRaceError
from ...machine import scope_meaning
from .buffers import per_work_item, storage_map
from .kernel import DeviceKernel, access_items


def _relation(kind: str) -> isl.Map:
    """Pairs of work-items: "group" in different groups, "local" in one group but
    different work-items, "item" different work-items."""
    names = ["g0", "g1", "g2", "l0", "l1", "l2"]
    other = [n + "'" for n in names]
    same_g = " and ".join(f"{a} = {b}" for a, b in zip(names[:3], other[:3]))
    diff_g = " or ".join(f"{a} != {b}" for a, b in zip(names[:3], other[:3]))
    diff_l = " or ".join(f"{a} != {b}" for a, b in zip(names[3:], other[3:]))
    cons = {"group": diff_g, "local": f"{same_g} and ({diff_l})",
            "item": f"{diff_g} or {diff_l}"}[kind]
    return isl.Map(f"{{ [{', '.join(names)}] -> [{', '.join(other)}] : {cons} }}")


def _pairs_between(items_a: isl.Map, items_b: isl.Map, kind: str) -> isl.Map:
    return items_a.apply_range(_relation(kind)).apply_range(items_b.reverse())


def plan_barriers(program: Program, kernel: DeviceKernel) -> None:
    """Refuse conflicts between groups, and place barriers between the work-items of a
    group: at each loop that carries a conflict (:func:`legality.carried_pairs`, the one
    analysis of what a loop carries, asked about the conflicts in the kernel's order)."""
    stmts = sorted(s for s in kernel.stmts if s in kernel.work_items)
    for array in program.arrays:
        buffer = kernel.buffers.get(array.name)
        if buffer is not None and per_work_item(array):
            continue  # private: no other work-item sees it (flows are checked elsewhere)
        storage = None
        if buffer is not None:  # one copy per group, reused by iterations of outer loops
            def storage(stmt, access, buffer=buffer):
                return storage_map(program, kernel, stmt, access.relation, buffer)
        for conflict in memory_conflicts(program, array.name, stmts=stmts, storage=storage):
            for ordered in _in_kernel_order(program, kernel, conflict):
                _check_groups(program, kernel, ordered, shared=buffer is not None)
                _place_barriers(program, kernel, ordered)


def _in_kernel_order(program: Program, kernel: DeviceKernel, conflict: Dependence
                     ) -> list[Dependence]:
    """The pairs of a conflict (writer -> other) as dependences from the instance the
    kernel runs first to the one it runs second, within one iteration of the host loops
    (another iteration is another launch)."""
    directions = [(conflict.source, conflict.sink, conflict.relation, conflict.elements,
                   "flow" if conflict.kind == "anti" else "output")]
    if conflict.kind == "anti":  # the read may also come first
        reverse = conflict.relation.reverse()
        directions.append((conflict.sink, conflict.source, reverse,
                           reverse.apply_range(conflict.elements), "anti"))
    ordered = []
    for first, second, pairs, elements, kind in directions:
        order = _runs_before(kernel, first, second)
        pairs = pairs.intersect(order).intersect_params(program.context)
        if not pairs.is_empty():
            ordered.append(Dependence(kind, first, second, conflict.array, pairs, elements))
    return ordered


def _runs_before(kernel: DeviceKernel, first: str, second: str) -> isl.Map:
    """{ first instance -> second instance }: the first runs earlier, in the same
    iteration of every host loop."""
    rows = kernel.rows
    space = rows[first].get_space().range()
    order = isl.Map.lex_lt(space)
    for loop in kernel.host_loops:
        order = order.equate(isl.dim_type.in_, loop.dim, isl.dim_type.out, loop.dim)
    return rows[first].apply_range(order).apply_range(rows[second].reverse())


def _check_groups(program: Program, kernel: DeviceKernel, conflict: Dependence, *,
                  shared: bool) -> None:
    """Work-groups run in no order: refuse a conflict between two of them on global
    memory (a ``__local`` buffer has one copy per group)."""
    if shared:
        return
    items_a = access_items(program, kernel, conflict.source, conflict.array)
    items_b = access_items(program, kernel, conflict.sink, conflict.array)
    across = conflict.relation.intersect(_pairs_between(items_a, items_b, "group"))
    if not across.is_empty():
        raise WorkItemRaceError(conflict.array, _example(program, conflict, across),
                                "work-group", "across_groups", kernel=kernel.name)


def _place_barriers(program: Program, kernel: DeviceKernel, conflict: Dependence) -> None:
    """A barrier at the end of each loop that carries a conflict between two work-items
    of one group, and between the two statements; refused inside threadIdx loops."""
    s, t = conflict.source, conflict.sink
    items_a = access_items(program, kernel, s, conflict.array)
    items_b = access_items(program, kernel, t, conflict.array)
    within = conflict.relation.intersect(_pairs_between(items_a, items_b, "local"))
    if within.is_empty():
        return
    local = Dependences((Dependence(conflict.kind, s, t, conflict.array, within,
                                    conflict.elements),))
    limit = min(kernel.udepth[s], kernel.udepth[t])
    for dim in range(kernel.rows[s].dim(isl.dim_type.out)):
        carried = carried_pairs(program, local, s, dim, limit=1)
        if not carried:
            continue
        if dim >= limit:
            raise WorkItemRaceError(conflict.array, _example(program, conflict, carried[0][1]),
                                    "work-item", "inside_thread_loops", kernel=kernel.name)
        kernel.barrier_pairs.add((s, t))
        if program.axis_at(s, dim) is not None:
            kernel.barrier_dims.add(dim)


def _example(program: Program, conflict: Dependence, pairs: isl.Map) -> Counterexample:
    """The first pair of ``pairs`` (as legality's refusals give it).  A memory conflict
    has its write first: with a read, it is a flow pair."""
    kind = "output" if conflict.kind == "output" else "flow"
    return find_pair(program, kind, pairs, conflict.array)


def check_scoped_flows(program: Program, kernels: list[DeviceKernel], arrays) -> None:
    """A value in a shared (local) buffer must be read by the group (work-item) that
    wrote it, in the same iteration of the loops enclosing the buffer's accesses: each
    group (work-item) has its own copy, refilled in each such iteration."""
    scoped = {a.name: a.scope for a in arrays}
    if not scoped:
        return
    where = {s: k for k in kernels for s in k.work_items}
    for dep in compute_dependences(program):
        if dep.kind != "flow" or dep.array not in scoped:
            continue
        kernel = where.get(dep.source)
        if kernel is None or where.get(dep.sink) is not kernel:
            continue
        keys = kernel.buffers[dep.array].keys
        source, sink = keys[dep.source], keys[dep.sink]
        differ = isl.Map.universe(isl.Space.map_from_set(source.get_space().range())).subtract(
            isl.Map.identity(isl.Space.map_from_set(source.get_space().range())))
        wrong = dep.relation.intersect(source.apply_range(differ).apply_range(sink.reverse()))
        wrong = wrong.intersect_params(program.context)
        if not wrong.is_empty():
            unit = scope_meaning(scoped[dep.array]).unit
            raise WorkItemRaceError(dep.array, _example(program, dep, wrong), unit,
                                    "scoped_buffer", kernel=kernel.name,
                                    scope=scoped[dep.array])
