"""``"shared"`` (``__local``) and ``"local"`` (private) buffers of an OpenCL kernel.

A scoped temporary gets, per work-group (``shared``) or per work-item (``local``), one
copy holding the box of its footprint in one iteration of the loops enclosing all its
accesses (:func:`plan_buffer`); :func:`storage_map` says where in which group's copy an
access goes, which the conflict analysis (:mod:`.barriers`) compares.  See
:mod:`.plan` for a kernel with a buffer of each kind.
"""

from __future__ import annotations

import islpy as isl

from ...ast.nodes import loops, runs
from ...domain.program import Array, Program
from ...lowering_errors import BufferScopeError
from ...machine import scope_meaning
from .kernel import LOCAL_IDS, Buffer, DeviceKernel, access_items, key_expr


def plan_buffer(program: Program, kernel: DeviceKernel, array: Array) -> Buffer:
    """The box that one copy of a shared (local) buffer holds: the footprint of the
    accesses per work-group (work-item) and per iteration of the loops that enclose all
    of them.  Each copy is filled and used within one iteration of those loops."""
    stmts = sorted(s for s in kernel.stmts if s in kernel.work_items
                   and any(a.array == array.name for a in program.statement(s).accesses))
    dims, names = _common_loops(program, kernel, stmts)
    keys: dict[str, isl.Map] = {}
    footprint = None
    for stmt in stmts:
        row = kernel.rows[stmt]
        width = row.dim(isl.dim_type.out)
        key = row.apply_range(_select_dims(width, dims))
        if per_work_item(array):
            items = access_items(program, kernel, stmt, array.name)
            key = key.flat_range_product(items.project_out(isl.dim_type.out, 0, 3))
        keys[stmt] = key
        for access in program.statement(stmt).accesses:
            if access.array == array.name:
                part = key.reverse().apply_range(access.relation)
                footprint = part if footprint is None else footprint.union(part)
    names = names + (list(LOCAL_IDS) if per_work_item(array) else [])
    footprint = footprint.intersect_params(program.context).coalesce()
    lower, sizes, starts = [], [], []
    for dim in range(array.ndim):
        along = footprint.project_out(isl.dim_type.out, dim + 1, array.ndim - dim - 1)
        along = along.project_out(isl.dim_type.out, 0, dim)
        low = along.lexmin_pw_multi_aff().get_pw_aff(0)
        spread = isl.Map.from_pw_aff(low).range_product(along).range().unwrap().deltas()
        top = spread.dim_max_val(0)
        if not top.is_int():
            unit = scope_meaning(array.scope).unit
            raise BufferScopeError(array.name, array.scope, "grows", unit=unit, dim=dim)
        lower.append(key_expr(low, names))
        sizes.append(top.to_python() + 1)
        starts.append(low)
    return Buffer(array, tuple(lower), tuple(sizes), keys, tuple(starts))


def _common_loops(program: Program, kernel: DeviceKernel, stmts) -> tuple[list[int], list[str]]:
    """The schedule dimensions of the loops (outside every threadIdx loop) that enclose
    all of ``stmts``, and the names of those loops in the AST."""
    limit = min(kernel.udepth[s] for s in stmts)
    # a host loop encloses every statement: each launch has its own copies
    names = {loop.dim: loop.var for loop in kernel.host_loops}
    for loop in loops(kernel.body):
        inside = {r.stmt for r in runs(loop.body)}
        if loop.dim is not None and loop.dim < limit and set(stmts) <= inside:
            names[loop.dim] = loop.var
    dims = sorted(names)
    return dims, [names[d] for d in dims]


def _select_dims(width: int, dims: list[int]) -> isl.Map:
    inputs = ", ".join(f"c{d}" for d in range(width))
    return isl.Map(f"{{ [{inputs}] -> [{', '.join(f'c{d}' for d in dims)}] }}")


def storage_map(program: Program, kernel: DeviceKernel, stmt: str, relation: isl.Map,
             buffer: "Buffer") -> isl.Map:
    """{ instance -> [g0, g1, g2, position] }: where in which group's copy of a shared
    buffer an access goes."""
    key = buffer.keys[stmt]
    n_key = key.dim(isl.dim_type.out)
    flat = key.range_product(relation).flatten_range()  # s -> [key..., element...]
    flat_space = flat.get_space().range()
    local = isl.LocalSpace.from_space(flat_space)
    width = flat_space.dim(isl.dim_type.set)
    keep = isl.PwMultiAff.from_map(_select_dims(width, list(range(n_key))).align_params(
        flat_space.params()))
    result = None
    for dim, start in enumerate(buffer.starts):
        value = isl.PwAff.var_on_domain(local, isl.dim_type.set, n_key + dim)
        value = value.sub(start.align_params(flat_space.params()).pullback_pw_multi_aff(keep))
        part = isl.Map.from_pw_aff(value)
        result = part if result is None else result.flat_range_product(part)
    groups = kernel.work_items[stmt].project_out(isl.dim_type.out, 3, 3)
    return groups.flat_range_product(flat.apply_range(result))


def per_work_item(array: Array) -> bool:
    """Whether ``array`` has one copy per work-item (else per work-group)."""
    return scope_meaning(array.scope).shared_by == "thread"
