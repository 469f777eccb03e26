"""Stages and their loops, and the isl schedule they define.

A :class:`StageRecord` is the program's record of what a user schedules (``po.Stage``,
in :mod:`polyopt.transform.stage`, is the user's handle on it): the statements of one compute (its
``main`` statement and, for a reduction, its ``init``) and an ordered list of loop
:class:`Axis` (outermost first), each a quasi-affine function of the main
statement's dimensions.  A stage is either at the root (in definition order) or
shares its first ``depth`` loops with another stage (``Attach("with", other, depth)``).

The schedule is flat, in the classic "2d+1" form: every statement gets a row
``[s0, l1, s1, l2, s2, ...]`` where the ``l`` are loop values and the ``s`` order
what shares a loop.  Inside a loop, stages sharing it run in definition order; a
reduction's init runs right before its first reduce loop.

>>> import polyopt as po
>>> M, N = po.var("M"), po.var("N"); A = po.placeholder((M, N), name="A")
>>> k = po.reduce_axis((0, N), name="k")
>>> S = po.compute((M,), lambda i: po.sum(A[i, k], axis=k), name="S")
>>> program = po.create_schedule(S).program
>>> print(program.schedule_of("S_init")); print(program.schedule_of("S_update"))
[M, N] -> { S_init[i] -> [0, 0, i, 0, 0, 0] : 0 <= i < M }
[M, N] -> { S_update[i, k] -> [0, 0, i, 1, k, 0] : 0 <= i < M and 0 <= k < N }
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import islpy as isl

from ..schedule_errors import TupleReductionError, UnknownLoopError
from ..machine import BIND_TAGS, VIRTUAL_THREAD  # target facts, for every layer
from .memo import IdentityMemo

KINDS = ("serial", "parallel", "vectorized", "unrolled", VIRTUAL_THREAD) + BIND_TAGS
# loops whose iterations run at the same time: they must carry no dependence
CONCURRENT_KINDS = ("parallel", "vectorized", VIRTUAL_THREAD) + BIND_TAGS


@dataclass(frozen=True, slots=True, eq=False)
class SplitOrder:
    """What a split records on its two loops: the pair ``(outer, inner)`` (these value
    objects, adjacent) runs the instances in the order that ``whole``, the loop before
    the split, ran them.  Every stage split together shares ``token``.  The dataflow
    analysis then orders by ``whole`` (:func:`order_rows`): the same order, so the same
    dependences, without isl working through the pieces of a symbolic ``nparts``."""

    whole: isl.PwAff
    outer: isl.PwAff
    inner: isl.PwAff
    token: object
    start: isl.PwAff  # the split: outer = (whole - start) // factor, outer < parts
    factor: isl.PwAff
    parts: int
    loop: str = ""  # the name of the loop that was split

    def on(self, whole: isl.PwAff) -> "SplitOrder":
        """The record for another stage that runs in the split's loops, where the loop
        before the split is ``whole`` (a stage computed at them and keyed by that loop:
        its own dimension); its two loops are those of the same split of ``whole``."""
        outer, inner = nparts_loops(whole, self.start, self.factor, self.parts)
        return dataclasses.replace(self, whole=whole, outer=outer, inner=inner)


def nparts_loops(whole: isl.PwAff, start: isl.PwAff, factor: isl.PwAff, parts: int
                 ) -> tuple[isl.PwAff, isl.PwAff]:
    """The two loops of ``split(nparts=parts)`` of the loop ``whole`` (a function on a
    statement's instances) that starts at ``start`` with parts of ``factor`` iterations
    (both functions of the sizes only): the outer loop is ``o`` on the piece
    ``o * factor <= whole - start < (o + 1) * factor``, the inner one
    ``whole - start - o * factor`` there (``parts`` pieces, exact).

    >>> zero = isl.PwAff("[n] -> { [(0)] }")
    >>> outer, inner = nparts_loops(isl.PwAff("[n] -> { S[i] -> [(i)] }"), zero,
    ...                             isl.PwAff("[n] -> { [(floor((n + 1) / 2))] }"), 2)
    >>> print(outer.eval(isl.Point.zero(outer.get_domain_space()).set_coordinate_val(
    ...     isl.dim_type.param, 0, isl.Val(5)).set_coordinate_val(isl.dim_type.set, 0,
    ...     isl.Val(3))))
    1
    """
    space = whole.get_domain_space()
    offset = whole.sub(params_on_domain(start, space))
    size = params_on_domain(factor, space)
    zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
    outer = inner = None
    for part in range(parts):
        first = size.scale_val(isl.Val(part))
        piece = offset.ge_set(first).intersect(offset.lt_set(first.add(size)))
        constant = zero.add_constant_val(isl.Val(part)).intersect_domain(piece)
        within = offset.sub(first).intersect_domain(piece)
        outer = constant if outer is None else outer.union_max(constant)
        inner = within if inner is None else inner.union_max(within)
    return outer.coalesce(), inner.coalesce()


def params_on_domain(params_aff: isl.PwAff, space: isl.Space) -> isl.PwAff:
    """A parameter-only expression as a function on the statement space (0 where it is
    not defined, so that a loop made from it exists for every instance)."""
    # is_cst() means each piece is constant, not that they agree (a range that is 0
    # where a stage is empty and -1 elsewhere is piecewise constant)
    if params_aff.is_cst() and params_aff.min_val().eq(params_aff.max_val()):
        value = params_aff.max_val()
        local = isl.LocalSpace.from_space(space)
        return isl.PwAff.from_aff(isl.Aff.zero_on_domain(local).set_constant_val(value))
    to_params = isl.Space.map_from_domain_and_range(space, params_aff.get_domain_space())
    lifted = params_aff.pullback_multi_aff(isl.MultiAff.zero(to_params))
    zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
    return lifted.union_max(zero.intersect_domain(lifted.domain().complement()))


@dataclass(frozen=True, slots=True)
class Axis:
    """One loop of a stage: ``value`` maps the main statement's instance to the loop's
    value; ``order``: a split's record (:class:`SplitOrder`), for the dataflow only;
    ``fused_part``: the inner part of the loop before it (a fuse of two loops whose
    extents both depend on the sizes, run as those two loops: see
    :func:`polyopt.transform.loops.fuse`)."""

    name: str
    value: isl.PwAff
    kind: str = "serial"
    order: SplitOrder | None = field(default=None, compare=False, repr=False)
    fused_part: bool = False


@dataclass(frozen=True, slots=True)
class Attach:
    kind: str = "root"          # root | with
    stage: str | None = None    # the stage whose loops are shared
    depth: int = 0              # how many of its outer loops are shared
    outer_dims: int = 0         # compute_at: how many outer loop values the statements
                                # got as their first dimensions (they recompute per tile)


@dataclass(frozen=True, slots=True)
class StageRecord:
    """One stage of a program: its name, main statement, loops, reduce dimensions,
    init statement and where it is attached."""

    name: str
    main: str
    axes: tuple[Axis, ...]
    reduce_dims: frozenset[str] = field(default_factory=frozenset)
    init: str | None = None
    attach: Attach = Attach()

    def axis(self, name: str) -> int:
        """Position of the loop called ``name`` (raises :class:`ScheduleError`)."""
        for position, axis in enumerate(self.axes):
            if axis.name == name:
                return position
        raise UnknownLoopError(self.name, name, tuple(a.name for a in self.axes))

    def involves_reduce(self, axis: Axis) -> bool:
        dims = axis.value.get_space().get_var_names(isl.dim_type.in_)
        for pos, name in enumerate(dims):
            if name in self.reduce_dims and axis.value.involves_dims(isl.dim_type.in_, pos, 1):
                return True
        return False

    @property
    def init_level(self) -> int:
        """How many loops enclose the init: those before the first reduce loop."""
        for position, axis in enumerate(self.axes):
            if self.involves_reduce(axis):
                return position
        return len(self.axes)


def identity_axes(domain: isl.Set, names: tuple[str, ...] | None = None) -> tuple[Axis, ...]:
    """One loop per dimension of ``domain``, named after the dimensions."""
    space = domain.get_space()
    local = isl.LocalSpace.from_space(space)
    dims = space.get_var_names(isl.dim_type.set)
    names = names or dims
    return tuple(Axis(name, isl.PwAff.var_on_domain(local, isl.dim_type.set, pos))
                 for pos, name in enumerate(names))


class _Layout:
    """Computes the rows of every statement from the stages."""

    def __init__(self, stages: tuple[StageRecord, ...], statements: dict):
        self.stages = {s.name: s for s in stages}
        self.index = {s.name: i for i, s in enumerate(stages)}
        self.statements = statements
        self.roots = [s.name for s in stages if s.attach.kind == "root"]
        self.children: dict[tuple[str, int], list[tuple[float, str]]] = {}
        for stage in stages:
            if stage.attach.kind == "with":
                key = (stage.attach.stage, stage.attach.depth)
                self.children.setdefault(key, []).append((self.index[stage.name], stage.name))
        # the other outputs of a reduction over a tuple share all the loops of the first;
        # their inits run with its init, right after it
        self.hoisted: dict[tuple[str, int], list[str]] = {}
        for stage in stages:
            if init_hoisted(stage):
                key = (stage.attach.stage, stage.init_level)
                self.hoisted.setdefault(key, []).append(stage.name + ".init")

    def position(self, parent: str, level: int, member: str) -> int:
        """Rank of ``member`` ("stage", or "stage.init") among what shares loop ``level``."""
        stage = self.stages[parent]
        members = list(self.children.get((parent, level), []))
        members.append((self.index[parent], parent))
        if stage.init is not None and stage.init_level == level:
            members.append((self.index[parent] - 0.5, parent + ".init"))
            hoisted = self.hoisted.get((parent, level), [])
            members += [(self.index[parent] - 0.5 + (k + 1) / (4 * len(hoisted) + 4), name)
                        for k, name in enumerate(hoisted)]
        members.sort()
        return [name for _, name in members].index(member)

    def head(self, stage: StageRecord, shared: list) -> list:
        """Row entries before the stage's own first static entry."""
        if stage.attach.kind == "root":
            return [self.roots.index(stage.name)]
        parent = self.stages[stage.attach.stage]
        depth = stage.attach.depth
        k = parent.attach.depth if parent.attach.kind == "with" else 0
        entries = self.head(parent, shared[:k])
        if depth == k:  # ordered among the parent's own members at that level
            return entries + [self.position(parent.name, k, stage.name)]
        entries.append(self.position(parent.name, k, parent.name))
        for level in range(k + 1, depth + 1):
            entries.append(shared[level - 1])
            if level < depth:
                entries.append(self.position(parent.name, level, parent.name))
        return entries + [self.position(parent.name, depth, stage.name)]

    def row(self, stage: StageRecord, statement, values: list, *, init: bool,
            member: str | None = None) -> list:
        if init and init_hoisted(stage):  # placed as the owner's init is
            owner = self.stages[stage.attach.stage]
            if owner.init is None or owner.init_level != stage.init_level:
                raise TupleReductionError("the schedule", stage.name, (owner.name,),
                                          init_moved=True)
            return self.row(owner, statement, values, init=True, member=stage.name + ".init")
        k = stage.attach.depth if stage.attach.kind == "with" else 0
        entries = self.head(stage, values[:k])
        last = stage.init_level if init else len(stage.axes)
        member = member or (stage.name + ".init" if init else stage.name)
        entries.append(self.position(stage.name, k, member if last == k else stage.name))
        for level in range(k + 1, last + 1):
            entries.append(values[level - 1])
            entries.append(self.position(stage.name, level, member if level == last
                                         else stage.name))
        if init:
            for value in values[last:]:
                if value is not None:
                    entries += [value, 0]
        return entries


def init_hoisted(stage: StageRecord) -> bool:
    """Whether ``stage`` shares loops inside its reduction with another stage (only
    the outputs of a reduction over a tuple do): its init then runs with the other's."""
    return (stage.attach.kind == "with" and stage.init is not None
            and stage.init_level < stage.attach.depth)


def build_schedule(statements, stages: tuple[StageRecord, ...], context: isl.Set):
    """The isl schedule of ``stages`` and, per statement, the :class:`Axis` of each row entry.

    Returns ``(schedule, loop_axes, rows)`` where ``loop_axes`` is a tuple of
    ``(statement name, tuple of Axis or None per schedule dimension)`` and ``rows`` is
    the schedule as a union map (what ``schedule.get_map()`` gives on the domains,
    without asking isl to flatten the tree again: slow on tiled schedules).
    """
    by_name = {s.name: s for s in statements}
    layout = _Layout(stages, by_name)
    rows: dict[str, tuple[list, list]] = {}
    for stage in stages:
        main = by_name[stage.main]
        for stmt_name, is_init in ((stage.main, False), (stage.init, True)):
            if stmt_name is None:
                continue
            stmt = by_name[stmt_name]
            values, axes = _values_for(stage, main, stmt, is_init)
            entries = layout.row(stage, stmt, values, init=is_init)
            rows[stmt_name] = (entries, _entry_axes(entries, values, axes))
    width = max((len(e) for e, _ in rows.values()), default=1)
    umap = isl.UnionMap.empty(context.get_space())
    domain = isl.UnionSet.empty(context.get_space())
    loop_axes = []
    for stmt in statements:
        entries, axes = rows[stmt.name]
        padded = entries + [0] * (width - len(entries))
        umap = umap.union(isl.UnionMap.from_map(_row_map(stmt.domain, padded)))
        domain = domain.union(isl.UnionSet.from_set(stmt.domain))
        loop_axes.append((stmt.name, tuple(axes) + (None,) * (width - len(axes))))
    band = _band(statements, rows, width, umap)
    schedule = isl.Schedule.from_domain(domain).insert_partial_schedule(band)
    return schedule, tuple(loop_axes), umap


def order_rows(statements, stages: tuple[StageRecord, ...], rows: dict) -> dict:
    """``rows`` (each statement's schedule row) with every split recorded as
    order-equivalent (:class:`SplitOrder`) ordered by its whole loop: entries
    ``[.., outer, s, inner, ..]`` become ``[.., whole, s, 0, ..]``.  That is the same
    order when every row that can tie with it before ``outer`` has the same split
    there, with the same ``s``; a split for which that does not hold (a stage attached
    between its loops, a reduction's init inside them) keeps its loops.

    >>> import polyopt as po
    >>> n = po.var("n"); A = po.placeholder((n,), name="A")
    >>> B = po.compute((n,), lambda i: A[i] + 1, name="B")
    >>> from polyopt.transform.loops import split
    >>> program, _ = split(po.create_schedule(B).program, "B", "i", nparts=3)
    >>> print(program.order_rows()["B"])
    [n] -> { B[i] -> [0, 0, i, 0, 0, 0] }
    """
    if not any(a.order is not None for st in stages for a in st.axes):
        return rows
    by_name = {s.name: s for s in statements}
    layout = _Layout(stages, by_name)
    entries, found = {}, {}
    for stage in stages:
        if stage.main not in rows:
            continue
        main = by_name[stage.main]
        values = [a.value for a in stage.axes]
        row = layout.row(stage, main, values, init=False)
        entries[stage.main] = row
        found[stage.main] = _split_pairs(row, values, stage.axes)
        if stage.init is not None and stage.init in rows:
            init_values, _ = _values_for(stage, main, by_name[stage.init], True)
            entries[stage.init] = layout.row(stage, by_name[stage.init], init_values, init=True)
            found[stage.init] = {}
    valid = {order.token for pairs in found.values() for order in pairs.values()}
    for name, pairs in found.items():
        for p, order in pairs.items():
            for other, row in entries.items():
                if other != name and _ties_before(entries[name], row, p) and not (
                        p in found[other] and found[other][p].token is order.token and
                        row[p + 1] == entries[name][p + 1]):
                    valid.discard(order.token)
    result = dict(rows)
    for name, pairs in found.items():
        kept = {p: o for p, o in pairs.items() if o.token in valid}
        if kept:
            row = list(entries[name])
            for p, order in kept.items():
                row[p], row[p + 2] = order.whole, 0
            width = rows[name].dim(isl.dim_type.out)
            result[name] = _row_map(by_name[name].domain, row + [0] * (width - len(row)))
    return result


def _split_pairs(row: list, values: list, axes) -> dict:
    """``{position of outer: SplitOrder}`` for the recorded splits in ``row`` whose two
    loops are still the split's own, adjacent (``[.., outer, s, inner, ..]``)."""
    pairs = {}
    for k, axis in enumerate(axes[:-1]):
        order = axis.order
        if order is None or axes[k + 1].order is not order or values[k] is not order.outer \
                or values[k + 1] is not order.inner:
            continue
        positions = [p for p, e in enumerate(row) if e is values[k]]
        if positions and positions[0] + 2 < len(row) and row[positions[0] + 2] is values[k + 1]:
            pairs[positions[0]] = order
    return pairs


def _ties_before(row: list, other: list, p: int) -> bool:
    """Whether instances of ``other`` can tie with ``row``'s before position ``p``:
    the same static entries there (loops share their values)."""
    padded = list(other) + [0] * max(0, p - len(other))
    return all(isinstance(padded[k], int) and padded[k] == row[k] for k in range(p)
               if isinstance(row[k], int))


def _values_for(stage: StageRecord, main, stmt, is_init: bool):
    """Each axis as a function of ``stmt``'s instance (None where it cannot be: an init
    does not enumerate reduce loops)."""
    if not is_init:
        return [a.value for a in stage.axes], list(stage.axes)
    values = _INIT_VALUES.get((main.domain, stmt.domain, stage.reduce_dims,
                               *(a.value for a in stage.axes)),
                              lambda: _init_values(stage, main, stmt))
    return list(values), list(stage.axes)


def _init_values(stage: StageRecord, main, stmt) -> tuple:
    """The axes of ``stage`` as functions of its init statement's instance."""
    embed = _embedding(main, stmt)
    return tuple(None if stage.involves_reduce(axis) else axis.value.pullback_multi_aff(embed)
                 for axis in stage.axes)


def on_statement(value: isl.PwAff, main, stmt) -> isl.PwAff:
    """``value``, a function of the ``main`` statement's instance, as a function of the
    instance of ``stmt`` (the main statement itself, or its init: the dimensions the
    init has, by name; ``value`` must not involve the others).

    >>> import polyopt as po
    >>> M, N = po.var("M"), po.var("N"); A = po.placeholder((M, N), name="A")
    >>> k = po.reduce_axis((0, N), name="k")
    >>> S = po.compute((M,), lambda i: po.sum(A[i, k], axis=k), name="S")
    >>> p = po.create_schedule(S).program
    >>> main, init = p.statement("S_update"), p.statement("S_init")
    >>> print(on_statement(p.stage("S").axes[0].value, main, init))
    [M, N] -> { S_init[i] -> [(i)] }
    """
    if stmt is main:
        return value
    return value.pullback_multi_aff(_embedding(main, stmt))


def _embedding(main, stmt) -> isl.MultiAff:
    """``{ stmt[d] -> main[m] }``: each dimension of ``main`` that ``stmt`` has, by name
    (0 for the others)."""
    space = main.domain.get_space()
    init_space = stmt.domain.get_space()
    local = isl.LocalSpace.from_space(init_space)
    init_dims = init_space.get_var_names(isl.dim_type.set)
    pieces = []
    for name in space.get_var_names(isl.dim_type.set):
        if name in init_dims:
            pieces.append(isl.Aff.var_on_domain(local, isl.dim_type.set, init_dims.index(name)))
        else:
            pieces.append(isl.Aff.zero_on_domain(local))
    target = isl.Space.create_from_names(isl.DEFAULT_CONTEXT, in_=init_dims,
                                         out=space.get_var_names(isl.dim_type.set),
                                         params=space.get_var_names(isl.dim_type.param))
    target = target.set_tuple_name(isl.dim_type.in_, stmt.name).set_tuple_name(
        isl.dim_type.out, main.name)
    aff_list = isl.AffList.alloc(isl.DEFAULT_CONTEXT, len(pieces))
    for aff in pieces:
        aff_list = aff_list.add(aff)
    return isl.MultiAff.from_aff_list(target, aff_list)


def _entry_axes(entries: list, values: list, axes: list) -> list:
    """The Axis each row entry enumerates (None for static entries)."""
    result = []
    for entry in entries:
        if isinstance(entry, int):
            result.append(None)
        else:
            result.append(next(a for v, a in zip(values, axes) if v is entry))
    return result


def _band(statements, rows: dict, width: int, umap: isl.UnionMap) -> isl.MultiUnionPwAff:
    """The schedule band from each row's own entries: the same function as
    ``from_union_map(umap)`` gives, without isl's conversion of the map, which splits
    each entry into the map's disjuncts (after K nested splits of a symbolic loop, a
    number of pieces growing exponentially with K, which isl's scan multiplies again)."""
    dims: list = [None] * width
    for stmt in statements:
        entries = rows[stmt.name][0]
        padded = entries + [0] * (width - len(entries))
        defined = _row_map(stmt.domain, padded).domain()
        local = isl.LocalSpace.from_space(stmt.domain.get_space())
        for k, entry in enumerate(padded):
            if isinstance(entry, int):
                entry = isl.PwAff.from_aff(
                    isl.Aff.zero_on_domain(local).set_constant_val(isl.Val(entry)))
            value = isl.UnionPwAff.from_pw_aff(entry.intersect_domain(defined))
            dims[k] = value if dims[k] is None else dims[k].union_add(value)
    return band_of_members(dims, umap.get_space())


def band_of_members(members: list, space: isl.Space) -> isl.MultiUnionPwAff:
    """The band whose k-th member is ``members[k]`` (a UnionPwAff; parameters from
    ``space``): built member by member, each keeps only the pieces it needs itself
    (isl's ``from_union_map`` splits every member by the others' divisions, and the
    scan then makes a case of each combination)."""
    ctx = space.get_ctx()
    band = isl.Space.set_alloc(ctx, 0, len(members)).align_params(space)
    listed = isl.UnionPwAffList.alloc(ctx, len(members))
    for value in members:
        listed = listed.add(value)
    return isl.MultiUnionPwAff.from_union_pw_aff_list(band, listed)


def _row_map(domain: isl.Set, entries: list) -> isl.Map:
    """The row as a map on the whole statement space (so empty domains keep their space).
    A primitive changes one stage: the other rows come again from the same objects."""
    return _ROW_MAPS.get((domain, *entries), lambda: _build_row_map(domain, entries))


def _build_row_map(domain: isl.Set, entries: list) -> isl.Map:
    pieces = max((e for e in entries if not isinstance(e, int)),
                 key=lambda e: e.n_piece(), default=None)
    if pieces is not None and pieces.n_piece() > 2:
        # a loop defined piecewise (split(nparts=) of a symbolic extent): build the row
        # one piece at a time, so that the loops defined on the same pieces (its inner
        # loop) do not multiply their pieces in the product
        relation = None
        for where, _ in pieces.get_pieces():
            part = _build_row_map_on(where, [
                e if isinstance(e, int) else e.intersect_domain(where).coalesce()
                for e in entries])
            relation = part if relation is None else relation.union(part)
        return relation.coalesce()
    return _build_row_map_on(domain, entries)


def _build_row_map_on(domain: isl.Set, entries: list) -> isl.Map:
    local = isl.LocalSpace.from_space(domain.get_space())
    relation = isl.Map.from_domain(isl.Set.universe(domain.get_space()))
    for entry in entries:
        if isinstance(entry, int):
            entry = isl.PwAff.from_aff(isl.Aff.zero_on_domain(local).set_constant_val(
                isl.Val(entry)))
        relation = relation.flat_range_product(isl.Map.from_pw_aff(entry))
    return relation.coalesce()


_ROW_MAPS = IdentityMemo()
_INIT_VALUES = IdentityMemo()


def fixed_entry(row: isl.Map, dim: int) -> int | None:
    """Entry ``dim`` of a schedule row when it is one constant for every instance
    (as isl's constraints show it plainly), else None.

    >>> fixed_entry(isl.Map("{ S[i] -> [2, i] }"), 0), fixed_entry(isl.Map("{ S[i] -> [2, i] }"), 1)
    (2, None)
    """
    value = row.plain_get_val_if_fixed(isl.dim_type.out, dim)
    return None if value.is_nan() else value.to_python()


def next_iteration(space: isl.Space, dim: int) -> isl.Map:
    """``{ [.., c_dim, ..] -> [.., c_dim + 1, ..] }`` on the schedule space ``space``.

    >>> print(next_iteration(isl.Set("[n] -> { [a, b] }").get_space(), 1))
    [n] -> { [a, b] -> [a' = a, b' = 1 + b] }
    """
    identity = isl.MultiAff.identity(isl.Space.map_from_set(space))
    moved = identity.get_aff(dim).add_constant_val(isl.Val.one(space.get_ctx()))
    return isl.Map.from_multi_aff(identity.set_aff(dim, moved))


def element_steps(schedule: isl.Map, access: isl.Map, dim: int) -> isl.Map:
    """``{ element -> element' }``: what ``access`` touches at a point of ``schedule``
    (statement instances to schedule points) and at the next point along dimension
    ``dim``; its ``deltas()`` are the steps in memory along that loop."""
    elements = schedule.reverse().apply_range(access)
    step = next_iteration(schedule.range().get_space(), dim)
    return elements.reverse().apply_range(step).apply_range(elements)
