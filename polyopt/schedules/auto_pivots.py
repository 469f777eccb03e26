"""Index-set splitting for ``auto_schedule``: a loop split where a pivot row or column
is written (Floyd-Warshall's ``path[i][k]`` and ``path[k][j]``).

In ``path[i][j] = min(path[i][j], path[i][k] + path[k][j])`` loop ``j`` carries a
dependence only through ``j = k``: that instance writes ``path[i][k]``, which the
later ones read.  Split into ``j < k``, ``j = k`` and ``j > k`` (a new loop level
before ``j`` numbering the parts, in their original order), each part is free of
dependences: ``j``'s loops are vectorized, and likewise ``i`` split at ``i = k`` runs in
parallel.  The pivots come from the accesses: a read whose index is a function of
outer loops (``k``) where the write's index is the loop itself (``j``).  The split is
an order-preserving ``transform``; the marks are checked like any schedule's.

>>> import pathlib, polyopt as po
>>> path = pathlib.Path(po.__file__).parents[1] / "benchmarks" / "polybench"
>>> s = po.auto_schedule(po.from_c(str(path / "floyd-warshall.c"), defines={"N": 12}))
>>> print(s.script().splitlines()[0])  # doctest: +ELLIPSIS
s["S0"].transform("[n] -> { [k, i, j] -> [k, i_part, i, j_part, j] : ... }")
"""

from __future__ import annotations

import islpy as isl

from ..deps.describe import aff_text
from ..domain.affine import output_affs
from ..errors import PolyoptError
from ..names import NameGenerator


def pivots(stmt, params: tuple[str, ...] = ()) -> dict[int, str]:
    """``{loop position: pivot expression}``: for a write ``A[.., x_d, ..]`` and a read
    ``A[.., e, ..]`` of the same array whose index ``e`` depends only on loops outside
    ``x_d`` (and parameters), loop ``d`` splits at ``x_d = e`` (the first such read)."""
    found: dict[int, str] = {}
    dims = list(stmt.dims)
    for write in stmt.writes:
        written = output_affs(write.relation, params)
        for read in stmt.reads if written is not None else ():
            index = output_affs(read.relation, params) if read.array == write.array else None
            for w_aff, r_aff in zip(written, index or ()):
                loop = _single_loop(w_aff, len(dims))
                if loop is None or loop in found or r_aff.plain_is_equal(w_aff) or \
                        not _plain(r_aff):
                    continue
                if all(r_aff.get_coefficient_val(isl.dim_type.in_, d).is_zero()
                       for d in range(loop, len(dims))):
                    found[loop] = aff_text(r_aff, dims)
    return dict(sorted(found.items()))


def _plain(aff: isl.Aff) -> bool:
    """Whether ``aff`` is affine with integer coefficients (no floor division)."""
    return aff.get_denominator_val().is_one() and not aff.dim(isl.dim_type.div)


def _single_loop(aff: isl.Aff, depth: int) -> int | None:
    """The loop position ``d`` when ``aff`` is exactly the loop variable ``x_d``."""
    if not _plain(aff) or not aff.get_constant_val().is_zero():
        return None
    if any(not aff.get_coefficient_val(isl.dim_type.param, p).is_zero()
           for p in range(aff.dim(isl.dim_type.param))):
        return None
    ones = [d for d in range(depth) if not aff.get_coefficient_val(isl.dim_type.in_, d).is_zero()]
    if len(ones) != 1 or not aff.get_coefficient_val(isl.dim_type.in_, ones[0]).is_one():
        return None
    return ones[0]


def split_map(stmt, params: list[str], found: dict[int, str]) -> str:
    """The ``transform`` relation: a part level (0, 1, 2: before, at, after the pivot)
    before each split loop, named ``<loop>_part`` (or a fresh name)."""
    names = NameGenerator(reserved=set(stmt.dims) | set(params))
    outputs, conditions = [], []
    for position, name in enumerate(stmt.dims):
        if position in found:
            part, pivot = names.fresh(f"{name}_part"), found[position]
            outputs.append(part)
            conditions.append(f"({name} < {pivot} and {part} = 0 or {name} = {pivot} and "
                              f"{part} = 1 or {name} > {pivot} and {part} = 2)")
        outputs.append(name)
    return (f"[{', '.join(params)}] -> {{ [{', '.join(stmt.dims)}] -> "
            f"[{', '.join(outputs)}] : {' and '.join(conditions)} }}")


def pivot_split(schedule, result, report, *, parallel: bool = True):
    """``schedule``'s single statement split at its pivots, its innermost loop
    vectorized and (``parallel``) its outermost free loop parallel: a new schedule,
    checked, when ``result`` (the schedule found otherwise) vectorizes nothing and the
    split lets the innermost loop be vectorized; else None."""
    program = schedule.program
    if len(program.statements) != 1 or len(program.stages) != 1 or any(
            step.primitive == "vectorize" for step in result.steps):
        return None
    stmt = program.statements[0]
    found = pivots(stmt, tuple(program.param_names))
    if not found:
        return None
    stage = program.stages[0].name
    candidate = schedule.fork()
    text = split_map(stmt, list(program.param_names), found)
    marks = []  # what the split made free
    try:
        candidate[stage].transform(text, check=False)
        candidate.check()
        innermost = stmt.dims[-1]
        if not candidate[stage].can_vectorize(innermost):
            return None  # the gain is the vector loop (a parallel loop alone: as before)
        candidate[stage].vectorize(innermost, check=False)
        marks.append(f"loop {innermost} vectorized")
        for name in stmt.dims[:-1] if parallel else ():
            if candidate[stage].can_parallel(name):
                candidate[stage].parallel(name, check=False)
                marks.append(f"loop {name} parallel")
                break
        candidate.check()
    except PolyoptError as err:  # an optional step: the schedule found otherwise stays
        report.add(f"index-set splitting at the pivots refused: {str(err).splitlines()[0][:200]}")
        return None
    splits = ", ".join(f"{stmt.dims[d]} at {stmt.dims[d]} = {e}" for d, e in found.items())
    report.add(f"instead of the above: index-set splitting ({splits}): each such loop in "
               "up to three parts (before, at, after the pivot: the instance that writes "
               "what the others read), in the original order; "
               f"{', '.join(marks)} (no dependence inside a part)")
    report.add(f"{stmt.name}: {text[text.index('{') + 2:-2]}")
    return candidate
