"""What the levels of a schedule do to the accesses: strides along a level, levels without
dependence distance, the innermost levels free of dependences, a distributable order, the
footprint of the outer loops and the stride score that ranks loop orders.  The schedule rows
themselves (``Rows``) come from :mod:`.auto_affine`."""

from __future__ import annotations

import islpy as isl

from ..domain.memo import IdentityMemo
from ..domain.schedule import element_steps
from .auto_affine import Rows, row_map


def strides(program, rows: Rows, level: int) -> list[tuple[str, int | None, int, int]]:
    """For each access (write first), how far the element moves in memory when level
    ``level`` of the new schedule grows by 1: ``0`` (the same element), ``1`` (the next
    one), another number, or None (not a constant step); with the number of loops of
    its statement and of dimensions of its array: ``(kind, step, loops, dims)``."""
    result = []
    for stmt_name, row in rows.rows.items():
        stmt = program.statement(stmt_name)
        schedule = named_rows(stmt, row)
        for access in sorted(stmt.accesses, key=lambda a: a.kind != "write"):
            pairs = element_steps(schedule, access.relation, level)
            result.append((access.kind, _flat_step(pairs), len(stmt.dims),
                           program.array(access.array).ndim))
    return result


def named_rows(stmt, row: list) -> isl.Map:
    """``{ S[i] -> [c0, c1, ...] }`` on ``stmt``'s domain, for its schedule ``row`` (the
    affine rows of :class:`Rows`)."""
    relation = row_map(stmt, row, [f"c{k}" for k in range(len(row))])
    relation = relation.set_tuple_name(isl.dim_type.in_, stmt.name)
    return relation.intersect_domain(stmt.domain)


def _flat_step(pairs: isl.Map) -> int | None:
    if pairs.is_empty():
        return 0
    deltas = pairs.deltas()
    n = deltas.dim(isl.dim_type.set)
    if n == 0:
        return 0
    point = deltas.sample_point()
    coords = [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n)]
    space = deltas.get_space()
    params = ", ".join(space.get_var_names(isl.dim_type.param))
    single = isl.Set(f"[{params}] -> {{ {space.get_tuple_name(isl.dim_type.set) or ''}"
                     f"[{', '.join(map(str, coords))}] }}").intersect_params(deltas.params())
    if not deltas.is_equal(single):
        return None
    if any(coords[:-1]):
        return 1 << 20  # moves along an outer dimension: a large stride
    return abs(coords[-1])


def zero_distance_levels(program, deps, rows: Rows, outer: int) -> set[int]:
    """The levels at which every dependence not carried by the first ``outer`` levels
    has distance 0: such a loop carries no dependence, whatever the order of the other
    loops of the band (tiles included)."""
    depth = rows.depth
    maps = {name: named_rows(program.statement(name), row) for name, row in rows.rows.items()}
    result = set(range(depth))
    for dep in deps.items:
        if dep.source not in maps or dep.sink not in maps:
            continue
        pairs = maps[dep.source].reverse().apply_range(dep.relation).apply_range(maps[dep.sink])
        deltas = pairs.deltas()
        for level in range(outer):
            deltas = deltas.intersect(_fix(deltas.get_space(), level, 0))
        if deltas.is_empty():
            continue
        for level in list(result):
            if not deltas.subtract(_fix(deltas.get_space(), level, 0)).is_empty():
                result.discard(level)
    return result


def _fix(space: isl.Space, level: int, value: int) -> isl.Set:
    """``{ [x0, ...] : x<level> = value }`` in ``space``'s parameters and dimensions
    (parsed once per such set: the levels of a band are asked about per dependence)."""
    n = space.dim(isl.dim_type.set)
    params = ", ".join(space.get_var_names(isl.dim_type.param))
    names = ", ".join(f"x{k}" for k in range(n))
    return _FIXED.get((params, n, level, value), lambda: isl.Set(
        f"[{params}] -> {{ [{names}] : x{level} = {value} }}"))


_FIXED = IdentityMemo(size=256)  # (by value: texts and ints)


def innermost_free_levels(program, deps, rows: Rows, lo: int, hi: int, *,
                          within: bool = False) -> set[int]:
    """The levels of the band ``lo..hi`` whose loop, put innermost in a tile, carries
    no dependence: none has distance 0 at every other band level (and before the band)
    and a non-zero distance at that level.  ``within``: only the dependences between
    instances of one statement count (as when each statement has a loop of its own)."""
    maps = {name: named_rows(program.statement(name), row) for name, row in rows.rows.items()}
    result = set(range(lo, hi))
    for dep in deps.items:
        if dep.source not in maps or dep.sink not in maps or (
                within and dep.source != dep.sink):
            continue
        deltas = maps[dep.source].reverse().apply_range(dep.relation).apply_range(
            maps[dep.sink]).deltas()
        space = deltas.get_space()
        for level in range(lo):
            deltas = deltas.intersect(_fix(space, level, 0))
        for level in list(result):
            rest = deltas
            for other in range(lo, hi):
                if other != level:
                    rest = rest.intersect(_fix(space, other, 0))
            if not rest.subtract(_fix(space, level, 0)).is_empty():
                result.discard(level)
    return result


def distributable_order(program, deps, rows: Rows) -> Rows:
    """``rows`` with the statements' order at their last level (a constant per
    statement, after every loop) changed, when needed, so that it can move above the
    innermost loop: a statement whose instances feed another's within one iteration of
    the other loops comes first (lu: ``A[i][k] /= A[k][k]`` before the updates of
    ``A[i][j]`` that read it, at ``c0 = k``), else the order is kept; ``rows`` as they
    are when the levels are not loops then one constant, or the needs form a cycle.

    Within one iteration of every loop, instances of different statements never meet at
    one value of the innermost loop, so the order there changes nothing as it is."""
    names = list(rows.rows)
    last = rows.depth - 1
    loops = [k for k in range(last) if not all(isinstance(rows.rows[n][k], int)
                                               for n in names)]
    if len(names) < 2 or not loops or not all(isinstance(rows.rows[n][last], int)
                                              for n in names) or loops[-1] != last - 1 \
            or len({rows.rows[n][last] for n in names}) < len(names):
        return rows  # (not one value per statement: it orders only some of them)
    maps = {n: named_rows(program.statement(n), rows.rows[n]) for n in names}
    before = {n: set() for n in names}
    for dep in deps.items:
        if dep.source == dep.sink or dep.source not in maps or dep.sink not in maps:
            continue
        deltas = maps[dep.source].reverse().apply_range(dep.relation).apply_range(
            maps[dep.sink]).deltas()
        for level in loops[:-1]:
            deltas = deltas.intersect(_fix(deltas.get_space(), level, 0))
        if not deltas.intersect_params(program.context).is_empty():
            before[dep.sink].add(dep.source)
    order, left = [], sorted(names, key=lambda n: rows.rows[n][last])
    while left:
        ready = [n for n in left if not (before[n] & set(left)) - {n}]
        if not ready:
            return rows  # a cycle: no order serves
        order.append(ready[0])
        left.remove(ready[0])
    values = sorted(rows.rows[n][last] for n in names)
    if [rows.rows[n][last] for n in order] == values:
        return rows
    return rows.replaced(last, {n: v for n, v in zip(order, values)})


def outer_footprint(program) -> int | None:
    """The bytes that one iteration of the outermost loop of the source order touches
    (per array, the box of the elements its statements access, summed; at the first
    and the last value of that loop, the larger), with every size at the largest value
    the context allows; ``None`` when it depends on a size without a bound (a time-step
    count without one is fine: it changes how often, not what).

    >>> import polyopt as po
    >>> @po.kernel
    ... def k(A: po.f64[100, 50], x: po.f64[50]):
    ...     for i in range(100):
    ...         for j in range(50):
    ...             A[i, j] = A[i, j] * x[j]
    >>> outer_footprint(po.create_schedule(k).program)  # a row of A and x: 2 x 50 x 8
    800
    >>> N = po.var("N")
    >>> @po.kernel
    ... def g(A: po.f64[N, N]):
    ...     for i in range(N):
    ...         for j in range(N):
    ...             A[i, j] = A[i, j] * 2.0
    >>> outer_footprint(po.create_schedule(g).program) is None  # a row of any length
    True
    """
    found = {_footprint_at(program, _largest_params(program.context, guess))
             for guess in (1000, 100_000)}
    return found.pop() if len(found) == 1 else None


def _footprint_at(program, params: isl.Set | None) -> int | None:
    if params is None:
        return None
    itemsize = {a.name: _ITEMSIZE.get(a.dtype, 8) for a in program.arrays}
    ends: dict = {}  # per end (first, last): per array, the box [(lo, hi), ...]
    for stmt in program.statements:
        domain = stmt.domain.intersect_params(params)
        if domain.is_empty() or domain.dim(isl.dim_type.set) == 0:
            continue
        for end, value in enumerate((domain.dim_min_val(0), domain.dim_max_val(0))):
            if not value.is_int():
                return None
            piece = domain.fix_val(isl.dim_type.set, 0, value)
            boxes = ends.setdefault(end, {})
            for access in stmt.accesses:
                elements = access.relation.intersect_domain(piece).range()
                if elements.is_empty():
                    continue
                box = [(elements.dim_min_val(k), elements.dim_max_val(k))
                       for k in range(elements.dim(isl.dim_type.set))]
                if not all(lo.is_int() and hi.is_int() for lo, hi in box):
                    return None
                box = [(lo.to_python(), hi.to_python()) for lo, hi in box]
                old = boxes.get(access.array)
                boxes[access.array] = box if old is None else [
                    (min(a, c), max(b, d)) for (a, b), (c, d) in zip(old, box)]
    total = 0
    for boxes in ends.values():
        size = 0
        for array, box in boxes.items():
            count = 1
            for lo, hi in box:
                count *= hi - lo + 1
            size += count * itemsize.get(array, 8)
        total = max(total, size)
    return total


_ITEMSIZE = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "int16": 2,
             "int8": 1, "uint8": 1}


def _largest_params(context: isl.Set, guess: int) -> isl.Set | None:
    """The context with every parameter fixed to the largest value it allows once the
    others are at least 1 (``guess`` for one without a bound)."""
    n = context.dim(isl.dim_type.param)
    fixed = context
    for k in range(n):
        positive = fixed.lower_bound_val(isl.dim_type.param, k, isl.Val(1))
        fixed = positive if not positive.is_empty() else fixed
    for k in range(n):
        values = fixed.move_dims(isl.dim_type.set, 0, isl.dim_type.param, 0, n)
        top = values.dim_max_val(k)
        if not top.is_int():
            top = isl.Val(guess)
        fixed = fixed.fix_val(isl.dim_type.param, k, top)
    return fixed if not fixed.is_empty() else None


def tileable_run(rows: Rows) -> tuple[int, int] | None:
    """The first run of two or more levels of one permutable band with loop values."""
    levels = [k for k in range(rows.depth) if rows.permutable[k] and not all(
        isinstance(row[k], int) for row in rows.rows.values())]
    start = None
    for k in range(rows.depth + 1):
        inside = k in levels and (start is None or rows.band[k] == rows.band[start])
        if start is not None and not inside:
            if k - start >= 2:
                return start, k
            start = None
        if start is None and k in levels:
            start = k
    return None


def stride_score(program, rows: Rows, level: int, tiled: bool = True) -> int:
    """Higher when more accesses step by one element (writes count double) along
    ``level``; gathers and strided accesses lower it.  The statements with the most
    loops (the most instances) weigh most, then the arrays with the most dimensions.
    Outside tiles a strided walk over a matrix takes a new cache line per step
    (gesummv: a column of ``A[i][j]`` outweighs the rows of ``tmp[i]``); in a tile
    those lines stay cached."""
    score = 0
    for kind, step, loops, dims in strides(program, rows, level):
        weight = (2 if kind == "write" else 1) * dims * 64 ** loops
        if step == 1:
            score += 2 * weight
        elif step == 0:
            score += weight
        else:  # a new cache line each time: far worse for a matrix than a vector
            score -= 2 * weight * (1 if tiled or dims < 2 else 16)
    return score
