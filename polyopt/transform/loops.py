"""Loop primitives: split, tile, reorder, fuse, skew, shift, reverse and any affine map.

Each is a function ``(program, stage, ...) -> Program`` that rewrites the stage's
loops (and those of stages sharing them); none checks legality (the schedule wrapper
does, see :mod:`polyopt.transform.check`).

>>> import polyopt as po
>>> A = po.placeholder((10,), name="A")
>>> B = po.compute((10,), lambda i: A[i] + 1, name="B")
>>> program, (outer, inner) = split(po.create_schedule(B).program, "B", "i", factor=4)
>>> outer, inner, [a.name for a in program.stage("B").axes]
('i.outer', 'i.inner', ['i.outer', 'i.inner'])
"""

from __future__ import annotations

import dataclasses
import numbers

import islpy as isl

from ..domain.program import Program
from ..domain.schedule import Axis, SplitOrder, nparts_loops, params_on_domain
from ..errors import InvalidArgumentError
from ..schedule_errors import (DuplicateLoopError, FusedPartsError, LoopOrderError,
                               InvalidFactorError,
                               LoopsNotAdjacentError, NonConstantExtentError,
                               SplitArgumentsError, SymbolicSplitError)
from .group import band_group, edit_band, fresh_axis_name


def _level(program: Program, stage: str, axis: str) -> int:
    return program.stage(stage).axis(axis) + 1


LARGEST_ARGUMENT = 2**31 - 1  # factors, offsets: loop values and indices stay in 64 bits


def integer_argument(value, what: str, *, positive: bool = False, nonzero: bool = False) -> int:
    """``value`` if it is a Python or NumPy integer in range, else InvalidArgumentError.

    >>> integer_argument(10**20, "factor")
    Traceback (most recent call last):
    polyopt.schedule_errors.InvalidFactorError: factor must be at most 2147483647 in absolute value, got 100000000000000000000
    """
    kind = "a positive integer" if positive else "a non-zero integer" if nonzero else \
        "an integer"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
            (positive and value <= 0) or (nonzero and value == 0):
        raise InvalidFactorError(what, value, kind)
    value = int(value)
    if abs(value) > LARGEST_ARGUMENT:
        raise InvalidFactorError(what, value,
                                 f"at most {LARGEST_ARGUMENT} in absolute value")
    return value


def _positive_int(value, what: str) -> int:
    return integer_argument(value, what, positive=True)


def axis_range(program: Program, stage: str, axis: Axis) -> tuple[isl.PwAff, isl.PwAff]:
    """The smallest and largest value of loop ``axis`` over the stage's domain."""
    domain = program.statement(program.stage(stage).main).domain
    values = isl.Map.from_pw_aff(axis.value).intersect_domain(domain).range()
    values = values.intersect_params(program.context)
    if values.is_empty():
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(values.get_space().params()))
        return zero, zero
    return values.dim_min(0), values.dim_max(0)


def constant_extent(program: Program, stage: str, axis: Axis) -> int | None:
    """The largest number of iterations of loop ``axis`` for any size, if that is bounded."""
    domain = program.statement(program.stage(stage).main).domain
    values = isl.Map.from_pw_aff(axis.value).intersect_domain(domain).range()
    values = values.intersect_params(program.context)
    if values.is_empty():
        return 1
    # the differences of two values of the loop for the same sizes, over all sizes
    spans = isl.Map.from_domain_and_range(values, values).deltas()
    spans = spans.project_out(isl.dim_type.param, 0, spans.dim(isl.dim_type.param))
    largest = spans.dim_max_val(0)
    if largest.is_infty() or largest.is_nan():
        return None
    return largest.to_python() + 1


def split(program: Program, stage: str, axis: str, *, factor: int | None = None,
          nparts: int | None = None) -> tuple[Program, tuple[str, str]]:
    """Split loop ``axis`` into ``axis.outer`` and ``axis.inner`` (``factor`` iterations).

    ``nparts`` instead asks for that many outer iterations (of a symbolic extent too,
    see :func:`_split_parts`).
    Extents the factor does not divide are handled exactly: no access leaves its tensor.
    """
    if (factor is None) == (nparts is None):
        raise SplitArgumentsError(factor, nparts)
    level = _level(program, stage, axis)
    if nparts is not None:
        _positive_int(nparts, "nparts")
        extent = _extent_per_attachment(program, stage, program.stage(stage).axes[level - 1])
        if extent is None:
            return _split_parts(program, stage, axis, level, nparts)
        factor = max(1, -(-extent // nparts))
    factor = _positive_int(factor, "factor")
    names: dict[str, tuple[str, str]] = {}
    start = _start_per_attachment(program, stage, level)

    def change(member, loops):
        (old,) = loops
        outer = fresh_axis_name(member, f"{old.name}.outer", {old.name})
        inner = fresh_axis_name(member, f"{old.name}.inner", {old.name, outer})
        names[member.name] = (outer, inner)
        val = isl.Val(factor)
        outer_kind, inner_kind = _split_kinds(old.kind)
        offset = old.value if start is None else old.value.sub(start(member))
        return [Axis(outer, offset.scale_down_val(val).floor(), outer_kind),
                Axis(inner, offset.mod_val(val), inner_kind)]

    result = edit_band(program, stage, level, level, change)
    return result, names[stage]


def _split_kinds(kind: str, *, constant_inner: bool = True) -> tuple[str, str]:
    """The kinds of the outer and inner loop of a split loop: vectorizing or unrolling
    stays with the inner loop (the lanes, the copies), the rest with the outer one
    (threads, work-groups); unrolling stays outside when only the outer loop has a
    constant count (``split(nparts=)`` of a loop whose extent depends on the sizes).

    >>> _split_kinds("vectorized"), _split_kinds("parallel")
    (('serial', 'vectorized'), ('parallel', 'serial'))
    >>> _split_kinds("unrolled", constant_inner=False)
    ('unrolled', 'serial')
    """
    if kind == "vectorized" or (kind == "unrolled" and constant_inner):
        return "serial", kind
    return kind, "serial"


def _start_per_attachment(program: Program, stage: str, level: int):
    """For loop ``level`` of a stage computed at another (``compute_at``), inside the
    loops it shares: ``start(member)``, the loop's first value in each iteration of the
    shared loops, as a function on ``member``'s statement (TVM's loops start at 0 in each
    attachment, so its tiles do); else None (a root loop's tiles start at 0 already).

    Tiles are exact whatever the start: it only has to be one value per attachment."""
    owner = program.stage(stage)
    depth = owner.attach.depth
    if not owner.attach.outer_dims or level <= depth:
        return None
    domain = program.statement(owner.main).domain
    keys = _loops_map(owner.axes[:depth], domain)
    values = isl.Map.from_pw_aff(owner.axes[level - 1].value).intersect_domain(domain)
    first = keys.reverse().apply_range(values).lexmin()          # shared loops -> start

    def start(member) -> isl.PwAff:
        space = member.axes[level - 1].value.get_domain_space()
        universe = isl.Set.universe(space)
        on_member = _loops_map(member.axes[:depth], universe).apply_range(first)
        value = isl.PwMultiAff.from_map(on_member).get_pw_aff(0) if not \
            on_member.is_empty() else None
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
        if value is None:
            return zero
        return value.union_max(zero.intersect_domain(value.domain().complement())).coalesce()

    return start


def _loops_map(axes, domain: isl.Set) -> isl.Map:
    """``{ instance -> (values of axes) }`` on ``domain``."""
    result = isl.Map.from_domain(domain)
    for axis in axes:
        result = result.flat_range_product(isl.Map.from_pw_aff(axis.value).intersect_domain(
            domain))
    return result


def _extent_per_attachment(program: Program, stage: str, axis: Axis) -> int | None:
    """The largest number of iterations of ``axis`` in one iteration of the loops its
    stage is computed at (TVM counts ``nparts`` there), else over the whole stage."""
    outer = program.stage(stage).attach.outer_dims
    if not outer:
        return constant_extent(program, stage, axis)
    domain = program.statement(program.stage(stage).main).domain
    values = isl.Map.from_pw_aff(axis.value).intersect_domain(domain)
    values = values.intersect_params(program.context)
    if values.is_empty():
        return 1
    keys = isl.Map.from_domain(domain).add_dims(isl.dim_type.out, outer)
    for dim in range(outer):
        keys = keys.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim)
    per_key = values.reverse().apply_range(keys)          # value -> attachment
    spans = per_key.apply_range(per_key.reverse()).deltas()
    spans = spans.project_out(isl.dim_type.param, 0, spans.dim(isl.dim_type.param))
    largest = spans.dim_max_val(0)
    if largest.is_infty() or largest.is_nan():
        return None
    return largest.to_python() + 1


def _split_parts(program: Program, stage: str, axis: str, level: int, nparts: int
                 ) -> tuple[Program, tuple[str, str]]:
    """``split(nparts=P)`` of a loop whose extent ``E`` depends on the sizes, as TVM does
    it: a factor ``f = ceil(E / P)``, ``outer = (i - lo) // f`` and ``inner = (i - lo) % f``.
    With ``f`` a function of the sizes that is not affine; but ``f`` is quasi-affine in
    the sizes (``P`` is a constant), and so is ``o * f`` for each constant ``o < P``: the
    outer loop is ``o`` on the piece ``o * f <= i - lo < (o + 1) * f``, the inner loop
    ``i - lo - o * f`` there (``P`` pieces, exact).

    >>> import polyopt as po
    >>> n = po.var("n"); A = po.placeholder((n,), name="A")
    >>> B = po.compute((n,), lambda i: A[i] + 1, name="B")
    >>> program, names = split(po.create_schedule(B).program, "B", "i", nparts=2)
    >>> outer = program.stage("B").axes[0].value
    >>> [outer.eval(isl.Point.zero(outer.get_domain_space()).set_coordinate_val(
    ...     isl.dim_type.param, 0, isl.Val(5)).set_coordinate_val(isl.dim_type.set, 0,
    ...     isl.Val(i))).to_python() for i in range(5)]
    [0, 0, 0, 1, 1]
    """
    if nparts > 64:
        raise SymbolicSplitError(stage, axis, nparts)
    sharing = [(member.name, member.axes[level - 1])
               for member in band_group(program, stage, level, level)]
    _refuse_tiled_loops(program, sharing, axis, nparts)
    lo, hi = _scheduled_range(program, sharing)
    parts = isl.Val(nparts)
    factor = hi.sub(lo).add_constant_val(isl.Val(nparts)).scale_down_val(parts).floor()
    names: dict[str, tuple[str, str]] = {}
    token = object()  # the stages split together

    def change(member, loops):
        (old,) = loops
        outer_value, inner_value = nparts_loops(old.value, lo, factor, nparts)
        outer = fresh_axis_name(member, f"{old.name}.outer", {old.name})
        inner = fresh_axis_name(member, f"{old.name}.inner", {old.name, outer})
        names[member.name] = (outer, inner)
        outer_kind, inner_kind = _split_kinds(old.kind, constant_inner=False)
        # the pair runs the instances in the order the loop did: the dataflow analysis
        # orders by the loop (exact, without the pieces; see domain.schedule.order_rows)
        order = SplitOrder(old.value, outer_value, inner_value, token, lo, factor, nparts,
                           old.name)
        return [Axis(outer, outer_value, outer_kind, order),
                Axis(inner, inner_value, inner_kind, order)]

    result = edit_band(program, stage, level, level, change)
    return result, names[stage]


def _refuse_tiled_loops(program: Program, sharing, axis: str, nparts: int) -> None:
    """One piece per part is exact, but on top of loops that already divide (tiles,
    skews, diamonds) isl's exact check of the result can run for minutes: such a loop
    is refused, saying what works (found by the slow property run)."""
    for stage, _ in sharing:
        for loop in program.stage(stage).axes:
            if any(_divides_iterators(aff) for _, aff in loop.value.get_pieces()):
                raise SymbolicSplitError(stage, axis, nparts, tiled_loop=loop.name)


def _divides_iterators(aff: isl.Aff) -> bool:
    """Whether ``aff`` takes a floor of its loop variables (a tile, a diamond), not only
    of the sizes (an earlier ``split(nparts=)``, as TVM's GPU tutorials nest them)."""
    inputs = aff.dim(isl.dim_type.in_)
    return any(aff.get_div(k).involves_dims(isl.dim_type.in_, 0, inputs)
               for k in range(aff.dim(isl.dim_type.div)))


def _scheduled_range(program: Program, loops) -> tuple[isl.PwAff, isl.PwAff]:
    """The smallest and largest value of a loop over every statement that runs in it
    (``loops``: each stage sharing it, with its axis; a reduction's init runs its spatial
    loops even where no update runs), 0 for sizes where it has no value."""
    values = None
    for stage, axis in loops:
        owner = program.stage(stage)
        for stmt, axes in program.loop_axes:
            dims = [d for d, a in enumerate(axes) if a is axis]
            if stmt in (owner.init, owner.main) and dims:
                row = program.schedule_of(stmt).range()
                dim = dims[0]
                row = row.project_out(isl.dim_type.set, dim + 1,
                                      row.dim(isl.dim_type.set) - dim - 1)
                row = row.project_out(isl.dim_type.set, 0, dim)
                values = row if values is None else values.union(row)
    values = values.intersect_params(program.context).coalesce()
    zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(values.get_space().params()))
    if values.is_empty():
        return zero, zero
    low, high = values.dim_min(0), values.dim_max(0)
    outside = zero.intersect_domain(low.domain().complement())
    return low.union_max(outside), high.union_max(outside)


def reorder(program: Program, stage: str, axes: list[str]) -> Program:
    """Put the listed loops in this order, in the positions they occupy together.  A
    fuse of two symbolic extents (a loop and its ``Axis.fused_part``) moves as one loop:
    the order of its instances is the two loops' order wherever they stand."""
    record = program.stage(stage)
    positions = [record.axis(a) for a in axes]
    if len(set(positions)) != len(positions):
        raise DuplicateLoopError("reorder", stage, tuple(axes))
    if len(positions) < 2:  # one loop or none is already in order (as in TVM)
        return program
    for position in positions:
        if record.axes[position].fused_part:  # (hidden: only its fused loop is named)
            raise FusedPartsError(stage, record.axes[position - 1].name)
    units = [(p, 2 if p + 1 < len(record.axes) and record.axes[p + 1].fused_part else 1)
             for p in positions]
    lo = min(positions) + 1
    hi = max(p + size for p, size in units)
    order = _unit_order(units, lo, hi)

    def change(member, loops):
        return [loops[k] for k in order]

    return edit_band(program, stage, lo, hi, change, fused_parts=True)


def _unit_order(units: list[tuple[int, int]], lo: int, hi: int) -> list[int]:
    """The band ``lo..hi``'s loops (indices from 0) with the listed units (start, size),
    in their given order, in the slots the units occupy together."""
    slots = sorted(units)
    moved = iter(units)
    order, k = [], lo - 1
    for start, size in slots:
        order += range(k - lo + 1, start - lo + 1)  # loops between, not listed
        source, length = next(moved)
        order += range(source - lo + 1, source - lo + 1 + length)
        k = start + size
    return order + list(range(k - lo + 1, hi - lo + 1))


def tile(program: Program, stage: str, x: str, y: str, x_factor: int, y_factor: int
         ) -> tuple[Program, tuple[str, str, str, str]]:
    """Split ``x`` and ``y`` and order the loops ``x.outer, y.outer, x.inner, y.inner``."""
    if program.stage(stage).axis(y) != program.stage(stage).axis(x) + 1:
        raise LoopsNotAdjacentError("tile", stage, (x, y), "outer first")
    program, (xo, xi) = split(program, stage, x, factor=x_factor)
    program, (yo, yi) = split(program, stage, y, factor=y_factor)
    return reorder(program, stage, [xo, yo, xi, yi]), (xo, yo, xi, yi)


def fuse(program: Program, stage: str, outer: str, inner: str) -> tuple[Program, str]:
    """Fuse two adjacent loops into one, ``outer * extent(inner) + inner``: affine when
    the inner extent is a constant, by parts when only the outer one is
    (:func:`_fused_by_parts`).  When both extents depend on the sizes the value is a
    product of two unknowns (no affine pieces): the fused loop is then the two loops
    run as one, in the same order (the inner one an ``Axis.fused_part``), which can be
    marked parallel and is refused by the primitives that change loops
    (:class:`FusedPartsError`)."""
    level = _level(program, stage, outer)
    axes = program.stage(stage).axes
    if level < len(axes) and axes[level].fused_part:  # outer is itself such a fuse
        raise FusedPartsError(stage, outer)
    if _level(program, stage, inner) != level + 1:
        raise LoopsNotAdjacentError("fuse", stage, (outer, inner), "outer first")
    names = {}

    def change(member, loops):
        a, b = loops
        extent = constant_extent(program, member.name, b)
        if extent is None and _both_symbolic(program, member.name, a):
            name = fresh_axis_name(member, f"{a.name}.{b.name}.fused", {a.name, b.name})
            names[member.name] = name
            part = fresh_axis_name(member, f"{name}.part", {a.name, b.name, name})
            return [Axis(name, a.value, a.kind), Axis(part, b.value, "serial",
                                                      fused_part=True)]
        a_min, _ = axis_range(program, member.name, a)
        b_min, b_max = axis_range(program, member.name, b)
        space = a.value.get_domain_space()
        outer = a.value.sub(params_on_domain(a_min, space))
        inner = b.value.sub(params_on_domain(b_min, space))
        if extent is not None:
            value = outer.scale_val(isl.Val(extent)).add(inner)
        else:
            size = b_max.sub(b_min).add_constant_val(isl.Val(1))
            value = _fused_by_parts(program, member.name, (a, b), outer, inner,
                                    params_on_domain(size, space))
        name = fresh_axis_name(member, f"{a.name}.{b.name}.fused", {a.name, b.name})
        names[member.name] = name
        return [Axis(name, value.coalesce(), a.kind)]

    result = edit_band(program, stage, level, level + 1, change)
    return result, names[stage]


def _both_symbolic(program: Program, stage: str, outer: Axis) -> bool:
    """Whether the outer loop of a fuse has no constant number of iterations (or more
    than :func:`_fused_by_parts` makes pieces for)."""
    parts = constant_extent(program, stage, outer)
    return parts is None or parts > 64


def _fused_by_parts(program: Program, stage: str, loops, outer: isl.PwAff,
                    inner: isl.PwAff, size: isl.PwAff) -> isl.PwAff:
    """``outer * size + inner`` for an inner loop of ``size`` iterations that depends on
    the sizes: not affine, but exact piece by piece when the outer loop has a constant
    number ``P`` of iterations (at most 64): ``p * size + inner`` where ``outer == p``,
    as ``split(nparts=)`` does.  Refused when both extents depend on the sizes."""
    parts = constant_extent(program, stage, loops[0])
    if parts is None or parts > 64:
        raise NonConstantExtentError("fuse", stage, (loops[0].name, loops[1].name),
                                     loops[1].name, outer_symbolic=parts is None)
    space = outer.get_domain_space()
    value = None
    for part in range(parts):
        piece = outer.eq_set(isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
                             .add_constant_val(isl.Val(part)))
        here = size.scale_val(isl.Val(part)).add(inner).intersect_domain(piece)
        value = here if value is None else value.union_max(here)
    return value


def skew(program: Program, stage: str, outer: str, inner: str, factor: int = 1) -> Program:
    """Make ``inner`` run ``inner + factor * outer`` (a wavefront-friendly change of basis)."""
    factor = integer_argument(factor, "skew factor", nonzero=True)
    lo, hi = _level(program, stage, outer), _level(program, stage, inner)
    if lo >= hi:
        raise LoopOrderError("skew", stage, outer, inner)

    def change(member, loops):
        result = list(loops)
        a, b = loops[0], loops[-1]
        result[-1] = dataclasses.replace(b, value=b.value.add(a.value.scale_val(isl.Val(factor))))
        return result

    return edit_band(program, stage, lo, hi, change)


def shift(program: Program, stage: str, axis: str, offset: int) -> Program:
    """Run iteration ``v`` of loop ``axis`` at ``v + offset``."""
    offset = integer_argument(offset, "shift offset")
    level = _level(program, stage, axis)

    def change(member, loops):
        (old,) = loops
        return [dataclasses.replace(old, value=old.value.add_constant_val(isl.Val(offset)))]

    return edit_band(program, stage, level, level, change)


def reverse(program: Program, stage: str, axis: str) -> Program:
    """Run loop ``axis`` backwards."""
    level = _level(program, stage, axis)

    def change(member, loops):
        (old,) = loops
        return [dataclasses.replace(old, value=old.value.neg())]

    return edit_band(program, stage, level, level, change)


def transform_loops(program: Program, stage: str, relation: str) -> Program:
    """Apply an affine map to all loops of a stage: ``"{ [t, i] -> [t, t + i] }"``.

    Input dimensions are the current loops in order; output dimension names (when
    given) name the new loops.
    """
    current = program.stage(stage)
    if not isinstance(relation, (str, isl.Map)):
        raise InvalidArgumentError(f"transform takes an isl map such as "
                                   f"\"{{ [t, i] -> [t, t + i] }}\", got {relation!r}")
    try:
        mapping = isl.Map(relation) if isinstance(relation, str) else relation
    except isl.Error as err:
        raise InvalidArgumentError(f"cannot parse the map {relation!r}: {err}") from None
    n_in = mapping.dim(isl.dim_type.in_)
    if n_in != len(current.axes):
        raise InvalidArgumentError(
            f"the map has {n_in} input dimension(s) but stage '{stage}' has "
            f"{len(current.axes)} loops ({', '.join(a.name for a in current.axes)})"
        )
    unknown = set(mapping.get_space().get_var_names(isl.dim_type.param)) - set(
        program.param_names)
    if unknown:
        raise InvalidArgumentError(
            f"the map {relation!r} uses {', '.join(sorted(unknown))}, which "
            f"{'is not a var' if len(unknown) == 1 else 'are not vars'} of the program "
            f"(its vars: {', '.join(program.param_names) or 'none'})")
    if not mapping.is_single_valued():
        raise InvalidArgumentError(f"the map {relation!r} is not a function")
    pma = mapping.as_pw_multi_aff()
    out_names = mapping.get_space().get_var_names(isl.dim_type.out)
    in_names = [a.name for a in current.axes]
    for pos in range(len(out_names)):  # an unnamed output that is one loop keeps its name
        k = _input_dim(pma.get_pw_aff(pos))
        if out_names[pos] is None and k is not None and in_names[k] not in out_names:
            out_names[pos] = in_names[k]

    def change(member, loops):
        if not loops:  # a statement outside every loop: the map gives it its first loops
            space = program.statement(member.main).domain.get_space()
            values = isl.PwMultiAff.from_map(isl.Map.from_domain(isl.Set.universe(space)))
        else:
            values = isl.PwMultiAff.from_pw_aff(loops[0].value)
        for loop in loops[1:]:
            values = values.flat_range_product(isl.PwMultiAff.from_pw_aff(loop.value))
        composed = _align_params(pma, values).pullback_pw_multi_aff(values)
        # every instance needs a time: a map defined on only some loop values would
        # drop instances from the schedule (and from the legality check)
        domain = program.statement(member.main).domain.intersect_params(program.context)
        missing = domain.subtract(composed.domain())
        if not missing.is_empty():
            raise InvalidArgumentError(
                f"the map {relation!r} is not defined for every iteration of stage "
                f"'{member.name}' (not for {_point_text(missing)}); use a map defined on "
                "all loop values")
        result = []
        for pos in range(composed.dim(isl.dim_type.out)):
            name = out_names[pos] or f"c{pos}"
            name = fresh_axis_name(member, name, {r.name for r in result}) \
                if name not in {a.name for a in loops} else name
            value = composed.get_pw_aff(pos)
            if not domain.is_empty():  # (a gist in an empty domain empties the value)
                value = value.gist(domain)
            result.append(Axis(name, value.coalesce()))
        return result

    return edit_band(program, stage, 1, len(current.axes), change)


def _input_dim(value: isl.PwAff) -> int | None:
    """``k`` when ``value`` is exactly input dimension ``k``."""
    local = isl.LocalSpace.from_space(value.get_domain_space())
    for k in range(value.dim(isl.dim_type.in_)):
        if value.is_equal(isl.PwAff.var_on_domain(local, isl.dim_type.set, k)):
            return k
    return None


def _point_text(points: isl.Set) -> str:
    """``B[i=0, j=3] when n=4`` for one point of ``points``."""
    point = points.sample_point()
    space = points.get_space()
    dims = ", ".join(f"{name}={point.get_coordinate_val(isl.dim_type.set, k).to_python()}"
                     for k, name in enumerate(space.get_var_names(isl.dim_type.set)))
    params = ", ".join(f"{name}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}"
                       for k, name in enumerate(space.get_var_names(isl.dim_type.param)))
    text = f"{points.get_tuple_name()}[{dims}]"
    return f"{text} when {params}" if params else text


def _align_params(pma: isl.PwMultiAff, values: isl.PwMultiAff) -> isl.PwMultiAff:
    pma = pma.align_params(values.get_space())
    return pma.reset_tuple_id(isl.dim_type.in_) if hasattr(pma, "reset_tuple_id") else pma


def wavefront(program: Program, stage: str, axes: list[str]) -> tuple[Program, str]:
    """Replace the band ``axes`` (adjacent loops, outermost first) by a wavefront loop
    ``w = a1 + ... + an`` followed by ``a2 .. an``: iterations on one wavefront
    are independent when every dependence distance in the band is non-negative, so the
    inner loops may then run in parallel."""
    positions = [program.stage(stage).axis(a) for a in axes]
    if len(positions) < 2 or positions != list(range(positions[0], positions[0] + len(axes))):
        raise LoopsNotAdjacentError("wavefront", stage, tuple(axes), "outermost first",
                                    count="at least two")
    lo, hi = positions[0] + 1, positions[-1] + 1
    names = {}

    def change(member, loops):
        total = loops[0].value
        for loop in loops[1:]:
            total = total.add(loop.value)
        name = fresh_axis_name(member, "wave", {a.name for a in loops})
        names[member.name] = name
        return [Axis(name, total.coalesce())] + [dataclasses.replace(a, kind="serial")
                                                  for a in loops[1:]]

    result = edit_band(program, stage, lo, hi, change)
    return result, names[stage]


def add_unit_loop(program: Program, stage: str) -> tuple[Program, str]:
    """A new loop of one iteration (value 0) as the stage's outermost own loop (inside the
    loops it shares by ``compute_at``): TVM's ``s[C].fuse()`` of no loops, its singleton.
    Stages sharing the loop it goes before get it too."""
    record = program.stage(stage)
    position = record.attach.depth if record.attach.kind == "with" else 0
    names: dict[str, str] = {}

    def unit(member, space) -> Axis:
        name = fresh_axis_name(member, "singleton")
        names[member.name] = name
        zero = isl.PwAff.zero_on_domain(isl.LocalSpace.from_space(space))
        return Axis(name, zero, "serial")

    if position < len(record.axes):
        def change(member, loops):
            (old,) = loops
            return [unit(member, old.value.get_domain_space()), old]
        return edit_band(program, stage, position + 1, position + 1, change), names[stage]
    space = program.statement(record.main).domain.get_space()
    stages = tuple(dataclasses.replace(s, axes=s.axes + (unit(s, space),))
                   if s.name == stage else s for s in program.stages)
    return program.with_stages(stages), names[stage]
