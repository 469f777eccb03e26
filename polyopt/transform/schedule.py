"""The user-facing schedule: a program plus the tensors it computes.

``s = po.create_schedule(C)`` builds the program with its default schedule (one loop
nest per compute, in definition order); ``s[C]`` is the stage of compute ``C``.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] * 2, name="B")
>>> s = po.create_schedule(B)
>>> s[B].op.name, [st.name for st in s.program.statements]
('B', ['B'])
"""

from __future__ import annotations

from ..domain.from_te import program_from_outputs
from ..domain.program import Program
from ..errors import InvalidArgumentError
from ..te.tensor import ComputeOp, Tensor


class Stage:
    """The part of a schedule that computes one tensor."""

    def __init__(self, schedule: "Schedule", tensor: Tensor):
        self.schedule = schedule
        self.tensor = tensor

    @property
    def op(self):
        return self.tensor.op

    @property
    def statements(self) -> tuple[str, ...]:
        array = self.schedule.program.array_of(self.tensor)
        return tuple(s.name for s in self.schedule.program.statements
                     if s.target.tensor is array.tensor)

    def __repr__(self) -> str:
        return f"Stage({self.tensor.name})"


class Schedule:
    """A program with a schedule; primitives on its stages return and record new programs."""

    def __init__(self, program: Program, outputs: tuple[Tensor, ...]):
        self.program = program
        self.outputs = outputs

    def __getitem__(self, tensor: Tensor) -> Stage:
        if not isinstance(tensor, Tensor) or not isinstance(tensor.op, ComputeOp):
            raise InvalidArgumentError(f"s[...] takes a computed tensor, got {tensor!r}")
        self.program.array_of(tensor)
        return Stage(self, tensor)

    def __repr__(self) -> str:
        return f"Schedule({', '.join(t.name for t in self.outputs)})"


def create_schedule(outputs) -> Schedule:
    """The default schedule of the computation of ``outputs`` (a tensor or a list)."""
    program = program_from_outputs(outputs)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    return Schedule(program, outputs)
