"""The affine part of the automatic scheduler: isl's scheduler, and its result as rows.

:func:`isl_schedule` asks isl for a schedule of a program's statements that respects
every dependence (validity), keeps dependent instances close (proximity) and, where it
can, makes loops free of dependences (coincidence), in the Pluto style (tileable bands
first: ``schedule_outer_coincidence`` off).  Its effort is bounded by isl's
``max_operations`` and by CPU time (one isl operation can take long), so that it never
hangs; ``None`` comes back when it gives up.

:func:`flatten` turns the schedule tree into one row of affine values per statement,
all of one length (``0`` where a statement has no loop at that level, sequence
positions as constants), with, per level, whether it is a member of a permutable band.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def k(A: po.f64[N, N]):
...     for i in range(1, N):
...         for j in range(N):
...             A[i, j] += A[i - 1, j]
>>> schedule, _ = isl_schedule(po.create_schedule(k).program, po.deps(po.create_schedule(k)))
>>> rows = flatten(schedule)
>>> [str(v) for v in rows.rows["S0"]], rows.permutable
(['[N] -> { S0[i, j] -> [(j)] }', '[N] -> { S0[i, j] -> [(i)] }'], [True, True])
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..transform.time_limit import run_limited

_FUSION = {"max": (0, 0), "min": (1, 0), "smart": (0, 1)}  # serialize_sccs, whole_component


@dataclass
class Rows:
    """Per statement, its new schedule: ``rows[stmt]`` (PwAff or int per level);
    per level, ``permutable`` (a member of a permutable band for every statement) and
    ``band`` (an id of the band, equal across consecutive members of one band)."""

    rows: dict
    permutable: list
    band: list
    keys: dict | None = None  # per statement, per level: (band id, permutable) or None

    @property
    def depth(self) -> int:
        return len(self.permutable)

    def subset(self, names) -> "Rows":
        """The rows of statements ``names`` only, with their own band flags."""
        if self.keys is None:
            return Rows({n: self.rows[n] for n in names}, self.permutable, self.band)
        return _rows_of({n: list(zip(self.rows[n], self.keys[n])) for n in names})

    def extended(self, values: dict) -> "Rows":
        """One more level, a constant per statement (``values[name]``)."""
        keys = None if self.keys is None else {n: k + [None] for n, k in self.keys.items()}
        return Rows({n: r + [values[n]] for n, r in self.rows.items()},
                    self.permutable + [False], self.band + [None], keys)

    def replaced(self, level: int, values: dict) -> "Rows":
        """The same rows with level ``level`` of each statement replaced."""
        return Rows({n: r[:level] + [values[n]] + r[level + 1:] for n, r in self.rows.items()},
                    self.permutable, self.band, self.keys)


def isl_schedule(program, deps, *, fusion: str = "max", max_operations: int = 2_000_000,
                 seconds: float = 1.5, statements=None):
    """``(isl.Schedule or None, message)`` for ``statements`` (default: all); isl gives
    up after ``max_operations`` or ``seconds`` of CPU time (:mod:`.time_limit`)."""
    names = set(statements) if statements is not None else None
    domain = isl.UnionSet.empty(program.context.get_space())
    for stmt in program.statements:
        if names is None or stmt.name in names:
            domain = domain.union(isl.UnionSet.from_set(stmt.domain.intersect_params(
                program.context)))
    relation = isl.UnionMap.empty(program.context.get_space())
    for dep in deps.items:
        if names is None or (dep.source in names and dep.sink in names):
            relation = relation.union(isl.UnionMap.from_map(dep.relation))
    relation = relation.gist_params(program.context)
    key = (str(domain), str(relation), fusion, max_operations, seconds)
    if key in _SCHEDULED:  # the same problem again (auto_schedule's simpler attempts)
        text, message = _SCHEDULED[key]
        return (isl.Schedule.read_from_str(domain.get_ctx(), text) if text else None), message
    schedule, message = _compute(domain, uniform_pieces(relation), fusion, max_operations,
                                 seconds)
    if len(_SCHEDULED) >= 32:
        _SCHEDULED.pop(next(iter(_SCHEDULED)))
    _SCHEDULED[key] = (str(schedule) if schedule is not None else None, message)
    return schedule, message


_SCHEDULED: dict = {}  # isl's results by problem, as text (isl objects belong to a context)


def uniform_pieces(relation: isl.UnionMap, limit: int = 64) -> isl.UnionMap:
    """``relation`` with each dependence between statements of equal depth whose
    distances take a few constant values (a stencil's) written as one translation per
    distance, when that union is exactly the dependence (else the dependence as is).

    The same dependences, but isl's scheduler takes its Farkas multipliers of each
    piece's simple constraints far faster than of one polytope with diagonal facets
    (heat-3d: 0.69 s -> 0.02 s, the same schedule).

    >>> r = isl.UnionMap("[n] -> { S[i] -> S[j] : 0 <= i < n and i < j <= i + 2 and j < n }")
    >>> u = uniform_pieces(r)
    >>> u.is_equal(r), u.n_map()
    (True, 1)
    """
    maps = []
    relation.foreach_map(maps.append)
    result = isl.UnionMap.empty(relation.get_space())
    for dependence in maps:
        pieces = _translations(dependence, limit)
        result = result.union(isl.UnionMap.from_map(dependence) if pieces is None else pieces)
    return result


def _translations(dependence: isl.Map, limit: int) -> isl.UnionMap | None:
    """The union over the distances ``d`` of ``dependence`` of ``{ x -> x + d }`` within
    its domain and range, when there are at most ``limit`` distances and that union is
    ``dependence`` exactly; else None."""
    depth = dependence.dim(isl.dim_type.in_)
    if depth != dependence.dim(isl.dim_type.out) or depth == 0 or \
            dependence.n_basic_map() != 1 or _simple(dependence):
        return None
    plain = dependence.set_tuple_name(isl.dim_type.in_, "d").set_tuple_name(
        isl.dim_type.out, "d")
    distances = plain.deltas()
    distances = distances.project_out(isl.dim_type.param, 0,
                                      distances.dim(isl.dim_type.param))
    if not distances.is_bounded():
        return None
    points = []

    def collect(point):
        if len(points) == limit:
            raise _TooMany  # isl stops there (and raises its own error)
        points.append([point.get_coordinate_val(isl.dim_type.set, k).to_python()
                       for k in range(depth)])
    try:
        distances.foreach_point(collect)
    except (_TooMany, isl.Error):
        return None
    if not points:
        return None
    space = dependence.get_space()
    params = [space.get_dim_name(isl.dim_type.param, k)
              for k in range(space.dim(isl.dim_type.param))]
    source = dependence.get_tuple_name(isl.dim_type.in_)
    sink = dependence.get_tuple_name(isl.dim_type.out)
    xs = [f"x{k}" for k in range(depth)]
    domain, range_ = dependence.domain(), dependence.range()
    union = None
    for distance in points:
        ys = [f"x{k} + ({d})" for k, d in enumerate(distance)]
        text = (f"[{', '.join(params)}] -> {{ {source}[{', '.join(xs)}] -> "
                f"{sink}[{', '.join(ys)}] }}")
        piece = isl.Map.read_from_str(dependence.get_ctx(), text).intersect_domain(
            domain).intersect_range(range_)
        union = piece if union is None else union.union(piece)
    if not union.is_equal(dependence):
        return None
    return isl.UnionMap.from_map(union)


class _TooMany(Exception):
    """More distances than a few translations are worth."""


def _simple(dependence: isl.Map) -> bool:
    """Whether every constraint of the dependence involves at most two of its
    dimensions (a translation already: nothing to gain)."""
    constraints = dependence.get_basic_maps()[0].get_constraints()
    for constraint in constraints:
        used = sum(not constraint.get_coefficient_val(kind, k).is_zero()
                   for kind in (isl.dim_type.in_, isl.dim_type.out)
                   for k in range(dependence.dim(kind)))
        if used > 2:
            return False
    return True


def _compute(domain, relation, fusion: str, max_operations: int, seconds: float = 1.5):
    ctx = domain.get_ctx()
    saved = (ctx.get_schedule_outer_coincidence(), ctx.get_schedule_serialize_sccs(),
             ctx.get_schedule_whole_component(), ctx.get_max_operations(),
             ctx.get_schedule_maximize_band_depth())
    serialize, whole = _FUSION[fusion]
    ctx.set_schedule_outer_coincidence(0)
    ctx.set_schedule_serialize_sccs(serialize)
    ctx.set_schedule_whole_component(whole)
    ctx.reset_operations()
    ctx.set_max_operations(max_operations)
    try:
        constraints = (isl.ScheduleConstraints.on_domain(domain).set_validity(relation)
                       .set_proximity(relation).set_coincidence(relation))
        status, text = run_limited(lambda: str(constraints.compute_schedule()), seconds)
        if status == "ok":
            schedule = isl.Schedule.read_from_str(ctx, text)
            message = "isl's scheduler (proximity + coincidence, tileable bands first)"
        elif status == "timeout":
            schedule, message = None, f"isl's scheduler gave up (no schedule in {seconds:g} s)"
        else:
            schedule, message = None, f"isl's scheduler gave up ({_short(text)})"
    except isl.Error as err:  # building the constraints already ran out of operations
        schedule, message = None, f"isl's scheduler gave up ({_short(err)})"
    finally:
        outer, serialize_old, whole_old, operations, depth = saved
        ctx.set_max_operations(operations)
        ctx.reset_operations()
        ctx.set_schedule_outer_coincidence(outer)
        ctx.set_schedule_serialize_sccs(serialize_old)
        ctx.set_schedule_whole_component(whole_old)
        ctx.set_schedule_maximize_band_depth(depth)
    return schedule, message


def _short(err) -> str:
    text = str(err).strip().splitlines()
    return text[0][:120] if text else type(err).__name__


def flatten(schedule: isl.Schedule) -> Rows:
    """The rows of every statement (see :class:`Rows`)."""
    entries: dict[str, list] = {}
    _walk(schedule.get_root(), {}, entries, [0])
    return _rows_of(entries)


def _rows_of(entries: dict) -> Rows:
    depth = max((len(v) for v in entries.values()), default=0)
    rows, permutable, band, keys = {}, [True] * depth, [None] * depth, {}
    for name, items in entries.items():
        items = items + [(0, None)] * (depth - len(items))
        rows[name] = [value for value, _ in items]
        keys[name] = [key for _, key in items]
        for level, (_, key) in enumerate(items):
            if key is None:
                permutable[level] = False
            elif band[level] is None:
                band[level] = key[0]
            if key is not None and not key[1]:
                permutable[level] = False
            if key is not None and band[level] != key[0]:
                permutable[level] = False  # different bands at one level: not one band
    return Rows(rows, permutable, band, keys)


def _walk(node, prefix: dict, out: dict, counter: list) -> None:
    kind = node.get_type()
    types = isl.schedule_node_type
    if kind == types.leaf:
        for stmt_set in _sets(node.get_domain()):
            name = stmt_set.get_tuple_name()
            out[name] = list(prefix.get(name, []))
        return
    if kind == types.band:
        counter[0] += 1
        band_id = counter[0]
        partial = node.band_get_partial_schedule()
        permutable = bool(node.band_get_permutable())
        n = node.band_n_member()
        extended = {}
        for stmt_set in _sets(node.get_domain()):
            name = stmt_set.get_tuple_name()
            items = list(prefix.get(name, []))
            for member in range(n):
                value = _piece(partial.get_union_pw_aff(member), stmt_set)
                items.append((value, (band_id, permutable or n == 1)))
            extended[name] = items
        _walk(node.child(0), {**prefix, **extended}, out, counter)
        return
    if kind == types.sequence or kind == types.set:
        for position in range(node.n_children()):
            child = node.child(position)  # a filter
            extended = {}
            for stmt_set in _sets(child.filter_get_filter()):
                name = stmt_set.get_tuple_name()
                extended[name] = list(prefix.get(name, [])) + [(position, None)]
            _walk(child, {**prefix, **extended}, out, counter)
        return
    if node.n_children() > 0:  # domain, filter, mark, context: look through
        _walk(node.child(0), prefix, out, counter)


def _sets(union_set) -> list:
    result = []
    union_set.foreach_set(result.append)
    return result


def _piece(upa: isl.UnionPwAff, stmt_set: isl.Set) -> isl.PwAff:
    """The piece of ``upa`` on the statement of ``stmt_set``."""
    found = []

    def take(pw_aff):
        if pw_aff.get_domain_space().get_tuple_name(isl.dim_type.set) == \
                stmt_set.get_tuple_name():
            found.append(pw_aff)

    upa.foreach_pw_aff(take)
    return found[0].gist(stmt_set).coalesce()


def row_map(stmt, row: list, names: list[str]) -> isl.Map:
    """``[params] -> { [d0, ...] -> [row...] }`` for a stage whose loops are ``stmt``'s dims."""
    space = stmt.domain.get_space()
    local = isl.LocalSpace.from_space(space)
    relation = isl.Map.from_domain(isl.Set.universe(space))
    for value in row:
        if isinstance(value, int):
            value = isl.PwAff.from_aff(isl.Aff.zero_on_domain(local).set_constant_val(
                isl.Val(value)))
        relation = relation.flat_range_product(isl.Map.from_pw_aff(value))
    relation = relation.reset_tuple_id(isl.dim_type.in_).reset_tuple_id(isl.dim_type.out)
    for k, name in enumerate(names):
        if name is not None:
            relation = relation.set_dim_name(isl.dim_type.out, k, name)
    return relation


def map_text(stmt, row: list, names: list[str]) -> str:
    """``[N] -> { [i, j] -> [i, c1 = i + j, 0] }``: the row as text for ``transform``,
    levels named by ``names`` (a loop that stays a loop keeps its name)."""
    relation = row_map(stmt, row, [None] * len(row))
    text = str(relation)
    params, body = text.split("{", 1) if "->" in text.split("{", 1)[0] else ("", text[1:])
    head, _, rest = body.partition("->")
    outputs = _split_top(rest.strip().lstrip("[").rsplit("]", 1)[0])
    if ":" in rest or len(outputs) != len(row):
        return text  # pieces or conditions: isl's own text
    dims = list(stmt.dims)
    named = [out if out.strip() == name or not name or name in dims else f"{name} = {out.strip()}"
             for out, name in zip(outputs, names)]
    return f"{params}{{ {head.strip()} -> [{', '.join(o.strip() for o in named)}] }}"


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def level_names(rows: Rows, program) -> list[str]:
    """A name per level: a statement dimension's when every statement has that one
    there (``i``), else ``c<k>``."""
    names = []
    for level in range(rows.depth):
        found = set()
        for stmt_name, row in rows.rows.items():
            value = row[level]
            dims = program.statement(stmt_name).dims
            found.add(_single_dim(value, dims))
        only = found.pop() if len(found) == 1 else None
        names.append(only if only and only not in names else f"c{level}")
    return names


def _single_dim(value, dims) -> str | None:
    if isinstance(value, int) or value.n_piece() != 1:
        return None
    for k, name in enumerate(dims):
        local = isl.LocalSpace.from_space(value.get_domain_space())
        if value.is_equal(isl.PwAff.var_on_domain(local, isl.dim_type.set, k)):
            return name
    return None
