"""Build a :class:`Program` from tensor expressions.

Each compute becomes one statement; a reduction becomes ``<name>_init`` (the
identity, over the output's axes) and ``<name>_update`` (over output and reduce
axes, restricted by the affine part of ``where=``).  Domains are parametric in the
vars; the context says every var and every extent is non-negative.

>>> import polyopt as po
>>> M, N, K = po.var("M"), po.var("N"), po.var("K")
>>> A = po.placeholder((M, K), name="A"); B = po.placeholder((K, N), name="B")
>>> k = po.reduce_axis((0, K), name="k")
>>> C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
>>> program = program_from_outputs([C])
>>> [s.name for s in program.statements]
['C_init', 'C_update']
>>> print(program.statement("C_update").domain)
[M, K, N] -> { C_update[i, j, k] : 0 <= i < M and 0 <= j < N and 0 <= k < K }
"""

from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import islpy as isl
import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError, OutOfBoundsError
from ..names import NameGenerator
from ..te.expr import BinOp, Call, Const, Expr, Reduce, Select, TensorRead, Var
from ..te.reducers import TupleCombiner, tuple_combiner
from ..te.scan import ScanOp
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor, walk
from .accesses import check_reads_in_bounds, statement_accesses
from .affine import AffineSpace
from .program import Array, Program, Statement
from .from_scan import scan_stages, scan_statements
from .memo import IdentityMemo
from .schedule import Attach, StageRecord, identity_axes


def program_from_outputs(outputs: Sequence[Tensor]) -> Program:
    """The program that computes ``outputs`` from the placeholders they read."""
    outputs = _as_tensor_list(outputs)
    tensors = topological_order(outputs)
    params = _collect_params(tensors)
    param_names = tuple(p.name for p in params)
    array_names = NameGenerator(reserved=param_names)
    arrays = tuple(
        Array(array_names.fresh(t.name), t.shape, t.dtype, t,
              "placeholder" if isinstance(t.op, PlaceholderOp) else "compute")
        for t in tensors
    )
    array_of = {id(a.tensor): a for a in arrays}
    context = size_context(arrays, params)
    stmt_names = NameGenerator()
    computed = [a for a in arrays if a.role == "compute"]
    statements, stages = _statements_and_stages(computed, array_of, param_names, stmt_names)
    kept = {array_of[id(t)].name for t in outputs}
    statements = _where_read(statements, kept, array_of, param_names, context)
    for stmt in statements:
        check_reads_in_bounds(stmt, array_of, param_names, context)
    program = Program(statements, arrays, params, context, schedule=None)
    return program.with_stages(tuple(stages))


def _statements_and_stages(computed, array_of, params, stmt_names):
    """Statements of every compute (and scan), and their default stages, in order."""
    statements, stages, scanned = [], [], set()
    cells = {id(t) for a in computed if isinstance(a.tensor.op, ScanOp)
             for t in a.tensor.op.group.cells}
    for array in computed:
        op = array.tensor.op
        if id(array.tensor) in cells:
            continue  # built with its scan, inside the time loop
        if isinstance(op, ScanOp):
            if id(op.group) in scanned:
                continue
            scanned.add(id(op.group))
            members = [(array_of[id(t)], scan_statements(array_of[id(t)], array_of, params,
                                                         stmt_names))
                       for t in op.group.outputs]
            cell_groups = [_statements(array_of[id(t)], array_of, params, stmt_names,
                                       first_step=op.init_steps) for t in op.group.cells]
            statements += [s for group in cell_groups for s in group]
            statements += [s for _, pair in members for s in pair]
            cell_stages = default_stages(cell_groups, [array_of[id(t)].name
                                                       for t in op.group.cells])
            stages += scan_stages(members, cell_stages)
            continue
        if tuple_combiner(op.body) is not None:  # a reduction over a tuple
            if id(op.group) in scanned:
                continue
            scanned.add(id(op.group))
            members = [array_of[id(t)] for t in op.group]
            groups = [_statements(m, array_of, params, stmt_names) for m in members]
            statements += [s for group in groups for s in group]
            stages += tuple_stages(groups, [m.name for m in members])
            continue
        group = _statements(array, array_of, params, stmt_names)
        statements += group
        stages += default_stages([group], [array.name])
    return tuple(statements), stages


def _where_read(statements, outputs: set[str], array_of, params, context) -> tuple:
    """TVM's bound inference where polyopt needs it: a compute that is not an output and
    whose range would read outside an array is computed only where the statements after
    it read it (exactly: its domain meets the preimage of what they read), consumers
    first.  Any other statement keeps its domain; a read still outside is refused later.

    For instance ``S[t] = X[t - 1]`` over ``t < n`` read only at ``t >= 1``: ``S`` is
    computed for ``1 <= t < n``, as TVM computes it."""
    statements = list(statements)
    writes = {}
    for k, stmt in enumerate(statements):
        writes.setdefault(stmt.writes[0].array, []).append(k)
    for array, positions in reversed(list(writes.items())):
        if array in outputs or not any(_reads_outside(statements[k], array_of, params, context)
                                       for k in positions):
            continue
        read = [a.relation.range() for j, other in enumerate(statements) if j not in positions
                for a in other.reads if a.array == array]
        if not read:
            continue
        needed = read[0]
        for more in read[1:]:
            needed = needed.union(more)
        for k in positions:
            stmt = statements[k]
            domain = stmt.domain.intersect(
                stmt.writes[0].relation.intersect_range(needed.coalesce()).domain()).coalesce()
            statements[k] = dataclasses.replace(stmt, domain=domain, accesses=tuple(
                dataclasses.replace(a, relation=a.relation.intersect_domain(domain))
                for a in stmt.accesses))
    return tuple(statements)


def _reads_outside(stmt, array_of, params, context) -> bool:
    try:
        check_reads_in_bounds(stmt, array_of, params, context)
    except OutOfBoundsError:
        return True
    return False


def tuple_stages(groups: list[list[Statement]], names: list[str]) -> tuple[StageRecord, ...]:
    """The stages of a reduction over a tuple: one per output, all sharing every loop of
    the first (so each instance updates all outputs, in an order where every update
    reads the accumulators it needs before they are overwritten)."""
    updates = [group[1] for group in groups]
    tensors = [u.target.tensor for u in updates]
    after: dict[int, set[int]] = {j: set() for j in range(len(updates))}
    for j, update in enumerate(updates):  # update j reads old l: j must run before l
        for node in walk(update.value):
            if isinstance(node, TensorRead):
                for l, tensor in enumerate(tensors):
                    if l != j and node.tensor is tensor:
                        after[l].add(j)
    order: list[int] = []
    while len(order) < len(updates):
        ready = [j for j in range(len(updates)) if j not in order and after[j] <= set(order)]
        if not ready:
            raise InvalidArgumentError(
                f"reducer over a tuple ({', '.join(names)}): every new value reads every "
                "other accumulator, so no order of the updates works in place; polyopt "
                "needs at least one value that reads only its own accumulator (as argmax's "
                "value does). Reduce the values in separate computes meanwhile")
        order.append(ready[0])
    stages = default_stages([groups[j] for j in order], [names[j] for j in order])
    owner, depth = stages[0], len(stages[0].axes)
    shared = Attach("with", owner.name, depth)
    return (owner,) + tuple(dataclasses.replace(s, attach=shared) for s in stages[1:])


def _as_tensor_list(outputs) -> list[Tensor]:
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    outputs = list(outputs)
    if not outputs:
        raise InvalidArgumentError("create_schedule needs at least one output tensor")
    for out in outputs:
        if not isinstance(out, Tensor):
            raise InvalidArgumentError(
                f"create_schedule takes tensors made by po.compute, got {out!r}"
            )
    return outputs


def topological_order(outputs: list[Tensor]) -> list[Tensor]:
    """Every tensor the outputs depend on, each after the tensors it reads."""
    order: list[Tensor] = []
    visited: set[int] = set()

    # depth-first without recursion (a chain of K computes is K deep): a tensor is
    # entered (its sources pushed), then finished after them
    for out in outputs:
        stack: list[tuple[Tensor, bool]] = [(out, False)]
        while stack:
            tensor, finished = stack.pop()
            if finished:
                group = tensor.op.group.outputs if isinstance(tensor.op, ScanOp) else (
                    tuple(tensor.op.group) if tuple_combiner(tensor.op.body) else (tensor,))
                order.extend(group)  # states scanned together come as one block
                continue
            if id(tensor) in visited:
                continue
            visited.add(id(tensor))
            members = (tensor,)
            if isinstance(tensor.op, ScanOp):
                members = tensor.op.group.outputs
                visited.update(id(t) for t in members)
            elif isinstance(tensor.op, ComputeOp) and tuple_combiner(tensor.op.body):
                members = tuple(tensor.op.group)  # a reduction over a tuple: all outputs
                visited.update(id(t) for t in members)
            elif not isinstance(tensor.op, ComputeOp):
                order.append(tensor)
                continue
            stack.append((tensor, True))
            sources = [source for member in members for source in member.op.inputs]
            stack.extend((source, False) for source in reversed(sources))
    return order


def _collect_params(tensors: list[Tensor]) -> tuple[Var, ...]:
    found: dict[str, Var] = {}
    roots: list[Expr] = []
    for tensor in tensors:
        roots.extend(tensor.shape)
        if isinstance(tensor.op, ComputeOp):
            roots.append(tensor.op.body)
            roots.extend(e for ax in tensor.op.reduce_axis for e in ax.dom)
        if isinstance(tensor.op, ScanOp):
            roots += [tensor.op.init_body, tensor.op.update_body, tensor.op.init_steps]
    for root in roots:
        for node in walk(root):
            if isinstance(node, Var):
                known = found.setdefault(node.name, node)
                if known is not node:
                    raise InvalidArgumentError(
                        f"two different po.var are named '{node.name}'; create each size "
                        "once and reuse the same object"
                    )
    return tuple(found.values())


def size_context(arrays: tuple[Array, ...], params: tuple[Var, ...]) -> isl.Set:
    """The parameter values allowed: every var and every array extent is non-negative,
    and every var at least its stated minimum."""
    space = AffineSpace("", (), (), tuple(p.name for p in params))
    zero = space.constant(0)
    context = space.universe().params()
    sizes = [("", p) for p in params] + [(a.name, e) for a in arrays for e in a.shape]
    for p in params:  # po.var("n", min=1)
        if p.least:
            context = context.intersect(space.pw_aff(p).ge_set(space.constant(p.least)).params())
    for owner, extent in sizes:
        space.context = f"the shape of '{owner}'" if owner else ""
        context = context.intersect(space.pw_aff(extent).ge_set(zero).params())
    return context.coalesce()


def _statements(array: Array, array_of: dict, params: tuple[str, ...],
                stmt_names: NameGenerator, first_step: Expr | None = None) -> list[Statement]:
    """The statements of a compute (init and update for a reduction); ``first_step``
    starts its first dimension there (a stage of a scan's step, after the init)."""
    op: ComputeOp = array.tensor.op
    dim_names = NameGenerator(reserved=_reserved_names(params, array_of))
    axes = op.axis
    dims = tuple(dim_names.fresh(ax.name) for ax in axes)
    target = TensorRead(array.tensor, axes)
    body = op.body
    if not isinstance(body, Reduce):
        name = stmt_names.fresh(array.name)
        space = _space(name, axes, dims, params, f"compute '{op.name}'")
        domain = _from_step(space.box([ax.dom for ax in axes]), space, first_step)
        return [_statement(name, domain, axes, target, body, array_of, space, op.name)]
    reduce_axes = body.axes
    reduce_dims = tuple(dim_names.fresh(ax.name) for ax in reduce_axes)
    init_name = stmt_names.fresh(f"{array.name}_init")
    update_name = stmt_names.fresh(f"{array.name}_update")
    init_space = _space(init_name, axes, dims, params, f"compute '{op.name}'")
    init_domain = _from_step(init_space.box([ax.dom for ax in axes]), init_space, first_step)
    init_value, value = _reduction_values(body, target, op)
    all_axes = axes + reduce_axes
    space = _space(update_name, all_axes, dims + reduce_dims, params, f"compute '{op.name}'")
    domain = _from_step(space.box([ax.dom for ax in all_axes]), space, first_step)
    if body.where is not None:
        space.context = f"where= of compute '{op.name}'"
        affine, residual = space.split_condition(body.where)
        domain = domain.intersect(affine)
        if residual is not None:
            value = Select(residual, value, target, value.dtype, False)
    return [
        _statement(init_name, init_domain, axes, target, init_value, array_of, init_space,
                   op.name),
        _statement(update_name, domain.coalesce(), all_axes, target, value, array_of, space,
                   op.name),
    ]


def _from_step(domain: isl.Set, space: AffineSpace, first_step: Expr | None) -> isl.Set:
    if first_step is None:
        return domain
    return domain.intersect(space.dim(0).ge_set(space.pw_aff(first_step)))


def _space(name, axes, dims, params, context: str) -> AffineSpace:
    space = AffineSpace(name, axes, dims, params)
    space.context = context
    return space


def _reserved_names(params: tuple[str, ...], array_of: dict) -> frozenset[str]:
    """The parameters' and arrays' names, which no dimension may take (one set per
    program: a chain of K computes would otherwise build K sets of K names)."""
    return _RESERVED.get((array_of, params), lambda: frozenset(
        params + tuple(a.name for a in array_of.values())))


_RESERVED = IdentityMemo(size=4)


def _statement(name, domain, axes, target, value, array_of, space, op_name) -> Statement:
    accesses = statement_accesses(name, domain, target, value, array_of, space)
    return Statement(name, domain, axes, target, value, accesses, op_name)


def _reduction_values(body: Reduce, target: TensorRead, op: ComputeOp) -> tuple[Expr, Expr]:
    """The init's and the update's values of a reduction into ``target``."""
    combiner, dtype = body.combiner, target.dtype
    if isinstance(combiner, TupleCombiner):  # each output's update, from all accumulators
        accumulators = tuple(TensorRead(t, target.indices) for t in op.group or [target.tensor])
        return (combiner.identities()[combiner.index],
                combiner.combined(accumulators)[combiner.index])
    init = (body.init if body.init is not None else
            Const(identity(combiner, dtype), dtype) if isinstance(combiner, str)
            else combiner.identity(dtype))
    return init, _combine(combiner, target, body.source)


def _combine(combiner, target: TensorRead, source: Expr) -> Expr:
    if not isinstance(combiner, str):  # po.comm_reducer
        return combiner.combine(target, source)
    if combiner == "sum":
        return BinOp.make("+", target, source)
    return Call.make("maximum" if combiner == "max" else "minimum", target, source)


def identity(combiner: str, dtype: str) -> int | float:
    """The neutral element of a reduction: 0 for sum, -inf (or the least integer) for max."""
    if combiner == "sum":
        return 0.0 if dtypes.is_float(dtype) else 0
    if dtypes.is_float(dtype):
        return -math.inf if combiner == "max" else math.inf
    info = np.iinfo(dtype)
    return int(info.min) if combiner == "max" else int(info.max)


def default_stages(groups: list[list[Statement]], names: list[str]) -> tuple[StageRecord, ...]:
    """One root stage per compute, in definition order, looping over its dimensions."""
    stages = []
    for group, name in zip(groups, names):
        main = group[-1]
        init = group[0].name if len(group) == 2 else None
        reduce_dims = frozenset(main.dims[len(group[0].dims):]) if init else frozenset()
        stages.append(StageRecord(name, main.name, identity_axes(main.domain),
                            reduce_dims, init))
    return tuple(stages)
