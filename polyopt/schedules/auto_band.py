"""The band of ``po.auto_schedule``: tiles, the loop order inside a tile, the vector
loop, register tiles (unroll-and-jam) and the parallel loop.

:func:`band` schedules the first permutable band of one loop nest (a kernel's nest, or
a tensor-expression stage): every step is legal by construction and the whole schedule
is checked once by the caller (see :mod:`polyopt.schedules.auto`).

>>> import polyopt as po
>>> N = po.var("N")
>>> A = po.placeholder((N, N), name="A")
>>> B = po.compute((N, N), lambda i, j: A[i, j] + 1.0, name="B")
>>> s = po.auto_schedule(po.create_schedule(B), tile_sizes=64)
>>> for line in s.auto_report.lines[1:]:
...     print(line)
tiled loops i, j by 64 x 64 (cache model: half the L2 cache per tile, or as given)
innermost loop j.inner vectorized: stride-1 score 49152, no dependence carried
loop i.outer parallel: the outermost loop carrying no dependence
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import TYPE_CHECKING

from ..te.expr import LIBC_CALLS, Call
from ..te.tensor import walk
from .auto_affine import Rows
from .auto_levels import (innermost_free_levels, stride_score, tileable_run,
                          zero_distance_levels)
from .auto_distribute import touched_once
from .auto_panels import coupled_levels, row_count
from .auto_stencil_jam import jam_rows

if TYPE_CHECKING:
    from .auto_options import AutoOptions, AutoReport

def band(s, owner: str, rows: Rows, opts: AutoOptions, report: AutoReport) -> None:
    """Tile the first permutable band, order and mark its loops; every step is legal by
    construction (a permutable band; loops marked only at levels where every remaining
    dependence has distance 0) and the whole is checked once at the end."""
    run = tileable_run(rows)
    axes = [a.name for a in s[owner].axes]
    opts = scalar_calls_unvectorized(s.program, rows.rows, opts, report)
    if run is None:
        report.add("no permutable band of two or more loops: no tiling")
        deepest = max(len(st.dims) for st in s.program.statements)
        if all(len(s.program.statement(n).dims) < deepest for n in rows.rows):
            report.add("not parallel: a nest shallower than the kernel's deepest does a "
                       "small part of its work (deriche's line inits: 20 such nests, each "
                       "mark costing a check)")
            return
        free = zero_distance_levels(s.program, s.deps, rows, 0)
        loops = [axes[k] for k in sorted(free) if not all(  # loops, not sequence levels
            isinstance(row[k], int) for row in rows.rows.values())]
        mark_parallel(s, owner, loops[:1], [], opts, report)
        return
    lo, hi = run
    band = axes[lo:hi]
    free = zero_distance_levels(s.program, s.deps, rows, lo)
    free_names = {axes[k] for k in free if lo <= k < hi}
    after = [axes[k] for k in range(hi, len(axes)) if all(
        isinstance(row[k], int) for row in rows.rows.values())]
    outside = [k for k in range(lo) if not all(isinstance(row[k], int)
                                               for row in rows.rows.values())]
    sweeps = bool(outside) and not free_names and opts.tile_sizes is None
    if sweeps:  # (Floyd-Warshall: k around an (i, j) band with no free loop)
        report.add(f"band {', '.join(band)} not tiled: loop {axes[outside[-1]]} around it "
                   "sweeps it whole each time and no band loop is free, so its tiles would "
                   "run in wavefronts for little reuse")
    below = [axes[k] for k in range(hi, len(axes)) if not all(
        isinstance(row[k], int) for row in rows.rows.values())]
    shallow = bool(below) and not free_names and opts.tile_sizes is None and not sweeps
    if shallow and opts.tile:  # (nussinov: its k loop under an (i, j) band: 0.77x tiled)
        report.add(f"band {', '.join(band)} not tiled: loop(s) {', '.join(below)} below it "
                   "are not in it and no band loop is free, so its tiles would run in "
                   "wavefronts for little reuse")
        report.scalar_band = True
    def scores_of(tiled: bool) -> dict:
        return {axes[k]: stride_score(s.program, rows, k, tiled) for k in range(lo, hi)}

    once = opts.tile and opts.stream_untiled and opts.tile_sizes is None and touched_once(
        s.program, rows, lo, hi)
    if once:  # only when tiles would not vectorize it either (ludcmp: 5x gcc tiled, 1.2x
        # not; elementwise passes: no gain measured)
        alone = {axes[k] for k in innermost_free_levels(s.program, s.deps, rows, lo, hi)}
        once = not vectorizes(band, scores_of(True), free_names | alone)
    if once:
        report.add(f"band {', '.join(band)} not tiled: each matrix element is used once "
                   "along its loops, and one of them walks every matrix along its rows")
    tiled = opts.tile and not sweeps and not shallow and not once
    scores = scores_of(tiled)
    if tiled:
        sizes = tile_sizes(s, owner, rows, run, opts)
        if not free_names and opts.tile_sizes is None:
            # a skewed (time-tiled) band: its tiles run in wavefronts and its skew
            # shrinks the reuse of big tiles: short in time (32), long along the last
            # (stride-1, vector) loop (256), 64 between (jacobi-2d 1300, 50 steps: 32^3
            # tiles 1.9x gcc, these 2.5x)
            sizes = [32 if k == 0 else 256 if k == len(sizes) - 1 else 64
                     for k in range(len(sizes))]
        outer, inner = tile(s, owner, band, sizes, report)
        renamed = dict(zip(band, inner))
        alone = {axes[k] for k in innermost_free_levels(s.program, s.deps, rows, lo, hi)}
        apart = {axes[k] for k in innermost_free_levels(s.program, s.deps, rows, lo, hi,
                                                        within=True)} if after else set()
        inner, vector = order_points(s, owner, inner, {renamed[b]: scores[b] for b in band},
                                      {renamed[b] for b in free_names | alone}, after, opts,
                                      report, apart={renamed[b] for b in apart})
        if vector:
            levels = {renamed[b]: lo + k for k, b in enumerate(band)}
            inner = unroll_jam(s, owner, inner, {renamed[b] for b in free_names}, opts,
                                report, lambda a, b: coupled_levels(
                                    s.program, rows, levels.get(a), levels.get(b)))
            vector_loop = inner[-1]
            if not free_names:  # a time-tiled stencil: adjacent rows together (marked)
                inner = jam_rows(s, owner, inner, after, dict(zip(renamed.values(), sizes)),
                                 len(rows.rows), opts, report)
            if inner[-1] == vector_loop:
                s[owner].vectorize(vector_loop, check=False)
        parallel = [o for o, b in zip(outer, band) if b in free_names]
        mark_parallel(s, owner, parallel[:1], outer, opts, report)
    else:  # (deriche's row sweeps: no try of an illegal distribution, a check saved)
        apart = {axes[k] for k in innermost_free_levels(s.program, s.deps, rows, lo, hi,
                                                        within=True)} if after else set()
        inner, vector = order_points(s, owner, band, scores, free_names, after, opts,
                                      report, tiled=False, apart=apart)
        report.scalar_band = report.scalar_band or (once and not vector)
        if vector:
            s[owner].vectorize(inner[-1], check=False)
        parallel = [b for b in inner[:-1] if b in free_names]
        mark_parallel(s, owner, parallel[:1], [], opts, report)


def scalar_calls_unvectorized(program, statements, opts: AutoOptions,
                              report: AutoReport) -> AutoOptions:
    """``opts`` with ``vectorize=False`` (reported) when the named statements call a
    function of the C library that has no vector form (:func:`library_calls`): LLVM
    cannot vectorize a loop around such a call (it warns), and gcc neither."""
    calls = library_calls(program, statements)
    if not calls or not opts.vectorize:
        return opts
    report.add(f"{', '.join(statements)} call{'s' * (len(statements) == 1)} "
               f"{', '.join(calls)} of the C library, which has no vector form (one call "
               "per element; no vector loop around it): no loop vectorized")
    return replace(opts, vectorize=False)


def library_calls(program, statements) -> list[str]:
    """The functions of the C library without a vector form (``tan``, ``atan2``, ...:
    ``te.expr.LIBC_CALLS``, compiled as calls of libm's scalar function; the
    ``vector_math`` pass gives vector variants to LLVM's exp, log and tanh only) that
    the named statements call, sorted."""
    return sorted({node.func for name in statements
                   for node in walk(program.statement(name).value)
                   if isinstance(node, Call) and node.func in LIBC_CALLS})


def vectorizes(loops: list[str], scores: dict, free: set) -> bool:
    """Whether the loop :func:`order_points` puts innermost is vectorized (its first
    choice: free of dependences, then the best stride-1 score)."""
    best = min(loops, key=lambda n: (n not in free, -scores[n], -loops.index(n)))
    return best in free and scores[best] > 0


def tile_sizes(s, owner: str, rows: Rows, run, opts: AutoOptions) -> list[int]:
    """A size per band loop: the user's, else the largest power of two ``T`` whose
    tile footprint (per array, ``T`` to the power of the dimensions it spans in the
    band) fits in half the L2 cache."""
    lo, hi = run
    depth = hi - lo
    if opts.tile_sizes is not None:
        sizes = opts.tile_sizes
        sizes = [sizes] * depth if isinstance(sizes, int) else list(sizes)
        return (sizes + [sizes[-1]] * depth)[:depth]
    program = s.program
    arrays = {}
    for stmt_name in rows.rows:
        for access in program.statement(stmt_name).accesses:
            array = program.array(access.array)
            rank = len(array.tensor.shape)  # (a packed copy: its original's)
            arrays[array.name] = (min(rank, depth), itemsize(array.dtype))
    budget = (opts.cache_bytes or opts.target.l2_bytes) // 2
    best = 8
    for size in (8, 16, 32, 64, 128, 256):
        footprint = sum(size ** max(rank, 1) * item for rank, item in arrays.values())
        if footprint <= budget:
            best = size
    return [best] * depth


def itemsize(dtype: str) -> int:
    return {"float64": 8, "int64": 8, "float32": 4, "int32": 4}.get(dtype, 1)


def tile(s, owner: str, band: list[str], sizes: list[int], report) -> tuple[list, list]:
    outer, inner = [], []
    for name, size in zip(band, sizes):
        o, i = s[owner].split(name, factor=size, check=False)
        outer.append(o.name)
        inner.append(i.name)
    s[owner].reorder(*outer, *inner, check=False)
    report.add(f"tiled loops {', '.join(band)} by {' x '.join(map(str, sizes))} (cache "
               "model: half the L2 cache per tile, or as given)")
    return outer, inner


def order_points(s, owner: str, inner: list[str], scores: dict, free: set, after: list,
                  opts, report, tiled: bool = True, apart: set | None = None
                  ) -> tuple[list[str], bool]:
    """The loop with the best stride-1 score among those carrying no dependence goes
    innermost and is vectorized; when none is free of dependences and statements follow
    one another at a constant level after the band, that level moves above the
    innermost loop (each statement then gets its own innermost loop), checked; not when
    the loop is known to carry a dependence of a statement on itself (not in
    ``apart``, when given): that try would be refused (cholesky: a reduction)."""
    ranked = sorted(inner, key=lambda n: (n not in free, -scores[n], -inner.index(n)))
    best = ranked[0]
    strided = max(inner, key=lambda n: (scores[n], inner.index(n)))
    if best in free and scores[best] <= 0 < scores[strided] and after and opts.vectorize \
            and opts.distribute:
        best = strided  # rather a stride-1 loop with the statements distributed (Jacobi)
        free = free - {best}
    elif best in free and scores[best] <= 0 < scores[strided] and not tiled:
        best = strided  # rather a stride-1 reduction (gesummv: not a column of A)
    order = [n for n in inner if n != best] + [best]
    if tiled and opts.point_order and len(order) > 2:
        order = permuted(order[:-1], opts.point_order) + [best]
        report.add(f"loops inside the tile above {best}: {', '.join(order[:-1])} "
                   f"(point_order={opts.point_order})")
    if order != inner:
        s[owner].reorder(*order, check=False)
    if best in free and scores[best] <= 0:  # gathers: independent scalar iterations
        report.add(f"innermost loop {best}: no dependence carried, but its accesses are "
                   f"not stride-1 (score {scores[best]}): scalar, iterations overlap")
        return order, False
    if best in free and opts.vectorize:  # marked by the caller, after register tiling
        report.add(f"innermost loop {best} vectorized: stride-1 score {scores[best]}, "
                   "no dependence carried")
        return order, True
    if best not in free and after and opts.vectorize and opts.distribute and (
            apart is None or best in apart):
        s[owner].reorder(*order[:-1], *after, best, check=False)
        report.add(f"statements distributed inside the tile ({', '.join(after)} above "
                   f"{best}); innermost loop {best} vectorized")
        return order[:-1] + after + [best], True
    report.add(f"innermost loop {best} (stride-1 score {scores[best]}); "
               + ("it carries a dependence: not vectorized" if best not in free
                  else "vectorize=False"))
    report.scalar_band = report.scalar_band or (tiled and best not in free)
    return order, False


def permuted(loops: list[str], number: int) -> list[str]:
    """The ``number``-th permutation of ``loops`` (lexicographic by position, modulo their
    count; 0: as given): the loops of a tile of a permutable band run in any order.

    >>> permuted(["i", "k"], 1), permuted(["i", "j", "k"], 3)
    (['k', 'i'], ['j', 'k', 'i'])
    """
    count = math.factorial(len(loops))
    return list(next(itertools.islice(itertools.permutations(loops), number % count,
                                      None)))


def unroll_jam(s, owner: str, inner: list[str], free: set, opts, report,
                coupled=lambda a, b: False) -> list[str]:
    """Register tiling: with point loops ``.., p, r, v`` (``r`` carrying a reduction,
    ``v`` vectorized, ``p`` free of dependences), split ``p`` by ``unroll_jam`` and
    unroll its inner part between ``r`` and ``v``."""
    rows, vectors = opts.target.register_tile()
    factor = opts.unroll_jam
    if factor is None and len(inner) >= 3 and coupled(inner[-3], inner[-1]):
        factor = row_count(rows, opts.register_columns or vectors * opts.target.lanes(
            written_dtype(s, owner)))  # a triangle: rows dividing the columns
    triangle = opts.unroll_jam is None and factor is not None
    factor = rows if factor is None else factor
    if factor <= 1 or len(inner) < 3:
        return inner
    outer_name, reduction, vector = inner[-3], inner[-2], inner[-1]
    if reduction in free or outer_name not in free:
        return inner
    stage = s[owner]
    o, i = stage.split(outer_name, factor=factor, check=False)
    width = opts.register_columns
    if width is None:  # the target's register tile: 4 vectors with AVX-512, 2 with AVX2
        width = vectors * opts.target.lanes(written_dtype(s, owner))
    if width > 1:  # the accumulators: factor rows x width columns, kept in registers
        vo, vi = stage.split(vector, factor=width, check=False)
        stage.reorder(vo.name, o.name, reduction, i.name, vi.name, check=False)
        loops = [vo.name, o.name, reduction, i.name, vi.name]
    else:
        stage.reorder(o.name, reduction, i.name, vector, check=False)
        loops = [o.name, reduction, i.name, vector]
    stage.unroll(i.name, check=False)
    report.add(f"register tile: {outer_name} split by {factor}"
               + (f" and {vector} by {width}" if width > 1 else "")
               + f", unrolled inside the reduction loop {reduction} (unroll-and-jam)"
               + (" (rows dividing the columns: the band is a triangle)" if triangle else ""))
    return inner[:-3] + loops


def written_dtype(s, owner: str) -> str:
    program = s.program
    stmt = program.statement(program.stage(owner).main)
    writes = [a for a in stmt.accesses if a.kind == "write"]
    return program.array(writes[0].array).dtype if writes else "float64"


def mark_parallel(s, owner: str, free: list[str], tiles: list[str], opts, report) -> None:
    """The outermost loop free of dependences is parallel; without one, tiles run in
    wavefronts (legal for a permutable band: tiles of one wavefront never depend on
    each other)."""
    if not opts.parallel:
        report.add("not parallel (parallel=False)")
        return
    if free:
        s[owner].parallel(free[0], check=False)
        report.add(f"loop {free[0]} parallel: the outermost loop carrying no dependence")
        return
    if len(tiles) >= 2:
        front = s[owner].wavefront(tiles[0], tiles[1], parallel=False, check=False)
        s[owner].parallel(tiles[1], check=False)
        report.add(f"tiles run in wavefronts ({front.name} over {tiles[0]} + {tiles[1]}), "
                   f"{tiles[1]} parallel inside each")
        return
    report.add("no loop free of dependences to run in parallel")
