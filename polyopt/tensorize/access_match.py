"""Matching one access of a sub-nest to an intrinsic's buffer: embedding, strides, alignment.

Relative to the element it touches at a tile's first instance (the buffer's origin),
the access must be the intrinsic's, embedded in the array's last dimensions
(:func:`_embedding`); the strides of that embedding in the row-major array are checked
against the buffer's declaration, its origins against ``offset_factor``.

>>> import islpy as isl
>>> print(_embedding(isl.Map("{ I[a, b] -> B[a, b] }"), [[1, 0], [0, 1]], "A"))
{ [a, b] -> A[a, b] }
"""

from __future__ import annotations

import islpy as isl

from ..domain.program import Statement
from ..tensorize_errors import BufferAlignmentError
from ..te.expr import Const, Expr, TensorRead
from ..te.tensor import children
from .intrin import Buffer
from .match_messages import access_message
from .match_result import Operand
from .tiles import Mismatch, example_point, point_image


def match_access(program, stmt, access, i_access, instances, tiles, buffer: Buffer,
                  buffer_index: int, position, loop_names, dim) -> Operand:
    read_text = str(stmt.target if position is None else _reads_in_order(stmt)[position])
    array = program.array(access.array)
    rank, i_rank = array.ndim, len(buffer.shape)
    what = f"{'write' if position is None else 'read'} of {access.array}"
    if i_rank > rank:
        raise Mismatch(2, f"the {what} has {rank} dimension(s), the intrinsic's "
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
        raise Mismatch(3, access_message(program, stmt, access, i_access, buffer, offsets,
                                           expected, origin, loop_names, dim, what,
                                           read_text))
    what = f"{what} {read_text}"
    strides = _strides(array, deltas, buffer, what)
    _check_alignment(program, origin, array, buffer, what)
    return Operand(buffer_index, access.array, stmt.name, position, strides, units)


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
    params, outer = example_point(first)
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
    return example_point(image)[1][:n_out]


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
                raise Mismatch(4, (
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
        raise BufferAlignmentError(buffer.name, factor, array.name, start=tuple(index),
                                   what=what)
    for extent in array.shape[1:]:
        if not (isinstance(extent, Const) and extent.value % factor == 0):
            raise BufferAlignmentError(buffer.name, factor, array.name, row=str(extent))


def _unit_dims(i_relation: isl.Map, buffer: Buffer) -> tuple[int, ...]:
    """For each buffer dimension, an intrinsic dimension that moves only it by one."""
    units = []
    n_in = i_relation.dim(isl.dim_type.in_)
    probe = i_relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
    space_in = probe.get_space().domain()
    origin = point_image(probe, space_in, [0] * n_in)
    for e in range(len(buffer.shape)):
        for q in range(n_in):
            unit = [0] * n_in
            unit[q] = 1
            image = point_image(probe, space_in, unit)
            if image is not None and origin is not None and all(
                    image[f] - origin[f] == (1 if f == e else 0) for f in range(len(origin))):
                units.append(q)
                break
        else:
            units.append(-1)  # extent 1 in every direction: its stride is never used
    return tuple(units)
