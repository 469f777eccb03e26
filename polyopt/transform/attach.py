"""Where a stage is computed: compute_with, compute_at, compute_inline, compute_root.

* ``compute_with(P, C, axis)`` (Halide's name) makes stage ``P`` share the loops of
  ``C`` down to ``axis``, without recomputation; inside a shared loop, stages run in
  definition order.  Refused when an instance would read an element produced later.
* ``compute_at(P, C, axis)`` (TVM's) computes, inside each iteration of ``axis``,
  exactly the part of ``P`` that ``C`` reads there (its footprint, from the access
  relations); overlapping tiles recompute their halo.
* ``compute_inline(P)`` substitutes ``P``'s expression into its readers.
* ``compute_root(P)`` computes ``P`` on its own again, before its readers.

>>> import polyopt as po
>>> A = po.placeholder((8,), name="A")
>>> B = po.compute((8,), lambda i: A[i] * 2, name="B")
>>> C = po.compute((7,), lambda i: B[i] + B[i + 1], name="C")
>>> s = po.create_schedule(C)
>>> s[B].can_compute_with(s[C], C.op.axis[0])
False
>>> s[C].shift(C.op.axis[0], 1)
>>> s[B].compute_with(s[C], C.op.axis[0])
>>> print(po.lower(s, [A, C]).body.var)
i
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..deps.dataflow import Dependences
from ..domain.accesses import check_reads_in_bounds, statement_accesses
from ..domain.affine import AffineSpace, aff_expression, output_affs
from ..domain.program import Program, Statement
from ..domain.schedule import Attach, StageRecord, init_hoisted
from ..machine import VIRTUAL_THREAD
from ..schedule_errors import (AlreadyAttachedError, AttachCycleError, AttachedLoopError,
                               CannotInlineError, NotAReaderError, NotEnoughLoopsError,
                               PartialOutputError, ReaderOutsideError, SharedLoopsError,
                               SharedReductionLoopError)
from ..names import NameGenerator
from ..te.expr import Const, IterVar, TensorRead
from ..te.substitute import substitute, transform
from .attach_keys import key_names, loop_map, shared_loops, whole_splits
from .group import band_group


def _stage_statements(stage: StageRecord) -> tuple[str, ...]:
    return tuple(n for n in (stage.init, stage.main) if n is not None)


def _is_thread_loop(axis) -> bool:
    return axis.kind.startswith("threadIdx") or axis.kind == VIRTUAL_THREAD


def sink_thread_loops(program: Program, producer: str, consumer: str, axis: str) -> Program:
    """TVM's cooperative load: a ``"shared"`` copy computed at a serial loop of a stage
    that is itself computed inside loops bound to work-items (``threadIdx``, ``vthread``)
    is loaded once per work-group and iteration of that loop, by all its work-items.

    On OpenCL every work-item runs the serial loops, so the thread loops may as well be
    inside them: the consumer's thread loops move (with their values, kinds and the
    statements' instances unchanged) to just inside loop ``axis``, and the consumer then
    shares only the loops outside them.  The copy computed at ``axis`` has one footprint
    per group, its own loops are bound to the work-items by the user, and the
    schedule's check (exact dependences) and the OpenCL plan (barriers) decide the rest.
    Anything else is returned unchanged."""
    array = next((a for a in program.arrays if a.name == producer), None)
    cons = program.stage(consumer)
    if array is None or array.scope != "shared" or cons.attach.kind != "with":
        return program
    shared, level = cons.attach.depth, cons.axis(axis) + 1
    bound = [k for k in range(shared) if _is_thread_loop(cons.axes[k])]
    if level <= shared or not any(cons.axes[k].kind.startswith("threadIdx") for k in bound):
        return program
    first = bound[0]
    own = cons.axes[shared:level]
    if bound != list(range(first, shared)) or any(a.kind != "serial" for a in own):
        return program  # not the pattern: the usual checks say what is wrong
    for other in program.stages:
        if other.attach.kind == "with" and other.attach.stage == consumer \
                and first < other.attach.depth <= level:
            return program
    def permuted(loops):
        return loops[:first] + loops[shared:level] + loops[first:shared] + loops[level:]

    moved = {consumer: dataclasses.replace(cons, axes=permuted(cons.axes), attach=dataclasses
                                           .replace(cons.attach, depth=first))}
    inside = [consumer]  # stages sharing the moved loops (attached inside them) follow
    while inside:
        parent = inside.pop()
        for other in program.stages:
            if other.attach.kind == "with" and other.attach.stage == parent \
                    and other.attach.depth > level:
                moved[other.name] = dataclasses.replace(other, axes=permuted(other.axes))
                inside.append(other.name)
    return program.with_stages(tuple(moved.get(s.name, s) for s in program.stages))


def _tuple_outputs(program: Program, name: str) -> list[StageRecord]:
    """The stage record of ``name`` and, for a reduction over a tuple, the stages of its other outputs
    (they share every loop of the first: compute_at moves them with it)."""
    return [program.stage(name)] + [s for s in program.stages if init_hoisted(s)
                                    and s.attach.stage == name]


def _with_sibling_writes(program: Program, outputs_of: list[StageRecord], name: str) -> Statement:
    """Statement ``name`` of the first output, as if it wrote the elements of all the
    outputs its instance updates (what a reader of any of them needs computed)."""
    stmt = program.statement(name)
    position = _stage_statements(outputs_of[0]).index(name)
    extra = tuple(dataclasses.replace(w, stmt=name, relation=w.relation.set_tuple_name(
        isl.dim_type.in_, name))
        for member in outputs_of[1:]
        for w in program.statement(_stage_statements(member)[position]).writes)
    return dataclasses.replace(stmt, accesses=stmt.accesses + extra) if extra else stmt


def _check_not_nested(program: Program, producer: str, consumer: str) -> None:
    stage = program.stage(consumer)
    while True:
        if stage.name == producer:
            raise AttachCycleError(producer, consumer)
        if stage.attach.kind != "with":
            return
        stage = program.stage(stage.attach.stage)


def _owner_at(program: Program, consumer: str, depth: int) -> str:
    """The stage that owns loop ``depth`` of ``consumer`` (it may share it from a parent)."""
    return band_group(program, consumer, depth, depth)[0].name


def compute_with(program: Program, producer: str, consumer: str, axis: str) -> Program:
    """``producer`` shares the loops of ``consumer`` down to ``axis``."""
    _check_not_nested(program, producer, consumer)
    depth = program.stage(consumer).axis(axis) + 1
    stage = program.stage(producer)
    if len(stage.axes) < depth:
        raise NotEnoughLoopsError(producer, len(stage.axes), depth, shared_with=consumer,
                                  down_to=axis)
    if stage.init is not None and stage.init_level < depth:
        raise SharedReductionLoopError(producer, stage.axes[stage.init_level].name)
    owner = _owner_at(program, consumer, depth)
    stages = []
    for s in program.stages:
        if s.name == producer:
            s = dataclasses.replace(s, attach=Attach("with", owner, depth))
        elif s.attach.kind == "with" and s.attach.stage == producer and s.attach.depth < depth:
            # it shared the producer's outer loops, which are now the consumer's
            s = dataclasses.replace(s, attach=dataclasses.replace(
                s.attach, stage=_owner_at(program, consumer, s.attach.depth)))
        stages.append(s)
    return program.with_stages(tuple(stages))


def compute_root(program: Program, stage_name: str, original: Program) -> tuple[Program, bool]:
    """``stage_name`` back at the root; returns (program, whether statements changed)."""
    stage = program.stage(stage_name)
    if stage.attach.kind == "root":
        return program, False
    if not stage.attach.outer_dims:
        stages = tuple(dataclasses.replace(s, attach=Attach()) if s.name == stage_name else s
                       for s in program.stages)
        return program.with_stages(stages), False
    return detach(program, stage_name, original), True


def detach(program: Program, stage_name: str, original: Program) -> Program:
    """The stage computed at the root again (a scan's step: in the scan's time loop, see
    :func:`_home`), over its own dimensions: the original
    domain when it had one (everything it computed before being attached), else the
    union of what it computed at each iteration."""
    stage = program.stage(stage_name)
    depth = stage.attach.outer_dims  # (dimensions; the loops shared: attach.depth)
    array_of = {id(a.tensor): a for a in program.arrays}
    statements = []
    for stmt in program.statements:
        if stmt.name in _stage_statements(stage):
            domain = stmt.domain.project_out(isl.dim_type.set, 0, depth).set_tuple_name(
                stmt.name)
            if _has(original, stmt.name):
                domain = original.statement(stmt.name).domain
            stmt = rebuild_statement(dataclasses.replace(stmt, domain=domain.coalesce(),
                                                iter_vars=stmt.iter_vars[depth:]),
                            stmt.value, array_of, program)
        statements.append(stmt)
    tuple_id = program.statement(stage.main).domain.get_tuple_id()
    axes = tuple(dataclasses.replace(a, value=_drop_outer(a.value, depth, tuple_id,
                                                          stage_name))
                 for a in stage.axes[stage.attach.depth:])
    stages = tuple(dataclasses.replace(s, axes=axes, attach=_home(original, stage_name))
                   if s.name == stage_name else s for s in program.stages)
    return program.with_stages(stages, statements=tuple(statements))


def _home(original: Program, stage_name: str) -> Attach:
    """Where a stage computed at the root goes: the root, but a scan's step shares the
    scan's time loop again, as the program defines it (TVM: the root of the scan's
    group)."""
    home = next((s.attach for s in original.stages if s.name == stage_name), Attach())
    if home.kind != "with" or home.outer_dims or not _has_stage(original, home.stage):
        return Attach()
    owner = original.stage(home.stage)
    cells = getattr(getattr(original.statement(owner.main).target.tensor.op, "group", None),
                    "cells", ())
    mine = original.statement(original.stage(stage_name).main).target.tensor
    return home if any(mine is cell for cell in cells) else Attach()


def _has_stage(program: Program, name: str | None) -> bool:
    return any(s.name == name for s in program.stages)


def _has(program: Program, name: str) -> bool:
    return any(s.name == name for s in program.statements)


def _drop_outer(value: isl.PwAff, count: int, tuple_id: isl.Id, stage: str) -> isl.PwAff:
    """A loop of a recomputed stage as a function of the original dimensions."""
    if value.involves_dims(isl.dim_type.in_, 0, count):
        raise AttachedLoopError(stage)
    return value.drop_dims(isl.dim_type.in_, 0, count).set_tuple_id(
        isl.dim_type.in_, tuple_id)


def compute_inline(program: Program, stage_name: str, outputs: tuple[str, ...]) -> Program:
    """Substitute the expression of ``stage_name`` (an elementwise compute) into its readers."""
    stage = program.stage(stage_name)
    if stage.init is not None:
        raise CannotInlineError(stage_name, "reduction")
    if stage_name in outputs:
        raise CannotInlineError(stage_name, "output")
    for other in program.stages:
        if other.attach.kind == "with" and other.attach.stage == stage_name:
            raise SharedLoopsError("compute_inline", stage_name, other.name)
    producer = program.statement(stage.main)
    array = program.array(stage_name)
    writers = [s for s in program.statements if any(w.array == stage_name for w in s.writes)]
    if len(writers) != 1:
        raise CannotInlineError(stage_name, "several_writers")

    instance_of = _written_instance(producer, program)

    def inline(node):
        if isinstance(node, TensorRead) and node.tensor is array.tensor:
            return substitute(producer.value, dict(zip(producer.iter_vars,
                                                        instance_of(node.indices))))
        return None

    arrays = tuple(a for a in program.arrays if a.name != stage_name)
    array_of = {id(a.tensor): a for a in arrays}
    statements = []
    for stmt in program.statements:
        if stmt.name == producer.name:
            continue
        if any(r.array == stage_name for r in stmt.reads):
            stmt = rebuild_statement(stmt, transform(stmt.value, inline), array_of, program)
        statements.append(stmt)
    stages = tuple(s for s in program.stages if s.name != stage_name)
    return program.with_stages(stages, statements=tuple(statements), arrays=arrays)


def _written_instance(producer: Statement, program: Program):
    """A function from the indices of an element of the producer's array to the
    producer's instance that writes it (as expressions).  The producer may write
    ``X[f(i)]`` with ``f`` other than its own loop variables (a cache with a layout):
    ``f`` is one-to-one, and its inverse is read off isl.

    >>> import polyopt as po
    >>> A = po.placeholder((4, 4), name="A")
    >>> B = po.compute((4, 4), lambda i, j: A[i, j] * 1.0, name="B")
    >>> s = po.create_schedule(B)
    >>> _ = s.cache_read(A, "global", [B], layout="{ [d0, d1] -> [d1, d0] }")
    >>> p = s.program
    >>> f = _written_instance(p.statement("A_global"), p)
    >>> [str(e) for e in f(B.op.axis)]
    ['j', 'i']
    """
    indices, own = producer.target.indices, producer.iter_vars
    if len(indices) == len(own) and all(a is b for a, b in zip(indices, own)):
        return lambda indices: indices
    write = producer.writes[0].relation.intersect_domain(producer.domain)
    inverse = write.reverse().intersect_params(program.context)
    if not inverse.is_single_valued():
        raise CannotInlineError(producer.op, "writes_twice")
    affs = output_affs(inverse, program.param_names)
    if affs is None:
        raise CannotInlineError(producer.op, "piecewise_writer")

    def instance_of(indices):
        result = []
        for aff in affs:
            expr = aff_expression(aff, tuple(indices), program.params)
            if expr is None:
                raise CannotInlineError(producer.op, "rational_layout")
            result.append(expr)
        return tuple(result)

    return instance_of


def rebuild_statement(stmt: Statement, value, array_of: dict, program: Program) -> Statement:
    """``stmt`` computing ``value``, with its accesses derived again."""
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    space.context = f"statement {stmt.name}"
    accesses = statement_accesses(stmt.name, stmt.domain, stmt.target, value, array_of, space)
    rebuilt = dataclasses.replace(stmt, value=value, accesses=accesses)
    check_reads_in_bounds(rebuilt, array_of, program.param_names, program.context)
    return rebuilt


def compute_at(program: Program, deps: Dependences | None, producer: str, consumer: str, axis: str,
               outputs: tuple[str, ...], *, footprint=None
               ) -> tuple[Program, Dependences, dict[str, isl.Map]]:
    """Recompute, in each iteration of ``consumer``'s loop ``axis``, what it reads of
    ``producer``.  Returns the new program, its dependences (the old ones, mapped to
    the copies; None when ``deps`` is) and, per producer statement, the map from new
    to old instances.

    ``footprint(program, stmt, consumer_stmts, loops)`` may replace the
    access-based footprint (in-place kernels use value-based dataflow)."""
    _check_not_nested(program, producer, consumer)
    program = sink_thread_loops(program, producer, consumer, axis)
    stage = program.stage(producer)
    cons = program.stage(consumer)
    depth = cons.axis(axis) + 1
    if stage.attach.kind != "root":
        raise AlreadyAttachedError(producer, stage.attach.stage)
    outputs_of = _tuple_outputs(program, producer)  # [stage] but for a tuple reduction
    own_stages = {s.name for s in outputs_of}
    for other in program.stages:
        if other.attach.kind == "with" and other.attach.stage == producer \
                and other.name not in own_stages:
            raise SharedLoopsError("compute_at", producer, other.name)
    # every stage inside those loops (the consumer and what shares them) reads the tile
    tile = [s for s in band_group(program, consumer, depth, depth) if s.name not in own_stages]
    consumer_stmts = tuple(n for s in tile for n in _stage_statements(s))
    own_stmts = {n for s in outputs_of for n in _stage_statements(s)}
    arrays = {producer} | {program.statement(s.main).writes[0].array for s in outputs_of[1:]}
    for stmt in program.statements:
        if stmt.name not in consumer_stmts and stmt.name not in own_stmts \
                and any(r.array in arrays for r in stmt.reads):
            raise ReaderOutsideError(producer, consumer, stmt.name)
    # the copies are keyed by the values of the shared loops, a split of a loop by the
    # loop's value (one dimension, as the consumer's): isl's dataflow then orders
    # them by that loop, without the pieces of a symbolic split (issue 32's hang_m2)
    splits = whole_splits(tile, cons, depth)
    loops = {}
    for member in tile:
        loops.update(loop_map(program, member, depth, splits))
    names = NameGenerator(reserved=program.param_names)
    outer_names = [names.fresh(name) for name in key_names(cons.axes[:depth], splits)]
    keys = len(outer_names)
    needed: dict[str, isl.Map] = {}
    for name in _stage_statements(stage):
        stmt = _with_sibling_writes(program, outputs_of, name)
        needed[name] = (footprint or read_footprint)(program, stmt, consumer_stmts, loops)
        for member in outputs_of[1:]:  # the same instances of the other outputs
            other = _stage_statements(member)[_stage_statements(stage).index(name)]
            needed[other] = needed[name].set_tuple_name(isl.dim_type.out, other)
    for name, relation in needed.items():
        stmt = program.statement(name)
        owner_of = next(s.name for s in outputs_of if name in _stage_statements(s))
        if owner_of in outputs and not relation.range().is_equal(stmt.domain):
            raise PartialOutputError(owner_of, consumer)
    # one set of names for the outer loops of every statement of the stage (an init and
    # its update correspond by dimension name, so their copies must agree on them)
    outer_dims = _outer_dims(outer_names, [program.statement(n) for n in needed], program)
    copies, projections = {}, {}
    for name, footprint in needed.items():
        stmt = program.statement(name)
        copy, projection = _copy(stmt, footprint, outer_dims, program)
        copies[name], projections[name] = copy, projection
    statements = tuple(copies.get(s.name, s) for s in program.statements)
    lifted = tuple(dataclasses.replace(a, value=a.value.pullback_multi_aff(
        _projection_aff(copies[stage.main], keys))) for a in stage.axes)
    owner = _owner_at(program, consumer, depth)
    # the shared loops keep the consumer's names (unless the stage has a loop of that
    # name: then one named after the dimension) and kinds (parallel, work-groups)
    shared = shared_loops(copies[stage.main], cons.axes[:depth], splits,
                           {a.name for a in lifted})
    moved = {producer: dataclasses.replace(stage, axes=shared + lifted,
                                           attach=Attach("with", owner, depth, outer_dims=keys))}
    for member in outputs_of[1:]:  # they keep sharing every loop of the first output
        main = copies[member.main]
        member_axes = tuple(
            dataclasses.replace(a, name=x.name) for a, x in
            zip(shared_loops(main, cons.axes[:depth], splits, set()), shared)) + tuple(
            dataclasses.replace(a, value=a.value.pullback_multi_aff(_projection_aff(main, keys)))
            for a in member.axes)
        moved[member.name] = dataclasses.replace(
            member, axes=member_axes,
            attach=Attach("with", producer, len(member_axes), outer_dims=keys))
    stages = tuple(moved.get(s.name, s) for s in program.stages)
    result = program.with_stages(stages, statements=statements)
    mapped = None if deps is None else _map_dependences(deps, projections, loops,
                                                         consumer_stmts, keys)
    return result, mapped, projections


def read_footprint(program: Program, stmt: Statement, consumer_stmts,
                   loops: dict[str, isl.Map]) -> isl.Map:
    """{ loop values -> instances of ``stmt`` whose writes the consumer reads there }."""
    written: dict[str, isl.Map] = {}
    for access in stmt.writes:
        known = written.get(access.array)
        written[access.array] = access.relation if known is None else known.union(
            access.relation)
    result = None
    for name in consumer_stmts:
        if name not in loops:
            continue
        for access in program.statement(name).reads:
            if access.array not in written:
                continue
            part = loops[name].reverse().apply_range(access.relation).apply_range(
                written[access.array].reverse())
            result = part if result is None else result.union(part)
    if result is None:
        raise NotAReaderError(stmt.name, None, inside=True)
    return result.intersect_params(program.context).coalesce()


def _outer_dims(outer_names: list[str], statements: list[Statement], program: Program
                ) -> list[str]:
    """Names for the outer loop dimensions of the copies: none of them is a dimension of
    any of ``statements`` nor a var."""
    taken = set(program.param_names).union(*(s.dims for s in statements))
    dims = []
    for name in outer_names:
        candidate, counter = name, 0
        while candidate in taken:
            counter += 1
            candidate = f"{name}_{counter}"
        taken.add(candidate)
        dims.append(candidate)
    return dims


def _copy(stmt: Statement, footprint: isl.Map, dims: list[str], program: Program):
    """The statement over ``[outer loops, own dims]`` (the outer ones named ``dims``)
    and its projection to the original."""
    domain = footprint.wrap().flatten().set_tuple_name(stmt.name)
    depth = len(dims)
    for pos, name in enumerate(dims + list(stmt.dims)):
        domain = domain.set_dim_name(isl.dim_type.set, pos, name)
    projection = isl.Map.from_domain_and_range(domain, stmt.domain)
    for pos in range(len(stmt.dims)):
        projection = projection.equate(isl.dim_type.in_, depth + pos, isl.dim_type.out, pos)
    outer_vars = tuple(IterVar(d, Const(0, "int64", True), Const(0, "int64", True))
                       for d in dims)
    accesses = tuple(dataclasses.replace(a, relation=projection.apply_range(a.relation)
                                         .set_tuple_name(isl.dim_type.in_, stmt.name))
                     for a in stmt.accesses)
    copy = dataclasses.replace(stmt, domain=domain.coalesce(),
                               iter_vars=outer_vars + stmt.iter_vars, accesses=accesses)
    return copy, projection


def _projection_aff(copy: Statement, depth: int) -> isl.MultiAff:
    space = copy.domain.get_space()
    n = space.dim(isl.dim_type.set)
    local = isl.LocalSpace.from_space(space)
    target = isl.Space.create_from_names(
        isl.DEFAULT_CONTEXT, in_=copy.dims, out=copy.dims[depth:],
        params=space.get_var_names(isl.dim_type.param))
    target = target.set_tuple_name(isl.dim_type.in_, copy.name).set_tuple_name(
        isl.dim_type.out, copy.name)
    affs = isl.AffList.alloc(isl.DEFAULT_CONTEXT, n - depth)
    for pos in range(depth, n):
        affs = affs.add(isl.Aff.var_on_domain(local, isl.dim_type.set, pos))
    return isl.MultiAff.from_aff_list(target, affs)


def _map_dependences(deps: Dependences, projections: dict[str, isl.Map],
                     loops: dict[str, isl.Map], consumer_stmts, keys: int) -> Dependences:
    """The program's dependences, restated for the copies of the producer's statements.

    A copy depends on its inputs and its own earlier updates in the same tile; the
    consumer reads the copy of its own tile; any other reader needs every copy first
    (a tile: the first ``keys`` dimensions of the copies, the values in ``loops``).
    """
    items = []
    for dep in deps:
        relation, elements = dep.relation, dep.elements
        src_copy, snk_copy = dep.source in projections, dep.sink in projections
        if src_copy:
            relation = projections[dep.source].apply_range(relation)
            elements = projections[dep.source].apply_range(elements)
        if snk_copy:
            relation = relation.apply_range(projections[dep.sink].reverse())
        if src_copy and snk_copy:
            for k in range(keys):
                relation = relation.equate(isl.dim_type.in_, k, isl.dim_type.out, k)
        elif src_copy and dep.sink in loops:
            outer = projections[dep.source].domain()
            tile = isl.Map.from_domain_and_range(outer, loops[dep.sink].range())
            for k in range(keys):
                tile = tile.equate(isl.dim_type.in_, k, isl.dim_type.out, k)
            relation = relation.intersect(tile.apply_range(loops[dep.sink].reverse()))
        items.append(dataclasses.replace(dep, relation=relation.coalesce(),
                                         elements=elements.coalesce()))
    return Dependences(tuple(items))
