"""cache_read and cache_write: stage a tensor through a buffer.

``s.cache_write(C, "local")`` makes C's computation write a new tensor ``C.local``
and adds a stage copying it to C (TVM's semantics: ``s[C]`` is now the copy, the
returned tensor's stage computes).  ``s.cache_read(A, "shared", [B])`` adds a stage
copying A into ``A.shared`` and makes B read the copy.  Computing the new stage at a
loop of its reader (``compute_at``) then buffers exactly the tile's footprint.

>>> import polyopt as po
>>> A = po.placeholder((8,), name="A")
>>> B = po.compute((8,), lambda i: A[i] * 2, name="B")
>>> s = po.create_schedule(B)
>>> AS = s.cache_read(A, "shared", [B])
>>> [st.name for st in s.program.stages]
['A_shared', 'B']
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.program import Program
from ..domain.schedule import StageRecord, identity_axes
from ..errors import InvalidArgumentError
from ..schedule_errors import CacheOfWrittenError, NotAReaderError
from ..te.expr import TensorRead
from ..te.tensor import Tensor
from .rewrite import (ZERO, axis_vars, box, expand_stage, fresh_statement_name, insert_stage,
                      make_statement, new_array, new_tensor, require_default_schedule,
                      retarget)

SCOPES = ("global", "shared", "local", "inp", "wgt", "acc")  # see machine


def _scope(scope: str) -> str:
    if scope not in SCOPES:
        raise InvalidArgumentError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}")
    return scope


def copy_statement(program: Program, arrays, name: str, source: Tensor, dest: Tensor,
                   iter_vars, dims, elements: isl.Set | None = None):
    """``dest[x] = source[x]`` for every element ``x`` of ``source`` (of ``elements``,
    a set of indices of it, when given)."""
    domain = box(name, iter_vars, dims, [(ZERO, e) for e in source.shape], program.param_names)
    if elements is not None:
        domain = domain.intersect(elements.set_tuple_name(name).align_params(
            domain.get_space())).coalesce()
    return make_statement(program, arrays, name, iter_vars, dims, domain,
                          TensorRead(dest, iter_vars), TensorRead(source, iter_vars), dest.name)


def cache_read(program: Program, tensor: Tensor, scope: str, readers: list[str]
               ) -> tuple[Program, Tensor]:
    """A copy of ``tensor`` in ``scope`` that the ``readers`` stages read instead."""
    _scope(scope)
    source = program.array_of(tensor)
    if not readers:
        raise InvalidArgumentError("cache_read needs at least one reader stage")
    reader_stmts = set()
    for name in readers:
        stage = program.stage(name)
        stmts = {n for n in (stage.init, stage.main) if n}
        if not any(r.array == source.name for n in stmts for r in program.statement(n).reads):
            raise NotAReaderError(source.name, name)
        reader_stmts |= stmts
    dims = tuple(f"ax{d}" for d in range(source.ndim))
    iter_vars = axis_vars(dims, source.shape)
    cached = new_tensor(f"{source.name}.{scope}", source.shape, source.dtype, iter_vars)
    array = new_array(program, cached, scope)
    arrays = program.arrays + (array,)
    name = fresh_statement_name(program, array.name)
    copy = copy_statement(program, arrays, name, source.tensor, cached, iter_vars, dims)
    statements = []
    for stmt in program.statements:
        if stmt.name in reader_stmts:
            stmt = retarget_reads(stmt, source.tensor, cached, program, arrays)
        statements.append(stmt)
    statements.append(copy)
    first = min(readers, key=lambda n: [s.name for s in program.stages].index(n))
    stage = StageRecord(name, name, identity_axes(copy.domain))
    stages = insert_stage(program.stages, stage, before=first)
    return program.with_stages(stages, statements=tuple(statements), arrays=arrays), cached


def _writes_own_loops(stmt) -> bool:
    """Whether ``stmt`` writes ``X[its own loop variables]`` (no layout)."""
    indices = stmt.target.indices
    return len(indices) == len(stmt.iter_vars) and all(
        a is b for a, b in zip(indices, stmt.iter_vars))


def retarget_reads(stmt, old: Tensor, new: Tensor, program: Program, arrays):
    """``stmt`` reading ``new`` where it read ``old`` (its write is unchanged).  Only an
    in-place kernel may read a copy of what it writes (its copies are validated)."""
    if stmt.target.tensor is old and program.array_of(old).role != "inout":
        raise CacheOfWrittenError(stmt.name, old.name)
    return retarget(stmt, old, new, program, arrays, reads_only=True)


def cache_write(program: Program, tensor: Tensor, scope: str, stage_name: str
                ) -> tuple[Program, Tensor]:
    """Compute ``tensor`` into a new buffer in ``scope`` and copy that buffer to it."""
    _scope(scope)
    require_default_schedule(program, stage_name, "cache_write")
    array = program.array(stage_name)
    stage = program.stage(stage_name)
    op = array.tensor.op
    cached = new_tensor(f"{array.name}.{scope}", array.shape, array.dtype, op.axis,
                        op.reduce_axis)
    cache_array = new_array(program, cached, scope)
    arrays = program.arrays + (cache_array,)
    renamed = {}
    statements = []
    for stmt in program.statements:
        if stmt.name in (stage.init, stage.main):
            new_name = fresh_statement_name(program, stmt.name.replace(
                array.name, cache_array.name, 1))
            renamed[stmt.name] = new_name
            stmt = retarget(dataclasses.replace(stmt, name=new_name,
                                                domain=stmt.domain.set_tuple_name(new_name)),
                            array.tensor, cached, program, arrays)
        statements.append(stmt)
    copy_name = fresh_statement_name(program, array.name + "_copy")
    spatial = program.statement(stage.init or stage.main)
    if _writes_own_loops(spatial):  # the copy's loops are the compute's (TVM's s[C] axes)
        copy = copy_statement(program, arrays, copy_name, cached, array.tensor,
                              spatial.iter_vars, spatial.dims)
    else:  # it stores elsewhere (a layout): copy exactly the elements it writes
        dims = tuple(f"ax{d}" for d in range(array.ndim))
        written = spatial.writes[0].relation.intersect_domain(spatial.domain).range()
        copy = copy_statement(program, arrays, copy_name, cached, array.tensor,
                              axis_vars(dims, array.shape), dims, written)
    statements.append(copy)
    compute_stage = dataclasses.replace(
        stage, name=cache_array.name, main=renamed[stage.main],
        init=renamed.get(stage.init) if stage.init else None,
        axes=identity_axes(program.statement(stage.main).domain.set_tuple_name(
            renamed[stage.main])))
    copy_stage = StageRecord(stage_name, copy_name, identity_axes(copy.domain))
    stages = expand_stage(program.stages, stage_name, [compute_stage, copy_stage])
    return program.with_stages(stages, statements=tuple(statements), arrays=arrays), cached

