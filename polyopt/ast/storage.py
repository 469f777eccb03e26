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

from ..domain.accesses import statement_accesses
from ..domain.affine import AffineSpace
from ..domain.program import Array, Program, Statement
from ..errors import PolyoptError
from ..te.expr import BinOp, Const, Expr, TensorRead
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
    stmts = [s for s in program.statements if any(a.array == temp.name for a in s.accesses)]
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
        if lower is not None:
            shifted = {s.name: _on_statement(lower, prefix[s.name], s, program) for s in stmts}
            if any(v is None for v in shifted.values()):
                lower = None
        if lower is None:
            lowers.append(None)
            extents.append(temp.shape[dim])
            continue
        lowers.append((lower, shifted))
        extents.append(Const(extent, "int64", True))
    if all(lower is None for lower in lowers) or all(
            _same_extent(e, full, program) for e, full in zip(extents, temp.shape)):
        return None
    array = dataclasses.replace(temp, shape=tuple(extents))
    arrays = tuple(array if a.name == temp.name else a for a in program.arrays)
    offsets = {s.name: [None if lo is None or lo[0].is_cst() and lo[0].get_constant_val()
                        .is_zero() else lo[1][s.name] for lo in lowers] for s in stmts}
    statements = tuple(_reindex(s, array, offsets[s.name], arrays, program)
                       if s.name in offsets else s for s in program.statements)
    loops = _loop_axes(program, stmts[0].name, depth)
    private = any(axis.kind == "parallel" for axis in loops)
    result = program.replace(statements=statements, arrays=arrays)
    return result, Footprint(temp.name, tuple(a.name for a in loops),
                             tuple(None if lo is None else str(lo[0]) for lo in lowers),
                             tuple(extents), private)


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


def _on_statement(lower: isl.Aff, prefix: isl.Map, stmt: Statement, program: Program):
    """``lower`` as an index expression of ``stmt``'s axes and the program's vars."""
    on_prefix = isl.PwAff.from_aff(lower)
    at = isl.PwMultiAff.from_map(prefix)
    value = on_prefix.pullback_pw_multi_aff(at).gist(stmt.domain).coalesce()
    pieces: list[isl.Aff] = []
    value.foreach_piece(lambda _, aff: pieces.append(aff))
    if len(pieces) != 1:
        return None
    return aff_expression(pieces[0], stmt.iter_vars, program.params)


def aff_expression(aff: isl.Aff, axes, params) -> Expr | None:
    """An integer-valued isl affine function as a tensor expression of ``axes`` (the
    input dimensions) and ``params`` (vars), with ``//`` for isl's floor divisions;
    None when a coefficient is not an integer.

    >>> from ..te.expr import Var, IterVar
    >>> i = IterVar("i", Const(0, "int64", True), Var("n"))
    >>> str(aff_expression(isl.Aff("{ S[i] -> [(8 * floor(i / 8) - 1)] }"), (i,), ()))
    '-1 + 8 * (i // 8)'
    """
    if aff.get_denominator_val().to_python() != 1:
        return None
    terms: list[Expr] = []
    constant = aff.get_constant_val().to_python()
    if constant:
        terms.append(Const(constant, "int64", True))
    sources = [(isl.dim_type.in_, axes), (isl.dim_type.param, params)]
    for kind, names in sources:
        for pos, name in enumerate(names):
            coefficient = aff.get_coefficient_val(kind, pos).to_python()
            if coefficient:
                terms.append(_scaled(name, coefficient))
    for pos in range(aff.dim(isl.dim_type.div)):
        coefficient = aff.get_coefficient_val(isl.dim_type.div, pos).to_python()
        if not coefficient:
            continue
        div = aff.get_div(pos)
        denominator = div.get_denominator_val()
        inner = aff_expression(div.scale_val(denominator), axes, params)
        if inner is None:
            return None
        terms.append(_scaled(BinOp.make("//", inner, denominator.to_python()), coefficient))
    if not terms:
        return Const(0, "int64", True)
    result = terms[0]
    for term in terms[1:]:
        result = BinOp.make("+", result, term)
    return result


def _scaled(expr: Expr, coefficient: int) -> Expr:
    return expr if coefficient == 1 else BinOp.make("*", coefficient, expr)


def _shifted(index: Expr, lower: Expr | None, extent: Expr) -> Expr:
    """``index - lower`` (0 in a dimension of extent 1)."""
    if isinstance(extent, Const) and extent.value == 1:
        return Const(0, "int64", True)
    return index if lower is None else BinOp.make("-", index, lower)


def _reindex(stmt: Statement, temp: Array, offsets: list, arrays, program: Program
             ) -> Statement:
    """``stmt`` accessing ``temp[x - lo]`` where it accessed ``temp[x]`` (an index shared
    by several accesses stays shared: code generation recognizes accumulations by it)."""
    memo: dict[int, Expr] = {}

    def moved(index, lo, extent):
        if id(index) not in memo:
            memo[id(index)] = _shifted(index, lo, extent)
        return memo[id(index)]

    def shift(node):
        if isinstance(node, TensorRead) and node.tensor is temp.tensor:
            return TensorRead(node.tensor, tuple(
                moved(index, lo, extent)
                for index, lo, extent in zip(node.indices, offsets, temp.shape)))
        return None

    shifted = shift(stmt.target)
    target = stmt.target if shifted is None else shifted
    value = transform(stmt.value, shift)
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    array_of = {id(a.tensor): a for a in arrays}
    accesses = statement_accesses(stmt.name, stmt.domain, target, value, array_of, space)
    return dataclasses.replace(stmt, target=target, value=value, accesses=accesses)
