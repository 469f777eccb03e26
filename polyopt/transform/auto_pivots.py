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

from ..errors import IllegalScheduleError, ScheduleError


def pivots(stmt) -> dict[int, str]:
    """``{loop position: pivot expression}``: for a write ``A[.., x_d, ..]`` and a read
    ``A[.., e, ..]`` of the same array whose index ``e`` depends only on loops outside
    ``x_d`` (and parameters), loop ``d`` splits at ``x_d = e`` (the first such read)."""
    found: dict[int, str] = {}
    dims = list(stmt.dims)
    for write in stmt.writes:
        written = _index_affs(write.relation)
        if written is None:
            continue
        for read in stmt.reads:
            index = _index_affs(read.relation) if read.array == write.array else None
            if index is None:
                continue
            for w_aff, r_aff in zip(written, index):
                loop = _single_loop(w_aff, len(dims))
                if loop is None or loop in found or r_aff.plain_is_equal(w_aff):
                    continue
                if all(r_aff.get_coefficient_val(isl.dim_type.in_, d).is_zero()
                       for d in range(loop, len(dims))):
                    text = _expression(r_aff, dims, stmt)
                    if text is not None:
                        found[loop] = text
    return found


def _index_affs(relation: isl.Map) -> list[isl.Aff] | None:
    """The access's index expressions, or None unless each is one affine expression."""
    if not relation.is_single_valued():
        return None
    multi = isl.PwMultiAff.from_map(relation)
    if multi.n_piece() != 1:
        return None
    affs = []
    multi.foreach_piece(lambda _set, aff: affs.append(aff))
    found = affs[0]
    return [found.get_aff(k) for k in range(found.dim(isl.dim_type.out))]


def _single_loop(aff: isl.Aff, depth: int) -> int | None:
    """The loop position ``d`` when ``aff`` is exactly the loop variable ``x_d``."""
    if not aff.get_constant_val().is_zero() or not aff.get_denominator_val().is_one():
        return None
    if any(not aff.get_coefficient_val(isl.dim_type.param, p).is_zero()
           for p in range(aff.dim(isl.dim_type.param))):
        return None
    ones = [d for d in range(depth) if not aff.get_coefficient_val(isl.dim_type.in_, d).is_zero()]
    if len(ones) != 1 or not aff.get_coefficient_val(isl.dim_type.in_, ones[0]).is_one():
        return None
    return ones[0]


def _expression(aff: isl.Aff, dims: list[str], stmt) -> str | None:
    """``aff`` as text over the loop and parameter names (None with a denominator or a
    floor division)."""
    if not aff.get_denominator_val().is_one() or aff.dim(isl.dim_type.div):
        return None
    terms = []
    for kind, names in ((isl.dim_type.in_, dims),
                        (isl.dim_type.param, [aff.get_dim_name(isl.dim_type.param, p)
                                              for p in range(aff.dim(isl.dim_type.param))])):
        for position, name in enumerate(names):
            value = aff.get_coefficient_val(kind, position).to_python()
            if value:
                terms.append(name if value == 1 else f"{value}*{name}")
    constant = aff.get_constant_val().to_python()
    if constant or not terms:
        terms.append(str(constant))
    return " + ".join(terms).replace("+ -", "- ")


def split_map(stmt, params: list[str], found: dict[int, str]) -> str:
    """The ``transform`` relation: a part level (0, 1, 2: before, at, after the pivot)
    before each split loop."""
    outputs, conditions = [], []
    for position, name in enumerate(stmt.dims):
        if position in found:
            part, pivot = f"{name}_part", found[position]
            outputs.append(part)
            conditions.append(f"({name} < {pivot} and {part} = 0 or {name} = {pivot} and "
                              f"{part} = 1 or {name} > {pivot} and {part} = 2)")
        outputs.append(name)
    return (f"[{', '.join(params)}] -> {{ [{', '.join(stmt.dims)}] -> "
            f"[{', '.join(outputs)}] : {' and '.join(conditions)} }}")


def pivot_split(schedule, result, report):
    """``schedule``'s single statement split at its pivots, its innermost loop
    vectorized and its outermost free loop parallel (a new schedule, checked), when
    ``result`` (the schedule found otherwise) vectorizes nothing and the split lets the
    innermost loop be vectorized; else None."""
    program = schedule.program
    if len(program.statements) != 1 or len(program.stages) != 1 or any(
            step.primitive == "vectorize" for step in result.steps):
        return None
    stmt = program.statements[0]
    found = pivots(stmt)
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
        for name in stmt.dims[:-1]:
            if candidate[stage].can_parallel(name):
                candidate[stage].parallel(name, check=False)
                marks.append(f"loop {name} parallel")
                break
        candidate.check()
    except (IllegalScheduleError, ScheduleError) as err:
        report.add(f"index-set splitting at the pivots refused: {str(err).splitlines()[0][:200]}")
        return None
    splits = ", ".join(f"{stmt.dims[d]} at {stmt.dims[d]} = {e}" for d, e in sorted(found.items()))
    report.add(f"instead of the above: index-set splitting ({splits}): each loop in three "
               "parts (before, at, after the pivot that later instances read), in the "
               f"original order; {', '.join(marks)} (no dependence inside a part)")
    report.add(f"{stmt.name}: {text[text.index('{') + 2:-2]}")
    return candidate
