"""Plan the OpenCL kernels of a lowered function: NDRange, buffers, barriers, refusals.

Each top-level loop nest of the function becomes one kernel (launched in order).  In a
kernel, the loops bound to ``blockIdx`` must be its outermost loops; each work-item
runs the rest, entering a loop bound to ``threadIdx`` only for its own iteration.  The
code outside every ``threadIdx`` loop is *uniform* (all work-items of a group run it
alike), so barriers go there and nowhere else.

Everything is derived exactly with isl from the schedule and the access relations:

* which work-item runs each statement instance (:attr:`Kernel.work_items`): a bound
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

from dataclasses import dataclass, field

import islpy as isl

from ...ast.from_isl import index_expr
from ...ast.nodes import Block, For, If, IndexExpr, Node, loops, runs
from ...deps.dataflow import Dependence, Dependences, compute_dependences
from ...deps.legality import carried_pairs, first_point, instance_text
from ...deps.races import memory_conflicts
from ...domain.program import Array, Program
from ...domain.schedule import BIND_TAGS
from ...errors import ScheduleError
from ..accumulate import combination
from ...machine import scope_meaning

DIMS = "xyz"
# the names of group and local ids in generated code and in isl maps
GROUP_IDS = tuple(f"po_g{k}" for k in range(3))
LOCAL_IDS = tuple(f"po_l{k}" for k in range(3))
MAX_GROUP_SIZE = 1024


def tag_dim(tag: str) -> int:
    return DIMS.index(tag[-1])


def is_block(kind: str) -> bool:
    return kind.startswith("blockIdx")


def is_thread(kind: str) -> bool:
    return kind.startswith("threadIdx")


@dataclass
class Buffer:
    """A ``"shared"`` or ``"local"`` array as stored in one kernel: element ``e`` is at
    ``e - lower`` of a dense box of ``sizes``; ``lower`` depends on the key of the copy
    (the loops enclosing every access, and the local ids for a "local" buffer)."""

    array: Array
    lower: tuple[IndexExpr, ...]
    sizes: tuple[int, ...]
    keys: dict = field(default_factory=dict)      # stmt -> { instance -> key }
    starts: tuple = ()                            # lower bounds as isl.PwAff of the key


@dataclass
class Kernel:
    name: str
    body: Node
    stmts: frozenset[str]
    extents: dict[str, isl.PwAff]            # blockIdx tag -> number of groups (params)
    local_size: tuple[int, int, int]
    buffers: dict[str, Buffer] = field(default_factory=dict)
    trees: dict[str, str] = field(default_factory=dict)       # stmt -> threadIdx tag
    barrier_pairs: set = field(default_factory=set)           # (source stmt, sink stmt)
    barrier_dims: set = field(default_factory=set)            # uniform loops: at body end
    host: tuple = ()        # the host loops (For) and guards (If) around the kernel
    work_items: dict = field(default_factory=dict)            # stmt -> isl.Map
    rows: dict = field(default_factory=dict)                  # stmt -> schedule row
    udepth: dict = field(default_factory=dict)                # stmt -> first thread dim
    first: dict = field(default_factory=dict)   # id(bound For) -> its first value (isl)

    def first_value(self, loop: For, names: dict[int, str]) -> IndexExpr | None:
        """The first value of a bound loop, as the plan counts ids from it, in terms of
        the enclosing loops (``names``: schedule dimension -> loop variable); None when
        the plan has none (a loop of one iteration)."""
        low = self.first.get(id(loop))
        if low is None:
            return None
        dims = low.dim(isl.dim_type.in_)
        return key_expr(low, [names.get(d, f"po_c{d}") for d in range(dims)])

    @property
    def host_loops(self) -> tuple[For, ...]:
        """The serial loops run on the host around this kernel (their variables are
        arguments of the kernel)."""
        return tuple(n for n in self.host if isinstance(n, For))

    def groups(self, params: dict[str, int]) -> tuple[int, int, int]:
        """The number of work-groups along x, y, z for these sizes."""
        counts = [1, 1, 1]
        for tag, extent in self.extents.items():
            counts[tag_dim(tag)] = max(0, _evaluate(extent, params))
        return tuple(counts)


def _evaluate(pa: isl.PwAff, params: dict[str, int]) -> int:
    space = pa.get_domain_space()
    point = isl.Point.zero(space)
    for pos, name in enumerate(space.get_var_names(isl.dim_type.param)):
        point = point.set_coordinate_val(isl.dim_type.param, pos, isl.Val(params[name]))
    value = pa.eval(point)
    return 0 if value.is_nan() else value.to_python()



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


def plan_kernels(func) -> list[Kernel]:
    """One :class:`Kernel` per top-level nest of ``func.body`` (raises ScheduleError for
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
                    raise ScheduleError(
                        f"the {array.scope} buffer '{array.name}' is used by two kernels "
                        f"({owner[array.name]} and {name}); a {array.scope} buffer lives in "
                        "one kernel: compute it at a loop of its reader inside the loops bound "
                        "to blockIdx (compute_at), or use the \"global\" scope")
                owner[array.name] = name
        kernels.append(kernel)
    if kernels:
        _check_scoped_flows(program, kernels, scoped)
    return kernels


def scoped_arrays(func) -> tuple[Array, ...]:
    """The temporaries that live in ``__local`` or private memory (an array passed by
    the caller stays in global memory whatever its scope)."""
    return tuple(a for a in func.temps if scope_meaning(a.scope).shared_by != "all")


def _touches(program: Program, stmts, array: str) -> bool:
    return any(a.array == array for s in stmts for a in program.statement(s).accesses)


def _plan(program: Program, name: str, body: Node, scoped, host: tuple = ()) -> Kernel:
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
                raise ScheduleError(
                    f"the loop '{loop.var}' bound to {loop.kind} was generated as several "
                    f"loops that start differently for {stmt}; bind a loop whose bounds "
                    "are the same for every statement inside it (split the stages apart)")
        if is_block(loop.kind):
            count = spread.dim_max(0).add_constant_val(isl.Val(1)).coalesce()
            previous = extents.get(loop.kind)
            extents[loop.kind] = count if previous is None else previous.max(count)
            continue
        top = spread.dim_max_val(0)
        if not top.is_int():
            raise ScheduleError(
                f"loop '{loop.var}' is bound to {loop.kind} but has no constant extent; "
                f"split it with a constant factor and bind the inner loop (e.g. "
                f"s[C].split(i, factor=64))")
        local[tag_dim(loop.kind)] = max(local[tag_dim(loop.kind)], top.to_python() + 1)
    if local[0] * local[1] * local[2] > MAX_GROUP_SIZE:
        raise ScheduleError(
            f"kernel {name} would have work-groups of {local[0]}x{local[1]}x{local[2]} "
            f"work-items, more than {MAX_GROUP_SIZE}; use smaller factors for the loops "
            "bound to threadIdx")
    kernel = Kernel(name, body, stmts, extents, tuple(local), first=first, host=host,
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
            kernel.buffers[array.name] = _buffer(program, kernel, array)
    _plan_barriers(program, kernel)
    return kernel


def _bound_dims(program: Program, stmt: str, axes) -> dict[int, str]:
    dims: dict[int, str] = {}
    for dim, axis in enumerate(axes):
        if axis is not None and axis.kind in BIND_TAGS:
            if axis.kind in dims.values():
                raise ScheduleError(
                    f"two nested loops of {stmt} are bound to {axis.kind}; bind each of "
                    "blockIdx.x/y/z and threadIdx.x/y/z at most once per loop nest")
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
            raise ScheduleError(
                f"loop '{node.var}' is bound to {node.kind} but is not one of the outermost "
                "loops of its kernel; bind only the outermost loops of a nest to blockIdx "
                "(reorder them outward first), or compute the stage on its own "
                "(compute_root) so that it becomes a kernel of its own")
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
            raise ScheduleError(
                f"the reduction loop '{loop.var}' of {reduce[0]} is bound to {loop.kind}; "
                "it is reduced across work-items only when it holds one reduction and no "
                "other threadIdx loop (bind the other loops to blockIdx or to the other threadIdx dimensions, "
                "or rfactor first)")
        if combination(program.statement(reduce[0])) is None:
            raise ScheduleError(f"{reduce[0]} is not an accumulation; its loop "
                                f"'{loop.var}' cannot be bound to threadIdx")
        trees[reduce[0]] = loop.kind
    return trees


def _reduces_at(program: Program, stmt: str, dim: int | None) -> bool:
    axis = program.axis_at(stmt, dim) if dim is not None else None
    stage = next((s for s in program.stages if s.main == stmt), None)
    return axis is not None and stage is not None and stage.involves_reduce(axis)


def _has_thread_loop(node: Node) -> bool:
    return any(is_thread(loop.kind) for loop in loops(node))


# -- who runs an access ----------------------------------------------------------------
def _access_items(program: Program, kernel: Kernel, stmt: str, array: str) -> isl.Map:
    """{ instance -> [g, l] }: the work-item that performs ``stmt``'s access to ``array``.
    A tree reduction's accumulator is read and written by the group's first work-item."""
    items = kernel.work_items[stmt]
    tag = kernel.trees.get(stmt)
    if tag is not None and program.array_of(program.statement(stmt).target.tensor).name \
            == array:
        items = items.apply_range(_zero_local(tag_dim(tag)))
    return items


def _zero_local(dim: int) -> isl.Map:
    names = "g0, g1, g2, l0, l1, l2"
    out = names.replace(f"l{dim}", "0")
    return isl.Map(f"{{ [{names}] -> [{out}] }}")


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


# -- buffers -----------------------------------------------------------------------------
def _buffer(program: Program, kernel: Kernel, array: Array) -> Buffer:
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
        if _per_work_item(array):
            items = _access_items(program, kernel, stmt, array.name)
            key = key.flat_range_product(items.project_out(isl.dim_type.out, 0, 3))
        keys[stmt] = key
        for access in program.statement(stmt).accesses:
            if access.array == array.name:
                part = key.reverse().apply_range(access.relation)
                footprint = part if footprint is None else footprint.union(part)
    names = names + (list(LOCAL_IDS) if _per_work_item(array) else [])
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
            raise ScheduleError(
                f"the {array.scope} buffer '{array.name}' needs a part of {array.name} per "
                f"{unit} that grows with the sizes (dimension {dim}); compute it at a loop "
                f"whose tiles have a constant size (s[{array.name!r}].compute_at(...) inside "
                "the bound loops)")
        lower.append(key_expr(low, names))
        sizes.append(top.to_python() + 1)
        starts.append(low)
    return Buffer(array, tuple(lower), tuple(sizes), keys, tuple(starts))


def _common_loops(program: Program, kernel: Kernel, stmts) -> tuple[list[int], list[str]]:
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


def key_expr(low: isl.PwAff, names: list[str]) -> IndexExpr:
    """A function of loop variables or ids (``names``, one per input dimension) as an
    index expression."""
    relation = isl.Map.from_pw_aff(low)
    n_param = relation.dim(isl.dim_type.param)
    keys = relation.dim(isl.dim_type.in_)
    relation = relation.move_dims(isl.dim_type.param, n_param, isl.dim_type.in_, 0, keys)
    for k, name in enumerate(names):
        relation = relation.set_dim_name(isl.dim_type.param, n_param + k, name)
    value = relation.range().dim_max(0)
    build = isl.AstBuild.from_context(value.domain())
    return index_expr(build.expr_from_pw_aff(value))


def _storage(program: Program, kernel: Kernel, stmt: str, relation: isl.Map,
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


# -- conflicts and barriers ----------------------------------------------------------------
def _plan_barriers(program: Program, kernel: Kernel) -> None:
    """Refuse conflicts between groups, and place barriers between the work-items of a
    group: at each loop that carries a conflict (:func:`legality.carried_pairs`, the one
    analysis of what a loop carries, asked about the conflicts in the kernel's order)."""
    stmts = sorted(s for s in kernel.stmts if s in kernel.work_items)
    for array in program.arrays:
        buffer = kernel.buffers.get(array.name)
        if buffer is not None and _per_work_item(array):
            continue  # private: no other work-item sees it (flows are checked elsewhere)
        storage = None
        if buffer is not None:  # one copy per group, reused by iterations of outer loops
            def storage(stmt, access, buffer=buffer):
                return _storage(program, kernel, stmt, access.relation, buffer)
        for conflict in memory_conflicts(program, array.name, stmts=stmts, storage=storage):
            for ordered in _in_kernel_order(program, kernel, conflict):
                _check_groups(program, kernel, ordered, shared=buffer is not None)
                _place_barriers(program, kernel, ordered)


def _in_kernel_order(program: Program, kernel: Kernel, conflict: Dependence
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


def _runs_before(kernel: Kernel, first: str, second: str) -> isl.Map:
    """{ first instance -> second instance }: the first runs earlier, in the same
    iteration of every host loop."""
    rows = kernel.rows
    space = rows[first].get_space().range()
    order = isl.Map.lex_lt(space)
    for loop in kernel.host_loops:
        order = order.equate(isl.dim_type.in_, loop.dim, isl.dim_type.out, loop.dim)
    return rows[first].apply_range(order).apply_range(rows[second].reverse())


def _check_groups(program: Program, kernel: Kernel, conflict: Dependence, *,
                  shared: bool) -> None:
    """Work-groups run in no order: refuse a conflict between two of them on global
    memory (a ``__local`` buffer has one copy per group)."""
    if shared:
        return
    items_a = _access_items(program, kernel, conflict.source, conflict.array)
    items_b = _access_items(program, kernel, conflict.sink, conflict.array)
    across = conflict.relation.intersect(_pairs_between(items_a, items_b, "group"))
    if not across.is_empty():
        raise ScheduleError(
            f"{_example(program, across)} touch {conflict.array} in different work-groups "
            f"of kernel {kernel.name}, and one of them writes it: no barrier orders "
            "work-groups. Split the computation into separate kernels (compute the "
            "producer on its own with compute_root), stage the data per group with "
            "cache_read(..., \"shared\"), or bind that loop to threadIdx instead")


def _place_barriers(program: Program, kernel: Kernel, conflict: Dependence) -> None:
    """A barrier at the end of each loop that carries a conflict between two work-items
    of one group, and between the two statements; refused inside threadIdx loops."""
    s, t = conflict.source, conflict.sink
    items_a = _access_items(program, kernel, s, conflict.array)
    items_b = _access_items(program, kernel, t, conflict.array)
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
            raise ScheduleError(
                f"{_example(program, carried[0][1])} touch {conflict.array} in different "
                "work-items of one group, inside the same threadIdx loops, and one of them "
                "writes it: a barrier would have to go inside code that only some "
                "work-items run. Bind a loop that carries no dependence, or move the "
                "producer out of the threadIdx loops (compute it at an outer loop)")
        kernel.barrier_pairs.add((s, t))
        if program.axis_at(s, dim) is not None:
            kernel.barrier_dims.add(dim)


def _example(program: Program, pairs: isl.Map) -> str:
    """The first pair of ``pairs`` for the smallest sizes (as legality's refusals say)."""
    values, coords = first_point(pairs)
    n_in = pairs.dim(isl.dim_type.in_)
    params = pairs.get_space().get_var_names(isl.dim_type.param)
    when = f" (when {', '.join(f'{p}={v}' for p, v in zip(params, values))})" if params else ""
    first = instance_text(program, pairs.get_tuple_name(isl.dim_type.in_), coords[:n_in])
    second = instance_text(program, pairs.get_tuple_name(isl.dim_type.out), coords[n_in:])
    return f"{first} and {second}{when}"


def _per_work_item(array: Array) -> bool:
    """Whether ``array`` has one copy per work-item (else per work-group)."""
    return scope_meaning(array.scope).shared_by == "thread"


def _check_scoped_flows(program: Program, kernels: list[Kernel], arrays) -> None:
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
            raise ScheduleError(
                f"{_example(program, wrong)}: the second reads {dep.array} written by the "
                f"first in another {unit} or another iteration of the loops around the "
                f"buffer, but a {scoped[dep.array]} buffer has one copy per {unit}, refilled "
                f"in each iteration. Compute '{dep.array}' at a loop of its reader inside "
                f"the loops bound to {'blockIdx' if unit == 'work-group' else 'threadIdx'} "
                "(compute_at), or use the \"global\" scope")
