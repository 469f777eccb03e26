"""Packing with a layout change: store a computed tensor's elements in another order.

``relayout(program, T, "{ [i, k] -> [floor(i / 6), k, i mod 6] }")`` stores element
``T[i, k]`` at ``T[i // 6, k, i % 6]``; every statement that reads or writes ``T`` is
re-indexed, so the values are the same.  The layout must map the elements of ``T``
one-to-one (checked); the new shape is the box of their images.  With ``cache_read``
(``s.cache_read(A, "global", [C], layout=...)``) this packs panels as BLAS libraries
do: here the rows of a 6-row tile of A become contiguous for each k.

>>> import polyopt as po
>>> A = po.placeholder((12, 5), name="A")
>>> B = po.compute((12, 5), lambda i, k: A[i, k] * 2, name="B")
>>> s = po.create_schedule(B)
>>> AP = s.cache_read(A, "global", [B], layout="{ [i, k] -> [floor(i / 6), k, i mod 6] }")
>>> [str(e) for e in s.program.array("A_global").shape]
['2', '5', '6']
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.accesses import array_bounds
from ..domain.affine import aff_expression, output_affs
from ..domain.program import Program
from ..errors import InternalError, InvalidArgumentError
from ..te.expr import BinOp, Const, Expr, TensorRead
from ..te.substitute import transform
from ..te.tensor import Tensor
from .rewrite import make_statement


def relayout(program: Program, tensor: Tensor, layout: str) -> Program:
    """``program`` with the computed tensor ``tensor`` stored in the order ``layout`` (an
    isl map from its indices to the new ones)."""
    array = program.array_of(tensor)
    if array.role != "compute":
        raise InvalidArgumentError(
            f"a layout applies to an array the program computes (a cache), not to "
            f"'{array.name}', which the caller passes")
    functions = _functions(layout, array, program)
    bounds = array_bounds(array, program.param_names)
    mapping = _as_map(functions, bounds, program)
    if not mapping.is_injective():
        raise InvalidArgumentError(
            f"the layout {layout!r} puts two elements of '{array.name}' at the same place; "
            "use a one-to-one map (e.g. [i, k] -> [floor(i/6), k, i mod 6])")
    image = mapping.range()
    shape, shifts = [], []
    for dim in range(image.dim(isl.dim_type.set)):
        low = _bound(image, dim, program, upper=False)
        high = _bound(image, dim, program, upper=True)
        if low is None or high is None:
            raise InvalidArgumentError(
                f"dimension {dim} of the layout {layout!r} has no bounds of one affine piece "
                f"over '{array.name}'; use a simpler map")
        shifts.append(low)
        shape.append(_plus(high, 1) if _is_zero(low) else
                     _plus(BinOp.make("-", high, low), 1))
    moved = dataclasses.replace(array, shape=tuple(shape))
    arrays = tuple(moved if a.name == array.name else a for a in program.arrays)

    def reindex(node):
        if isinstance(node, TensorRead) and node.tensor is tensor:
            return TensorRead(tensor, tuple(
                _apply(f, node.indices, program) if _is_zero(shift) else
                BinOp.make("-", _apply(f, node.indices, program), shift)
                for f, shift in zip(functions, shifts)))
        return None

    statements = []
    for stmt in program.statements:
        if any(a.array == array.name for a in stmt.accesses):
            target = reindex(stmt.target) if stmt.target.tensor is tensor else stmt.target
            stmt = make_statement(program, arrays, stmt.name, stmt.iter_vars, stmt.dims,
                                  stmt.domain, target, transform(stmt.value, reindex), stmt.op)
        statements.append(stmt)
    return program.replace(statements=tuple(statements), arrays=arrays)


def _functions(layout: str, array, program: Program) -> list[isl.Aff]:
    """The layout's output dimensions, each one affine function of the indices."""
    try:
        mapping = isl.Map(layout) if isinstance(layout, str) else layout
    except isl.Error as err:
        raise InvalidArgumentError(f"cannot parse the layout {layout!r}: {err}") from None
    if mapping.dim(isl.dim_type.in_) != array.ndim:
        raise InvalidArgumentError(
            f"the layout {layout!r} takes {mapping.dim(isl.dim_type.in_)} indices but "
            f"'{array.name}' has {array.ndim} dimensions")
    unknown = set(mapping.get_space().get_var_names(isl.dim_type.param)) - set(
        program.param_names)
    if unknown or not mapping.is_single_valued():
        raise InvalidArgumentError(
            f"the layout {layout!r} must be a function of the indices "
            f"{'(unknown vars: ' + ', '.join(sorted(unknown)) + ')' if unknown else ''}")
    functions = output_affs(mapping, program.param_names)
    if functions is None:
        raise InvalidArgumentError(
            f"an output of the layout {layout!r} is piecewise; use one quasi-affine "
            "expression per output (floor, mod and constants are fine)")
    return functions


def _as_map(functions: list[isl.Aff], bounds: isl.Set, program: Program) -> isl.Map:
    result = None
    for aff in functions:
        piece = isl.Map.from_pw_aff(isl.PwAff.from_aff(aff))
        result = piece if result is None else result.flat_range_product(piece)
    domain = bounds.reset_tuple_id().intersect_params(program.context)
    return result.align_params(domain.get_space()).intersect_domain(domain)


def _bound(image: isl.Set, dim: int, program: Program, *, upper: bool) -> Expr | None:
    """The least (``upper``: greatest) value of dimension ``dim`` of ``image`` as an
    expression of the vars when it has one affine piece, else the bound over all sizes
    when it is finite (e.g. 5 for ``i mod 6``), else None."""
    value = image.dim_max(dim) if upper else image.dim_min(dim)
    pieces: list[isl.Aff] = []
    value.gist_params(program.context).foreach_piece(lambda _, aff: pieces.append(aff))
    if len(pieces) == 1:
        return aff_expression(pieces[0], (), program.params)
    var = isl.Aff.var_on_domain(isl.LocalSpace.from_space(image.get_space()),
                                isl.dim_type.set, dim)
    extreme = image.max_val(var) if upper else image.min_val(var)
    if extreme.is_infty() or extreme.is_neginfty() or extreme.is_nan():
        return None
    return Const(extreme.to_python(), "int64", True)


def _apply(function: isl.Aff, indices, program: Program) -> Expr:
    result = aff_expression(function, indices, program.params)
    if result is None:
        # (a layout is checked one-to-one on every element first: integer functions)
        raise InternalError(f"the layout function {function} has a rational coefficient")
    return result


def _plus(expr: Expr, constant: int) -> Expr:
    """``expr + constant`` with the constants folded (shapes print as ``M // 6``)."""
    if isinstance(expr, Const) and isinstance(expr.value, int):
        return Const(expr.value + constant, "int64", True)
    if isinstance(expr, BinOp) and expr.op in "+-" and isinstance(expr.b, Const) \
            and isinstance(expr.b.value, int):
        inner = expr.b.value if expr.op == "+" else -expr.b.value
        return _plus(expr.a, inner + constant)
    if constant == 0:
        return expr
    return BinOp.make("+" if constant > 0 else "-", expr, abs(constant))


def _is_zero(expr: Expr) -> bool:
    return isinstance(expr, Const) and expr.value == 0
