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
from dataclasses import dataclass

import islpy as isl

from ..deps.dataflow import Dependences
from ..deps.legality import find_violations, first_point, shares_loop
from ..domain.program import Program, Statement
from ..errors import TensorizeError
from ..te.expr import BinOp, Call, Compare, Const, Expr, IterVar, Logical, TensorRead, Var
from ..te.tensor import children
from ..transform.check import loop_dimension
from .intrin import Buffer, TensorIntrin


@dataclass(frozen=True)
class Operand:
    """One buffer of the intrinsic bound to an access of the statement: ``position`` is
    the index of the read in the value (pre-order), or None for the write."""

    buffer: int
    array: str
    stmt: str
    position: int | None
    strides: tuple            # per buffer dimension: an int, or an Expr of the array shape
    unit_dims: tuple[int, ...]  # per buffer dimension: the intrinsic dimension moving it


@dataclass(frozen=True)
class Match:
    """An accepted tensorize: what the lowering needs to replace the sub-nest."""

    stage: str
    axis: str
    intrin: TensorIntrin
    main: str
    init: str | None          # the init statement when it runs inside the sub-nest
    part: str                 # "body" or "update"
    dim: int                  # the schedule dimension of ``axis`` (main's row)
    inner_dims: tuple[int, ...]  # per intrinsic dimension, the schedule dimension
    operands: tuple[Operand, ...]
    # the tiles the intrinsic runs, as values of the schedule's first ``dim`` dimensions
    # (simplified within the tiles that exist); None: all of them.  The others (partial
    # tiles, when the extent does not divide) run as scalar code.
    full: isl.Set | None = None


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
                  if not _constant_in_tiles(program, main.name, dim, a)]
    i_update, i_init = _intrinsic_statements(intrin)
    region = [s.name for s in program.statements
              if s.name != main.name and shares_loop(program, s.name, main.name, dim)]
    init_inside = stage.init in region
    strangers = [name for name in region if name != stage.init]
    if strangers:
        raise TensorizeError(
            f"statement(s) {', '.join(strangers)} run inside loop '{axis_name}' of stage "
            f"'{stage_name}'; the intrinsic would replace only the stage's own work: compute "
            "them at a loop outside it")
    is_reduction = stage.init is not None
    if is_reduction != (i_init is not None):
        raise TensorizeError(
            f"stage '{stage_name}' is {'a' if is_reduction else 'not a'} reduction but "
            f"intrinsic '{intrin.name}' is {'one' if i_init is not None else 'not'}")
    i_dims = i_update.dims
    if len(inner_axes) != len(i_dims):
        raise TensorizeError(
            f"the sub-nest under '{axis_name}' has {len(inner_axes)} loop(s) "
            f"({', '.join(a.name for a in inner_axes)}) but intrinsic '{intrin.name}' has "
            f"{len(i_dims)} ({', '.join(i_dims)})")
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
                raise _Mismatch(0, _domain_message(program, stmt, dim, dims, loop_names,
                                                   i_stmt, no_full_tile=True))
            operands = _match_statement(program, main, i_update, dim, inner_dims, names,
                                        intrin, full)
            if init_inside:
                _match_statement(program, *nests[1][:2], dim, *nests[1][2:], intrin, full)
            break
        except _Mismatch as err:
            failures.append(err)
    else:
        best = max(failures, key=lambda e: e.stage)  # the candidate that got furthest
        raise TensorizeError(f"tensorize of '{stage_name}' at '{axis_name}' with "
                             f"'{intrin.name}' refused: {best}") from None
    part = "body" if (not is_reduction or init_inside) else "update"
    if part == "update" and not intrin.update:
        raise TensorizeError(
            f"the reduction of '{stage_name}' is split around '{axis_name}' (its init runs "
            f"outside), so the intrinsic's update part is needed, and '{intrin.name}' has "
            "none: return (body, reset, update) from fimpl, or tensorize a loop outside the "
            "reduction loops")
    if full is not None:
        full = full.gist(_outer_of(program, main.name, dim).range()).gist_params(
            program.context)
    result = Match(stage_name, axis_name, intrin, main.name,
                   stage.init if init_inside else None, part, dim, inner_dims, operands, full)
    if deps is not None:
        check_legal(program, deps, result)
    return result


class _Mismatch(Exception):
    def __init__(self, stage: int, message: str):
        super().__init__(message)
        self.stage = stage


def _constant_in_tiles(program: Program, stmt: str, dim: int, axis) -> bool:
    """Whether loop ``axis`` has one iteration in every tile (it renames nothing)."""
    row = program.schedule_of(stmt)
    width = row.dim(isl.dim_type.out)
    at = loop_dimension(program, stmt, axis)
    outer = row.apply_range(_pick(width, range(dim), row))
    value = row.apply_range(_pick(width, [at], row))
    return outer.reverse().apply_range(value).is_single_valued()


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
        if _extent(domain, q) != 1:
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


def _pick(width: int, dims, params_of) -> isl.Map:
    names = [f"t{k}" for k in range(width)]
    text = f"{{ [{', '.join(names)}] -> [{', '.join(names[d] for d in dims)}] }}"
    return isl.Map(text).align_params(params_of.get_space())


def _tile_maps(program: Program, stmt: str, dim: int, inner_dims):
    """``(outer, relative)``: each instance's outer loop values (the schedule's first
    ``dim`` dimensions) and its inner loop values relative to its tile's first instance."""
    row = program.schedule_of(stmt)
    width = row.dim(isl.dim_type.out)
    outer = row.apply_range(_pick(width, range(dim), row))
    inner = row.apply_range(_pick(width, inner_dims, row))
    tile = outer.reverse().apply_range(inner)
    first = tile.lexmin()
    relative = inner.sum(outer.apply_range(first).neg())
    return outer, relative


def _tiles(program: Program, stmt: Statement, i_stmt: Statement, dim: int, inner_dims):
    """``(placed, tiles, expected)``: each instance at its tile (outer values O) and its
    position R in it (``D -> [O -> R]``), the tiles' positions (``O -> R``), and what
    they would be if every tile were the intrinsic's domain."""
    outer, relative = _tile_maps(program, stmt.name, dim, inner_dims)
    placed = outer.range_product(relative)           # D -> [O -> R]
    tiles = placed.range().unwrap()                   # O -> R
    domain = _anonymous(i_stmt.domain).align_params(tiles.get_space())
    return placed, tiles, isl.Map.from_domain_and_range(tiles.domain(), domain)


def _full_tiles(program: Program, stmt: Statement, i_stmt: Statement, dim: int, inner_dims,
                loop_names, strict: bool) -> isl.Set | None:
    """The tiles that are exactly the intrinsic's domain (None: all of them); the
    others must be partial (a part of it) and are refused when ``strict``."""
    _, tiles, expected = _tiles(program, stmt, i_stmt, dim, inner_dims)
    if tiles.is_equal(expected):
        return None
    if strict or not tiles.subtract(expected).intersect_params(program.context).is_empty():
        raise _Mismatch(0, _domain_message(program, stmt, dim, inner_dims, loop_names,
                                           i_stmt, strict=strict))
    return tiles.domain().subtract(expected.subtract(tiles).domain())


def _match_statement(program: Program, stmt: Statement, i_stmt: Statement, dim: int,
                     inner_dims, loop_names, intrin: TensorIntrin,
                     full: isl.Set | None = None) -> tuple[Operand, ...]:
    """The operands of ``stmt``'s sub-nest as the intrinsic's (in the tiles ``full``;
    None: every tile, all checked equal to the intrinsic's domain)."""
    placed, tiles, expected = _tiles(program, stmt, i_stmt, dim, inner_dims)
    if full is not None:
        in_full = isl.Map.from_domain_and_range(
            full.align_params(tiles.get_space()),
            isl.Set.universe(tiles.get_space().range())).wrap()
        placed = placed.intersect_range(in_full)
        tiles = placed.range().unwrap()
    elif not tiles.is_equal(expected):
        raise _Mismatch(0, _domain_message(program, stmt, dim, inner_dims, loop_names, i_stmt))
    instances = placed.reverse()                      # [O -> R] -> D
    pairs = _pair_reads(stmt, i_stmt, intrin)
    operands = []
    for position, (access, i_access) in enumerate(pairs):
        tensor = _tensor_of_array(intrin, i_access.array)
        buffer_index = intrin.tensors.index(tensor)
        operands.append(_match_access(program, stmt, access, i_access, instances, tiles,
                                      intrin.buffers[buffer_index], buffer_index,
                                      None if access.kind.value == "write" else position,
                                      loop_names, dim))
    return tuple(operands)


def _anonymous(domain: isl.Set) -> isl.Set:
    return domain.reset_tuple_id()


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
        raise _Mismatch(1, f"{stmt.name} makes {len(reads)} reads, the intrinsic "
                           f"{len(i_reads)}")
    return list(zip(reads, i_reads)) + [(stmt.writes[0], i_stmt.writes[0])]


def _same_expr(a: Expr, b: Expr, mapping: dict, stmt: Statement, intrin: TensorIntrin) -> None:
    def differ(why: str):
        raise _Mismatch(1, f"the expression of {stmt.name} ({stmt.target} = {stmt.value}) "
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


def _reads_in_order(stmt: Statement) -> list:
    """The tensor reads of ``stmt``'s value in pre-order (the order of ``stmt.reads``)."""
    found = []

    def visit(expr):
        if isinstance(expr, TensorRead):
            found.append(expr)
            return
        for child in children(expr):
            visit(child)

    visit(stmt.value)
    return found


def _walk(expr):
    yield expr
    for child in children(expr):
        yield from _walk(child)


def _match_access(program, stmt, access, i_access, instances, tiles, buffer: Buffer,
                  buffer_index: int, position, loop_names, dim) -> Operand:
    read_text = str(stmt.target if position is None else _reads_in_order(stmt)[position])
    array = program.array(access.array)
    rank, i_rank = array.ndim, len(buffer.shape)
    what = f"{'write' if position is None else 'read'} of {access.array}"
    if i_rank > rank:
        raise _Mismatch(2, f"the {what} has {rank} dimension(s), the intrinsic's "
                           f"'{buffer.name}' {i_rank}")
    touched = instances.apply_range(access.relation)            # [O -> R] -> A
    zero = isl.Set.universe(tiles.get_space().range())
    for q in range(zero.dim(isl.dim_type.set)):
        zero = zero.fix_val(isl.dim_type.set, q, isl.Val(0))
    at_zero = isl.Map.from_domain_and_range(tiles.domain(), zero).wrap()
    origin = touched.intersect_domain(at_zero).domain_factor_domain()  # O -> A
    spread = touched.domain().unwrap().domain_map().apply_range(origin)  # [O -> R] -> A
    offsets = touched.sum(spread.neg())
    units = _unit_dims(i_access.relation, buffer)
    deltas = [_delta(offsets, tiles, q, rank) for q in units]
    embed = _embedding(i_access.relation, deltas, access.array)
    expected = touched.domain().unwrap().range_map().apply_range(
        embed.align_params(touched.get_space()))
    if not offsets.is_equal(expected):
        raise _Mismatch(3, _access_message(program, stmt, access, i_access, buffer, offsets,
                                           expected, origin, loop_names, dim, what,
                                           read_text))
    what = f"{what} {read_text}"
    strides = _strides(array, deltas, buffer, what)
    _check_alignment(program, origin, array, buffer, what)
    return Operand(buffer_index, access.array, stmt.name, position, strides, units)


def _delta(offsets: isl.Map, tiles: isl.Map, q: int, rank: int) -> list[int]:
    """How far (in each array dimension) the access moves in one step along intrinsic
    dimension ``q`` (at the first tile; the equality test then covers every tile)."""
    if q < 0:
        return [0] * rank
    n_out = offsets.dim(isl.dim_type.out)
    width = tiles.dim(isl.dim_type.out)
    n_outer = tiles.dim(isl.dim_type.in_)
    first = tiles.domain().lexmin()
    if first.is_empty():
        return [0] * rank
    params, outer = _point(first)
    fixed = offsets
    for k, v in enumerate(params):
        fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(v))
    point = isl.Set.universe(fixed.get_space().domain())
    values = list(outer) + [1 if k == q else 0 for k in range(width)]
    for k, v in enumerate(values[:n_outer + width]):
        point = point.fix_val(isl.dim_type.set, k, isl.Val(v))
    image = fixed.intersect_domain(point).range()
    if image.is_empty():
        return [0] * rank
    return _point(image)[1][:n_out]


def _embedding(i_relation: isl.Map, deltas: list[list[int]], array: str) -> isl.Map:
    """The intrinsic's access (relative to its buffers' origins, where the intrinsic's
    domain starts) as offsets in the program's array: buffer index ``x`` moves the
    array index by ``sum_e x[e] * deltas[e]``."""
    i_rank = i_relation.dim(isl.dim_type.out)
    rank = len(deltas[0]) if deltas else 0
    outs = [f"x{k}" for k in range(i_rank)]
    terms = [" + ".join(f"{deltas[e][d]}x{e}" for e in range(i_rank) if deltas[e][d]) or "0"
             for d in range(rank)]
    linear = isl.Map(f"{{ [{', '.join(outs)}] -> [{', '.join(terms)}] }}")
    relation = i_relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
    return relation.apply_range(linear).set_tuple_name(isl.dim_type.out, array)


def _strides(array, deltas: list[list[int]], buffer: Buffer, what: str) -> tuple:
    """Each buffer dimension's stride in the array (row-major: ``sum_d delta[d] *
    stride_d``), checked against the buffer's declaration (None: dense)."""
    shape = array.shape
    row, running = [], Const(1, "int64", True)
    for extent in reversed(shape):
        row.append(running)
        running = _mul(running, extent)
    row = list(reversed(row))
    declared = buffer.strides if buffer.strides is not None else buffer.dense_strides
    result = []
    for e, (delta, wanted) in enumerate(zip(deltas, declared)):
        actual = Const(0, "int64", True)
        for d, step in enumerate(delta):
            if step:
                actual = _add(actual, _mul(Const(step, "int64", True), row[d]))
        value = actual.value if isinstance(actual, Const) else None
        if isinstance(wanted, int):
            if value != wanted and buffer.shape[e] > 1:
                raise _Mismatch(4, (
                    f"the {what} has stride {actual} in dimension {e} of buffer "
                    f"'{buffer.name}', which is declared with stride {wanted}"
                    + (" (dense)" if buffer.strides is None else "")
                    + f": declare strides=[..., po.var('s{e}'), ...] in po.decl_buffer to take "
                    "any stride, or change the layout"))
            result.append(wanted)
        else:
            result.append(value if value is not None else actual)
    return tuple(result)


def _add(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value + b.value, "int64", True)
    if isinstance(a, Const) and a.value == 0:
        return b
    return a + b


def _mul(a: Expr, b: Expr) -> Expr:
    if isinstance(a, Const) and isinstance(b, Const):
        return Const(a.value * b.value, "int64", True)
    if isinstance(a, Const) and a.value == 1:
        return b
    return a * b


def _check_alignment(program, origin: isl.Map, array, buffer: Buffer, what: str) -> None:
    factor = buffer.offset_factor
    if factor == 1:
        return
    last = array.ndim - 1
    misaligned = isl.Set(f"{{ [{', '.join(f'x{k}' for k in range(array.ndim))}] : "
                         f"x{last} mod {factor} != 0 }}").align_params(origin.get_space())
    bad = origin.intersect_range(misaligned.set_tuple_name(array.name)).intersect_params(
        program.context)
    if not bad.is_empty():
        point = bad.range().sample_point()
        index = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
                 for k in range(array.ndim)]
        raise TensorizeError(
            f"buffer '{buffer.name}' needs offset_factor={factor} but the {what} starts at "
            f"{array.name}{index} in some tile: split so that its tiles start at multiples "
            f"of {factor}, or declare a smaller offset_factor")
    for extent in array.shape[1:]:
        if not (isinstance(extent, Const) and extent.value % factor == 0):
            raise TensorizeError(
                f"buffer '{buffer.name}' needs offset_factor={factor} but a row of "
                f"'{array.name}' has {extent} elements, not known to be a multiple of "
                f"{factor}: use sizes that are, or declare offset_factor=1")


def _unit_dims(i_relation: isl.Map, buffer: Buffer) -> tuple[int, ...]:
    """For each buffer dimension, an intrinsic dimension that moves only it by one."""
    units = []
    n_in = i_relation.dim(isl.dim_type.in_)
    probe = i_relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
    space_in = probe.get_space().domain()
    origin = _point_image(probe, space_in, [0] * n_in)
    for e in range(len(buffer.shape)):
        for q in range(n_in):
            unit = [0] * n_in
            unit[q] = 1
            image = _point_image(probe, space_in, unit)
            if image is not None and origin is not None and all(
                    image[f] - origin[f] == (1 if f == e else 0) for f in range(len(origin))):
                units.append(q)
                break
        else:
            units.append(-1)  # extent 1 in every direction: its stride is never used
    return tuple(units)


def _point_image(relation: isl.Map, space: isl.Space, values) -> list[int] | None:
    point = isl.Set.universe(space)
    for q, v in enumerate(values):
        point = point.fix_val(isl.dim_type.set, q, isl.Val(v))
    image = relation.intersect_domain(point).range()
    if image.is_empty():
        return None
    sample = image.sample_point()
    return [sample.get_coordinate_val(isl.dim_type.set, k).to_python()
            for k in range(image.dim(isl.dim_type.set))]


# -- messages --------------------------------------------------------------------------
def _point(wrapped_or_set: isl.Set) -> tuple[list[int], list[int]]:
    """Small parameters and the first point for them (a stable, readable example)."""
    if wrapped_or_set.is_wrapping():
        return first_point(wrapped_or_set.unwrap())
    sample = wrapped_or_set.lexmin().sample_point()
    n_par = wrapped_or_set.dim(isl.dim_type.param)
    n_set = wrapped_or_set.dim(isl.dim_type.set)
    return ([sample.get_coordinate_val(isl.dim_type.param, k).to_python() for k in range(n_par)],
            [sample.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_set)])


def _outer_text(program: Program, stmt: str, values: list[int], dim: int) -> str:
    parts = []
    for d in range(dim):
        axis = program.axis_at(stmt, d)
        if axis is not None:
            parts.append(f"{axis.name}={values[d]}")
    return ", ".join(parts) or "the only tile"


def _params_text(program: Program, params: list[int], names) -> str:
    if not params:
        return ""
    return " when " + ", ".join(f"{n}={v}" for n, v in zip(names, params))


def _domain_message(program, stmt, dim, inner_dims, loop_names, i_stmt, *,
                    strict: bool = False, no_full_tile: bool = False) -> str:
    _, tiles, expected = _tiles(program, stmt, i_stmt, dim, inner_dims)
    domain = expected.range()
    diff = expected.subtract(tiles).union(tiles.subtract(expected)).intersect_params(
        program.context)
    params, values = _point(diff.wrap())
    names = diff.get_space().get_var_names(isl.dim_type.param)
    outer_values, r = values[:dim], values[dim:]
    fixed = tiles
    for k, v in enumerate(params):
        fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(v))
    for k, v in enumerate(outer_values):
        fixed = fixed.fix_input_si(k, v) if hasattr(fixed, "fix_input_si") else \
            fixed.fix_val(isl.dim_type.in_, k, isl.Val(v))
    present = fixed.range()
    where = (f"in the tile at {_outer_text(program, stmt.name, outer_values, dim)}"
             f"{_params_text(program, params, names)}")
    for q, (loop, i_dim) in enumerate(zip(loop_names, i_stmt.dims)):
        extent = _extent(domain, q)
        if present.is_empty():
            break
        have = _extent(present, q)
        if have != extent:
            if have is not None and have > extent:
                why = "(the loop is longer)"
            elif no_full_tile:
                why = "and no tile of the loop is complete"
            elif strict:
                why = ("and strict=True refuses partial tiles (without it they run as "
                       "scalar code)")
            else:
                why = f"({extent} does not divide the loop's extent)"
            return (f"loop '{loop}' has {have} iteration(s) {where} but the intrinsic's "
                    f"dimension '{i_dim}' has extent {extent} {why}: split the loop by "
                    f"{extent} (or a multiple of it) so that its tiles are complete, or pad "
                    f"the tensors to a multiple of {extent}")
    missing = not expected.subtract(tiles).is_empty()
    point = ", ".join(f"{d}={v}" for d, v in zip(i_stmt.dims, r))
    return (f"the sub-nest's instances differ from the intrinsic's domain {where}: "
            f"the intrinsic's point ({point}) {'has no' if missing else 'is not the'} "
            f"instance of {stmt.name}{' there' if missing else ''} (loops "
            f"{', '.join(loop_names)})")


def _extent(box: isl.Set, q: int) -> int | None:
    lo, hi = box.dim_min_val(q), box.dim_max_val(q)
    if not (lo.is_int() and hi.is_int()):
        return None
    return hi.to_python() - lo.to_python() + 1


def _access_message(program, stmt, access, i_access, buffer, offsets, expected, origin,
                    loop_names, dim, what, read_text) -> str:
    diff = offsets.subtract(expected).union(expected.subtract(offsets)).intersect_params(
        program.context)
    params, values = _point(diff.wrap())
    names = diff.get_space().get_var_names(isl.dim_type.param)
    n_r = len(loop_names)
    outer_values, r = values[:dim], values[dim:dim + n_r]
    got = _image(offsets, params, values[:dim + n_r])
    probe = i_access.relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(
        isl.dim_type.out)
    element = _point_image(probe, probe.get_space().domain(), r)
    point = ", ".join(f"{n}={v}" for n, v in zip(loop_names, r))
    touched = ("touches nothing" if element is None else
               f"touches {buffer.name}[{', '.join(map(str, element))}]")
    return (f"the {what} {read_text} is not the intrinsic's '{buffer.name}' "
            f"({_relation_text(i_access.relation)}) relative to the buffer origin: in the "
            f"tile at {_outer_text(program, stmt.name, outer_values, dim)}"
            f"{_params_text(program, params, names)}, at {point} it "
            f"{'touches nothing' if got is None else 'is offset ' + str(tuple(got))} from the "
            f"origin where the intrinsic {touched}")


def _image(relation: isl.Map, params, values) -> list[int] | None:
    fixed = relation
    for k, v in enumerate(params):
        fixed = fixed.fix_val(isl.dim_type.param, k, isl.Val(v))
    domain = isl.Set.universe(fixed.get_space().domain())
    wrapped = domain
    for k, v in enumerate(values):
        wrapped = wrapped.fix_val(isl.dim_type.set, k, isl.Val(v))
    image = fixed.intersect_domain(wrapped).range()
    if image.is_empty():
        return None
    return _point(image)[1]


def _relation_text(relation: isl.Map) -> str:
    text = str(relation)
    body = text[text.index("{") + 1:].split(":")[0].rstrip(" }")
    return body.strip()


# -- legality ----------------------------------------------------------------------------
def check_legal(program: Program, deps: Dependences, found: Match) -> None:
    """Raise :class:`TensorizeError` unless running each tile as one step keeps every
    dependence in order (see the module)."""
    region = [found.main] + ([found.init] if found.init else [])
    outer = {name: _outer_of(program, name, found.dim) for name in region}
    if found.full is not None:  # partial tiles run as scalar code: only full tiles are steps
        outer = {name: o.intersect_range(found.full.align_params(o.get_space()))
                 for name, o in outer.items()}
    output = program.statement(found.main).writes[0].array
    kept = []
    for dep in deps:
        if dep.source in region and dep.sink in region:
            same_tile = outer[dep.source].apply_range(outer[dep.sink].reverse())
            inside = dep.relation.intersect(same_tile).intersect_params(program.context)
            if not inside.is_empty() and not (
                    dep.array == output and dep.sink == found.main):
                raise TensorizeError(
                    f"tensorize at '{found.axis}' is illegal: inside a tile, {dep.kind} "
                    f"dependence {dep.source} -> {dep.sink} through {dep.array} orders two "
                    "instances that the intrinsic runs as one step")
            relation = dep.relation.subtract(same_tile)
            if relation.is_empty():
                continue
            dep = dataclasses.replace(dep, relation=relation)
        kept.append(dep)
    collapsed = _collapsed_program(program, {name: o.domain() for name, o in outer.items()},
                                   found.dim)
    violations = find_violations(collapsed, Dependences(tuple(kept)), limit=1)
    if violations:
        raise TensorizeError(
            f"tensorize at '{found.axis}' is illegal: running each tile as one step breaks "
            f"a dependence: {violations[0].explain()}")


def _outer_of(program: Program, stmt: str, dim: int) -> isl.Map:
    row = program.schedule_of(stmt)
    return row.apply_range(_pick(row.dim(isl.dim_type.out), range(dim), row))


def _collapsed_program(program: Program, region: dict[str, isl.Set], dim: int) -> Program:
    """``program`` with the instances ``region[stmt]`` (those of the intrinsic's tiles)
    scheduled at their tile's first ``dim`` dimensions (one step each)."""
    rows = isl.UnionMap.empty(program.context.get_space())
    for stmt in program.statements:
        row = program.schedule_of(stmt.name)
        if stmt.name in region:
            width = row.dim(isl.dim_type.out)
            names = [f"t{k}" for k in range(width)]
            outs = names[:dim] + ["0"] * (width - dim)
            cut = isl.Map(f"{{ [{', '.join(names)}] -> [{', '.join(outs)}] }}")
            steps = region[stmt.name]
            row = row.intersect_domain(steps).apply_range(
                cut.align_params(row.get_space())).union(row.subtract_domain(steps))
        rows = rows.union(isl.UnionMap.from_map(row))
    schedule = isl.Schedule.from_domain(program.domains).insert_partial_schedule(
        isl.MultiUnionPwAff.from_union_map(rows))
    return program.replace(schedule=schedule)
