"""The primitives that add stages: methods of the schedule (``s.<name>(...)``), registered.

Like the stage's primitives (:mod:`.primitives`), each is one registration: a pure
``apply(state, ...)``, the arguments declared (``TENSOR``: a tensor, or its name, as
:class:`~polyopt.transform.schedule.Schedule` finds it; ``WRITER``: the stage computing a
tensor, or a kernel's stage; ``STAGE``: a stage or a list of stages; ``loop_of``: a loop of
that stage), and a ``front`` where the method is more than one step.  The registration
gives ``s.<name>``, ``s.can_<name>``, the step's text in ``s.script()``, its replay and
its entry in ``docs/primitives.md``.

>>> import polyopt as po
>>> A = po.placeholder((8, 8), name="A")
>>> B = po.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
>>> s = po.create_schedule(B)
>>> BL = s.cache_write(B, "local")
>>> print(s.script())
s.cache_write("B", "local")
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgumentError
from ..schedule_errors import InPlaceKernelError, PrimitiveOrderError
from . import cache, inplace, kernel_rfactor, rfactor, scalar_expand
from .inplace import KernelRewrites
from .layout import relayout
from .primitives import reference_dependences
from .registry import KEYWORD, STAGE, TENSOR, WRITER, Param, loop_of, register
from .stage_views import refresh_partial_op


def _rewritten(state, program):
    original = state.original
    return state.rewritten(program, lambda: reference_dependences(program, original))


# -- cache_read -------------------------------------------------------------------------

def _cache_read(schedule, step, tensor, scope, readers, *, layout=None, check=True):
    """One list of readers; TVM's cache_read of a tensor already inlined (see
    :func:`_before_inline`)."""
    source = schedule._tensor(tensor)
    readers = list(readers) if isinstance(readers, (list, tuple)) else [readers]
    if not readers:
        raise InvalidArgumentError("cache_read needs at least one reader stage")
    index = None if schedule.kernel is not None else _inlining_step(schedule, source)
    if index is not None:
        return _before_inline(schedule, step, index, source, scope, readers, layout, check)
    return step(source, scope, readers, layout=layout, check=check)


def _inlining_step(schedule, tensor) -> int | None:
    """The index of the step that inlined the stage computing ``tensor`` (now gone
    from the program), or None."""
    if any(a.tensor is tensor for a in schedule.program.arrays):
        return None
    for index, done in enumerate(schedule.steps):
        if done.primitive == "compute_inline" and any(
                a.tensor is tensor and a.name == done.stage
                for a in schedule.before[index].program.arrays):
            return index
    return None


def _before_inline(schedule, step, index, source, scope, readers, layout, check):
    """TVM's ``s[P].compute_inline()`` then ``s.cache_read(P, "shared", [C])``: the
    cache computes P's expression (P is inlined into the copy).  The steps from the
    inlining on are undone, the copy made, and those steps replayed."""
    later = schedule.steps[index:]
    makers = [str(st) for st in later[1:] if st.primitive in
              ("cache_read", "cache_write", "rfactor")]
    if makers:
        raise PrimitiveOrderError("cache_read", makers[0], stage=source.name)
    schedule.state, schedule.steps, schedule.before = (
        schedule.before[index], schedule.steps[:index], schedule.before[:index])
    cached = step(source, scope, readers, layout=layout, check=check)
    schedule.replay(later)
    return cached


@register("cache_read", scope="schedule", returns="value", front=_cache_read,
          params={"tensor": TENSOR, "readers": STAGE})
def cache_read(state, tensor, scope: str, readers: list, *, layout=None):
    """``AS = s.cache_read(A, "shared", [B])``: B reads a copy of A made by a new stage.
    ``layout="{ [i, k] -> [floor(i / 6), k, i mod 6] }"`` stores the copy in that order
    (packing, see :mod:`polyopt.transform.layout`).

    On an in-place kernel the copy is made right before each instance of the (one)
    reader; ``s[AS].compute_at(s[B], axis)`` then makes it once per iteration."""
    if state.kernel is not None:
        if len(readers) != 1:
            raise InPlaceKernelError("cache_read", "one_reader")
        result, buffer, rewrites = inplace.cache_read(state.program, state.kernel, tensor,
                                                      scope, readers[0])
        if layout is not None:  # (the check follows the copies to each element's source)
            result = relayout(result, buffer, layout)
            rewrites = dataclasses.replace(
                rewrites, relaid=rewrites.relaid | {result.array_of(buffer).name})
        return state.kernel_rewritten(result, rewrites), buffer
    result, cached = cache.cache_read(state.program, tensor, scope, list(readers))
    if layout is not None:
        result = relayout(result, cached, layout)
    return _rewritten(state, result), cached


# -- cache_write ------------------------------------------------------------------------

@register("cache_write", scope="schedule", returns="value", params={"tensor": WRITER})
def cache_write(state, tensor: str, scope: str, *, layout=None):
    """``CL = s.cache_write(C, "local")``: C's computation goes to CL, then CL is copied
    to C (``s[C]`` is the copy).  ``layout=`` stores CL in another order, as for
    ``cache_read`` (e.g. an accumulator tile with the vectorized index last).
    On an in-place kernel, ``tensor`` is a stage (or an array one stage writes)."""
    stage = tensor  # (the stage computing it, by name)
    if state.kernel is not None:
        if layout is not None:
            raise InPlaceKernelError("cache_write", "layout", stage=stage)
        result, buffer, rewrites = inplace.cache_write(state.program, state.kernel, stage,
                                                       scope)
        return state.kernel_rewritten(result, rewrites), buffer
    target = state.program.array(stage).tensor
    result, cached = cache.cache_write(state.program, target, scope, stage)
    if layout is not None:
        result = relayout(result, cached, layout)
    return _rewritten(state, result), cached


# -- rfactor ----------------------------------------------------------------------------

def _rfactor(schedule, step, tensor, axis, factor_axis=0, *, check=True):
    """The step, then TVM's ``BF.op.axis`` and a refreshed ``s[B].op``."""
    partial = step(tensor, axis, factor_axis=factor_axis, check=check)
    if schedule.kernel is None:
        array = schedule.program.array_of(partial).name
        refresh_partial_op(schedule.program, partial, schedule[array]._loop)
    return partial


@register("rfactor", scope="schedule", returns="value", front=_rfactor,
          params={"tensor": WRITER, "axis": loop_of("tensor"), "factor_axis": KEYWORD})
def rfactor_(state, tensor: str, axis: str, factor_axis=0):
    """``CF = s.rfactor(C, ki)``: partial reductions over loop ``ki`` of C, in a new
    tensor CF whose axis ``factor_axis`` (TVM's: 0 first, -1 last) is the factored loop
    and whose other axes are C's."""
    stage = tensor  # (the stage computing it, by name)
    if state.kernel is not None:
        if not state.kernel.only_inlined or state.kernel.inlined is not None:
            raise PrimitiveOrderError("rfactor", "compute_inline, compute_at, caches",
                                      stage=stage, in_place=True)
        # valid by construction: the result becomes the reference later rewrites are
        # validated against
        result, partial = kernel_rfactor.rfactor(state.program, stage, axis, factor_axis)
        return state.kernel_rewritten(result, KernelRewrites.start(result)), partial
    result, partial = rfactor.rfactor(state.program, stage, axis, factor_axis)
    return _rewritten(state, result), partial


# -- expand_scalar ----------------------------------------------------------------------

def _scalar_names(scalar):
    if isinstance(scalar, (list, tuple)) and scalar and all(isinstance(n, str) for n in scalar):
        return list(scalar)
    if not isinstance(scalar, str):
        raise InvalidArgumentError(f"expand_scalar takes the scalar's name or a list of "
                                   f"names, got {scalar!r}")
    return scalar


@register("expand_scalar", scope="schedule",
          params={"scalar": Param(convert=_scalar_names), "dims": KEYWORD})
def expand_scalar(state, scalar: str, dims=None):
    """``s.expand_scalar("w")``: an in-place kernel's scalar temporary ``w`` kept in
    the array elements its values are stored to, so that it no longer orders every
    loop around it; ``dims=1``: in a new array indexed by each statement's outermost
    loop (see :mod:`polyopt.transform.scalar_expand`); a list of names: all at once,
    with one check."""
    if state.kernel is None:
        raise InPlaceKernelError("expand_scalar", "needs_kernel")
    if state.kernel.rewritten:
        raise PrimitiveOrderError("expand_scalar", "compute_inline, compute_at, caches, "
                                  "rfactor", in_place=True)
    result = scalar_expand.expand_scalar(state.program, scalar, dims)
    return dataclasses.replace(state.kernel_rewritten(result, KernelRewrites.start(result)),
                               original=result), None
