"""Address the arrays of statements enumerated through integer division by one offset.

A fused loop ``p`` enumerates ``y = p / 28, x = p % 28``: read as ``A[c, y, x]``, the
address ``784 * c + 28 * (p / 28) + p % 28`` costs a division and a remainder per
element, and LLVM vectorizes it as a gather.  It is ``784 * c + p``: here each access
of such a statement to an array of constant shape becomes a read of the array's
flat offset, a derived variable (its exact quasi-affine function of the instance),
which isl writes in terms of the loops, with the divisions cancelled.

>>> import polyopt as po
>>> A = po.placeholder((4, 6), name="A")
>>> B = po.compute((4, 6), lambda y, x: A[y, x] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> p = s[B].fuse(*s[B].axes)
>>> print(po.lower(s, [A, B]))
void B_kernel(float32 A[4][6], float32 B[4][6]) {
  for (y_x_fused = 0; y_x_fused < 24; y_x_fused += 1)
    B.flat[y_x_fused] = A.flat[y_x_fused] * 2.0;
}
"""

from __future__ import annotations

import dataclasses
import math

import islpy as isl

from ..domain.affine import AffineSpace
from ..domain.program import Program, Statement
from ..errors import PolyoptError
from ..te.expr import BinOp, Const, IterVar, TensorRead
from ..te.substitute import transform


def flatten_accesses(program: Program) -> Program:
    """``program`` with every statement whose instance is a function of its loops that
    divides (a fused loop, a non-unimodular skew) addressing arrays by flat offsets."""
    statements = tuple(_flattened_statement(stmt, program) for stmt in program.statements)
    if all(new is old for new, old in zip(statements, program.statements)):
        return program
    return program.replace(statements=statements)


_PIECES = 8  # rows of more pieces are not flattened


def _reads_flattenable(stmt: Statement, program: Program) -> bool:
    """Whether ``stmt`` accesses an array that could be addressed by a flat offset
    (asked first: isl's inverse of a row is slow after many nested splits)."""
    found = []

    def visit(node):
        if isinstance(node, TensorRead) and not node.flat and \
                _flat_shape(program.array_of(node.tensor)) is not None:
            found.append(node)
        return None

    visit(stmt.target)
    transform(stmt.value, visit)
    return bool(found)


def _flattened_statement(stmt: Statement, program: Program) -> Statement:
    """``stmt`` with flat offsets: every access when its instance is found through a
    division, else the reads whose indices divide (``conv[f // 32, f % 32]``, a
    blocked layout read back: as a flat offset, isl writes it in the loops' context,
    where a split ``f = 32 fo + fi`` makes it ``32 fo + fi``, not a division per vector
    lane, 50x slower, with gathers; the other accesses keep their indices, which code
    generation sees as tile offsets)."""
    if not _reads_flattenable(stmt, program):
        return stmt
    if _divides(program.schedule_of(stmt.name)):
        return _flattened(stmt, program)
    if any(_index_divides(read) for read in _reads(stmt)):
        return _flattened(stmt, program, lambda read: read is not stmt.target
                          and _index_divides(read))
    return stmt


def _reads(stmt: Statement) -> list[TensorRead]:
    """The tensors ``stmt`` reads (its target is written)."""
    found = []

    def visit(node):
        if isinstance(node, TensorRead):
            found.append(node)
        return None

    transform(stmt.value, visit)
    return found


def _index_divides(read: TensorRead) -> bool:
    """Whether an index of ``read`` divides (``//`` or ``%``)."""
    found = []

    def visit(node):
        if isinstance(node, BinOp) and node.op in ("//", "%"):
            found.append(node)
        return None

    for index in read.indices:
        transform(index, visit)
    return not read.flat and bool(found)


def _flat_shape(array) -> list[int] | None:
    """The extents of an array of at least 2 constant dimensions, else None."""
    shape = [_constant(extent) for extent in array.shape]
    return None if None in shape or len(shape) < 2 else shape


def _divides(row: isl.Map) -> bool:
    """Whether recovering an instance from its schedule values takes a division."""
    if row.n_basic_map() > _PIECES:
        return False  # many pieces (split(nparts=) of a symbolic extent): isl's inverse
        # is slow there, and the addresses stay correct without flattening
    # the equalities between the loops and the instance made explicit first: K nested
    # splits' rows have K local variables, and isl's injectivity test and inverse
    # without them take seconds (1.2 s + 1.6 s at K = 10 on a 65536 loop; 0.1 s with)
    row = row.detect_equalities()
    if row.is_empty() or not row.is_injective():
        return False
    found = []
    isl.PwMultiAff.from_map(row.reverse()).foreach_piece(
        lambda _, values: found.extend(values.get_at(k).dim(isl.dim_type.div) > 0
                                       for k in range(values.dim(isl.dim_type.out))))
    return any(found)


def _flattened(stmt: Statement, program: Program, which=None) -> Statement:
    """``stmt`` with its accesses (those ``which`` accepts, by default all) addressed by
    flat offsets."""
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    values = {id(var): value for var, value in stmt.derived}
    derived = list(stmt.derived)
    by_offset: dict[tuple[str, str], IterVar] = {}

    def index_value(index) -> isl.PwAff:
        return values[id(index)] if id(index) in values else space.pw_aff(index)

    def flat(node):
        if not isinstance(node, TensorRead) or node.flat or (which and not which(node)):
            return None
        array = program.array_of(node.tensor)
        shape = _flat_shape(array)
        if shape is None:
            return None
        try:
            offset = space.constant(0)
            for index, stride in zip(node.indices, row_major_strides(array.shape)):
                offset = offset.add(index_value(index).mul(space.constant(stride)))
        except PolyoptError:  # not quasi-affine: keep the indices
            return None
        offset = offset.gist(stmt.domain).coalesce()
        key = (array.name, str(offset))
        if key not in by_offset:
            var = IterVar(f"{array.name}.flat", Const(0, "int64", True),
                          Const(math.prod(shape), "int64", True))
            derived.append((var, offset))
            by_offset[key] = var
        return TensorRead(node.tensor, (by_offset[key],), node.weak, flat=True)

    flat_target = flat(stmt.target)
    target = stmt.target if flat_target is None else flat_target
    value = transform(stmt.value, flat)
    if len(derived) == len(stmt.derived):
        return stmt
    return dataclasses.replace(stmt, target=target, value=value, derived=tuple(derived))


def _constant(extent) -> int | None:
    return extent.value if isinstance(extent, Const) and isinstance(extent.value, int) else None


def row_major_strides(shape) -> list[int | None]:
    """Row-major strides in elements of an array of extents ``shape`` (None where an
    extent after it is not a constant).

    >>> from polyopt.te.expr import Var
    >>> row_major_strides([Const(4, "int64"), Const(6, "int64")])
    [6, 1]
    >>> row_major_strides([Const(4, "int64"), Var("n"), Const(6, "int64")])
    [None, 6, 1]
    """
    strides, running = [], 1
    for extent in reversed(shape):
        strides.append(running)
        constant = _constant(extent)
        running = running * constant if running is not None and constant is not None \
            else None
    return strides[::-1]
