"""One error class per way a lowering pass can refuse a schedule (issue 38).

The OpenCL planner (loops bound to ``blockIdx``/``threadIdx``, buffers, barriers), the
accelerator's instruction selection and the LLVM intrinsics refuse schedules they cannot
map.  Each class derives from :class:`~polyopt.errors.ScheduleError` (the intrinsics'
from :class:`~polyopt.errors.TensorizeError`), keeps the objects involved as attributes
and renders its message from them.  The primitives' failures are in
:mod:`polyopt.schedule_errors`.

>>> err = WorkGroupSizeError("k0", 2048, 1024, "the device")
>>> (err.kernel, err.size, err.limit)
('k0', 2048, 1024)
>>> print(err)
kernel k0 needs work-groups of 2048 work-items; the device allows 1024: use smaller factors for the threadIdx loops
"""

from __future__ import annotations

from .errors import ScheduleError, TensorizeError

__all__ = ["ThreadBindingError", "WorkGroupSizeError", "DeviceCapacityError",
           "BufferScopeError", "WorkItemRaceError", "AcceleratorMappingError",
           "MissingInstructionsError"]


class ThreadBindingError(ScheduleError):
    """Loop ``loop`` bound to ``kind`` (``blockIdx.x``, ``threadIdx.y``, ...) cannot be
    mapped (of ``statement``, when known): ``reason`` says why and what to do."""

    def __init__(self, loop: str, kind: str, reason: str, statement: str | None = None):
        self.loop, self.kind, self.reason, self.statement = loop, kind, reason, statement
        super().__init__(reason)


class WorkGroupSizeError(ScheduleError):
    """Kernel ``kernel`` needs work-groups of ``size`` work-items (``shape``: per
    dimension, when known); ``device`` allows ``limit``."""

    def __init__(self, kernel: str, size: int, limit: int, device: str,
                 shape: tuple[int, ...] | None = None):
        self.kernel, self.size, self.limit, self.device = kernel, size, limit, device
        self.shape = shape
        if shape is not None:
            super().__init__(
                f"kernel {kernel} would have work-groups of {'x'.join(map(str, shape))} "
                f"work-items, more than {limit}; use smaller factors for the loops bound "
                "to threadIdx")
        else:
            super().__init__(
                f"kernel {kernel} needs work-groups of {size} work-items; {device} allows "
                f"{limit}: use smaller factors for the threadIdx loops")


class DeviceCapacityError(ScheduleError):
    """The schedule needs ``needed`` units of a device ``resource`` (``__local`` memory,
    an accelerator buffer, its micro-op buffer), which has ``available``; ``message``
    says which buffer or kernel and what to make smaller."""

    def __init__(self, resource: str, needed: int, available: int, message: str,
                 buffer: str | None = None):
        self.resource, self.needed, self.available = resource, needed, available
        self.buffer = buffer
        super().__init__(message)


class BufferScopeError(ScheduleError):
    """Buffer ``buffer`` kept in memory ``scope`` cannot be lowered there (used by two
    kernels, a shape that grows with the sizes, a scope the device lacks, ...):
    ``reason`` says why and what to do."""

    def __init__(self, buffer: str, scope: str, reason: str):
        self.buffer, self.scope, self.reason = buffer, scope, reason
        super().__init__(reason)


class WorkItemRaceError(ScheduleError):
    """Two instances (``example``, a :class:`~polyopt.deps.counterexample.
    Counterexample`) touch ``array`` in different work-groups or work-items (``unit``)
    that nothing orders; ``advice`` says what to do."""

    def __init__(self, array: str, example, unit: str, problem: str, advice: str,
                 kernel: str | None = None):
        self.array, self.example, self.unit, self.kernel = array, example, unit, kernel
        self.problem, self.advice = problem, advice
        super().__init__(f"{example}: {problem}. {advice}")


class AcceleratorMappingError(ScheduleError):
    """Statement (or buffer) ``what`` has no accelerator instruction: ``reason`` says
    what the device can do instead."""

    def __init__(self, what: str, reason: str):
        self.what, self.reason = what, reason
        super().__init__(reason)


class MissingInstructionsError(TensorizeError):
    """A tensorized kernel (or template) needs instructions ``missing`` that the CPU
    ``cpu`` lacks; ``advice`` says how to choose others or build for another CPU."""

    def __init__(self, missing: tuple[str, ...], cpu: str, message: str,
                 stage: str | None = None, intrinsic: str | None = None):
        self.missing, self.cpu, self.stage, self.intrinsic = tuple(missing), cpu, stage, intrinsic
        super().__init__(message)
