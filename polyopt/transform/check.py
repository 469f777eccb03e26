"""Legality of a transformed program, with repairs to suggest when it is refused.

>>> import polyopt as po
>>> N = po.var("N"); A = po.placeholder((N, N), name="A")
>>> B = po.compute((N, N), lambda i, j: A[i, j] + 1, name="B")
>>> s = po.create_schedule(B)
>>> s[B].parallel(B.op.axis[0]).kind
'parallel'
"""

from __future__ import annotations

import islpy as isl

from ..deps.dataflow import Dependences
from ..deps.effort import bounded_effort
from ..domain.schedule import BIND_TAGS, CONCURRENT_KINDS
from ..deps.races import racing_access
from ..deps.reductions import reassociated
from ..deps.legality import Violation, carried_dependences, ensure_legal
from ..domain.program import Program
from ..errors import InternalError
from ..schedule_errors import LoopCarriesDependenceError, LoopRaceError
from ..machine import VIRTUAL_THREAD, private_scopes


def check_schedule(result: Program, deps: Dependences, transform: str, *, repair=None,
                   marking: str | None = None, reassociate: bool = False) -> None:
    """Raise :class:`IllegalScheduleError` if the schedule runs a dependence in the wrong
    order (``repair(violation)`` may suggest a fix), or if a loop marked parallel or
    vectorized carries a dependence (a primitive may change a loop marked earlier,
    e.g. fuse it with an inner loop; ``marking`` names the loop this step marks).
    ``reassociate``: reductions may accumulate in any order (see
    :mod:`polyopt.deps.reductions`); marked loops are still checked against the exact
    dependences."""
    with bounded_effort(transform):  # isl's effort is bounded: see deps/effort.py
        order = reassociated(result, deps) if reassociate else deps
        ensure_legal(result, order, transform=transform, repair=repair)
        check_marked_loops(result, deps, transform, marking=marking)


def check_marked_loops_of(program: Program, deps, transform: str, *,
                          marking: str | None = None) -> None:
    """:func:`check_marked_loops` with isl's effort bounded; ``deps`` may be a function
    computing the dependences, called only when a marked loop has two iterations that
    touch one element (else nothing is carried: see :func:`check_loop_carries_nothing`)."""
    with bounded_effort(transform):
        check_marked_loops(program, deps, transform, marking=marking)


def check_marked_loops(program: Program, deps: Dependences, transform: str, *,
                       marking: str | None = None) -> None:
    """Every loop marked parallel or vectorized, or bound to work-groups or work-items,
    carries no dependence."""
    for stage in program.stages:
        for level, axis in enumerate(stage.axes, start=1):
            if axis.kind in ("parallel", "vectorized"):
                check_loop_carries_nothing(program, deps, stage.name, level, transform,
                                           marking=marking)
            elif axis.kind in BIND_TAGS or axis.kind == VIRTUAL_THREAD:
                check_bound_loop(program, deps, stage.name, level, transform,
                                 marking=marking)


def check_bound_loop(program: Program, deps: Dependences, stage: str, level: int,
                     transform: str, *, marking: str | None = None) -> None:
    """A loop bound to work-groups (``blockIdx``) or work-items (``threadIdx``) must carry
    no dependence, like a parallel loop, with two differences: buffers private to what
    the loop distributes ("shared" for work-groups; "local" for both) are not shared
    between its iterations, and a reduction loop bound to work-items is reduced across
    them (a tree reduction in ``__local`` memory), so its own accumulation is allowed."""
    stage_obj = program.stage(stage)
    axis = stage_obj.axes[level - 1]
    if _touches_nothing_across(program, stage_obj.main, axis):
        return
    deps = _resolved(deps)
    threads = axis.kind.startswith("threadIdx")  # (a virtual thread reduces nothing)
    scopes = private_scopes(axis.kind)
    private = frozenset(a.name for a in program.arrays if a.scope in scopes)
    # the reductions across these work-items: this stage's, or that of a stage it is
    # computed in (rfactor's partial sums computed at the bound reduction loop)
    reduced = [other for other in program.stages if threads and any(
        a.kind == axis.kind and other.involves_reduce(a) for a in other.axes)]
    for other in reduced:
        target = program.statement(other.main).target.tensor
        accumulator = program.array_of(target).name
        deps = Dependences(tuple(
            d for d in deps if not (d.source == d.sink == other.main
                                    and d.array == accumulator)))
        private |= {accumulator}
    check_loop_carries_nothing(program, deps, stage, level, transform, private=private,
                               marking=marking)


def _race_repair(program: Program, axis, race: str) -> str:
    """What to do about a race between iterations of a parallel or bound loop."""
    cooperative = [a.name for a in program.arrays
                   if a.scope == "shared" and f" {a.name}[" in f" {race}"]
    if axis.kind.startswith("threadIdx") and cooperative:
        return (f"'{cooperative[0]}' is a \"shared\" buffer computed inside the loops bound "
                "to threadIdx, so every work-item would fill it. For a load shared by the "
                "work-items of a group (TVM's cooperative load), compute the copy at a "
                "serial loop of a stage computed inside the thread loops (a reduction loop: "
                "the thread loops then move inside it), or order the reduction loops outside "
                "the threadIdx loops yourself (s[C].reorder(...), as "
                "po.templates.opencl_matmul_template does) and compute the copy at the last "
                "of them; then bind the copy's own loops to threadIdx: each work-item loads "
                "its part, with barriers planned around the uses")
    return (f"compute that stage at a loop inside '{axis.name}' whose tiles do not overlap, "
            "or make a loop inside the tiles parallel instead")


def repair_by_skew(violation: Violation, program: Program) -> str | None:
    """The repair of a loop reordering that makes a dependence distance negative: skew
    the inner loop by an outer one whose distance is positive."""
    distance = violation.distance
    if distance is None:
        return None
    dep = violation.dependence
    stmt = program.statement(dep.source)
    stage = next((s.name for s in program.stages if dep.source in (s.main, s.init)), "...")
    for inner, d_inner in enumerate(distance):
        if d_inner >= 0:
            continue
        for outer in range(inner):
            if distance[outer] > 0 and all(d == 0 for d in distance[:outer]):
                factor = -(-(-d_inner) // distance[outer])
                return (f"skew {stmt.dims[inner]} by {stmt.dims[outer]} with factor "
                        f"{factor} first (s[{stage!r}].skew('{stmt.dims[outer]}', "
                        f"'{stmt.dims[inner]}', {factor})), so that the distance "
                        "becomes non-negative")
    return None


def repair_by_shift(violation: Violation, program: Program) -> str | None:
    """How far to shift the reader's shared loop so that it runs after what it reads."""
    dep = violation.dependence
    source, sink = program.schedule_of(dep.source), program.schedule_of(dep.sink)
    times = violation.pairs.apply_domain(source).apply_range(sink)
    deltas = times.deltas()
    for dim in range(deltas.dim(isl.dim_type.set)):
        lowest = deltas.dim_min(dim)
        if lowest.is_cst() and lowest.min_val().is_zero():
            continue
        axis = program.axis_at(dep.sink, dim)
        amount = lowest.min_val()
        if axis is None or not lowest.is_cst() or amount.is_infty():
            return None
        stage = next(s.name for s in program.stages if dep.sink in (s.main, s.init))
        offset = -amount.to_python()
        return (f"shift the reader first: s[{stage!r}].shift({axis.name!r}, {offset}) makes "
                f"each iteration of '{axis.name}' read what earlier iterations produced")
    return None


def check_loop_carries_nothing(program: Program, deps: Dependences, stage: str, level: int,
                               transform: str, *, private: frozenset[str] = frozenset(),
                               marking: str | None = None) -> None:
    """``parallel``/``vectorize``/``bind`` need a loop that carries no dependence (and no
    race on a buffer that is not in ``private``)."""
    stage_obj = program.stage(stage)
    axis = stage_obj.axes[level - 1]
    if _touches_nothing_across(program, stage_obj.main, axis):
        return
    deps = _resolved(deps)
    dim = loop_dimension(program, stage_obj.main, axis)
    carried = carried_dependences(program, deps, stage_obj.main, dim)
    if not carried:
        race = racing_access(program, stage_obj.main, dim, private)
        if race is not None:
            raise LoopRaceError(transform, axis.name, race, _race_repair(program, axis, race))
        return
    violation = carried[0]
    dep = violation.dependence
    if stage_obj.involves_reduce(axis) and dep.source == dep.sink == stage_obj.main:
        hint = (f"'{axis.name}' is a reduction loop: split the reduction with "
                f"s.rfactor({stage}, '{axis.name}') to get independent partial results")
    else:
        free = [a.name for k, a in enumerate(stage_obj.axes)
                if not carried_dependences(program, deps, stage_obj.main,
                                           loop_dimension(program, stage_obj.main, a))]
        hint = ("use a loop that carries no dependence"
                + (f": {', '.join(free)}" if free else " (none of this stage's loops is free)"))
    if axis.kind in CONCURRENT_KINDS and marking != axis.name and transform != "the schedule":
        hint = (f"'{axis.name}' is marked {axis.kind}: transform the loops first and mark "
                f"them afterwards, or {hint}")
    what = f"{axis.kind} loop" if axis.kind in CONCURRENT_KINDS else "loop"
    raise LoopCarriesDependenceError(transform, axis.name, violation, hint, what)


def _resolved(deps) -> Dependences:
    return deps() if callable(deps) else deps


def _touches_nothing_across(program: Program, stmt: str, axis) -> bool:
    """Whether no two iterations of ``axis`` touch one element, one of them writing it
    (no memory conflict between them, private buffers included): then the loop carries
    no dependence (every dependence is such a conflict) and has no race.  An exact
    answer that needs no dataflow analysis: asked first, so that the dependences are
    computed only when some conflict remains (on a rewritten kernel under a tiled,
    ``nparts``-split schedule they can take minutes)."""
    return racing_access(program, stmt, loop_dimension(program, stmt, axis)) is None


def loop_dimension(program: Program, stmt: str, axis) -> int:
    """The schedule dimension at which ``stmt`` enumerates ``axis``."""
    for name, axes in program.loop_axes:
        if name == stmt:
            for dim, candidate in enumerate(axes):
                if candidate is axis:
                    return dim
    # (every loop of a stage is in its statements' rows: a stale axis is polyopt's bug)
    raise InternalError(f"loop '{axis.name}' does not enclose statement {stmt}")


def parallel_loops(program: Program, deps: Dependences) -> dict[str, list[str]]:
    """For each stage, the loops that carry no dependence (may run in parallel)."""
    result = {}
    for stage in program.stages:
        result[stage.name] = [
            axis.name for axis in stage.axes
            if not carried_dependences(program, deps, stage.main,
                                       loop_dimension(program, stage.main, axis))]
    return result
