"""Packed panels for ``auto_schedule``: the right operand of a contraction copied into
column panels as wide as the register tile, the way BLAS packs B.

A contraction ``C[i, j] += ... A[i, k] * B[k, j]`` is register-tiled by ``auto_schedule``
(rows of ``i`` unrolled, ``width`` columns of ``j`` vectorized, the reduction ``k``
around them): each step of ``k`` loads ``width`` consecutive elements of a row of
``B``, and the next step the same columns of the next row, ``nj`` elements further.
In a copy laid out ``B_packed[j // width, k, j % width]`` those loads are consecutive
in memory: one page and a few cache lines for a whole tile, prefetched as a stream,
where the original walks a new page every row or two.  The copy is made once before
the nest (``cache_read(..., layout=)``, ``compute_root``), O(size of B) for
O(size of B x rows of C) work, and computes the same numbers (a copy).  Off by default
(``pack_panels=True``): on gemm 1000 x 1100 x 1200 (double, one core) the panel loads
gain 2-4%, about what the scalar copy costs (2.8 ms of 69), and 2mm ran 5% slower.

>>> import pathlib, polyopt as po
>>> gemm = pathlib.Path(po.__file__).parents[1] / "benchmarks" / "polybench" / "gemm.c"
>>> k = po.from_c(str(gemm), defines={"NI": 10, "NJ": 12, "NK": 14})
>>> notes = []
>>> print(packed_panels(po.create_schedule(k), notes, 32).script())
s.cache_read("B", "global", ["S1"], layout="{ [a, b] -> [floor(b / 32), a, b mod 32] }")
s["B_global"].compute_root()
"""

from __future__ import annotations

import islpy as isl

from ..errors import IllegalScheduleError, ScheduleError
from ..machine import TargetInfo
from .auto_levels import named_rows
from .auto_rewrites import matrix_reads


def panel_operands(program) -> list[tuple[str, str]]:
    """``(statement, array)`` pairs: a statement of three or more loops whose output's
    last index is a loop ``v`` reads the 2-D array, never written by the kernel, as
    ``X[u, v]`` with ``u`` a loop that indexes no dimension of the output (a reduction
    loop): the right operand of a contraction."""
    found: dict[str, set] = {}  # in the statements' order, each one's arrays sorted
    for stmt, v, node, array in matrix_reads(program):
        if node.indices[1] is v and node.indices[0] is not v and \
                _reduction_loop(node.indices[0], stmt.iter_vars, stmt.target.indices):
            found.setdefault(stmt.name, set()).add(array)
    return [(name, array) for name, arrays in found.items() for array in sorted(arrays)]


def _reduction_loop(index, loops, target_indices) -> bool:
    return any(index is var for var in loops) and not any(
        index is other for other in target_indices)


def packed_panels(schedule, notes: list, columns: int | None = None,
                  target: TargetInfo | None = None):
    """``schedule`` with each right operand of a contraction (:func:`panel_operands`)
    read from a copy in panels of ``columns`` columns (None: the host's register tile
    for the output's type, ``TargetInfo.register_tile``), made before the nest."""
    result = schedule.fork()
    program = schedule.program
    stage_of = {st.main: st.name for st in program.stages}
    readers = {}
    for stmt, array in panel_operands(program):
        width = columns
        if width is None:
            dtype = program.array(program.statement(stmt).target.tensor.name).dtype
            info = target or TargetInfo.host()
            width = info.register_tile()[1] * info.lanes(dtype)
        if width > 1:
            readers.setdefault((array, width), []).append(stmt)
    for (array, width), stmts in readers.items():
        if len(stmts) > 1:  # (symm: two statements, two copies, no gain measured)
            notes.append(f"{', '.join(stmts)} read rows of {array} across a reduction "
                         "loop: not packed (one copy per reading statement)")
            continue
        layout = f"{{ [a, b] -> [floor(b / {width}), a, b mod {width}] }}"
        try:
            with result.atomic():
                copy = result.cache_read(array, "global", [stage_of[stmts[0]]],
                                         layout=layout)
                result[copy].compute_root()
        except (IllegalScheduleError, ScheduleError) as err:
            notes.append(f"{stmts[0]}: {array} not packed ({str(err).splitlines()[0][:200]})")
            continue
        notes.append(f"{stmts[0]} reads rows of {array} "
                     f"across a reduction loop: from a copy packed in panels of {width} "
                     "columns (one register tile wide), made before the nest")
    return result


def row_count(rows: int, columns: int) -> int:
    """The rows of a register tile: the most, up to ``rows``, that divide ``columns``
    (the tile's width, a power of two like the cache tiles).  Row blocks then line up
    with column blocks and tiles, so a triangular band's diagonal (syrk's ``j <= i``)
    crosses a register tile only at whole tiles, which stay full and in registers
    (syrk 0.13 -> 0.04 s with 4 rows rather than 6; gemm, 2mm, trmm 5-10% faster).

    >>> row_count(6, 32), row_count(6, 24), row_count(6, 0)
    (4, 6, 6)
    """
    if columns <= 1:
        return rows
    return max(d for d in range(1, rows + 1) if columns % d == 0)


def coupled_levels(program, rows, a: int | None, b: int | None) -> bool:
    """Whether levels ``a`` and ``b`` of the new schedule ``rows`` bound each other for
    some statement (a triangle such as syrk's ``j <= i``), rather than spanning a
    rectangle: the statements' scheduled domains projected on the two levels are not
    the product of their projections on each."""
    if a is None or b is None or a == b:
        return False
    a, b = min(a, b), max(a, b)
    for name, row in rows.rows.items():
        stmt = program.statement(name)
        if isinstance(row[a], int) or isinstance(row[b], int):
            continue
        image = named_rows(stmt, row).range()
        pair = image.project_out(isl.dim_type.set, b + 1, image.dim(isl.dim_type.set) - b - 1)
        pair = pair.project_out(isl.dim_type.set, a + 1, b - a - 1)
        pair = pair.project_out(isl.dim_type.set, 0, a)
        first = pair.project_out(isl.dim_type.set, 1, 1)
        second = pair.project_out(isl.dim_type.set, 0, 1)
        if not first.flat_product(second).is_subset(pair):
            return True
    return False
