"""Storage contraction: a temporary holds only what one iteration of its loops touches.

A temporary (a cache stage, a stage computed at a loop of its reader) is allocated
with the shape of its exact footprint per iteration of the loops that enclose every
access to it (its *attach loops*).  The footprint comes from the access relations:
for each dimension, a lower bound affine in the attach loops (one of the pieces of
the exact minimum) and the largest extent above it over every iteration and size.
Each access ``T[x]`` becomes ``T[x - lo]``.  The contraction is checked to be exact:
every element read in an iteration of the attach loops was written earlier in that
same iteration (otherwise the temporary keeps its full shape); a dimension without a
finite bounded extent keeps its full extent.

A temporary whose attach loops include a parallel loop is ``private``: each thread
gets its own buffer.

>>> import polyopt as po
>>> A = po.placeholder((64, 64), name="A"); B = po.placeholder((64, 64), name="B")
>>> C = po.ops.matmul(A, B)
>>> s = po.create_schedule(C)
>>> CL = s.cache_write(C, "local")
>>> io, jo, ii, ji = s[C].tile(*C.op.axis, 8, 32)
>>> s[CL].compute_at(s[C], jo)
>>> func = po.lower(s, [A, B, C])
>>> [str(e) for e in func.temps[0].shape], func.storage["C_local"].loops
(['8', '32'], ('i.outer', 'j.outer'))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import islpy as isl

from ..domain.affine import AffineSpace
from ..domain.program import Array, Program, Statement
from ..errors import PolyoptError
from ..te.expr import Const, Expr, IterVar, TensorRead
from ..te.substitute import transform


@dataclass(frozen=True, slots=True)
class Footprint:
    """How a temporary was contracted: ``extents[d]`` elements from ``lower[d]`` (an
    affine function of the attach loops, as isl text; None: the full dimension from 0)
    per iteration of the attach ``loops``; ``private``: one buffer per thread."""

    array: str
    loops: tuple[str, ...]
    lower: tuple[str | None, ...]
    extents: tuple[Expr, ...]
    private: bool


def contract_storage(program: Program, temps: tuple[Array, ...]
                     ) -> tuple[Program, tuple[Array, ...], dict[str, Footprint]]:
    """The program with each temporary of ``temps`` re-indexed into its footprint box,
    the contracted arrays, and a :class:`Footprint` per temporary."""
    footprints = {}
    new_temps = []
    for temp in temps:
        contracted = _contract(program, temp)
        if contracted is None:
            new_temps.append(program.array(temp.name))
            continue
        program, footprint = contracted
        footprints[temp.name] = footprint
        new_temps.append(program.array(temp.name))
    return program, tuple(new_temps), footprints


def _contract(program: Program, temp: Array):
    stmts = list(program.statements_accessing(temp.name))
    if not stmts or any(program.schedule_of(s.name).is_empty() for s in stmts):
        return None
    depth = _deepest_private_depth(program, stmts, temp.name)
    prefix = {s.name: _prefix_map(program.schedule_of(s.name), depth) for s in stmts}
    footprint = None
    for stmt in stmts:
        for access in stmt.accesses:
            if access.array == temp.name:
                part = prefix[stmt.name].reverse().apply_range(access.relation)
                footprint = part if footprint is None else footprint.union(part)
    footprint = footprint.intersect_params(program.context).coalesce()
    lowers, extents = [], []
    for dim in range(temp.ndim):
        lower, extent = _box_dimension(footprint, dim)
        lowers.append(lower)
        extents.append(temp.shape[dim] if lower is None else Const(extent, "int64", True))
    if all(lower is None for lower in lowers) or all(
            _same_extent(e, full, program) for e, full in zip(extents, temp.shape)):
        return None
    array = dataclasses.replace(temp, shape=tuple(extents))
    arrays = tuple(array if a.name == temp.name else a for a in program.arrays)
    statements = []
    names = {s.name for s in stmts}
    for stmt in program.statements:
        if stmt.name in names:
            on_stmt = [None if lo is None or _is_zero(lo) else
                       _on_statement(lo, prefix[stmt.name], stmt) for lo in lowers]
            stmt = _reindex(stmt, array, on_stmt, program)
        statements.append(stmt)
    loops = _loop_axes(program, stmts[0].name, depth)
    private = any(axis.kind == "parallel" for axis in loops)
    result = program.replace(statements=tuple(statements), arrays=arrays)
    return result, Footprint(temp.name, tuple(a.name for a in loops),
                             tuple(None if lo is None else str(lo) for lo in lowers),
                             tuple(extents), private)


def _is_zero(aff: isl.Aff) -> bool:
    return aff.is_cst() and aff.get_constant_val().is_zero()


def _same_extent(extent: Expr, full: Expr, program: Program) -> bool:
    if extent is full:
        return True
    space = AffineSpace("S", (), (), program.param_names)
    try:
        return space.pw_aff(extent).is_equal(space.pw_aff(full))
    except PolyoptError:
        return False


def _shared_depth(program: Program, names: list[str]) -> int:
    """How many leading schedule dimensions every statement in ``names`` shares: static
    entries agree and loop entries are loops of all of them; ends after a loop."""
    rows = [program.schedule_of(n) for n in names]
    width = rows[0].dim(isl.dim_type.out)
    depth = 0
    for dim in range(width):
        axes = [program.axis_at(n, dim) for n in names]
        if all(a is None for a in axes):
            values = {_fixed(row, dim) for row in rows}
            if len(values) != 1 or None in values:
                break
        elif any(a is None for a in axes):
            break
        else:
            depth = dim + 1
    return depth


def _deepest_private_depth(program: Program, stmts, array: str) -> int:
    """The most schedule dimensions whose iterations each use their own values of
    ``array`` (0: only the whole program does)."""
    shared = _shared_depth(program, [s.name for s in stmts])
    loops = [d + 1 for d in range(shared) if program.axis_at(stmts[0].name, d) is not None]
    for depth in reversed(loops):
        if _values_stay_inside(program, stmts, array, depth):
            return depth
    return 0


def _fixed(row: isl.Map, dim: int):
    value = row.range().plain_get_val_if_fixed(isl.dim_type.set, dim)
    return None if value.is_nan() else value.to_python()


def _prefix_map(row: isl.Map, depth: int) -> isl.Map:
    """{ instance -> its first ``depth`` schedule values }."""
    width = row.dim(isl.dim_type.out)
    return row.project_out(isl.dim_type.out, depth, width - depth)


def _loop_axes(program: Program, stmt: str, depth: int):
    return [program.axis_at(stmt, d) for d in range(depth) if program.axis_at(stmt, d)]


def _values_stay_inside(program: Program, stmts, array: str, depth: int) -> bool:
    """Whether every element read in an iteration of the first ``depth`` schedule
    dimensions was written before, in that same iteration (then no value crosses from
    one iteration to another, and a per-iteration buffer computes the same)."""
    reads = writes = None
    for stmt in stmts:
        row = program.schedule_of(stmt.name)
        for access in stmt.accesses:
            if access.array != array:
                continue
            part = isl.UnionMap.from_map(row.reverse().apply_range(access.relation))
            if access.kind.value == "read":
                reads = part if reads is None else reads.union(part)
            else:
                writes = part if writes is None else writes.union(part)
    if writes is None:
        return False
    if reads is None:
        return True
    space = program.schedule_of(stmts[0].name).get_space().range()
    earlier = isl.Map.lex_gt(space)  # { later -> earlier }
    for dim in range(depth):
        earlier = earlier.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim)
    # [read time -> element] -> write time: of that element, and earlier in the iteration
    writers = reads.range_map().apply_range(writes.reverse())
    allowed = reads.domain_map().apply_range(isl.UnionMap.from_map(earlier))
    covered = writers.intersect(allowed).domain()
    return reads.wrap().intersect_params(program.context).is_subset(covered)


def _box_dimension(footprint: isl.Map, dim: int):
    """``(lower, extent)``: an affine lower bound of dimension ``dim`` of the elements
    touched per iteration, with the smallest constant extent; (None, None) when no piece
    of the exact minimum bounds it with a finite extent."""
    n_out = footprint.dim(isl.dim_type.out)
    values = footprint.project_out(isl.dim_type.out, dim + 1, n_out - dim - 1) \
        .project_out(isl.dim_type.out, 0, dim)
    candidates: list[isl.Aff] = []
    values.lexmin_pw_multi_aff().get_pw_aff(0).foreach_piece(
        lambda _, aff: candidates.append(aff))
    best = (None, None)
    for lower in candidates:
        above = values.sum(isl.Map.from_pw_aff(isl.PwAff.from_aff(lower.neg()))).range()
        if above.is_empty():
            continue
        var = isl.Aff.var_on_domain(isl.LocalSpace.from_space(above.get_space()),
                                    isl.dim_type.set, 0)
        low, high = above.min_val(var), above.max_val(var)
        if low.is_infty() or low.is_neginfty() or high.is_infty() or low.to_python() < 0:
            continue
        extent = high.to_python() + 1
        if best[1] is None or extent < best[1]:
            best = (lower, extent)
    return best


def _on_statement(lower: isl.Aff, prefix: isl.Map, stmt: Statement) -> isl.PwAff:
    """``lower`` (a function of the attach loops) as a function of ``stmt``'s instance."""
    at = isl.PwMultiAff.from_map(prefix)
    return isl.PwAff.from_aff(lower).pullback_pw_multi_aff(at).gist(stmt.domain).coalesce()


def _reindex(stmt: Statement, temp: Array, lowers: list, program: Program) -> Statement:
    """``stmt`` accessing ``temp[x - lo]`` where it accessed ``temp[x]``: each shifted
    index is a derived variable (its exact function of the instance, which the loop AST
    computes from the loop variables); a dimension of extent 1 is indexed by 0.  An
    index shared by several accesses stays shared (code generation recognizes
    accumulations by it)."""
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    derived = list(stmt.derived)
    memo: dict[tuple[int, int], Expr] = {}

    def moved(index: Expr, dim: int) -> Expr:
        lower, extent = lowers[dim], temp.shape[dim]
        if isinstance(extent, Const) and extent.value == 1:
            return Const(0, "int64", True)
        if lower is None and isinstance(index, (IterVar, Const)):
            return index
        key = (id(index), dim)
        if key not in memo:  # isl writes it in terms of the loops (i % 6 may be i_inner)
            var = IterVar(f"{temp.name}.{dim}", Const(0, "int64", True), extent)
            value = space.pw_aff(index)
            derived.append((var, value if lower is None else value.sub(lower).coalesce()))
            memo[key] = var
        return memo[key]

    def shift(node):
        if isinstance(node, TensorRead) and node.tensor is temp.tensor:
            return TensorRead(node.tensor, tuple(moved(index, dim)
                                                 for dim, index in enumerate(node.indices)))
        return None

    shifted = shift(stmt.target)
    target = stmt.target if shifted is None else shifted
    value = transform(stmt.value, shift)
    accesses = tuple(dataclasses.replace(a, relation=_shifted_relation(a.relation, lowers, temp))
                     if a.array == temp.name else a for a in stmt.accesses)
    return dataclasses.replace(stmt, target=target, value=value, accesses=accesses,
                               derived=tuple(derived))


def _shifted_relation(relation: isl.Map, lowers: list, temp: Array) -> isl.Map:
    """``{ S[x] -> T[e - lo(x)] }`` for ``relation = { S[x] -> T[e] }``."""
    domain = relation.domain()
    shift = None
    for lower in lowers:
        piece = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(domain.get_space())) \
            if lower is None else lower.neg()
        piece = isl.PwMultiAff.from_pw_aff(piece)
        shift = piece if shift is None else shift.flat_range_product(piece)
    shift = isl.Map.from_pw_multi_aff(shift).set_tuple_name(isl.dim_type.out, temp.name)
    return relation.sum(shift.intersect_domain(domain)).coalesce()
