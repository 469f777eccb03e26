"""A second candidate of the automatic scheduler: the source order, distributed and
interchanged for stride-1 innermost loops (what gcc's ``-floop-interchange`` does).

Inside each outermost loop of the source, every statement gets a loop nest of its own
(in source order), whose loops are the statement's own below the outermost one, the
one along which its accesses step by one element innermost; with ``alone_moves``, a
statement alone in its nest may have any of its loops innermost (mvt's
``x2[i] += A[j][i] * y2[j]`` runs ``j, i``: rows of ``A``; each ``x2[i]`` still sums
over ``j`` in order).  Modified Gram-Schmidt
(``R[k][j] += Q[i][k] * A[i][j]`` in loops ``k, j, i``) then runs ``k, i, j``: rows of
``A`` instead of columns.  The rows are only a proposal: ``auto_schedule`` applies them
through ``transform`` and checks the result (a scalar carried between statements makes
the distribution illegal, and the candidate is dropped).

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def colsums(A: po.f64[N, N], s: po.f64[N, N]):
...     for k in range(N):
...         for j in range(N):
...             s[k, j] = 0.0
...             for i in range(N):
...                 s[k, j] += A[i, j]
>>> [text for _, text in distributed_rows(po.create_schedule(colsums).program)]
['[N] -> { [k, j] -> [0, k, 0, j, 0] }', '[N] -> { [k, j, i] -> [0, k, 1, i, j] }']
"""

from __future__ import annotations

import islpy as isl

from .auto_affine import Rows
from .auto_levels import stride_score, strides


def distributed_rows(program, alone_moves: bool = False,
                     always: bool = False) -> list[tuple[str, str]] | None:
    """``(statement, map text for transform)`` per statement, rows
    ``[nest, outer loop, statement, inner loops...]`` with the best stride-1 loop
    innermost (any of its loops for a statement alone in its nest if ``alone_moves``);
    ``None`` when no statement's loops change order (nothing to gain) unless
    ``always``."""
    keys, width = {}, 0
    for stmt in program.statements:
        keys[stmt.name] = _nest_key(program.schedule_of(stmt.name))
        width = max(width, len(stmt.dims))
    nests = sorted(set(keys.values()))
    params = ", ".join(program.context.get_var_names(isl.dim_type.param))
    alone = {key for key in nests if list(keys.values()).count(key) == 1}
    result, changed = [], False
    for index, stmt in enumerate(program.statements):
        dims = list(stmt.dims)
        if alone_moves and keys[stmt.name] in alone:  # a nest of its own: any loop inside
            order = _stride_first(program, stmt, dims)
        else:
            order = dims[:1] + _stride_first(program, stmt, dims[1:])
        changed = changed or order != dims
        values = [str(nests.index(keys[stmt.name])), order[0] if order else "0",
                  str(index)] + order[1:]
        values += ["0"] * (width + 2 - len(values))
        result.append((stmt.name, f"[{params}] -> {{ [{', '.join(dims)}] -> "
                                  f"[{', '.join(values)}] }}"))
    return result if changed or always else None


def _nest_key(row: isl.Map) -> tuple:
    """The constants of a source row before its first loop: statements with the same
    key share their outermost loop (or, without loops, their position)."""
    key = []
    for dim in range(row.dim(isl.dim_type.out)):
        value = row.plain_get_val_if_fixed(isl.dim_type.out, dim)
        if value.is_nan():
            break
        key.append(value.to_python())
    return tuple(key)


def _stride_first(program, stmt, dims: list[str]) -> list[str]:
    """``dims`` reordered: the loop along which the accesses step by one element best
    innermost, the others in source order."""
    if len(dims) < 2:
        return dims
    all_dims = list(stmt.dims)
    local = isl.LocalSpace.from_space(stmt.domain.get_space())
    row = [isl.PwAff.var_on_domain(local, isl.dim_type.set, k) for k in range(len(all_dims))]
    rows = Rows({stmt.name: row}, [True] * len(row), [1] * len(row))
    scores = {d: stride_score(program, rows, all_dims.index(d), tiled=False) for d in dims}
    best = max(dims[::-1], key=lambda d: scores[d])  # ties: the source's innermost
    return [d for d in dims if d != best] + [best]


def apply_rows(s, rows: list[tuple[str, str]]) -> None:
    """Give each statement's stage its row (``distributed_rows``), unchecked (the
    caller checks the whole): every stage at the root, sharing the first one's loops."""
    program = s.program
    stage_of = {st.main: st.name for st in program.stages}
    for stage in program.stages:
        if stage.attach.kind != "root":
            s[stage.name].compute_root(check=False)
    for stmt, text in rows:
        s[stage_of[stmt]].transform(text, check=False)
    owner = stage_of[rows[0][0]]
    for stmt, _ in rows[1:]:
        s[stage_of[stmt]].compute_with(owner, s[owner].axes[-1].name, check=False)


def streams_matrices(program, groups: list) -> bool:
    """Whether the kernel is matrix-vector work (no statement in more than two loops,
    one in two) that the affine schedule (its loop nests: ``groups``) does not fuse
    (no nest with two statements of two loops): each matrix element is then used
    O(1) times, so tiles buy little and the order that streams every matrix along its
    rows wins (mvt: 1.35x gcc tiled with a gathered vector loop, 3.0x so, same run).
    Fused passes over a matrix stay (gemver: 3.1x fused vs 2.2x streamed in one run,
    the same speed in two later ones: no evidence to stream them)."""
    depths = {st.name: len(st.dims) for st in program.statements}
    if not depths or max(depths.values()) != 2:
        return False
    return all(sum(depths.get(name) == 2 for name in group) <= 1 for group in groups)


def touched_once(program, rows: Rows, lo: int, hi: int) -> bool:
    """Whether tiling the band ``lo..hi`` of ``rows`` buys nothing for the matrices:
    each statement of the band reads or writes each element of an array of two or more
    dimensions at most once (its accesses are injective), and along one band loop
    every such access steps by one element (that loop innermost streams every matrix
    along its rows).  Vectors are left out: they fit the cache whole.  gemver's fused
    passes, tiled 32 x 256, ran in wavefronts; untiled, they stream ``A``.  A
    stencil's time loop, a product's reduction loop and a column sweep (no stride-1
    loop for all) keep their tiles."""
    matrices = False
    for name in rows.rows:
        stmt = program.statement(name)
        for access in stmt.accesses:
            if program.array(access.array).ndim < 2:
                continue
            matrices = True
            if not access.relation.intersect_domain(stmt.domain).is_injective():
                return False
    if not matrices:
        return False
    return any(all(step == 1 for _, step, _, dims in strides(program, rows, level)
                   if dims >= 2) for level in range(lo, hi))
