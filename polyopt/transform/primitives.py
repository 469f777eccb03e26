"""The schedule primitives, registered: each a pure function of a :class:`ScheduleState`.

``apply(state, ...)`` returns the new state and the primitive's result; the arguments
are names (of stages, loops and arrays) or tensors, as ``po.Schedule`` records them.
Rewrites of an in-place kernel (caches, recomputation, inlining) are validated against
the kernel's dataflow; those of a tensor-expression program get new reference
dependences (the program in its reference order).

>>> import polyopt as po
>>> A = po.placeholder((8, 8), name="A")
>>> B = po.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
>>> state = ScheduleState.start(po.create_schedule(B).program)
>>> state, _ = PRIMITIVES["reorder"].apply(state, "B", "j", "i")
>>> [a.name for a in state.program.stage("B").axes]
['j', 'i']
"""

from __future__ import annotations

import dataclasses

from ..deps.dataflow import Dependences, compute_dependences
from ..domain.program import Program
from ..domain.schedule import Attach, identity_axes
from ..schedule_errors import FusedPartsError, NotComputedError
from . import attach, cache, diamond, inplace, loops
from .bind import VIRTUAL_THREADS
from .check import repair_by_shift, repair_by_skew
from .group import edit_band
from .stage_views import detached_from_step
from .registry import KEYWORD, LOOP, PRIMITIVES, STAGE, Param, loop_of, register  # noqa: F401
from .state import ScheduleState


def reference_dependences(program: Program, original: Program | None = None
                          ) -> Dependences:
    """The dependences of a rewritten program, computed under its reference order:
    every stage at the root, in definition order, over its own dimensions (the order
    that defines what a tensor-expression program computes), except the stages that
    ``original`` (the program as created) defines inside another's loops: the steps of
    a scan (``tvm.te.scan``) share its time loop, and a step reads the state of the one
    before it.  The current schedule is then checked against them like any other.
    In-place kernels have no such order; their rewrites are validated against the
    original kernel instead (inplace.py)."""
    names = {s.name for s in program.stages}
    created = {s.name: s.attach for s in (original.stages if original is not None else ())
               if s.attach.kind == "with" and s.attach.outer_dims == 0}
    stages = tuple(dataclasses.replace(
        s, axes=identity_axes(program.statement(s.main).domain),
        attach=created[s.name] if created.get(s.name) and created[s.name].stage in names
        else Attach()) for s in program.stages)
    return compute_dependences(program.with_stages(stages))


def _rewritten(state: ScheduleState, program: Program) -> ScheduleState:
    original = state.original
    return state.rewritten(program, lambda: reference_dependences(program, original))


# -- loops ------------------------------------------------------------------------------

@register("split", params={"axis": LOOP, "factor": KEYWORD, "nparts": KEYWORD},
          returns="loops")
def split(state, stage, axis, factor=None, nparts=None):
    """``outer, inner = s[C].split(C.op.axis[0], factor=8)``."""
    program, names = loops.split(state.program, stage, axis, factor=factor, nparts=nparts)
    return state.advanced(program), names


@register("tile", repair=repair_by_skew, params={"x": LOOP, "y": LOOP}, returns="loops")
def tile(state, stage, x, y, x_factor, y_factor):
    """``xo, yo, xi, yi = s[C].tile(i, j, 8, 8)``."""
    program, names = loops.tile(state.program, stage, x, y, x_factor, y_factor)
    return state.advanced(program), names


@register("reorder", repair=repair_by_skew, params={"axes": LOOP})
def reorder(state, stage, *axes):
    """``s[C].reorder(k, i, j)``: these loops, in this order."""
    return state.advanced(loops.reorder(state.program, stage, list(axes))), None


def _fuse_pairwise(stage, step, *axes, check=True):
    """``s[C].fuse(i, j, k)``: one fuse step per pair, from the outside; ``fuse(i)`` is
    ``i``; ``fuse()`` adds a loop of one iteration (TVM's singleton, see ``singleton``)."""
    if not axes:
        return stage.singleton(check=check)
    if len(axes) == 1:
        return stage._loop(stage._axis(axes[0]))
    fused = step(axes[0], axes[1], check=check)
    return _fuse_pairwise(stage, step, fused, *axes[2:], check=check)


@register("fuse", params={"outer": LOOP, "inner": LOOP}, returns="loop", front=_fuse_pairwise)
def fuse(state, stage, outer, inner):
    """``f = s[C].fuse(i_inner, j_inner)``: two adjacent loops become one (more than
    two, as TVM allows: ``s[C].fuse(i, j, k)``, fuse them pairwise from the outside)."""
    program, name = loops.fuse(state.program, stage, outer, inner)
    return state.advanced(program), name


@register("singleton", returns="loop")
def singleton(state, stage):
    """``u = s[C].singleton()`` (or TVM's ``s[C].fuse()``): a new outermost loop of one
    iteration (inside the loops the stage shares), e.g. to bind a scalar stage."""
    program, name = loops.add_unit_loop(state.program, stage)
    return state.advanced(program), name


@register("skew", params={"outer": LOOP, "inner": LOOP})
def skew(state, stage, outer, inner, factor=1):
    """``s[S].skew(t, i, 1)``: loop ``i`` becomes ``i + 1 * t``."""
    return state.advanced(loops.skew(state.program, stage, outer, inner, factor)), None


@register("shift", params={"axis": LOOP})
def shift(state, stage, axis, offset):
    """``s[C].shift(i, 1)``: iteration ``v`` runs at ``v + 1``."""
    return state.advanced(loops.shift(state.program, stage, axis, offset)), None


@register("reverse", params={"axis": LOOP})
def reverse(state, stage, axis):
    """``s[C].reverse(i)``: run the loop backwards."""
    return state.advanced(loops.reverse(state.program, stage, axis)), None


@register("transform", repair=repair_by_skew, returns="axes")
def transform(state, stage, relation):
    """``s[S].transform("{ [t, i] -> [t, t + i] }")``: any affine map of the loops."""
    return state.advanced(loops.transform_loops(state.program, stage, relation)), None


def _parallel_inside(stage, step, *axes, parallel=True, check=True):
    """The wavefront step, then (``parallel``) each inner loop of the wave that may
    run in parallel marked so (those are steps of their own)."""
    names = [stage._axis(a) for a in axes]
    wave = step(*names, parallel=parallel, check=check)
    if parallel:
        for inner in names[1:]:
            if stage.can_parallel(inner):
                stage.parallel(inner, check=check)
    return wave


@register("wavefront", params={"axes": LOOP, "parallel": Param(omit_default=False)},
          returns="loop", front=_parallel_inside)
def wavefront(state, stage, *axes, parallel=True):
    """``w = s[S].wavefront(t, i, j)``: an outer loop over ``t + i + j`` and the
    loops ``i, j`` inside it, made parallel when they carry no dependence (as after
    skewing, when every distance in the band is non-negative)."""
    program, name = loops.wavefront(state.program, stage, list(axes))
    return state.advanced(program), name


@register("diamond_tile", repair=lambda violation, program: diamond.DIAMOND_REPAIR,
          params={"time": LOOP, "space": LOOP}, returns="loops")
def diamond_tile(state, stage, time, space, size):
    """``band, tile = s[S].diamond_tile(t, i, 32)``: diamonds along ``t + i`` and
    ``t - i`` (loops ``t.diamond``, ``i.diamond`` marked parallel, then ``t, i``), so that
    every tile of the first time band starts at once; see
    :mod:`polyopt.transform.diamond`."""
    program, names = diamond.diamond_tile(state.program, stage, time, space, size)
    return state.advanced(program), names


def _marking(kind: str, doc: str | None = None):
    def mark(state, stage, axis):
        axes = state.program.stage(stage).axes
        level = state.program.stage(stage).axis(axis) + 1
        if kind == "parallel" and level < len(axes) and axes[level].fused_part:
            # a fuse of two symbolic extents: its outer part runs in parallel
            def change(member, old):
                return [dataclasses.replace(old[0], kind=kind), old[1]]

            return state.advanced(edit_band(state.program, stage, level, level + 1, change,
                                            fused_parts=True)), axis

        def change(member, old):
            return [dataclasses.replace(old[0], kind=kind)]

        return state.advanced(edit_band(state.program, stage, level, level, change)), axis
    mark.__doc__ = doc
    return mark


# the check of every step also checks that loops marked parallel or vectorized carry
# no dependence (transform.check.check_marked_loops); each returns the loop it marked
MARKED = {"axis": LOOP}
register("parallel", marks=True, params=MARKED, returns="loop")(_marking(
    "parallel", "Run the loop's iterations in parallel; it must carry no dependence."))
register("vectorize", marks=True, params=MARKED, returns="loop")(_marking(
    "vectorized", "Run the loop with SIMD instructions; it must carry no dependence."))
register("unroll", marks=True, params=MARKED, returns="loop")(_marking(
    "unrolled", "Unroll the loop (always legal: the order does not change)."))


def _thread_tag(stage, step, axis, tag, *, check=True):
    """``bind`` with TVM's tags: ``cthread`` is ``virtual_thread``, TVM's virtual
    threads (``vthread``) run one after the other (``unroll``)."""
    tag = getattr(tag, "thread_tag", tag)  # te.thread_axis("threadIdx.x") objects
    if tag == "cthread":  # VTA's: interleaved on the accelerator (see virtual_thread)
        return stage.virtual_thread(axis, check=check)
    if tag in VIRTUAL_THREADS:  # TVM's virtual threads run one after the other
        return stage.unroll(axis, check=check)
    return step(axis, tag, check=check)


@register("bind", marks=True, params=MARKED, returns="loop", front=_thread_tag)
def bind(state, stage, axis, tag):
    """``s[C].bind(io, "blockIdx.x")``: run the loop's iterations on OpenCL work-groups
    (``blockIdx.x|y|z``) or work-items (``threadIdx.x|y|z``); it must carry no
    dependence (see :mod:`polyopt.transform.bind`).  TVM's ``"cthread"`` is
    ``virtual_thread``; its ``"vthread"`` runs the iterations one after the other."""
    from .bind import bind_tag
    return _marking(bind_tag(tag))(state, stage, axis)


@register("virtual_thread", marks=True, params=MARKED, returns="loop")
def virtual_thread(state, stage, axis):
    """Interleave the loop's iterations on an accelerator (``target="accel"``), each
    with its own copies of the buffers computed inside it: the loads of one overlap
    the compute of the other (VTA's latency hiding).  Checked like ``bind``: no
    dependence may cross iterations except through those private buffers."""
    from ..machine import VIRTUAL_THREAD
    return _marking(VIRTUAL_THREAD)(state, stage, axis)


@register("set_scope", checked=True)
def set_scope(state, stage, scope):
    """Keep this stage's tensor in ``scope`` (``"acc"``: the accelerator's
    accumulator buffer, ``"inp"``/``"wgt"``: its input and weight buffers); what is
    computed does not change."""
    program = state.program
    target = program.array_of(program.statement(program.stage(stage).main).target.tensor)
    cache._scope(scope)
    if target.role != "compute":
        raise NotComputedError("set_scope", target.name)
    arrays = tuple(dataclasses.replace(a, scope=scope) if a.name == target.name else a
                   for a in program.arrays)
    return state.advanced(program.replace(arrays=arrays)), None


@register("double_buffer", checked=True)
def double_buffer(state, stage):
    """``s[AA].double_buffer()`` (TVM): keep two copies of this intermediate stage's
    buffer so that a GPU can fill the next one while it computes with the current one.
    Recorded in the schedule's script; it changes no code: polyopt's kernels fill a
    buffer and use it in sequence on each thread (no asynchronous copies to overlap),
    where a second copy would only double the memory.  Refused for a tensor the program
    does not compute (an input)."""
    program = state.program
    target = program.array_of(program.statement(program.stage(stage).main).target.tensor)
    if target.role != "compute":
        raise NotComputedError("double_buffer", target.name)
    return state.advanced(program), None


def _refuse_fused_parts(program, stage: str, axis: str) -> None:
    """A stage is not computed inside a fuse of two symbolic extents (two loops)."""
    axes = program.stage(stage).axes
    level = program.stage(stage).axis(axis) + 1
    if level < len(axes) and axes[level].fused_part:
        raise FusedPartsError(stage, axis)


# -- where a stage is computed -------------------------------------------------------

@register("compute_with", repair=repair_by_shift, params={"other": STAGE, "axis": loop_of("other")})
def compute_with(state, stage, other, axis):
    """Share ``other``'s loops down to ``axis``, without recomputation."""
    _refuse_fused_parts(state.program, other, axis)
    return state.advanced(attach.compute_with(state.program, stage, other, axis)), None


# a compute_at that needs another reader attached first waits for it (TVM accepts the
# calls in any order): it is retried after every later primitive; so does one that would
# make a cycle (attaching a stage into itself, or into a stage attached inside it), which
# TVM also accepts and refuses when lowering: lowering raises AttachCycleError if it stays
@register("compute_at", hint="compute it at a deeper loop",
          params={"other": STAGE, "axis": loop_of("other")},
          defer_on=(attach.ReaderOutsideError, attach.AttachCycleError))
def compute_at(state, stage, other, axis):
    """Compute, inside each iteration of ``other``'s loop ``axis``, the part of this
    stage that ``other`` reads there (overlapping tiles recompute their halo)."""
    _refuse_fused_parts(state.program, other, axis)
    if state.kernel is not None:
        result, rewrites = inplace.compute_at(state.program, state.reference.dependences,
                                              state.kernel, state.original, stage, other, axis)
        return state.kernel_rewritten(result, rewrites), None
    program = detached_from_step(state.program, stage, other, axis)
    result, deps, _ = attach.compute_at(program, state.reference.dependences(), stage,
                                        other, axis, state.outputs)
    return state.rewritten(result, deps), None


@register("compute_inline")
def compute_inline(state, stage):
    """Substitute this stage's expression into its readers (it gets no loops).  On an
    in-place kernel: into the reads that get their value from it, when every such
    read would see the same inputs and nothing else needs what it wrote."""
    if state.kernel is not None:
        result, rewrites = inplace.compute_inline(state.program, state.kernel, stage)
        return state.kernel_rewritten(result, rewrites), None
    return _rewritten(state, attach.compute_inline(state.program, stage, state.outputs)), None


@register("compute_root")
def compute_root(state, stage):
    """Compute this stage on its own again, before its readers."""
    old = state.program.stage(stage)
    if state.kernel is not None and old.attach.outer_dims:
        result, _ = attach.compute_root(state.program, stage, state.original)
        if old.main in state.kernel.copies:  # a buffer's copy: before its reader's nest
            result = result.with_stages(_before_nest_of(result.stages, stage,
                                                        old.attach.stage))
        return state.kernel_rewritten(result, state.kernel.restored(result, old)), None
    result, rewritten = attach.compute_root(state.program, stage, state.original)
    return (_rewritten(state, result) if rewritten else state.advanced(result)), None


def _before_nest_of(stages: tuple, name: str, reader: str) -> tuple:
    """``stages`` with the root stage ``name`` moved right before the root stage whose
    loops ``reader`` runs in."""
    by_name = {s.name: s for s in stages}
    while by_name[reader].attach.kind != "root":
        reader = by_name[reader].attach.stage
    moved = by_name[name]
    rest = tuple(s for s in stages if s.name != name)
    index = next(k for k, s in enumerate(rest) if s.name == reader)
    return rest[:index] + (moved,) + rest[index:]
