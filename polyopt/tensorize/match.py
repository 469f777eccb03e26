"""Deciding a tensorize exactly, on isl objects, and checking that it is legal.

The sub-nest of a stage under loop ``axis`` (that loop and every loop inside it) matches
an intrinsic when, for every iteration of the loops outside ``axis``:

* its instances, relative to the tile's first one, are exactly the intrinsic's
  iteration domain (its loops renamed: each intrinsic dimension is one loop of the
  sub-nest, a spatial loop for a spatial dimension, a reduction loop for a reduction);
* each access, relative to the element it touches at the first instance (the origin of
  the buffer the intrinsic receives), is the intrinsic's access, embedded in the last
  dimensions of the array (the others stay fixed in the tile);
* the expressions are the same up to these renamings (the same operations, constants,
  casts and dtypes; reads of corresponding tensors).

Strides come from the arrays' row-major layout in the dimensions the embedding uses, and
are checked against the declared buffers; alignment (``offset_factor``) is checked on
the origins.  Legality: with each tile run as one step (its schedule cut after the
loops outside ``axis``), every dependence between two different tiles, or between a
tile and another statement, still runs in order (:func:`polyopt.deps.legality.find_violations`),
and inside a tile there is no dependence but the reduction's own accumulation.

The pieces: the tiles (:mod:`.tiles`), the accesses (:mod:`.access_match`), legality
(:mod:`.tile_legality`), the refusals' messages (:mod:`.match_messages`); the result
is a :class:`~.match_result.Match`.

>>> import polyopt as po
>>> from polyopt.tensorize.builtin import dot_16x4_u8s8
>>> A = po.placeholder((8, 64), name="A", dtype="uint8")
>>> B = po.placeholder((16, 32, 4), name="B", dtype="int8")
>>> C = po.ops.matmul_u8s8(A, B)
>>> s = po.create_schedule(C)
>>> jo, ji = s[C].split(C.op.axis[1], factor=16)
>>> s[C].reorder(C.op.axis[0], jo, C.op.reduce_axis[0], ji, C.op.reduce_axis[1])
>>> s[C].can_tensorize(ji, dot_16x4_u8s8())
True
"""

from __future__ import annotations

import dataclasses
import itertools

import islpy as isl

from ..deps.dataflow import Dependences
from ..deps.legality import shares_loop
from ..domain.program import Program, Statement
from ..tensorize_errors import (TensorizeAccessMismatchError, TensorizeDomainMismatchError,
                                TensorizeExpressionMismatchError, TensorizeMismatchError)
from ..te.expr import BinOp, Call, Compare, Const, Expr, IterVar, Logical, TensorRead, Var
from ..te.tensor import children
from ..transform.check import loop_dimension
from .access_match import match_access
from .intrin import TensorIntrin
from .match_messages import domain_message
from .match_result import Match, Operand
from .tile_legality import check_legal
from .tiles import Mismatch, box_extent, constant_in_tiles, outer_of, tile_positions

# what the matcher compared when it found the difference (tiles.Mismatch.kind)
_MATCHER_ERRORS = {"domain": TensorizeDomainMismatchError,
                   "expression": TensorizeExpressionMismatchError,
                   "access": TensorizeAccessMismatchError}


def match(program: Program, deps: Dependences | None, stage_name: str, axis_name: str,
          intrin: TensorIntrin, *, strict: bool = False) -> Match:
    """The match of ``stage_name``'s sub-nest under ``axis_name`` with ``intrin``, or
    :class:`TensorizeError` saying what differs; legality is checked when ``deps`` is
    given.  Partial tiles (a subset of the intrinsic's domain, where an extent does not
    divide) run as scalar code unless ``strict``, which refuses them with the extent."""
    stage = program.stage(stage_name)
    position = stage.axis(axis_name)
    main = program.statement(stage.main)
    axis = stage.axes[position]
    dim = loop_dimension(program, main.name, axis)
    inner_axes = [a for a in stage.axes[position:]
                  if not constant_in_tiles(program, main.name, dim, a)]
    i_update, i_init = _intrinsic_statements(intrin)
    region = [s.name for s in program.statements
              if s.name != main.name and shares_loop(program, s.name, main.name, dim)]
    init_inside = stage.init in region
    strangers = [name for name in region if name != stage.init]
    if strangers:
        raise TensorizeMismatchError(stage_name, axis_name, intrin.name, "foreign_statements",
                                     statements=strangers)
    is_reduction = stage.init is not None
    if is_reduction != (i_init is not None):
        raise TensorizeMismatchError(stage_name, axis_name, intrin.name, "reduction_kind",
                                     reduction=is_reduction)
    i_dims = i_update.dims
    if len(inner_axes) != len(i_dims):
        raise TensorizeMismatchError(stage_name, axis_name, intrin.name, "loop_count",
                                     loops=tuple(a.name for a in inner_axes),
                                     intrinsic_loops=tuple(i_dims))
    reduce_flags = [stage.involves_reduce(a) for a in inner_axes]
    i_reduce = [d in _reduce_dims(intrin) for d in i_dims]
    failures = []
    for order in _orders(reduce_flags, i_reduce):
        try:
            inner_dims = tuple(loop_dimension(program, main.name, inner_axes[k]) for k in order)
            names = [inner_axes[k].name for k in order]
            nests = [(main, i_update, inner_dims, names)]
            if init_inside:
                nests.append((program.statement(stage.init), i_init,
                              tuple(d for d, k in zip(inner_dims, order) if not reduce_flags[k]),
                              [n for n, k in zip(names, order) if not reduce_flags[k]]))
            full = None
            for stmt, i_stmt, dims, loop_names in nests:
                found = _full_tiles(program, stmt, i_stmt, dim, dims, loop_names, strict)
                if found is not None:
                    full = found if full is None else full.intersect(found)
            if full is not None and full.intersect_params(program.context).is_empty():
                stmt, i_stmt, dims, loop_names = nests[0]
                raise Mismatch(0, domain_message(program, stmt, dim, dims, loop_names,
                                                   i_stmt, no_full_tile=True))
            operands = _match_statement(program, main, i_update, dim, inner_dims, names,
                                        intrin, full)
            if init_inside:
                _match_statement(program, *nests[1][:2], dim, *nests[1][2:], intrin, full)
            break
        except Mismatch as err:
            failures.append(err)
    else:
        best = max(failures, key=lambda e: e.stage)  # the candidate that got furthest
        raise _MATCHER_ERRORS[best.kind](stage_name, axis_name, intrin.name, best) from None
    part = "body" if (not is_reduction or init_inside) else "update"
    if part == "update" and not intrin.update:
        raise TensorizeMismatchError(stage_name, axis_name, intrin.name, "no_update")
    if full is not None:
        full = full.gist(outer_of(program, main.name, dim).range()).gist_params(
            program.context)
    result = Match(stage_name, axis_name, intrin, main.name,
                   stage.init if init_inside else None, part, dim, inner_dims, operands, full)
    if deps is not None:
        check_legal(program, deps, result)
    return result


def _intrinsic_statements(intrin: TensorIntrin) -> tuple[Statement, Statement | None]:
    statements = intrin.program.statements
    update = next((s for s in statements if s.name.endswith("_update")), statements[-1])
    init = next((s for s in statements if s.name.endswith("_init")), None)
    return _squeezed(update), None if init is None else _squeezed(init)


def _squeezed(stmt: Statement) -> Statement:
    """``stmt`` without the dimensions of extent 1 (as the sub-nest's loops of one
    iteration are left out: neither renames anything)."""
    domain, accesses = stmt.domain, list(stmt.accesses)
    for q in reversed(range(domain.dim(isl.dim_type.set))):
        if box_extent(domain, q) != 1:
            continue
        domain = domain.project_out(isl.dim_type.set, q, 1)
        accesses = [dataclasses.replace(a, relation=a.relation.project_out(
            isl.dim_type.in_, q, 1)) for a in accesses]
    return dataclasses.replace(stmt, domain=domain, accesses=tuple(accesses))


def _reduce_dims(intrin: TensorIntrin) -> set[str]:
    return {axis.name for axis in intrin.tensors[-1].op.reduce_axis}


def _orders(program_reduce: list[bool], intrinsic_reduce: list[bool]):
    """Assignments of the sub-nest's loops to the intrinsic's dimensions, loops of the
    same kind in their order first (TVM's convention), then the other permutations."""
    n = len(program_reduce)
    candidates = [p for p in itertools.permutations(range(n))
                  if all(program_reduce[p[q]] == intrinsic_reduce[q] for q in range(n))]
    return candidates or [tuple(range(n))]


def _full_tiles(program: Program, stmt: Statement, i_stmt: Statement, dim: int, inner_dims,
                loop_names, strict: bool) -> isl.Set | None:
    """The tiles that are exactly the intrinsic's domain (None: all of them); the
    others must be partial (a part of it) and are refused when ``strict``."""
    _, tiles, expected = tile_positions(program, stmt, i_stmt, dim, inner_dims)
    if tiles.is_equal(expected):
        return None
    if strict or not tiles.subtract(expected).intersect_params(program.context).is_empty():
        raise Mismatch(0, domain_message(program, stmt, dim, inner_dims, loop_names,
                                           i_stmt, strict=strict))
    return tiles.domain().subtract(expected.subtract(tiles).domain())


def _match_statement(program: Program, stmt: Statement, i_stmt: Statement, dim: int,
                     inner_dims, loop_names, intrin: TensorIntrin,
                     full: isl.Set | None = None) -> tuple[Operand, ...]:
    """The operands of ``stmt``'s sub-nest as the intrinsic's (in the tiles ``full``;
    None: every tile, all checked equal to the intrinsic's domain)."""
    placed, tiles, expected = tile_positions(program, stmt, i_stmt, dim, inner_dims)
    if full is not None:
        in_full = isl.Map.from_domain_and_range(
            full.align_params(tiles.get_space()),
            isl.Set.universe(tiles.get_space().range())).wrap()
        placed = placed.intersect_range(in_full)
        tiles = placed.range().unwrap()
    elif not tiles.is_equal(expected):
        raise Mismatch(0, domain_message(program, stmt, dim, inner_dims, loop_names, i_stmt))
    instances = placed.reverse()                      # [O -> R] -> D
    pairs = _pair_reads(stmt, i_stmt, intrin)
    operands = []
    for position, (access, i_access) in enumerate(pairs):
        tensor = _tensor_of_array(intrin, i_access.array)
        buffer_index = intrin.tensors.index(tensor)
        operands.append(match_access(program, stmt, access, i_access, instances, tiles,
                                      intrin.buffers[buffer_index], buffer_index,
                                      None if access.kind.value == "write" else position,
                                      loop_names, dim))
    return tuple(operands)


def _tensor_of_array(intrin: TensorIntrin, array: str):
    return intrin.program.array(array).tensor


def _pair_reads(stmt: Statement, i_stmt: Statement, intrin: TensorIntrin):
    """The statement's accesses paired with the intrinsic's, after checking that the
    expressions are the same up to renaming (reads in pre-order, then the write)."""
    mapping: dict[int, object] = {}
    _same_expr(stmt.value, i_stmt.value, mapping, stmt, intrin)
    _same_expr(stmt.target, i_stmt.target, mapping, stmt, intrin)
    reads, i_reads = stmt.reads, i_stmt.reads
    if len(reads) != len(i_reads):
        raise Mismatch(1, f"{stmt.name} makes {len(reads)} reads, the intrinsic "
                           f"{len(i_reads)}")
    return list(zip(reads, i_reads)) + [(stmt.writes[0], i_stmt.writes[0])]


def _same_expr(a: Expr, b: Expr, mapping: dict, stmt: Statement, intrin: TensorIntrin) -> None:
    def differ(why: str):
        raise Mismatch(1, f"the expression of {stmt.name} ({stmt.target} = {stmt.value}) "
                           f"is not the intrinsic's ({why}: '{a}' where the intrinsic has "
                           f"'{b}')")

    if type(a) is not type(b):
        differ("different operations")
    if a.dtype != b.dtype and not (isinstance(a, Const) and isinstance(b, Const)):
        differ(f"dtype {a.dtype} vs {b.dtype}")
    if isinstance(a, TensorRead):
        forward = mapping.setdefault(("p", id(a.tensor)), b.tensor)
        backward = mapping.setdefault(("i", id(b.tensor)), a.tensor)
        if forward is not b.tensor or backward is not a.tensor:
            differ("reads of different tensors")
        if any(isinstance(n, TensorRead) for index in a.indices for n in _walk(index)):
            differ("an index reads a tensor")
        return  # indices: compared exactly as access relations
    if isinstance(a, Const):
        if a.value != b.value or (a.dtype != b.dtype and not (a.weak or b.weak)):
            differ("different constants")
        return
    if isinstance(a, (IterVar, Var)):
        differ("a loop variable or size used as a value")
    if isinstance(a, (BinOp, Compare)) and a.op != b.op or \
            isinstance(a, Logical) and a.op != b.op or \
            isinstance(a, Call) and a.func != b.func:
        differ("different operations")
    ca, cb = children(a), children(b)
    if len(ca) != len(cb):
        differ("different operations")
    for x, y in zip(ca, cb):
        _same_expr(x, y, mapping, stmt, intrin)


def _walk(expr):
    yield expr
    for child in children(expr):
        yield from _walk(child)
