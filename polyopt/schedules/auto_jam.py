"""Rows side by side for matrix-vector kernels (unroll-and-jam of rows) in
``auto_schedule``.

A matrix-vector product streams its matrix once; it runs at the speed memory delivers
the matrix.  One row at a time, each dot product ``tmp[i] += A[i][j] * x[j]`` also
reloads ``x`` and waits on its accumulators, and ``y[j] += A[i][j] * tmp[i]`` loads
and stores all of ``y`` per row: atax streamed ``A`` at about 13 GB/s.  Here the
kernel runs in the source order, distributed (``auto_distribute``: each statement in a
loop nest of its own, the stride-1 loop innermost), and the outer loop of every nest
is strip-mined by ``rows``, its point loop unrolled innermost: ``for i0: for j: rows
i0..i0+7``.  LLVM vectorizes ``j`` (``target/llvm/row_streams``): ``x[j]`` is loaded
once for 8 rows, 8 dot products accumulate side by side, ``y[j]`` is loaded and
stored once per 8 rows.  Each element's updates keep their order (``y[j]`` still adds
row 0, 1, 2... in turn), so only the documented reassociation of a reduction's
accumulation changes rounding.  The schedule is checked; an illegal one (trisolv's
rows read each other's results) is dropped.

Measured on one thread against gcc, side by side with ``jam_rows=0`` in one run
(``bench_polybench.py --baseline jam_rows=0``, load 3): atax 1.87x -> 2.88x, bicg 5.85x
-> 9.19x, gemver 2.60x -> 4.23x, mvt 4.07x -> 6.78x.  atax by hand: 4 rows 2.08 ms, 8
rows 1.50-1.73 ms, 16 rows 1.75 ms.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def mv(A: po.f64[N, N], x: po.f64[N], y: po.f64[N]):
...     for i in range(N):
...         for j in range(N):
...             y[j] += A[i, j] * x[i]
>>> s = jammed_rows(po.create_schedule(mv), [])
>>> print(s.script().splitlines()[-2:])
['s["S0"].reorder("i.outer", "c2", "j", "i.inner")', 's["S0"].unroll("i.inner")']
"""

from __future__ import annotations

import islpy as isl

from ..errors import IllegalScheduleError, ScheduleError
from .auto_distribute import apply_rows, distributed_rows
from .auto_rewrites import first_line

ROWS = 8  # rows side by side (atax: 4 rows 2.08 ms, 8 rows 1.50-1.73, 16 rows 1.75)


def matrix_vector(program) -> bool:
    """Whether every statement has at most two loops and each one in two loops either
    updates a vector (``y[i] += A[i][j] * x[j]``: it reads the element it writes) or
    updates a matrix element by element (gemver's ``A[i][j] += u1[i] * v1[j]``: all its
    accesses to matrices are to that element), using each matrix element once; and at
    least one updates a vector along the matrix's rows (``y[j] += A[i][j] * t[i]``).
    Dot products alone stream at full speed already (gesummv: 0.91 ms, 1.18 ms with 8
    rows side by side, in one run)."""
    depths = [len(st.dims) for st in program.statements]
    if not depths or max(depths) != 2:
        return False
    vector_update = False
    for stmt in program.statements:
        if len(stmt.dims) != 2:
            continue
        writes = [a for a in stmt.accesses if a.kind == "write"]
        if len(writes) != 1:
            return False
        write = writes[0].relation.intersect_domain(stmt.domain)
        matrices = [a.relation.intersect_domain(stmt.domain) for a in stmt.accesses
                    if program.array(a.array).ndim >= 2]
        if not matrices or not all(m.is_injective() for m in matrices):
            return False
        updates = any(a.kind != "write" and a.array == writes[0].array and
                      a.relation.intersect_domain(stmt.domain).is_equal(write)
                      for a in stmt.accesses)
        ndim = program.array(writes[0].array).ndim
        if ndim == 1 and updates:
            vector_update = vector_update or any(_along_rows(write, m) for m in matrices)
        elif not (ndim == 2 and all(m.is_equal(matrices[0]) for m in matrices)):
            return False
    return vector_update


def _along_rows(write, matrix) -> bool:
    """Whether the vector element written is the matrix element's column (``y[j] +=
    A[i][j] * t[i]``: ``y`` is loaded and stored once per row unless rows are jammed)."""
    n = matrix.dim(isl.dim_type.out)
    column = matrix.project_out(isl.dim_type.out, 0, n - 1).reset_tuple_id(isl.dim_type.out)
    return column.is_equal(write.reset_tuple_id(isl.dim_type.out))


def jammed_rows(schedule, notes: list, rows: int = ROWS):
    """``schedule``'s kernel in the source order, distributed, with ``rows`` iterations
    of every nest's outer loop unrolled inside its inner loops, and each nest fused
    into the one before when that is legal (mvt's two products then read ``A`` once;
    gemver's update of ``A`` and ``x += A^T y``); None when the kernel is not
    matrix-vector work (:func:`matrix_vector`) or that schedule is illegal (the reason
    goes to ``notes``)."""
    program = schedule.program
    if rows <= 1 or not matrix_vector(program):
        return None
    placed = distributed_rows(program, alone_moves=True, always=True)
    candidate, failure = _jammed(schedule, placed, rows)
    if candidate is None:
        notes.append(f"matrix-vector work, but {rows} rows side by side are illegal "
                     f"({failure})")
        return None
    nests = sorted({_nest(text) for _, text in placed})
    for nest in nests[1:]:  # fused into the nest before it, when legal
        before = max(n for n in (_nest(text) for _, text in placed) if n < nest)
        fused = [(stmt, _renumbered(text, before) if _nest(text) == nest else text)
                 for stmt, text in placed]
        tried, _ = _jammed(schedule, fused, rows)
        if tried is not None:
            candidate, placed = tried, fused
    notes.append(f"instead of the above (matrix-vector work): the source order with each "
                 f"statement in a loop nest of its own, the stride-1 loop innermost, nests "
                 f"fused where legal, and {rows} iterations of the outer loop unrolled "
                 "inside it (rows side by side: each vector element loaded once for them, "
                 "their accumulations interleaved)")
    for stmt, text in placed:
        notes.append(f"{stmt}: {text[text.index('{') + 2:-2]}")
    return candidate


def _jammed(schedule, placed: list, rows: int):
    """``(schedule with placed rows and rows jammed, None)`` or ``(None, why not)``."""
    stage_of = {st.main: st.name for st in schedule.program.stages}
    candidate = schedule.fork()
    try:
        apply_rows(candidate, placed)
        stage = candidate[stage_of[placed[0][0]]]
        axes = [a.name for a in stage.axes]
        outer, inner = stage.split(axes[1], factor=rows, check=False)
        stage.reorder(outer.name, *axes[2:], inner.name, check=False)
        stage.unroll(inner.name, check=False)
        candidate.check()
    except (IllegalScheduleError, ScheduleError) as err:
        return None, first_line(err)
    return candidate, None


def _nest(text: str) -> int:
    """The nest number (first value) of a ``distributed_rows`` map."""
    return int(text.rpartition("-> [")[2].split(",")[0])


def _renumbered(text: str, nest: int) -> str:
    head, arrow, tail = text.rpartition("-> [")
    return f"{head}{arrow}{nest},{tail.split(',', 1)[1]}"
