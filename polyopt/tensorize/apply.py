"""The ``tensorize`` primitive, registered like the others (so ``s[C].tensorize``,
``can_tensorize``, ``s.script()`` and ``replay`` come from its registration).

``tensorize`` is a pure function of a :class:`~polyopt.transform.state.ScheduleState`:
it matches the sub-nest exactly (:func:`polyopt.tensorize.match.match`) and marks it.
Its legality (each tile of the intrinsic run as one step) is part of the state's check,
so it is checked after the step like any primitive's, skipped with ``check=False``, and
checked again after every later step (a later reorder may break it).  A step records
the intrinsic by its key (a built-in's constructor call, or a declared intrinsic's
name), so ``s.script()`` and ``replay`` reproduce it.

>>> import polyopt as po
>>> from polyopt.tensorize.builtin import dot_16x4_u8s8
>>> A = po.placeholder((4, 8), name="A", dtype="uint8")
>>> W = po.placeholder((2, 16, 4), name="W", dtype="int8")
>>> C = po.ops.matmul_u8s8(A, W)
>>> s = po.create_schedule(C)
>>> s[C].reorder(C.op.axis[0], C.op.reduce_axis[0], C.op.axis[1], C.op.reduce_axis[1])
>>> s[C].tensorize(C.op.axis[1], dot_16x4_u8s8())
>>> s.program.tensorized[0][:2]
('C', 'j')
>>> print(s.script())
s["C"].reorder("i", "ko", "j", "ki")
s["C"].tensorize("j", "dot_16x4_u8s8()")
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, ScheduleError
from ..tensorize_errors import AlreadyTensorizedError
from ..transform.registry import LOOP, Param, register
from ..transform.state import STATE_CHECKS
from . import builtin
from .intrin import TensorIntrin, declared
from .match import match


def intrinsic_by_key(key: str) -> TensorIntrin:
    """The intrinsic a recorded step names: a declared one that is still alive, or a
    built-in's constructor call (``"gemm_u8s8(rows=6, cols=64)"``, made again).

    >>> from polyopt.tensorize.builtin import gemm_u8s8
    >>> intrinsic_by_key(gemm_u8s8(4, 32).key) is gemm_u8s8(4, 32)
    True
    """
    found = declared(key)
    if found is not None:
        return found
    made = builtin.from_key(key)
    if made is None:
        raise InvalidArgumentError(
            f"no intrinsic '{key}' is declared: declare it (po.decl_tensor_intrin(..., "
            f"key={key!r})) before replaying the schedule, or pass the intrinsic itself")
    return made


def _intrinsic(intrin) -> TensorIntrin:
    if isinstance(intrin, str):
        return intrinsic_by_key(intrin)
    if not isinstance(intrin, TensorIntrin):
        raise InvalidArgumentError(f"tensorize takes an intrinsic from po.decl_tensor_intrin "
                                   f"(or its key), got {intrin!r}")
    return intrin


def _key(intrin) -> str:
    return _intrinsic(intrin).key


@register("tensorize", params={"axis": LOOP, "intrin": Param(convert=_key)})
def tensorize(state, stage: str, axis: str, intrin, *, strict: bool = False):
    """``s[C].tensorize(ji, intrin)``: loop ``ji`` and the loops inside it become one
    call of ``intrin`` (``po.decl_tensor_intrin``, or its key as ``s.script()`` records
    it) per tile, when the sub-nest computes exactly what the intrinsic does (else
    :class:`TensorizeError` naming what differs) and running each tile as one step
    respects the dependences (checked unless ``check=False``).  Where an extent does not
    divide, the partial tiles run as scalar code; ``strict=True`` refuses them instead.

    The step is a pure function of the state: it matches the sub-nest and marks it;
    its legality is the state's check (:func:`check_tensorized`)."""
    intrin = _intrinsic(intrin)
    program = state.program
    for other_stage, other_axis, _ in program.tensorized:
        if other_stage == stage:
            raise AlreadyTensorizedError(stage, other_axis)
    match(program, None, stage, axis, intrin, strict=strict)
    return state.advanced(program.replace(
        tensorized=program.tensorized + ((stage, axis, intrin),))), None


def check_tensorized(state, step: str) -> None:
    """Raise :class:`TensorizeError` unless every tensorized sub-nest still matches its
    intrinsic and running each of its tiles as one step respects the dependences."""
    program = state.program
    if not program.tensorized:
        return
    key = _checked_key(program)
    if key is not None and _CHECKED.get(key) is state.reference:
        return  # the same schedule rows, accesses and reference: checked before
    for stage, axis, intrin in program.tensorized:
        try:
            match(program, state.reference.dependences(), stage, axis, intrin)
        except ScheduleError as err:
            if ".tensorize(" in step:
                raise
            raise err.with_message(f"{step} breaks the tensorize of stage '{stage}' at "
                                   f"'{axis}': {err}") from None
    if key is not None:
        if len(_CHECKED) > 32:
            _CHECKED.clear()
        _CHECKED[key] = state.reference


# checked programs: what a tensorize's match and legality depend on -> the reference
# (a loop kind marked after the tensorize, e.g. parallel, changes none of it)
_CHECKED: dict = {}


def _checked_key(program):
    try:
        tensorized = tuple((stage, axis, intrin.key, id(intrin), tuple(
            a.name for a in program.stage(stage).axes))
            for stage, axis, intrin in program.tensorized)
    except ScheduleError:
        return None
    rows = tuple(str(program.schedule_of(st.name)) for st in program.statements)
    accesses = tuple(str(a.relation) for st in program.statements for a in st.accesses)
    values = tuple(f"{st.target} = {st.value}" for st in program.statements)
    return tensorized, rows, accesses, values, str(program.context)


STATE_CHECKS.append(check_tensorized)
