"""Unroll-and-jam of rows in the time tiles of a stencil (``po.auto_schedule``).

In a skewed (time-tiled) band of a stencil, ``auto_schedule`` orders each tile as
``t.inner, c1.inner, <statements>, c2.inner`` with the last loop vectorized: each
statement sweeps one row at a time, and a 5-point Jacobi step loads 5 vectors per
vector it stores.  Here the row loop above the statements is split by ``rows`` and its
inner part goes below the vector loop, unrolled (:func:`jam_rows`): the vector loop
then computes ``rows`` adjacent rows per step, and a row read by several of them is
loaded once (Jacobi-2d: 8 loads for 2 stores instead of 10).  The statements' order
inside one row is kept; only rows of one statement at one time step change order,
which is checked here (a refusal leaves the rows one by one).  The full row blocks
run without guards (``ast/tiles.py`` versions an unrolled loop whose start is
``max(0, ..)``).  Nothing in the arithmetic
changes: the numbers are the original's, bit for bit.

>>> import polyopt as po
>>> N, T = po.var("N"), po.var("T")
>>> @po.kernel
... def jacobi_2d(A: po.f64[N, N], B: po.f64[N, N]):
...     for t in range(T):
...         for i in range(1, N - 1):
...             for j in range(1, N - 1):
...                 B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
...         for i in range(1, N - 1):
...             for j in range(1, N - 1):
...                 A[i, j] = B[i, j]
>>> s = po.auto_schedule(jacobi_2d)
>>> [a.name for a in s["S0"].axes][-3:], s["S0"].axes[-1].kind
(['c3', 'c2.inner', 'c1.inner.inner'], 'unrolled')
"""

from __future__ import annotations

from ..errors import IllegalScheduleError, ScheduleError
from .auto_rewrites import first_line

# Rows computed together by default.  Measured side by side (bench_polybench
# --baseline stencil_jam=0, LARGE, one thread, load 1.4): jacobi-2d 2.18x gcc jammed by
# 2, 1.87x not; 4 rows were slower than 2 (in a direct A/B, 0.571 / 0.546 s).
JAM_ROWS = 2
# Statements in the tile at most: each one's vector loop is doubled (jammed, and the
# full row blocks versioned), which costs LLVM time: fdtd-2d (4 statements) compiled in
# 1.44 s of CPU jammed (0.82 s not) for 1.91x / 1.77x gcc; jacobi-2d (2) in 0.65 s.
JAM_MAX_STATEMENTS = 2


def jam_rows(s, owner: str, inner: list[str], after: list[str], sizes: dict,
             statements: int, opts, report) -> list[str]:
    """The point loops ``.., r, <after>, v`` (``r`` the row loop above the statement
    levels ``after``, ``v`` the vector loop) become ``.., r.outer, <after>, v,
    r.inner`` with ``r.inner`` (``stencil_jam`` iterations) unrolled, checked;
    ``inner`` unchanged when the band has no such shape, or (unless ``stencil_jam`` is
    given) holds more than :data:`JAM_MAX_STATEMENTS` statements or has a row tile
    (``sizes``: point loop -> tile size) that the rows do not divide, or when
    ``stencil_jam`` is 0 or 1."""
    rows = JAM_ROWS if opts.stencil_jam is None else opts.stencil_jam
    if rows <= 1 or not opts.distribute or len(inner) < len(after) + 2:
        return inner
    at = len(inner) - len(after) - 2
    if not after or inner[at + 1:-1] != after:
        return inner  # (the statements are not distributed above the vector loop)
    if opts.stencil_jam is None and statements > JAM_MAX_STATEMENTS:
        report.add(f"rows not jammed: {statements} statements in the tile (at most "
                   f"{JAM_MAX_STATEMENTS}: each one's vector code doubles; stencil_jam=2 "
                   "jams them)")
        return inner
    row, vector = inner[at], inner[-1]
    if opts.stencil_jam is None and sizes.get(row, rows) % rows:
        report.add(f"rows not jammed: the tile of {row} ({sizes[row]}) is no multiple of "
                   f"{rows} (a partial row block in every tile runs guarded, not "
                   "vectorized)")
        return inner
    stage = s[owner]
    try:
        with s.atomic():
            outer, unrolled = stage.split(row, factor=rows, check=False)
            order = inner[:at] + [outer.name] + after + [vector, unrolled.name]
            stage.reorder(*order, check=False)
            stage.unroll(unrolled.name, check=False)
            stage.vectorize(vector, check=False)
            s.check()
    except (IllegalScheduleError, ScheduleError) as err:
        report.add(f"rows of {row} not jammed: {first_line(err)}")
        return inner
    report.add(f"rows jammed: {row} split by {rows}, its inner part unrolled below the "
               f"vector loop {vector}, so {rows} adjacent rows share their loads "
               "(unroll-and-jam, checked; stencil_jam=0 leaves it out)")
    return order
