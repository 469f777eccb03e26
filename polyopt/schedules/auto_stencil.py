"""Diamond tiling of stencils in ``po.auto_schedule`` (Pluto's concurrent start).

isl's scheduler gives a time-iterated stencil a skewed band ``t, c1 = a t + i + o_S,
c2 = a t + j + o_S, ...``: parallelogram tiles, which run in wavefronts that start with
one tile.  When the dependences allow it, :func:`diamond_plan` re-times the statements
instead, ``T_S = b t + p_S``, with the space loop ``X_S = c1 - a t - o_S``, such that
both ``T + X`` and ``T - X`` are non-negative along every dependence (``|dX| <= dT``).
The smallest slope ``b`` and the offsets ``p_S`` come from difference constraints
``p_S' - p_S >= max(|dX| - b dt)`` over the distances of each dependence ``S -> S'``
(longest paths; none when a dependence of a statement on itself has ``dt = 0,
dX != 0``, as Gauss-Seidel's).  :func:`diamond_band` then applies the ordinary
primitives: ``diamond_tile(T, X, size)`` (every tile of one time band starts at once:
``X.diamond`` is parallel), tiles of the inner band loops (the last one long, for the
vector loop), the statements distributed above the innermost loop, vectorized.

``stencil_tiling="diamond"`` takes them; ``"auto"`` (the default) only reports that
they are possible, as they did not pay as measured (:data:`DIAMONDS_BY_DEFAULT`);
``"skewed"`` does not look for them.  The final check of ``auto_schedule`` verifies the
schedule; a refusal there falls back to the skewed tiles (the report says so).

>>> import polyopt as po
>>> N, T = po.var("N"), po.var("T")
>>> @po.kernel
... def jacobi_1d(A: po.f64[N], B: po.f64[N]):
...     for t in range(T):
...         for i in range(1, N - 1):
...             B[i] = (A[i - 1] + A[i] + A[i + 1]) / 3.0
...         for i in range(1, N - 1):
...             A[i] = (B[i - 1] + B[i] + B[i + 1]) / 3.0
>>> s = po.auto_schedule(jacobi_1d, tile_sizes=16, stencil_tiling="diamond")
>>> [a.name for a in s["S0"].axes][:2], s["S0"].axes[1].kind
(['c0.diamond', 'i.diamond'], 'parallel')
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from .auto_affine import Rows
from .auto_levels import named_rows

SLOPES = (1, 2, 3, 4)  # the time slopes tried, smallest first
STENCIL_TILINGS = ("auto", "diamond", "skewed")  # auto_schedule(stencil_tiling=...)
# "auto" takes diamonds only where they pay.  Measured side by side (bench_polybench
# --baseline, LARGE, load 4.5-6.5): one thread, diamonds / skewed tiles x gcc: jacobi-2d
# 2.07x / 2.06x, heat-3d 1.56x / 1.57x, fdtd-2d 2.08x / 2.04x (equal within the noise);
# two threads 1.68x / 1.65x, 1.62x / 1.33x, 1.62x / 1.78x; compile 1.12 / 0.45 s, 1.37 /
# 0.79 s, 1.69 / 1.39 s of CPU (isl's scan of the diamonds' point loops, peeled by the
# parity of T = 2t + p, and LLVM on twice the vector loops).  So not by default.
DIAMONDS_BY_DEFAULT = False
DIAMOND_SIZES = (64, 64, 256)  # T (b time steps per unit), middle loops, the last loop


@dataclass(frozen=True)
class DiamondPlan:
    """Diamonds over levels 0 (``T = slope t + offset``) and 1 (space) of a group."""

    slope: int
    offsets: dict  # statement -> p_S


def stencil_diamonds(program, deps, rows: Rows, groups: list, opts, report
                     ) -> tuple[Rows, dict]:
    """``rows`` re-timed for diamonds and, per group that gets them (by its first
    statement), its :class:`DiamondPlan`; each choice and its reason in ``report``."""
    plans = {}
    if not opts.tile or opts.stencil_tiling == "skewed":
        return rows, plans
    for group in groups:
        try:
            plan, why = diamond_plan(program, deps, rows, group)
        except isl.Error as err:  # (isl's effort bound): no diamonds, the skewed tiles
            plan, why = None, f"isl gave up on the dependences ({str(err).splitlines()[0]})"
        if plan is None:
            if opts.stencil_tiling == "diamond" or (why and not why.startswith("(")):
                report.add(f"no diamond tiles for {', '.join(group)}: {why.strip('()')}")
            continue
        if opts.stencil_tiling == "auto" and not DIAMONDS_BY_DEFAULT:
            report.add(f"diamond tiles are possible for {', '.join(group)} (T = {_slope(plan)} "
                       "+ offset, |dX| <= dT) but not chosen: measured as fast as the skewed "
                       "tiles on one thread, and twice as slow to compile (stencil_tiling="
                       "'diamond' takes them)")
            continue
        if not opts.parallel:
            report.add(f"no diamond tiles for {', '.join(group)} (parallel=False): their "
                       "gain is that all tiles of a time band start at once")
            continue
        plans[group[0]] = plan
        rows = diamond_rows(rows, group, plan)
    return rows, plans


def diamond_plan(program, deps, rows: Rows, group: list) -> tuple[DiamondPlan | None, str]:
    """``(plan, why)``: a re-timing of ``group`` (statements of one loop nest) for
    diamond tiles over its first two band levels, or ``None`` and the reason (in
    parentheses when the group is no time-iterated stencil at all)."""
    sub = rows.subset(group)
    if sub.depth < 3 or not (sub.permutable[0] and sub.permutable[1]) or \
            sub.band[0] != sub.band[1]:
        return None, "(the first two levels are not one permutable band)"
    for name in group:
        stmt = program.statement(name)
        row = sub.rows[name]
        if isinstance(row[0], int) or isinstance(row[1], int) or not stmt.dims or \
                not row[0].is_equal(_dim(row[0], 0)):
            return None, f"(level 0 of {name} is not its outermost (time) loop)"
        if _time_slope(row[1]) is None:
            return None, f"(level 1 of {name} is not affine in one piece)"
    distances = _distances(program, deps, sub, group)
    if distances is None:
        return None, "(a dependence distance is not bounded: not a stencil)"
    if all(dx == 0 for points in distances.values() for _, dx in points):
        return None, "(the space loop carries no dependence: plain tiles run in parallel)"
    for slope in SLOPES:
        offsets = _offsets(group, distances, slope)
        if offsets is not None:
            return DiamondPlan(slope, offsets), ""
    return None, ("a dependence moves in space within one time step of a statement "
                  "(|dX| > dT), as in Gauss-Seidel")


def diamond_rows(rows: Rows, group: list, plan: DiamondPlan) -> Rows:
    """``rows`` with levels 0 and 1 of ``group`` replaced by ``T`` and ``X``."""
    times, spaces = {}, {}
    for name, row in rows.rows.items():
        if name not in group:
            times[name], spaces[name] = row[0], row[1]
            continue
        t = row[0]
        times[name] = t.scale_val(isl.Val(plan.slope)).add(_constant(t, plan.offsets[name]))
        spaces[name] = _space(row[1])
    return rows.replaced(0, times).replaced(1, spaces)


def diamond_band(s, owner: str, rows: Rows, plan: DiamondPlan, opts, report) -> None:
    """Diamonds over levels 0 and 1 of ``owner``'s band (sizes[0]), the other band
    loops tiled (sizes[1:]), statements distributed above the innermost loop, which is
    vectorized."""
    axes = [a.name for a in s[owner].axes]
    band = [k for k in range(rows.depth) if rows.permutable[k] and rows.band[k] == rows.band[0]]
    hi = band[-1] + 1
    after = [axes[k] for k in range(hi, len(axes)) if all(
        isinstance(row[k], int) for row in rows.rows.values())]
    time_name, space_name = axes[0], axes[1]
    sizes = _sizes(opts.tile_sizes, hi - 1)
    report.diamond = True
    front, tile = s[owner].diamond_tile(time_name, space_name, sizes[0], check=False)
    outer, inner = [], []
    for name, size in zip(axes[2:hi], sizes[1:]):
        o, i = s[owner].split(name, factor=size, check=False)
        outer.append(o.name)
        inner.append(i.name)
    points = [time_name, space_name] + inner[:-1] + (after if opts.distribute else [])
    points += inner[-1:] + ([] if opts.distribute else after)
    s[owner].reorder(front.name, tile.name, *outer, *points, check=False)
    report.add(f"diamond tiles of {sizes[0]} over T = {_slope(plan)} + offset ("
               + ", ".join(f"{n}: {p}" for n, p in plan.offsets.items())
               + f") and space {space_name}: every dependence has |dX| <= dT, so the tiles of "
               f"one time band ({front.name}) start at once ({tile.name} parallel, no "
               "wavefront)" + (f"; loops {', '.join(axes[2:hi])} tiled by "
                               f"{' x '.join(map(str, sizes[1:]))}" if outer else ""))
    if opts.vectorize and inner:
        s[owner].vectorize(inner[-1], check=False)
        report.add(f"innermost loop {inner[-1]} vectorized"
                   + (f" (statements distributed above it: {', '.join(after)})"
                      if opts.distribute and after else ""))


def _slope(plan: DiamondPlan) -> str:
    return "t" if plan.slope == 1 else f"{plan.slope}t"


def _sizes(given, count: int) -> list[int]:
    """The diamond's size then one per other band loop: the user's ``tile_sizes`` (one
    number for all, or a list: the first for the diamond), else :data:`DIAMOND_SIZES`."""
    if given is None:
        inner = [DIAMOND_SIZES[1]] * (count - 2) + [DIAMOND_SIZES[2]] if count > 1 else []
        return [DIAMOND_SIZES[0]] + inner
    given = [given] * count if isinstance(given, int) else list(given)
    return (given + [given[-1]] * count)[:count]


def _distances(program, deps, rows: Rows, group: list) -> dict | None:
    """Per dependence ``(S, S')`` of the group, its distances ``(dt, dX)`` (a finite
    set of constants), where ``t`` is level 0 and ``X = level 1 - a t``; None when one
    is not a finite set of constants."""
    maps = {}
    for name in group:
        stmt = program.statement(name)
        row = rows.rows[name]
        maps[name] = named_rows(stmt, [row[0], _space(row[1])])
    found: dict = {}
    for dep in deps.items:
        if dep.source not in maps or dep.sink not in maps:
            continue
        pairs = maps[dep.source].reverse().apply_range(dep.relation).apply_range(
            maps[dep.sink]).intersect_params(program.context)
        deltas = pairs.deltas()
        deltas = deltas.project_out(isl.dim_type.param, 0, deltas.dim(isl.dim_type.param))
        if deltas.is_empty():
            continue
        if not deltas.is_bounded():
            return None
        points = []
        try:
            deltas.foreach_point(lambda p: points.append(tuple(
                p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(2))))
        except isl.Error:
            return None
        if len(points) > 256:
            return None
        found.setdefault((dep.source, dep.sink), set()).update(points)
    return found


def _offsets(group: list, distances: dict, slope: int) -> dict | None:
    """The smallest non-negative offsets ``p`` with ``p[S'] - p[S] >= |dX| - slope dt``
    for every distance of every dependence ``S -> S'`` (longest paths), or None when
    the constraints form a positive cycle."""
    need = {}
    for (src, dst), points in distances.items():
        weight = max(abs(dx) - slope * dt for dt, dx in points)
        if src == dst:
            if weight > 0 or any(dt == 0 and dx != 0 for dt, dx in points):
                return None
            continue
        need[(src, dst)] = max(need.get((src, dst), weight), weight)
    offsets = {name: 0 for name in group}
    for _ in range(len(group) + 1):
        changed = False
        for (src, dst), weight in need.items():
            if offsets[dst] < offsets[src] + weight:
                offsets[dst] = offsets[src] + weight
                changed = True
        if not changed:
            return offsets
    return None


def _time_slope(value) -> int | None:
    """The coefficient of the outermost loop in ``value`` (one affine piece)."""
    if value.n_piece() != 1:
        return None
    pieces = []
    value.foreach_piece(lambda _set, aff: pieces.append(aff))
    coefficient = pieces[0].get_coefficient_val(isl.dim_type.in_, 0)
    return coefficient.to_python() if coefficient.is_int() else None


def _space(value) -> isl.PwAff:
    """``value`` (one affine piece) without its time term and its constant: the space
    loop (``c1 = 2t + i + 1`` -> ``i``); the offsets in time replace isl's shifts."""
    pieces = []
    value.foreach_piece(lambda domain, aff: pieces.append((domain, aff)))
    domain, aff = pieces[0]
    aff = aff.set_coefficient_val(isl.dim_type.in_, 0, isl.Val(0)).set_constant_val(isl.Val(0))
    return isl.PwAff.alloc(domain, aff).coalesce()


def _dim(value, k: int) -> isl.PwAff:
    local = isl.LocalSpace.from_space(value.get_domain_space())
    return isl.PwAff.var_on_domain(local, isl.dim_type.set, k)


def _constant(value, c: int) -> isl.PwAff:
    local = isl.LocalSpace.from_space(value.get_domain_space())
    return isl.PwAff.from_aff(isl.Aff.zero_on_domain(local).set_constant_val(isl.Val(c)))
