"""Exact access relations of a statement, and the check that accesses stay in bounds.

A read inside ``if_then_else(cond, a, b)`` happens only where ``cond`` holds (for
``a``) or fails (for ``b``); when ``cond`` is affine the access relation is
restricted accordingly, so zero padding written as a guard is exact.

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> P = po.compute((n + 2,), lambda i: po.if_then_else((i >= 1) & (i <= n), A[i - 1], 0.0), name="P")
>>> print(po.create_schedule(P).program.statement("P").reads[0].relation)
[n] -> { P[i] -> A[-1 + i] : 0 < i <= n }
"""

from __future__ import annotations

import islpy as isl

from ..errors import OutOfBoundsError
from ..te.expr import Const, Expr, Select, TensorRead
from ..te.tensor import children
from .affine import AffineSpace
from .memo import IdentityMemo
from .program import Access, AccessKind


def statement_accesses(name: str, domain: isl.Set, target: TensorRead, value: Expr,
                       array_of: dict, space: AffineSpace) -> tuple[Access, ...]:
    """The write of ``target`` and every read in ``value`` (and in ``target``'s indices)."""
    reads: list[tuple[TensorRead, isl.Set]] = []
    _collect_reads(value, space.universe(), space, reads)
    accesses = []
    for read, guard in reads:
        relation = _relation(read, domain.intersect(guard), array_of, space)
        accesses.append(Access(name, relation.get_tuple_name(isl.dim_type.out),
                               AccessKind.READ, relation))
    write = _relation(target, domain, array_of, space)
    accesses.append(Access(name, write.get_tuple_name(isl.dim_type.out), AccessKind.WRITE,
                           write))
    return tuple(accesses)


def read_accesses(stmt, space: AffineSpace) -> list[tuple[TensorRead, Access]]:
    """Each array read in ``stmt``'s value with its access (in the order of ``stmt.reads``)."""
    reads: list[tuple[TensorRead, isl.Set]] = []
    _collect_reads(stmt.value, space.universe(), space, reads)
    return [(read, access) for (read, _), access in zip(reads, stmt.reads)]


def _collect_reads(expr: Expr, guard: isl.Set, space: AffineSpace,
                   out: list[tuple[TensorRead, isl.Set]]) -> None:
    if isinstance(expr, TensorRead):
        out.append((expr, guard))
    if isinstance(expr, Select):
        _collect_reads(expr.cond, guard, space, out)
        affine, residual = space.split_condition(expr.cond)
        _collect_reads(expr.then, guard.intersect(affine), space, out)
        otherwise = guard if residual is not None else guard.subtract(affine)
        _collect_reads(expr.otherwise, otherwise, space, out)
        return
    for child in children(expr):
        _collect_reads(child, guard, space, out)


def _relation(read: TensorRead, domain: isl.Set, array_of: dict,
              space: AffineSpace) -> isl.Map:
    array = array_of[id(read.tensor)]
    relation = isl.Map.from_domain(domain)
    for index in read.indices:
        relation = relation.flat_range_product(isl.Map.from_pw_aff(space.pw_aff(index)))
    relation = relation.intersect_domain(domain)
    return relation.set_tuple_name(isl.dim_type.out, array.name).coalesce()


def array_bounds(array, params: tuple[str, ...]) -> isl.Set:
    """``{ A[x0, x1] : 0 <= x0 < shape0 and 0 <= x1 < shape1 }``."""
    dims = tuple(f"x{d}" for d in range(array.ndim))
    zero = Const(0, "int64", True)
    return AffineSpace(array.name, (), dims, params).box([(zero, e) for e in array.shape])


def check_reads_in_bounds(stmt, array_of: dict, params: tuple[str, ...],
                          context: isl.Set) -> None:
    """Raise :class:`OutOfBoundsError` with an example if any read leaves its array."""
    check_in_bounds(stmt, array_of, params, context)


def check_in_bounds(stmt, array_of: dict, params: tuple[str, ...], context: isl.Set, *,
                    writes: bool = False, origin: str | None = None,
                    hint: str | None = None) -> None:
    """Raise :class:`OutOfBoundsError` if a read (and, with ``writes``, a write) of ``stmt``
    leaves its array for some parameter values of ``context``.

    The message names one offending instance; ``origin`` says where the statement comes
    from (default ``compute '<op>'``) and ``hint`` how to fix it.
    """
    arrays = _BY_NAME.get((array_of,), lambda: {a.name: a for a in array_of.values()})
    for access in (stmt.accesses if writes else stmt.reads):
        array = arrays[access.array]
        outside = access.relation.intersect_params(context).subtract_range(
            array_bounds(array, params))
        if outside.is_empty():
            continue
        verb = "reads" if access.kind is AccessKind.READ else "writes"
        raise OutOfBoundsError(_out_of_bounds_message(
            stmt, array, outside, params, verb, origin or f"compute '{stmt.op}'",
            hint or _TE_HINT))


_BY_NAME = IdentityMemo(size=4)
_TE_HINT = ("Shrink the compute's range, use the same po.var for sizes that must agree, "
            "guard the read with po.if_then_else, or, if the program is only meant for sizes "
            "of at least some value, say so: po.var(\"n\", min=1)")


def _out_of_bounds_message(stmt, array, outside: isl.Map, params: tuple[str, ...], verb: str,
                           origin: str, hint: str) -> str:
    point = outside.wrap().sample_point()
    n_in = outside.dim(isl.dim_type.in_)
    coords = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
              for k in range(outside.dim(isl.dim_type.in_) + outside.dim(isl.dim_type.out))]
    values = {p: point.get_coordinate_val(isl.dim_type.param, k).to_python()
              for k, p in enumerate(params)}
    instance = ", ".join(f"{d}={v}" for d, v in zip(stmt.dims, coords[:n_in]))
    element = ", ".join(str(v) for v in coords[n_in:])
    shape = ", ".join(str(e) for e in array.shape)
    when = ""
    if values:
        when = " when " + ", ".join(f"{p}={v}" for p, v in values.items())
    return (
        f"{origin} {verb} {array.name}[{element}] at {stmt.name}[{instance}]{when}, "
        f"outside the shape ({shape}) of '{array.name}'. {hint}"
    )
