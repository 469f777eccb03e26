"""Recording a tensorize on a program, and ``can_tensorize``.

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
"""

from __future__ import annotations

from ..deps.dataflow import Dependences
from ..domain.program import Program
from ..errors import InvalidArgumentError, ScheduleError, TensorizeError, public
from ..transform.schedule import Stage
from .intrin import TensorIntrin
from .match import match


def tensorize(program: Program, deps: Dependences | None, stage: str, axis: str,
              intrin: TensorIntrin) -> Program:
    """``program`` with the sub-nest of ``stage`` under ``axis`` marked to run as
    ``intrin`` (checked: :func:`polyopt.tensorize.match.match`)."""
    if not isinstance(intrin, TensorIntrin):
        raise InvalidArgumentError(f"tensorize takes an intrinsic from po.decl_tensor_intrin, "
                                   f"got {intrin!r}")
    for other_stage, other_axis, _ in program.tensorized:
        if other_stage == stage:
            raise TensorizeError(f"stage '{stage}' is already tensorized at '{other_axis}'")
    match(program, deps, stage, axis, intrin)
    return program.replace(tensorized=program.tensorized + ((stage, axis, intrin),))


def can_tensorize(program: Program, deps: Dependences, stage: str, axis: str,
                  intrin: TensorIntrin) -> bool:
    try:
        tensorize(program, deps, stage, axis, intrin)
    except (TensorizeError, ScheduleError):
        return False
    return True


# -- the schedule primitives (methods of po.Stage, installed here: tensorize is a layer
# below transform) ------------------------------------------------------------------------
def _stage_tensorize(self, axis, intrin, *, check: bool = True) -> None:
    """``s[C].tensorize(ji, intrin)``: loop ``ji`` and the loops inside it become one
    call of ``intrin`` (``po.decl_tensor_intrin``), when the sub-nest computes exactly
    what the intrinsic does (else :class:`TensorizeError` naming what differs) and
    running it as one step respects the dependences (checked unless ``check=False``)."""
    name = self._axis(axis)
    deps = self.schedule.deps if check else None
    self._run("tensorize", (name, getattr(intrin, "name", intrin)), {}, lambda p: (
        tensorize(p, deps, self.name, name, intrin), None), check=False)


def _stage_can_tensorize(self, axis, intrin) -> bool:
    """Whether ``tensorize`` with these arguments would be accepted."""
    return can_tensorize(self.schedule.program, self.schedule.deps, self.name,
                         self._axis(axis), intrin)


_stage_tensorize.__name__ = _stage_tensorize.__qualname__ = "tensorize"
_stage_can_tensorize.__name__ = _stage_can_tensorize.__qualname__ = "can_tensorize"
Stage.tensorize = public(_stage_tensorize)
Stage.can_tensorize = public(_stage_can_tensorize)
