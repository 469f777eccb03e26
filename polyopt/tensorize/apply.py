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
from ..errors import InvalidArgumentError, ScheduleError, TensorizeError
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
