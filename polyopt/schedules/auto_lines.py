"""Line sweeps for ``auto_schedule``: a recurrence along the innermost loop (ADI's
``p[i][j]`` from ``p[i][j - 1]``) next to an outer loop that carries nothing (the
lines ``i`` are independent).  As written, each step waits for the previous one (a
division's latency per point); Pluto and Polly keep that order.  Here the free loop is
strip-mined by a block of lines and its point loop goes innermost, under the
recurrence: the block's lines advance side by side, independent chains that overlap
(ADI: 1.1x -> 1.7-2.2x gcc), and the statements of a step each get that innermost
loop of their own.

>>> import pathlib, polyopt as po
>>> adi = pathlib.Path(po.__file__).parents[1] / "benchmarks" / "polybench" / "adi.c"
>>> s = po.auto_schedule(po.from_c(str(adi), defines={"N": 12, "TSTEPS": 2}))
>>> print(next(x for x in s.script().splitlines() if 'S0"].transform' in x))
s["S0"].transform("[n, tsteps] -> { [t, i] -> [t, 0, o2, 0, 2, 0, i] : -3 + i <= 4o2 <= i }")
"""

from __future__ import annotations

import islpy as isl

from .auto_affine import Rows
from .auto_levels import tileable_run, zero_distance_levels

LINES = 4  # lines side by side (see report_lines)


def interleaved_lines(program, deps, rows: Rows, groups: list, report,
                      block: int = LINES) -> tuple[Rows, dict]:
    """``(rows, lines)``: in each nest (``groups``) without a tileable band whose
    innermost loop carries a dependence while an outer loop ``i`` of every statement
    carries none, ``i`` becomes ``floor(i / block)`` and ``i`` itself a new innermost
    level; ``lines[first statement] = level of i``.  Rows unchanged if no nest has one."""
    lines = {}
    for group in groups:
        sub = rows.subset(group)
        if tileable_run(sub) is not None:
            continue
        loops = [k for k in range(sub.depth)
                 if not all(isinstance(r[k], int) for r in sub.rows.values())]
        if len(loops) < 2 or loops[-1] in zero_distance_levels(program, deps, sub, loops[-1]):
            continue
        free = [k for k in loops[:-1]
                if all(not isinstance(r[k], int) for r in sub.rows.values())]
        free = [k for k in free[-1:] if k in zero_distance_levels(program, deps, sub, k)]
        if free:
            lines[group[0]] = (group, free[-1])
    if not lines:
        return rows, {}
    new = {}
    for name, row in rows.rows.items():
        new[name] = list(row) + [0]
    for first, (group, level) in lines.items():
        for name in group:
            value = rows.rows[name][level]
            new[name][level] = value.scale_down_val(
                isl.Val.int_from_si(value.get_ctx(), block)).floor()
            new[name][-1] = value
        report.add(f"{', '.join(group)}: the innermost loop carries a recurrence and level "
                   f"{level} none: {block} lines side by side (level {level} strip-mined, "
                   "its points innermost, one loop per statement)")
    keys = None if rows.keys is None else {n: k + [None] for n, k in rows.keys.items()}
    result = Rows(new, rows.permutable + [False], rows.band + [None], keys)
    return result, {first: level for first, (_, level) in lines.items()}


def report_lines(s, owner: str, level: int, report) -> None:
    """The new innermost loop (the lines) is left as it is: its ``LINES`` iterations
    are independent chains that the out-of-order core overlaps.  Not unrolled (ADI, 50
    steps, one run: 1.74x gcc unrolled, 1.69x not, for twice the compile time), not
    vectorized (the lines are rows, ADI's ``p[i][j]``: a vector of them is a gather
    and a scatter per access; blocks of 8 to 1000 lines vectorized ran at 0.5-1.0x
    gcc, 4 lines at 1.4x, 8 at 0.9x: more rows than the prefetchers follow), not
    parallel (the block loop runs inside the sweeps' outer time loop, and checking the
    mark costs more than the ``auto_schedule`` budget on ADI's 14 statements)."""
    axes = [a.name for a in s[owner].axes]
    report.add(f"innermost loop {axes[-1]}: {LINES} independent chains side by side in "
               f"loop {axes[level]} (not vectorized: a vector of rows is a gather)")
