"""Which serial loops around unrolled code LLVM may still vectorize itself.

The emitter forbids LLVM to vectorize a loop around code the schedule already laid out
(``SCHEDULED_CODE`` in :mod:`.serial_loops`): LLVM would otherwise vectorize the wrong loop
with gathers.  One case is exempt: a loop whose body is only unrolled copies (no other
loop inside) and along which every access of every statement steps by 0 or 1 element
of its array's last index.  That is a matrix-vector product with its rows jammed
(``for i0: for j: 8 rows i0 + r unrolled``, see ``schedules.auto_jam``): vectorized
along ``j``, each copy reads its row with whole vectors, the vector ``x[j]`` is loaded
once for the eight rows and the eight dot products accumulate side by side (atax
2.5 -> 1.7 ms).  No gather is possible: every access is contiguous or invariant.

>>> import polyopt as po
>>> A = po.placeholder((8, 64), name="A")
>>> B = po.compute((8, 64), lambda i, j: A[i, j] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> i, j = B.op.axis
>>> s[B].reorder(j, i); _ = s[B].unroll(i)
>>> func = po.lower(s, [A, B], target="llvm")
>>> from polyopt.ast.nodes import loops
>>> [walks_rows(func.program, loop, {}) for loop in loops(func.body) if loop.var == "j"]
[True]
"""

from __future__ import annotations

import islpy as isl

from ...ast.nodes import For, Unrolled, runs, walk
from ...domain.schedule import element_steps


def walks_rows(program, loop: For, memo: dict) -> bool:
    """Whether ``loop`` holds only unrolled code (no loop that stays a loop) and every
    access inside steps by 0 or 1 element along its array's last index per iteration
    of ``loop`` (False when its schedule dimension is unknown).  ``memo`` keeps the
    answers per statement and dimension."""
    if loop.dim is None:
        return False
    inner = [node for node in walk(loop.body) if isinstance(node, (For, Unrolled))]
    if not inner or any(isinstance(node, For) and not _in_unrolled(node, inner)
                        for node in inner):
        return False
    for name in {run.stmt for run in runs(loop.body)}:
        key = ("rows", name, loop.dim)  # (a memo shared with other questions)
        if key not in memo:
            memo[key] = _contiguous_along(program, name, loop.dim)
        if not memo[key]:
            return False
    return True


def _in_unrolled(loop: For, nodes: list) -> bool:
    return any(isinstance(node, Unrolled) and node.loop is loop for node in nodes)


def _contiguous_along(program, name: str, dim: int) -> bool:
    stmt = program.statement(name)
    row = program.schedule_of(name)
    if row.is_empty() or dim >= row.dim(isl.dim_type.out):
        return False
    for access in stmt.accesses:
        pairs = element_steps(row, access.relation.intersect_domain(stmt.domain), dim)
        n = pairs.dim(isl.dim_type.out)
        if n == 0 or pairs.is_empty():
            continue
        zero = ", ".join(["0"] * (n - 1))
        lead = f"{zero}, " if n > 1 else ""
        params = ", ".join(pairs.get_space().get_var_names(isl.dim_type.param))
        allowed = isl.Set(f"[{params}] -> {{ [{lead}d] : 0 <= d <= 1 }}")
        if not pairs.deltas().reset_tuple_id().is_subset(allowed):
            return False
    return True


def reduces_innermost(program, name: str, memo: dict) -> bool:
    """Whether statement ``name`` writes one element of a vector along its innermost
    loop (the last schedule dimension not constant for it): a dot product accumulating
    along that loop (trisolv's ``x[i] -= L[i][j] * x[j]`` in loop ``j``), rather than an
    update of a new element per iteration (lu's ``A[i][j] -= ...`` with ``j``
    innermost).  The LLVM emitter reassociates a ``-=`` only there: trisolv 1.0x ->
    1.8x gcc; cholesky's matrix updates along ``k`` ran 2-11% slower reassociated."""
    key = ("innermost reduction", name)
    if key not in memo:
        memo[key] = _reduces_innermost(program, name)
    return memo[key]


def _reduces_innermost(program, name: str) -> bool:
    stmt = program.statement(name)
    row = program.schedule_of(name)
    if row.is_empty():
        return False
    loops = [d for d in range(row.dim(isl.dim_type.out))
             if row.plain_get_val_if_fixed(isl.dim_type.out, d).is_nan()]
    writes = [a for a in stmt.accesses if a.kind == "write"]
    if not loops or len(writes) != 1 or program.array(writes[0].array).ndim != 1:
        return False
    pairs = element_steps(row, writes[0].relation.intersect_domain(stmt.domain), loops[-1])
    if pairs.is_empty():
        return False
    deltas = pairs.deltas().reset_tuple_id()
    n = deltas.dim(isl.dim_type.set)
    params = ", ".join(deltas.get_space().get_var_names(isl.dim_type.param))
    zero = isl.Set(f"[{params}] -> {{ [{', '.join(['0'] * n)}] }}")
    return deltas.is_subset(zero)
