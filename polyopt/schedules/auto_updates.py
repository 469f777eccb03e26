"""Dynamic-programming sweeps for ``auto_schedule``: a table filled by exact updates
(``T[i][j] = max(T[i][j], ...)`` of integers, :mod:`polyopt.deps.exact_updates`), one
of them a reduction over a third loop (nussinov's
``table[i][j] = max(table[i][j], table[i][k] + table[k + 1][j])``).

As written, each cell's reduction walks a column (``table[k + 1][j]`` along ``k``) and
no loop can be vectorized.  Since the updates of a cell may run in any order (exactly),
the reduction's two inner loops are interchanged: at step ``k`` of row ``i``, cell
``(i, k)`` is complete and updates every later cell of the row at once,
``T[i][j] = max(T[i][j], T[i][k] + T[k + 1][j])`` for all ``j``: stride-1, vectorized.
The other updates of cell ``(i, j)`` run at step ``j``, just before it is used.  The
result goes through ``transform`` and ``vectorize`` and is checked like any schedule.

>>> import pathlib, polyopt as po
>>> path = pathlib.Path(po.__file__).parents[1] / "benchmarks" / "polybench" / "nussinov.c"
>>> s = po.auto_schedule(po.from_c(str(path), defines={"N": 12}))
>>> print(next(x for x in s.script().splitlines() if 'S4"].transform' in x))
s["S4"].transform("[n] -> { [i, j, k] -> [c0 = i, c1 = k, c2 = 1, c3 = j] }")
"""

from __future__ import annotations

import islpy as isl

from ..deps.exact_updates import exact_update_groups
from ..errors import IllegalScheduleError, ScheduleError


def update_sweep_rows(program) -> tuple[str, list[tuple[str, str]]] | None:
    """``(the reduction's statement, [(statement, map text)])``: two-loop updates
    ``[a, b] -> [a, b, 0, position]``, the three-loop one ``[a, b, c] -> [a, c, 1, b]``;
    None unless every statement is an exact update of one group, all of two loops but
    one of three whose written element does not depend on its last loop."""
    groups = exact_update_groups(program)
    names = [st.name for st in program.statements]
    if len(groups) != 1 or sorted(next(iter(groups.values()))) != sorted(names):
        return None
    deep = [st for st in program.statements if len(st.dims) == 3]
    if len(deep) != 1 or any(len(st.dims) != 2 for st in program.statements
                             if st is not deep[0]):
        return None
    reduction = deep[0]
    if not _same_element_along_last_loop(reduction):
        return None
    params = ", ".join(program.param_names)
    rows = []
    for position, stmt in enumerate(program.statements):
        a, b, *rest = stmt.dims
        values = (f"c0 = {a}, c1 = {rest[0]}, c2 = 1, c3 = {b}" if rest else
                  f"c0 = {a}, c1 = {b}, c2 = 0, c3 = {position}")
        rows.append((stmt.name, f"[{params}] -> {{ [{', '.join(stmt.dims)}] -> [{values}] }}"))
    return reduction.name, rows


def _same_element_along_last_loop(stmt) -> bool:
    """Whether the instances that differ only in their last loop write one element."""
    (write,) = stmt.writes
    written = write.relation.intersect_domain(stmt.domain)
    same = written.apply_range(written.reverse())
    space = stmt.domain.get_space()
    along = isl.Map.from_domain_and_range(stmt.domain, stmt.domain)
    for dim in range(space.dim(isl.dim_type.set) - 1):
        along = along.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim)
    return along.is_subset(same)


def update_sweeps(schedule, report):
    """The kernel with its exact updates swept as the module doc says (a new schedule,
    checked), or None when the pattern does not apply or the check refuses it."""
    found = update_sweep_rows(schedule.program)
    if found is None:
        return None
    reduction, rows = found
    program = schedule.program
    stage_of = {st.main: st.name for st in program.stages}
    candidate = schedule.fork()
    try:
        with candidate.atomic():
            for stage in program.stages:
                if stage.attach.kind != "root":
                    candidate[stage.name].compute_root(check=False)
            for stmt, text in rows:
                candidate[stage_of[stmt]].transform(text, check=False)
            owner = stage_of[reduction]
            for stmt, _ in rows:
                if stmt != reduction:
                    candidate[stage_of[stmt]].compute_with(owner, "c1", check=False)
            candidate.check()
            candidate[owner].vectorize("c3")
    except (IllegalScheduleError, ScheduleError) as err:
        report.add(f"exact updates (max/min of integers) not swept by rows: "
                   f"{str(err).splitlines()[0][:200]}")
        return None
    report.add(f"exact updates (max/min of integers, any order gives the same bits): "
               f"{reduction}'s reduction loop moved above its cell loop, which is "
               "vectorized (stride-1); the other updates of a cell run at the step that "
               "completes it")
    for stmt, text in rows:
        report.add(f"{stmt}: {text[text.index('{') + 2:-2]}")
    return candidate
