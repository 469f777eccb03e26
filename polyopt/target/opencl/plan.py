"""Plan the OpenCL kernels of a lowered function: NDRange, buffers, barriers, refusals.

Each top-level loop nest of the function becomes one kernel (launched in order).  In a
kernel, the loops bound to ``blockIdx`` must be its outermost loops; each work-item
runs the rest, entering a loop bound to ``threadIdx`` only for its own iteration.  The
code outside every ``threadIdx`` loop is *uniform* (all work-items of a group run it
alike), so barriers go there and nowhere else.

Everything is derived exactly with isl from the schedule and the access relations:

* which work-item runs each statement instance (:attr:`DeviceKernel.work_items`): a bound
  loop's value minus the smallest value it takes gives the group or local id;
* the NDRange: the number of groups from the block loops' extents (parametric,
  evaluated from the sizes at call time), the group shape from the thread loops'
  extents (constants);
* ``"shared"`` buffers (``__local``) and ``"local"`` ones (private) sized by the box of
  their footprint per group or per work-item;
* conflicts (two accesses to one element, one a write): between groups of one
  kernel they are refused, between work-items of one group they need a barrier, which
  must fall in uniform code between the two accesses (else refused);
* values read from a ``"shared"``/``"local"`` buffer that another group/work-item
  wrote are refused (each has its own copy).

A kernel is a :class:`~.kernel.Kernel`; its buffers are planned in :mod:`.buffers`,
its conflicts and barriers in :mod:`.barriers`.

>>> import polyopt as po
>>> m, n = po.var("m"), po.var("n"); A = po.placeholder((m, n), name="A")
>>> B = po.compute((m, n), lambda i, j: A[i, j] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> _ = po.templates.opencl_injective_template(s, B, threads=16)
>>> kernel, = plan_kernels(po.lower(s, [A, B]))
>>> kernel.local_size, kernel.groups({"m": 5, "n": 40})
((16, 1, 1), (3, 5, 1))
"""

from __future__ import annotations

import islpy as isl

from ...ast.nodes import Block, For, If, Node, loops, runs
from ...domain.program import Array, Program
from ...domain.schedule import BIND_TAGS
from ...lowering_errors import BufferScopeError, ThreadBindingError, WorkGroupSizeError
from ...machine import scope_meaning
from ..accumulate import combination
from .barriers import check_scoped_flows, plan_barriers
from .buffers import plan_buffer
from .kernel import DeviceKernel, is_block, is_thread, tag_dim

MAX_GROUP_SIZE = 1024


def split_kernels(node: Node, host: tuple = ()) -> list[tuple[Node, tuple]]:
    """The nests of a function body that become kernels, in order, each with the host
    loops and guards around it: a serial loop whose body holds loops bound to blockIdx
    (a scan's time loop) runs on the host, launching its body's kernels per iteration."""
    if isinstance(node, Block):
        return [k for item in node.items for k in split_kernels(item, host)]
    if isinstance(node, For) and node.kind not in BIND_TAGS and _has_block_loop(node.body):
        return split_kernels(node.body, host + (node,))
    if isinstance(node, If) and node.otherwise is None and _has_host_loop(node.then):
        return split_kernels(node.then, host + (node,))
    return [(node, host)]


def _has_block_loop(node: Node) -> bool:
    return any(is_block(loop.kind) for loop in loops(node))


def _has_host_loop(node: Node) -> bool:
    return any(loop.kind not in BIND_TAGS and _has_block_loop(loop.body)
               for loop in loops(node))


def plan_kernels(func) -> list[DeviceKernel]:
    """One :class:`DeviceKernel` per top-level nest of ``func.body`` (raises ScheduleError for
    a schedule that cannot run race-free)."""
    program = func.program
    kernels = []
    owner: dict[str, str] = {}
    scoped = scoped_arrays(func)
    for number, (body, host) in enumerate(split_kernels(func.body)):
        name = f"{func.name}_k{number}" if number else func.name
        kernel = _plan(program, name, body, scoped, host)
        for array in scoped:
            if _touches(program, kernel.stmts, array.name):
                if array.name in owner:
                    raise BufferScopeError(array.name, array.scope, "two_kernels",
                                           kernels=(owner[array.name], name))
                owner[array.name] = name
        kernels.append(kernel)
    if kernels:
        check_scoped_flows(program, kernels, scoped)
    return kernels


def scoped_arrays(func) -> tuple[Array, ...]:
    """The temporaries that live in ``__local`` or private memory (an array passed by
    the caller stays in global memory whatever its scope)."""
    return tuple(a for a in func.temps if scope_meaning(a.scope).shared_by != "all")


def _touches(program: Program, stmts, array: str) -> bool:
    return any(a.array == array for s in stmts for a in program.statement(s).accesses)


def _plan(program: Program, name: str, body: Node, scoped, host: tuple = ()) -> DeviceKernel:
    stmts = frozenset(r.stmt for r in runs(body))
    _check_structure(body)
    rows = {s: program.schedule_of(s).intersect_params(program.context) for s in stmts}
    rows = {s: r for s, r in rows.items() if not r.is_empty()}
    axes = dict(program.loop_axes)
    bound = {s: _bound_dims(program, s, axes.get(s, ())) for s in rows}  # none: hand-written
    starts: dict[tuple[str, int], isl.PwAff] = {}
    first: dict[int, isl.PwAff] = {}
    extents, local = {}, [1, 1, 1]
    for loop, inside in _bound_loops(body):
        inside = [s for s in inside if s in rows]
        if not inside:
            continue
        low, spread = _loop_range(rows, inside, loop.dim)
        first[id(loop)] = low
        for stmt in inside:
            known = starts.setdefault((stmt, loop.dim), low)
            if not known.is_equal(low):  # each instance must have one work-item
                raise ThreadBindingError(loop.var, loop.kind, "bounds_differ", statement=stmt)
        if is_block(loop.kind):
            count = spread.dim_max(0).add_constant_val(isl.Val(1)).coalesce()
            previous = extents.get(loop.kind)
            extents[loop.kind] = count if previous is None else previous.max(count)
            continue
        top = spread.dim_max_val(0)
        if not top.is_int():
            raise ThreadBindingError(loop.var, loop.kind, "non_constant_extent")
        local[tag_dim(loop.kind)] = max(local[tag_dim(loop.kind)], top.to_python() + 1)
    if local[0] * local[1] * local[2] > MAX_GROUP_SIZE:
        raise WorkGroupSizeError(name, local[0] * local[1] * local[2], MAX_GROUP_SIZE,
                                 "OpenCL", shape=tuple(local))
    kernel = DeviceKernel(name, body, stmts, extents, tuple(local), first=first, host=host,
                    trees=_tree_reductions(program, body), rows=rows)
    for stmt, row in rows.items():
        for dim in bound[stmt]:  # a loop of one iteration has no For: its id is 0
            if (stmt, dim) not in starts:
                starts[(stmt, dim)] = _loop_range(rows, [stmt], dim)[0]
        kernel.work_items[stmt] = row.apply_range(_id_map(row, stmt, bound[stmt], starts))
    kernel.udepth = {s: min([d for d, t in bound[s].items() if is_thread(t)],
                            default=rows[s].dim(isl.dim_type.out)) for s in rows}
    for array in scoped:
        if _touches(program, stmts, array.name):
            kernel.buffers[array.name] = plan_buffer(program, kernel, array)
    plan_barriers(program, kernel)
    return kernel


def _bound_dims(program: Program, stmt: str, axes) -> dict[int, str]:
    dims: dict[int, str] = {}
    for dim, axis in enumerate(axes):
        if axis is not None and axis.kind in BIND_TAGS:
            if axis.kind in dims.values():
                raise ThreadBindingError(axis.name, axis.kind, "bound_twice", statement=stmt)
            dims[dim] = axis.kind
    return dims


def _check_structure(body: Node) -> None:
    """Block-bound loops outermost (under guards only); threadIdx loops inside them."""
    node = body
    while isinstance(node, (For, If)) and (not isinstance(node, For) or is_block(node.kind)):
        if isinstance(node, If):
            if node.otherwise is not None:
                break
            node = node.then
        else:
            node = node.body
    _no_block_loops(node, set())


def _no_block_loops(node: Node, threads: set) -> None:
    if isinstance(node, Block):
        for item in node.items:
            _no_block_loops(item, threads)
    elif isinstance(node, If):
        _no_block_loops(node.then, threads)
        if node.otherwise is not None:
            _no_block_loops(node.otherwise, threads)
    elif isinstance(node, For):
        if is_block(node.kind):
            raise ThreadBindingError(node.var, node.kind, "not_outermost")
        _no_block_loops(node.body, threads | ({node.kind} if is_thread(node.kind) else set()))


def _bound_loops(body: Node):
    """Each loop bound to blockIdx or threadIdx, with the statements it encloses."""
    return [(loop, sorted({r.stmt for r in runs(loop.body)})) for loop in loops(body)
            if loop.kind in BIND_TAGS]


def _loop_range(rows: dict, stmts, dim: int) -> tuple[isl.PwAff, isl.Set]:
    """The first value of the loop at schedule dimension ``dim`` as a function of the
    outer dimensions (the loop's ``init`` in the AST), and the set of ``value - first``."""
    values = None
    for stmt in stmts:
        row = rows[stmt].range()
        part = row.project_out(isl.dim_type.set, dim + 1, row.dim(isl.dim_type.set) - dim - 1)
        values = part if values is None else values.union(part)
    loop = isl.Map.from_range(values.coalesce()).move_dims(isl.dim_type.in_, 0,
                                                           isl.dim_type.out, 0, dim)
    low = loop.lexmin_pw_multi_aff().get_pw_aff(0)
    spread = isl.Map.from_pw_aff(low).range_product(loop).range().unwrap().deltas()
    return low, spread


def _id_map(row: isl.Map, stmt: str, dims: dict[int, str], starts: dict) -> isl.Map:
    """{ [schedule] -> [g0, g1, g2, l0, l1, l2] }: a bound loop's value minus its first
    value gives the group or local id; other ids are 0."""
    space = row.get_space().range()
    width = space.dim(isl.dim_type.set)
    local = isl.LocalSpace.from_space(space)
    ids = {}
    for dim, tag in dims.items():
        value = isl.PwAff.var_on_domain(local, isl.dim_type.set, dim)
        prefix = isl.Map(f"{{ [{', '.join(f'c{d}' for d in range(width))}] -> "
                         f"[{', '.join(f'c{d}' for d in range(dim))}] }}")
        prefix = isl.PwMultiAff.from_map(prefix.align_params(space.params()))
        start = starts[(stmt, dim)]
        start = start.align_params(space.params()).pullback_pw_multi_aff(prefix)
        ids[("g" if is_block(tag) else "l", tag_dim(tag))] = value.sub(start)
    result = None
    for unit in "gl":
        for k in range(3):
            value = ids.get((unit, k), isl.PwAff.zero_on_domain(local))
            part = isl.Map.from_pw_aff(value)
            result = part if result is None else result.flat_range_product(part)
    return result


def _tree_reductions(program: Program, body: Node) -> dict[str, str]:
    """Statements whose reduction loop is bound to threadIdx: reduced across work-items."""
    threads = [loop for loop in loops(body) if is_thread(loop.kind)]
    trees: dict[str, str] = {}
    for loop in threads:
        stmts = {r.stmt for r in runs(loop.body)}
        reduce = sorted(s for s in stmts if _reduces_at(program, s, loop.dim))
        if not reduce:
            continue
        if len(reduce) != 1 or _has_thread_loop(loop.body):
            raise ThreadBindingError(loop.var, loop.kind, "shared_reduction",
                                     statement=reduce[0])
        if combination(program.statement(reduce[0])) is None:
            raise ThreadBindingError(loop.var, loop.kind, "not_accumulation",
                                     statement=reduce[0])
        trees[reduce[0]] = loop.kind
    return trees


def _reduces_at(program: Program, stmt: str, dim: int | None) -> bool:
    axis = program.axis_at(stmt, dim) if dim is not None else None
    stage = next((s for s in program.stages if s.main == stmt), None)
    return axis is not None and stage is not None and stage.involves_reduce(axis)


def _has_thread_loop(node: Node) -> bool:
    return any(is_thread(loop.kind) for loop in loops(node))
