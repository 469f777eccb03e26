"""``po.auto_schedule``: a schedule found automatically, made of ordinary primitives.

For an in-place kernel (``@po.kernel``, ``po.from_c``) isl's scheduler finds an affine
schedule (Pluto-style: tileable bands, proximity and coincidence; effort bounded, with
a fallback to the source order); every statement gets it through ``transform`` and the
statements share their loops through ``compute_with``.  For tensor expressions each
stage's loops are its band.  Then, on the outermost permutable band:

- tiling, with sizes from a cache model (tiles whose footprint fills half the L2
  cache), unless ``tile=False`` or ``tile_sizes=`` says otherwise;
- inside a tile, the innermost loop is the one with the most stride-1 accesses that
  carries no dependence, marked ``vectorize``;
- with ``unroll_jam=`` a loop around a reduction is unrolled into it (unroll-and-jam)
  and ``register_columns=`` splits the vector loop: a register tile of accumulators held
  across the reduction, by default the host's (``TargetInfo.register_tile``: 6 rows of
  4 vectors with AVX-512, 6 x 32 doubles);
- the outermost tile loop without dependences is marked ``parallel``, else the tiles
  run in wavefronts (``wavefront``) whose inner loop is parallel;
- loop nests that the affine schedule puts in sequence get a band each; maximal fusion
  gives way to isl's minimal fusion when more statements then span a band of their own
  (an init statement fused into a reduction's band would run under a guard);
- when no loop of a single statement's band can go innermost without carrying a
  dependence (Gauss-Seidel), the last band loop is skewed by the first (time), which
  then runs innermost in a tile: independent chains instead of one;
- a tensor-expression output that is a contraction or a direct convolution gets the
  recipe of its template (``po.templates``), applied with the same primitives;
- no tiling when one iteration of the outermost loop touches at most half the L2
  cache (``outer_footprint``), and then the source order if isl's schedule skews;
- first, a kernel's scalar temporaries are kept in the array elements their values
  are stored to (``expand_scalar``), else in new arrays over the loops around all of
  their statements, one per live range (deriche's ``ym1`` serves a row sweep and a
  column sweep), where that is exact;
- an input read by a statement of three or more loops along a column of the loop its
  output walks stride-1 (syrk's ``A[j][k]`` into ``C[i][j]``) is read from a transposed
  copy made before the nest (``cache_read(..., layout=)``, ``compute_root``);
- when a tiled band's innermost loop carries a dependence, or on matrix-vector work
  whose passes over a matrix isl does not fuse, the source order with each statement
  in a nest of its own, its most stride-1 loop innermost (``auto_distribute``), if
  legal;
- a nest without a tileable band whose innermost loop carries a recurrence while the
  loop above it carries none: 4 lines side by side (``auto_lines``);
- a table filled by max/min updates of integers, one a reduction (nussinov): its
  reduction loop above the cell loop, vectorized (``auto_updates``);
- a single statement whose loops carry dependences only through a pivot row or column
  (Floyd-Warshall's ``path[k][j]``, ``path[i][k]``): each such loop split in three at
  the pivot, vectorized and parallel (``auto_pivots``).

Everything goes through the primitives with their legality checks, so the result is
an ordinary schedule: ``s.script()`` prints it, it can be edited and replayed, and
``s.auto_report`` says what was chosen and why.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def scale(A: po.f64[N, N], B: po.f64[N, N]):
...     for i in range(N):
...         for j in range(N):
...             B[i, j] = A[i, j] * 2.0
>>> s = po.auto_schedule(po.create_schedule(scale), tile_sizes=32)
>>> print(s.script())  # doctest: +NORMALIZE_WHITESPACE
s["S0"].transform("[N] -> { [i, j] -> [i, j] }")
s["S0"].split("i", factor=32)
s["S0"].split("j", factor=32)
s["S0"].reorder("i.outer", "j.outer", "i.inner", "j.inner")
s["S0"].vectorize("j.inner")
s["S0"].parallel("i.outer")
"""

from __future__ import annotations

import time

import islpy as isl
from dataclasses import replace

from ..machine import TargetInfo
from ..errors import (IllegalScheduleError, InvalidArgumentError, PolyoptError, ScheduleError,
                      public)
from ..schedule_errors import AutoScheduleError
from .auto_distribute import streams_matrices
from .auto_jam import jammed_rows
from .auto_options import AutoOptions, AutoReport
from .auto_lines import interleaved_lines, report_lines
from .auto_pivots import pivot_split
from .auto_updates import update_sweeps
from .auto_stencil import STENCIL_TILINGS, diamond_band, stencil_diamonds
from .auto_panels import packed_panels
from .auto_rewrites import first_line as _first_line, scalars_expanded, transposed_copies
from .auto_band import band as _band, scalar_calls_unvectorized
from .auto_affine import Rows, flatten, isl_schedule, level_names, map_text
from .auto_levels import (distributable_order, innermost_free_levels, outer_footprint,
                          tileable_run, zero_distance_levels)

_FUSIONS = ("max", "min", "smart")


@public
def auto_schedule(schedule, **options):
    """A new schedule of ``schedule``'s program (or of a kernel or tensors), found
    automatically; ``options`` are the fields of :class:`AutoOptions`."""
    from ..transform.schedule import Schedule, create_schedule
    opts = _options(options)
    if not isinstance(schedule, Schedule):
        schedule = create_schedule(schedule)
    if schedule.steps:
        raise AutoScheduleError("primitives", steps=tuple(map(str, schedule.steps)))
    start = time.perf_counter()
    notes = []
    if schedule.kernel is not None:
        if opts.expand_scalars:
            schedule = scalars_expanded(schedule, notes)
        opts = _untiled_when_cached(schedule.program, opts, notes)
        if opts.transpose_copies and opts.vectorize:
            schedule = transposed_copies(schedule, notes)
        if opts.pack_panels and opts.vectorize and opts.tile and opts.unroll_jam != 0 \
                and opts.unroll_jam != 1 and opts.register_columns != 0:
            schedule = packed_panels(schedule, notes, opts.register_columns, opts.target)
    # the full strategy first, then simpler ones if a step turns out illegal
    attempts = [opts, replace(opts, distribute=False),
                replace(opts, distribute=False, unroll_jam=0, vectorize=False)]
    if opts.stencil_tiling != "skewed":  # diamonds refused: parallelogram tiles
        attempts.insert(1, replace(opts, stencil_tiling="skewed"))
    for attempt in attempts:
        report = AutoReport(list(notes))
        result = _copy(schedule)
        try:
            if result.kernel is not None:
                _kernel(result, attempt, report)
            else:
                _stages(result, attempt, report)
            result.check()
            break
        except _SourceOrder as keep:
            report.add(str(keep))
            result = _copy(schedule)
            break
        except (IllegalScheduleError, ScheduleError) as err:
            failure = _first_line(err)
            if report.diamond:
                notes.append(f"diamond tiles were refused ({failure}): skewed tiles instead")
    else:
        report = AutoReport(fell_back=True)
        report.add(f"gave up ({failure}); the default schedule is kept")
        result = _copy(schedule)
    streams = opts.distribute and streams_matrices(schedule.program, report.groups)
    if (report.scalar_band or streams) and opts.tile and opts.tile_sizes is None:
        result = _distributed_instead(schedule, result, report, streams)
    if schedule.kernel is not None and opts.exact_updates and opts.vectorize:
        result = update_sweeps(schedule, report) or result
    if schedule.kernel is not None and opts.split_pivots and opts.vectorize:
        result = pivot_split(schedule, result, report, parallel=opts.parallel) or result
    if schedule.kernel is not None and opts.distribute and opts.tile_sizes is None:
        result = jammed_rows(schedule, report.lines, opts.jam_rows) or result
    report.seconds = time.perf_counter() - start
    result.auto_report = report
    return result


def _distributed_instead(schedule, result, report: AutoReport, streams: bool):
    """When the band's innermost loop carries a dependence (scalar code) or the
    kernel is matrix-vector work (``streams_matrices``), the source order distributed
    with stride-1 innermost loops (``auto_distribute``; with ``streams``, a statement
    alone in its nest may be interchanged), if it changes a loop order and is legal
    (gramschmidt: 0.7x gcc -> 6x)."""
    from .auto_distribute import apply_rows, distributed_rows
    rows = distributed_rows(schedule.program, alone_moves=streams)
    reason = ("matrix-vector work: rows streamed rather than tiled" if streams else
              "a band whose innermost loop carries a dependence")
    if rows is None:
        return result
    candidate = _copy(schedule)
    try:
        apply_rows(candidate, rows)
        candidate.check()
    except (IllegalScheduleError, ScheduleError) as err:
        report.add(f"the source order distributed with stride-1 innermost loops is "
                   f"illegal ({_first_line(err)}); the schedule above is kept")
        return result
    report.add(f"instead of the above ({reason}): the source order with each statement "
               "in a loop nest of its own inside the outermost loop, the loop with the most "
               "stride-1 accesses innermost (as gcc's loop interchange)")
    for stmt, text in rows:
        report.add(f"{stmt}: {text[text.index('{') + 2:-2]}")
    return candidate


class _SourceOrder(Exception):
    """The source order is kept (the message says why)."""


def _untiled_when_cached(program, opts: AutoOptions, notes: list) -> AutoOptions:
    """No tiling when what one iteration of the outermost loop touches fits in half
    the L2 cache (sizes at their largest, from the arrays' bounds): the reuse carried
    by that loop then hits the cache anyway, and tiles only add loop overhead and
    (skewed) short vector loops (jacobi-1d 2000: 0.8x gcc tiled, 1.3x not)."""
    if not opts.tile or opts.tile_sizes is not None:
        return opts
    footprint = outer_footprint(program)
    budget = (opts.cache_bytes or opts.target.l2_bytes) // 2
    if footprint is None or footprint > budget:
        return opts
    notes.append(f"one iteration of the outermost loop touches {footprint // 1024} KiB, "
                 f"within half the L2 cache ({budget // 1024} KiB): no tiling")
    return replace(opts, tile=False, skewed_keeps_source=True)


def _options(options: dict) -> AutoOptions:
    known = AutoOptions.__dataclass_fields__
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise InvalidArgumentError(f"auto_schedule has no option {', '.join(unknown)}; "
                                   f"its options are {', '.join(known)}")
    opts = AutoOptions(**options)
    opts = replace(opts, target=TargetInfo.for_target(opts.target))
    if opts.stencil_tiling not in STENCIL_TILINGS:
        raise InvalidArgumentError(f"stencil_tiling must be one of {', '.join(STENCIL_TILINGS)}, "
                                   f"got {opts.stencil_tiling!r}")
    if opts.fusion not in _FUSIONS:
        raise InvalidArgumentError(f"fusion must be one of {', '.join(_FUSIONS)}, got "
                                   f"{opts.fusion!r}")
    jam = opts.stencil_jam
    if jam is not None and not (positive_int(jam) or (type(jam) is int and jam == 0)):
        raise InvalidArgumentError(f"stencil_jam must be None or an integer >= 0, got {jam!r}")
    order = opts.point_order
    if not (positive_int(order) or (type(order) is int and order == 0)):
        raise InvalidArgumentError(f"point_order must be an integer >= 0 (the permutation of "
                                   f"a tile's loops above its innermost one), got {order!r}")
    sizes = opts.tile_sizes
    if sizes is not None and not (positive_int(sizes) or (
            isinstance(sizes, (tuple, list)) and sizes and all(positive_int(x) for x in sizes))):
        raise InvalidArgumentError(f"tile_sizes must be a positive integer or a list of them, "
                                   f"got {sizes!r}")
    return opts


def positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _copy(schedule):
    """An independent copy of the schedule (the state is a value)."""
    return schedule.fork()


# -- in-place kernels: isl's affine schedule, then the band ------------------------------
def _kernel(s, opts: AutoOptions, report: AutoReport) -> None:
    program = s.program
    isl_result, message = isl_schedule(program, s.deps, fusion=opts.fusion,
                                       max_operations=opts.max_operations,
                                       seconds=opts.scheduler_seconds)
    if isl_result is None:
        raise AutoScheduleError("scheduler", scheduler=message)
    rows = flatten(isl_result)
    fusion = opts.fusion
    score, perfect = _fusion_score(rows, program)
    if fusion == "max" and not perfect:
        separate, _ = isl_schedule(program, s.deps, fusion="min",
                                   max_operations=opts.max_operations,
                                   seconds=opts.scheduler_seconds)
        apart = None if separate is None else _fusion_score(flatten(separate), program)
        tie = apart == (score, True) and _skewed(rows, reversal=True)
        if apart is not None and (apart[0] > score or tie):
            rows, fusion = flatten(separate), (
                "min (more of the deepest statements make up a tileable band of their own "
                "than with maximal fusion)" if apart[0] > score else "min (as many of the "
                "deepest statements make up a tileable band of their own as with maximal "
                "fusion, every statement of two or more loops does, and maximal fusion "
                "reverses loops)")
    if len(rows.rows) > 1 and not all(isinstance(r[-1], int) for r in rows.rows.values()):
        order = {st.name: k for k, st in enumerate(program.statements)}
        rows = rows.extended(order)
    report.add(f"affine schedule: {message}, fusion {fusion}")
    if opts.skewed_keeps_source and _skewed(rows):
        raise _SourceOrder("isl's schedule skews loops, which pays only with tiles: the "
                           "source order is kept")
    groups = _sequence_groups(rows, program)
    report.groups = groups
    rows, diamonds = stencil_diamonds(program, s.deps, rows, groups, opts, report)
    if opts.tile:  # (statements of a nest are rather distributed inside its tiles)
        for group in groups:
            if len(group) == 1 and group[0] not in diamonds:
                rows = _skew_for_inner_parallel(program, s.deps, rows, group, report)
    if opts.distribute:
        rows = _order_for_distribution(program, s.deps, rows, groups, report)
    lines = {}
    if opts.distribute and opts.lines:
        rows, lines = interleaved_lines(program, s.deps, rows, groups, report)
    names = level_names(rows, program)
    stage_of = {st.main: st.name for st in program.stages}
    for stage in program.stages:
        if stage.attach.kind != "root":
            s[stage.name].compute_root(check=False)
    for stage in program.stages:
        stmt = program.statement(stage.main)
        if stmt.name not in rows.rows and stmt.domain.is_empty():
            continue  # never runs (a guard no size satisfies): isl's scheduler leaves it out
        text = map_text(stmt, rows.rows[stmt.name], names)
        s[stage.name].transform(text, check=False)
        report.add(f"{stage.name}: {text[text.index('{') + 2:-2]}")
    owners = []
    for group in groups:
        owner, *others = [stage_of[n] for n in group]
        for name in others:
            s[name].compute_with(owner, s[owner].axes[-1].name, check=False)
        owners.append(owner)
        if others:
            report.add(f"{', '.join(others)} share all loops with {owner} (instances ordered "
                       "by the schedule's values, sequences as constant levels)")
    for owner in owners[1:]:
        s[owner].compute_with(owners[0], s[owners[0]].axes[0].name, check=False)
    if len(owners) > 1:
        report.add(f"{len(owners)} loop nests in sequence (level 0), each with its own band: "
                   + ", ".join(owners))
    for group, owner in zip(groups, owners):
        if group[0] in lines:
            report_lines(s, owner, lines[group[0]], report)
        elif group[0] in diamonds:
            diamond_band(s, owner, rows.subset(group), diamonds[group[0]],
                         scalar_calls_unvectorized(program, group, opts, report), report)
        else:
            _band(s, owner, rows.subset(group), opts, report)


def _order_for_distribution(program, deps, rows: Rows, groups, report) -> Rows:
    """Each nest's statements in an order at their last (constant) level that lets
    that level move above the innermost loop (``distributable_order``)."""
    last = rows.depth - 1
    for group in groups:
        if len(group) < 2:
            continue
        ordered = distributable_order(program, deps, rows.subset(group))
        if ordered.rows == rows.subset(group).rows:
            continue
        values = {n: r[last] for n, r in rows.rows.items()}
        values.update({n: ordered.rows[n][last] for n in group})
        rows = rows.replaced(last, values)
        order = sorted(group, key=lambda n: values[n])
        report.add(f"statements ordered {', '.join(order)} at their last level: each "
                   "before those that read what it writes in one iteration of the outer "
                   "loops, so that they may run in loops of their own inside it")
    return rows


def _skewed(rows: Rows, reversal: bool = False) -> bool:
    """Whether a level of some statement's row combines two of its loops (``t + i``),
    or with ``reversal``, also whether one runs a loop backwards (``w - i``: deriche's
    forward and backward sweeps fused)."""
    for row in rows.rows.values():
        for value in row:
            if isinstance(value, int):
                continue
            found = []
            value.foreach_piece(lambda _set, aff: found.append(aff))
            for aff in found:
                n = aff.dim(isl.dim_type.in_)
                if sum(not aff.get_coefficient_val(isl.dim_type.in_, k).is_zero()
                       for k in range(n)) > 1:
                    return True
                if reversal and any(aff.get_coefficient_val(isl.dim_type.in_, k).is_neg()
                                    for k in range(n)):
                    return True
    return False


def _fusion_score(rows: Rows, program) -> tuple[tuple, bool]:
    """Per number of loops, most first, how many statements with that many loops make
    up a tileable band exactly (all their loops in it, no other): an init statement
    inside a reduction's band does not (it runs under a guard in the innermost loop),
    nor a reduction whose loop is left outside a fused band; and whether every
    statement of two or more loops does."""
    counts, perfect = [0] * 9, True
    for group in _sequence_groups(rows, program):
        run = tileable_run(rows.subset(group))
        for name in group:
            dims = len(program.statement(name).dims)
            spans = run is not None and dims == run[1] - run[0]
            counts[min(dims, 8)] += spans
            perfect = perfect and (spans or dims < 2) and (run is None or dims >= 2 or
                                                            len(group) == 1)
    return tuple(reversed(counts)), perfect


def _sequence_groups(rows: Rows, program) -> list[list[str]]:
    """The statements of each loop nest the schedule puts in sequence at level 0
    (in that order); one group when level 0 is a loop."""
    order = [st.name for st in program.statements if st.name in rows.rows]
    if rows.depth < 2 or not all(isinstance(rows.rows[n][0], int) for n in order):
        return [order]
    values = sorted({rows.rows[n][0] for n in order})
    return [[n for n in order if rows.rows[n][0] == v] for v in values]


def _skew_for_inner_parallel(program, deps, all_rows: Rows, group: list,
                             report: AutoReport) -> Rows:
    """When no loop of the tileable band can go innermost in a tile without carrying a
    dependence (Gauss-Seidel: isl gives ``t, t + i, 2t + i + j``), skew the last band
    loop by the first one (``3t + i + j``): every distance stays non-negative, so the
    band stays permutable, and the first loop (time) becomes free innermost: a tile then
    runs independent chains side by side instead of one latency-bound chain."""
    rows = all_rows.subset(group)
    run = tileable_run(rows)
    if run is None or run[1] - run[0] < 3:
        return all_rows
    lo, hi = run
    if innermost_free_levels(program, deps, rows, lo, hi) or \
            zero_distance_levels(program, deps, rows, lo) & set(range(lo, hi)):
        return all_rows
    last = hi - 1
    if not all(not isinstance(row[lo], int) and not isinstance(row[last], int)
               for row in rows.rows.values()):
        return all_rows
    values = {name: row[last].add(row[lo]).coalesce() for name, row in rows.rows.items()}
    if lo not in innermost_free_levels(program, deps, rows.replaced(last, values), lo, hi):
        return all_rows
    report.add(f"band level {last} skewed by level {lo} ({', '.join(group)}): level {lo} "
               "now carries no dependence innermost in a tile (independent chains)")
    return all_rows.replaced(last, {**{n: r[last] for n, r in all_rows.rows.items()},
                                    **values})


# -- tensor expressions: each stage's loops are its band -----------------------------------
def _stages(s, opts: AutoOptions, report: AutoReport) -> None:
    handled = _recognized(s, opts, report)
    program = s.program
    report.add("tensor expressions: each stage keeps its loops as one band (stages at the "
               "root in definition order)")
    for stage in program.stages:
        if stage.attach.kind != "root" or not stage.axes or stage.name in handled:
            continue
        main = program.statement(stage.main)
        rows = Rows({main.name: [a.value for a in stage.axes]}, [True] * len(stage.axes),
                    [1] * len(stage.axes))
        try:
            _band(s, stage.name, rows, opts, report)
        except (IllegalScheduleError, ScheduleError) as err:
            report.add(f"{stage.name}: left as it is ({_first_line(err)})")


def _recognized(s, opts: AutoOptions, report: AutoReport) -> set:
    """Outputs that are a contraction (``C[i, j] = sum_k A[i, k] B[k, j]``) or a direct
    convolution (``po.ops.conv2d_nchw``) get the recipe of their template (a register
    tile through the reduction, packed panels), applied with the ordinary primitives and
    checked; the stages it scheduled are returned (the others get the generic band)."""
    from .conv_templates import _check_conv, _conv_operands
    from .templates import _right_operand, conv2d_template, matmul_template
    if not opts.tile or opts.tile_sizes is not None or (opts.unroll_jam is not None and
                                                          opts.unroll_jam <= 1):
        return set()  # the user asked for something else than the recipes
    handled = set()
    for tensor in s.output_tensors:
        op = getattr(tensor, "op", None)
        if op is None or not getattr(op, "reduce_axis", None):
            continue
        recipes = [("a contraction: the matmul recipe", _is_contraction, matmul_template),
                   ("a direct convolution: the conv2d recipe", _is_conv, conv2d_template)]
        for what, matches, template in recipes:
            if not matches(tensor, _right_operand, _check_conv, _conv_operands):
                continue
            before = {st.name for st in s.program.stages}
            try:
                with s.atomic():
                    template(s, tensor, parallel=opts.parallel)
                    s.check()
            except (IllegalScheduleError, ScheduleError, InvalidArgumentError) as err:
                report.add(f"{tensor.name}: {what} was refused ({_first_line(err)})")
                continue
            added = {st.name for st in s.program.stages} - before
            handled |= added | {s[tensor].name} | {
                s[p].name for p in _producers(tensor) if _has_stage(s, p)}
            report.add(f"{tensor.name} is {what} ({template.__name__}: register tile "
                       "through the reduction; stages " + ", ".join(sorted(handled)) + ")")
            break
    return handled


def _is_contraction(tensor, right_operand, *_) -> bool:
    try:
        right_operand(tensor)
    except InvalidArgumentError:
        return False
    return len(tensor.op.reduce_axis) == 1


def _is_conv(tensor, _right, check_conv, conv_operands) -> bool:
    try:
        check_conv(tensor, "auto_schedule")
        conv_operands(tensor)
    except InvalidArgumentError:
        return False
    return True


def _producers(tensor) -> list:
    from .nn_templates import producers
    return producers(tensor)


def _has_stage(s, tensor) -> bool:
    try:
        s[tensor]
    except PolyoptError:  # a placeholder or an inlined producer
        return False
    return True
