"""compute_at and cache_read on in-place kernels (``po.kernel``), validated exactly.

A kernel's arrays are read and written in place, so the single-assignment reasoning
behind these primitives on tensor expressions does not hold: a statement recomputed
in a tile may read a value that an earlier tile already overwrote.  Here the
rewritten kernel is checked against the original one by comparing dataflow
(:mod:`polyopt.deps.equivalence`): it is accepted only when every read gets the same
value and every element ends with the same value, for all sizes.

* ``compute_at(P, C, axis)`` recomputes, in each iteration of ``axis``, the instances
  of ``P`` whose values ``C`` reads there (value-based: the last writers, and the
  earlier instances of ``P`` that those depend on);
* ``cache_read(A, scope, [R])`` makes ``R`` read a buffer, filled right before each
  instance of ``R`` with what it reads; ``s[AS].compute_at(s[R], axis)`` then fills
  it once per iteration of ``axis``, which is refused if ``A`` changes in between.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def blur(A: po.f64[N], B: po.f64[N], C: po.f64[N]):
...     for i in range(N):
...         B[i] = A[i] * 2
...     for i in range(1, N - 1):
...         C[i] = B[i - 1] + B[i + 1]
>>> s = po.create_schedule(blur)
>>> io, ii = s["S1"].split("i", factor=4)
>>> s["S0"].compute_at(s["S1"], io)
Traceback (most recent call last):
polyopt.schedule_errors.ChangedValuesError: s["S0"].compute_at("S1", "i.outer") would change what the program leaves in B[0]: nothing would write it, where the original order leaves the value written by S0[i=0] (when N=1); every element the kernel writes must end with the same value
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import islpy as isl

from ..deps.dataflow import Dependences
from ..deps.effort import bounded_effort
from ..deps.equivalence import identity_origin, same_values, value_sources
from ..domain.accesses import read_accesses
from ..domain.affine import AffineSpace, parts
from ..domain.program import Program
from ..domain.schedule import StageRecord, identity_axes
from ..errors import InternalError
from ..schedule_errors import CannotInlineError, NotAReaderError, PrimitiveOrderError
from ..te.substitute import substitute, transform
from . import attach, cache
from .rfactor import aff_to_expr
from .rewrite import (axis_vars, fresh_statement_name, insert_stage, new_array, new_tensor,
                      retarget)


@dataclass(frozen=True, slots=True)
class KernelRewrites:
    """How the current program of a kernel's schedule relates to ``base`` (the kernel as
    written, or as it was after an rfactor): ``origins`` (statement -> map to base
    instances), the copy statements and the buffers (buffer -> the array it mirrors)."""

    base: Program
    origins: dict[str, isl.Map]
    copies: frozenset[str] = frozenset()
    aliases: dict[str, str] = field(default_factory=dict)
    relaid: frozenset[str] = frozenset()  # buffers in another layout than their array
    inlined: isl.UnionMap | None = None  # reads added by compute_inline, with their sources

    @classmethod
    def start(cls, program: Program) -> "KernelRewrites":
        return cls(program, {s.name: identity_origin(program, s.name)
                             for s in program.statements})

    @property
    def only_inlined(self) -> bool:
        """Whether the statements are still those of ``base`` (save for inlining)."""
        return not self.copies and all(o.is_identity() for o in self.origins.values())

    @property
    def rewritten(self) -> bool:
        return not self.only_inlined or self.inlined is not None

    def check(self, program: Program, primitive: str, hint: str | None = None) -> None:
        """Raise IllegalScheduleError unless ``program`` computes what ``base`` does;
        ``hint`` (a repair) is appended to the message.  isl's effort is bounded
        (``po.check_effort``, :mod:`polyopt.deps.effort`): past it, CheckEffortError (the
        dataflow of a kernel under symbolic ``nparts`` splits can take minutes)."""
        with bounded_effort(f"{primitive}: the check that the rewritten kernel reads and "
                            "leaves the same values"):
            same_values(self.base, program, origins=self.origins, copies=self.copies,
                        aliases=self.aliases, inlined=self.inlined, relaid=self.relaid,
                        primitive=primitive, hint=hint)

    def recomputed(self, projections: dict[str, isl.Map]) -> "KernelRewrites":
        origins = dict(self.origins)
        for name, projection in projections.items():
            if name in origins:
                origins[name] = projection.apply_range(origins[name])
        return dataclasses.replace(self, origins=origins)

    def restored(self, program: Program, stage) -> "KernelRewrites":
        """After ``compute_root``: the stage's statements are their original selves."""
        origins = dict(self.origins)
        for name in (stage.init, stage.main):
            if name in origins:
                origins[name] = identity_origin(program, name)
        return dataclasses.replace(self, origins=origins)


def compute_at(program: Program, deps, state: KernelRewrites, original: Program,
               producer: str, consumer: str, axis: str) -> tuple[Program, KernelRewrites]:
    """Recompute ``producer`` inside ``consumer``'s loop ``axis`` (see the module doc);
    ``deps()`` gives the program's dependences (only needed for a statement of the
    kernel, not for a buffer's copy)."""
    stage = program.stage(producer)
    if stage.attach.kind != "root" and stage.main in state.copies:
        program = attach.detach(program, producer, original)
    copies_only = stage.main in state.copies
    if not copies_only:
        footprint = _value_footprint(deps())
    else:  # a copy serves the consumer's own statements, not what shares its loops
        footprint = _for_stage(program.stage(consumer), _written_footprint
                               if _is_copy_out(program, stage.main, state) else
                               attach.read_footprint)
    result, _, projections = attach.compute_at(program, None, producer, consumer, axis,
                                               outputs=(), footprint=footprint)
    if copies_only:  # a buffer has no original: its instances are new every time
        return result, state
    return result, state.recomputed(projections)


def _value_footprint(deps: Dependences):
    """The producer instances whose values the consumer reads in a tile, with the
    earlier instances of the producer that they depend on (an update chain)."""
    def footprint(program, stmt, consumer_stmts, loops):
        result = None
        for name in consumer_stmts:
            if name not in loops:
                continue
            flow = _as_map(deps.between(stmt.name, name, "flow"))
            if flow is None:
                continue
            part = loops[name].reverse().apply_range(flow.reverse())
            result = part if result is None else result.union(part)
        if result is None:
            raise NotAReaderError(stmt.name, consumer_stmts[0], inside=True)
        chain = _as_map(deps.between(stmt.name, stmt.name, "flow"))
        if chain is not None:
            closure, _ = chain.reverse().transitive_closure()
            result = result.union(result.apply_range(closure))
        return result.intersect_params(program.context).coalesce()

    return footprint


def _for_stage(stage, footprint):
    """``footprint`` restricted to the statements of ``stage``."""
    own = {stage.main, stage.init}

    def restricted(program, stmt, consumer_stmts, loops):
        return footprint(program, stmt, tuple(n for n in consumer_stmts if n in own), loops)

    return restricted


def _is_copy_out(program: Program, stmt: str, state: KernelRewrites) -> bool:
    (read,) = program.statement(stmt).reads
    return read.array in state.aliases


def _written_footprint(program, stmt, consumer_stmts, loops):
    """The instances of a copy-out ``stmt`` that copy back what the consumer writes in
    a tile: ``{ loop values -> instances of stmt }``."""
    (read,) = stmt.reads
    result = None
    for name in consumer_stmts:
        for access in program.statement(name).writes:
            if name in loops and access.array == read.array:
                part = loops[name].reverse().apply_range(access.relation).apply_range(
                    read.relation.reverse())
                result = part if result is None else result.union(part)
    if result is None:
        raise NotAReaderError(stmt.name, consumer_stmts[0], inside=True, copies_back=True)
    return result.intersect_params(program.context).coalesce()


def _as_map(relation: isl.UnionMap) -> isl.Map | None:
    maps = parts(relation)
    return maps[0] if maps else None


def cache_read(program: Program, state: KernelRewrites, tensor, scope: str, reader: str):
    """A buffer that ``reader`` reads instead of ``tensor``, filled right before each of
    its instances (the innermost loop); returns (program, buffer tensor, state)."""
    result, buffer = cache.cache_read(program, tensor, scope, [reader])
    copy_stage = next(s for s in result.stages if s.name not in
                      {t.name for t in program.stages})
    result = _around_each_instance(result, copy_stage.name, reader, attach.read_footprint)
    aliases = {**state.aliases, result.array_of(buffer).name: program.array_of(tensor).name}
    return result, buffer, dataclasses.replace(
        state, copies=state.copies | {copy_stage.main}, aliases=aliases)


def cache_write(program: Program, state: KernelRewrites, stage_name: str, scope: str):
    """``stage_name`` computes into a buffer: its reads and writes of the array go to the
    buffer, filled right before each instance (when it reads the array) and copied back
    right after; returns (program, buffer tensor, state).  The copies are the stages
    ``<buffer>_in`` and ``<buffer>_out``, which compute_at moves to an outer loop."""
    cache._scope(scope)
    stage = program.stage(stage_name)
    stmt = program.statement(stage.main)
    array = program.array(stmt.writes[0].array)
    dims = tuple(f"ax{d}" for d in range(array.ndim))
    iter_vars = axis_vars(dims, array.shape)
    buffer = new_tensor(f"{array.name}.{scope}", array.shape, array.dtype, iter_vars)
    buffer_array = new_array(program, buffer)
    arrays = program.arrays + (buffer_array,)
    reads_it = any(r.array == array.name for r in stmt.reads)
    copy_in_name = fresh_statement_name(program, buffer_array.name + "_in")
    copy_out_name = fresh_statement_name(program, buffer_array.name + "_out")
    copy_in = dataclasses.replace(cache.copy_statement(
        program, arrays, copy_in_name, array.tensor, buffer, iter_vars, dims), op=stmt.op)
    copy_out = dataclasses.replace(cache.copy_statement(
        program, arrays, copy_out_name, buffer, array.tensor, iter_vars, dims), op=stmt.op)
    computed = retarget(stmt, array.tensor, buffer, program, arrays)
    statements = tuple(computed if s.name == stmt.name else s for s in program.statements)
    statements += ((copy_in,) if reads_it else ()) + (copy_out,)
    stages = program.stages
    if reads_it:
        stages = insert_stage(stages, StageRecord(copy_in_name, copy_in_name,
                                            identity_axes(copy_in.domain)), before=stage_name)
    stages = _insert_after(stages, StageRecord(copy_out_name, copy_out_name,
                                         identity_axes(copy_out.domain)), stage_name)
    result = program.with_stages(stages, statements=statements, arrays=arrays)
    if reads_it:
        result = _around_each_instance(result, copy_in_name, stage_name, attach.read_footprint)
    result = _around_each_instance(result, copy_out_name, stage_name, _written_footprint)
    copies = {copy_out_name} | ({copy_in_name} if reads_it else set())
    aliases = {**state.aliases, buffer_array.name: array.name}
    return result, buffer, dataclasses.replace(state, copies=state.copies | copies,
                                               aliases=aliases)


def _around_each_instance(program: Program, copy: str, stage_name: str, footprint
                          ) -> Program:
    """``copy`` computed at the innermost loop of ``stage_name``: what each instance
    reads (``attach.read_footprint``) or writes (``_written_footprint``)."""
    stage = program.stage(stage_name)
    result, _, _ = attach.compute_at(program, None, copy, stage_name, stage.axes[-1].name, (),
                                     footprint=_for_stage(stage, footprint))
    return result


def _insert_after(stages: tuple, new_stage, after: str) -> tuple:
    result = []
    for stage in stages:
        result.append(stage)
        if stage.name == after:
            result.append(new_stage)
    return tuple(result)


def compute_inline(program: Program, state: KernelRewrites, stage_name: str
                   ) -> tuple[Program, KernelRewrites]:
    """Substitute the statement of ``stage_name`` into the reads that get their value
    from it, and drop it.  Each inlined read of an input must see what the statement
    saw (checked with the rest by :meth:`KernelRewrites.check`)."""
    if not state.only_inlined:
        raise PrimitiveOrderError("compute_inline", "compute_at and caches", stage=stage_name,
                                  in_place=True)
    stage = program.stage(stage_name)
    producer = program.statement(stage.main)
    (write,) = producer.writes
    sources = value_sources(program)
    fed = sources.intersect_range(isl.UnionSet.from_set(producer.domain))
    if _readers(fed) <= {producer.name}:
        raise CannotInlineError(producer.name, "unread", statement=True)
    inlined = isl.UnionMap.empty(program.context.get_space())
    statements = []
    for stmt in program.statements:
        if stmt.name == producer.name:
            continue
        space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
        values = {}
        for node, access in read_accesses(stmt, space):
            if access.array != write.array:
                continue
            instance = _producer_instance(stmt, access, sources, fed, producer)
            if instance is None:
                continue
            values[id(node)] = _substituted(producer, instance, stmt, program)
            inlined = inlined.union(_inlined_sources(instance, producer, sources))
        if values:
            value = transform(stmt.value, lambda n: values.get(id(n)))
            array_of = {id(a.tensor): a for a in program.arrays}
            stmt = attach.rebuild_statement(stmt, value, array_of, program)
        statements.append(stmt)
    result = program.with_stages(without_stage(program.stages, stage_name),
                                 statements=tuple(statements))
    origins = {n: o for n, o in state.origins.items() if n != producer.name}
    if state.inlined is not None:
        inlined = inlined.union(state.inlined)
    return result, dataclasses.replace(state, origins=origins, inlined=inlined)


def _producer_instance(stmt, access, sources, fed, producer) -> isl.Map | None:
    """``{ stmt[s] -> producer[p] }``: the instance whose value this read gets, or None
    when none does; refused when only some of its instances get it."""
    tags = isl.UnionSet.from_set(access.relation.wrap())
    from_producer = fed.intersect_domain(tags)
    if from_producer.is_empty():
        return None
    others = sources.intersect_domain(tags).subtract(from_producer)
    if not others.is_empty():
        raise CannotInlineError(producer.name, "partly_read", reader=stmt.name,
                                statement=True, array=access.array)
    (relation,) = parts(from_producer)
    instance = relation.curry().range_factor_range()
    if not instance.is_single_valued():
        raise InternalError(f"{stmt.name} gets one value from several writers")
    return instance


def _substituted(producer, instance: isl.Map, stmt, program: Program):
    """The producer's expression at ``instance(s)``, in the reader's axes."""
    pieces = []
    isl.PwMultiAff.from_map(instance).foreach_piece(lambda _set, ma: pieces.append(ma))
    if len(pieces) != 1:
        raise CannotInlineError(producer.name, "not_affine", reader=stmt.name,
                                statement=True)
    exprs = [aff_to_expr(pieces[0].get_aff(k), list(stmt.iter_vars), list(program.params))
             for k in range(pieces[0].dim(isl.dim_type.out))]
    return substitute(producer.value, dict(zip(producer.iter_vars, exprs)))


def _inlined_sources(instance: isl.Map, producer, sources: isl.UnionMap) -> isl.UnionMap:
    """``{ [reader[s] -> Y[y]] -> source }``: each read the inlining adds to the reader
    must get what the producer's read got."""
    result = isl.UnionMap.empty(sources.get_space())
    for access in producer.reads:
        element = isl.Map.identity(isl.Space.map_from_set(access.relation.range().get_space()))
        tags = instance.product(element).intersect_range(access.relation.wrap())
        result = result.union(isl.UnionMap.from_map(tags).apply_range(sources))
    return result


def _readers(tagged: isl.UnionMap) -> set[str]:
    """The statements of the tagged reads ``[S[s] -> X[e]] -> ...``."""
    return {m.domain().unwrap().get_tuple_name(isl.dim_type.in_) for m in parts(tagged)}


def without_stage(stages: tuple, name: str) -> tuple:
    """``stages`` without ``name``; the first stage sharing its loops takes them over."""
    gone = next(s for s in stages if s.name == name)
    heirs = [s for s in stages if s.attach.kind == "with" and s.attach.stage == name]
    result = []
    for stage in stages:
        if stage.name == name:
            continue
        if heirs and stage.name == heirs[0].name:
            stage = dataclasses.replace(stage, attach=gone.attach)
        elif heirs and stage.attach.kind == "with" and stage.attach.stage == name:
            stage = dataclasses.replace(stage, attach=dataclasses.replace(
                stage.attach, stage=heirs[0].name))
        result.append(stage)
    return tuple(result)
