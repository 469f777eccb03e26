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
    mapped (of ``statement``, when known): ``problem`` is one of :attr:`PROBLEMS`."""

    PROBLEMS = {
        "bounds_differ": "the loop '{loop}' bound to {kind} was generated as several loops "
                         "that start differently for {statement}; bind a loop whose bounds "
                         "are the same for every statement inside it (split the stages apart)",
        "non_constant_extent": "loop '{loop}' is bound to {kind} but has no constant extent; "
                               "split it with a constant factor and bind the inner loop (e.g. "
                               "s[C].split(i, factor=64))",
        "bound_twice": "two nested loops of {statement} are bound to {kind}; bind each of "
                       "blockIdx.x/y/z and threadIdx.x/y/z at most once per loop nest",
        "not_outermost": "loop '{loop}' is bound to {kind} but is not one of the outermost "
                         "loops of its kernel; bind only the outermost loops of a nest to "
                         "blockIdx (reorder them outward first), or compute the stage on its "
                         "own (compute_root) so that it becomes a kernel of its own",
        "shared_reduction": "the reduction loop '{loop}' of {statement} is bound to {kind}; it "
                            "is reduced across work-items only when it holds one reduction "
                            "and no other threadIdx loop (bind the other loops to blockIdx or "
                            "to the other threadIdx dimensions, or rfactor first)",
        "not_accumulation": "{statement} is not an accumulation; its loop '{loop}' cannot be "
                            "bound to threadIdx",
        "several_accumulators": "{statement} accumulates into different elements inside its "
                                "loop '{loop}' bound to {kind}; only a loop over one "
                                "accumulator can be reduced across work-items",
    }

    def __init__(self, loop: str, kind: str, problem: str, statement: str | None = None):
        self.loop, self.kind, self.problem, self.statement = loop, kind, problem, statement
        super().__init__(self.PROBLEMS[problem].format(loop=loop, kind=kind,
                                                       statement=statement))


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
    """The schedule needs ``needed`` units of a device ``resource`` (``"__local
    memory"`` of ``kernel`` on ``device``, an accelerator buffer such as ``"acc
    buffer"``, the ``"micro-op buffer"``), which has ``available``.  For a buffer:
    ``buffer`` is the largest array in it, ``shape``/``dtype``/``nbytes`` its footprint
    ``per`` the loops it is kept over, ``threads`` the virtual threads holding copies,
    ``split`` a split that fits, or None: ``(loops, dimension, entries, factor, bytes,
    room)``, split the ``loops`` over ``dimension`` (``entries`` long) by ``factor`` to
    need about ``bytes`` of the ``room`` left."""

    def __init__(self, resource: str, needed: int, available: int, *,
                 kernel: str | None = None, device: str | None = None,
                 buffer: str | None = None, shape: tuple[int, ...] = (), dtype: str = "",
                 nbytes: int = 0, per: str = "", threads: int = 1,
                 split: tuple | None = None):
        self.resource, self.needed, self.available = resource, needed, available
        self.kernel, self.device, self.buffer = kernel, device, buffer
        self.shape, self.dtype, self.nbytes, self.per = tuple(shape), dtype, nbytes, per
        self.threads, self.split = threads, split
        if resource == "__local memory":
            message = (f"kernel {kernel} needs {needed} bytes of __local memory; {device} has "
                       f"{available}: use smaller tiles for the shared buffers")
        elif resource == "micro-op buffer":
            message = (f"one instruction needs {needed} micro-ops, the micro-op buffer holds "
                       f"{available}: tile the loops inside the accumulator stage smaller")
        else:
            message = (f"the {resource} ({available} bytes) cannot hold the schedule's "
                       f"{needed} bytes: '{buffer}' needs {'x'.join(map(str, self.shape))} "
                       f"{dtype} = {nbytes} bytes {per}"
                       + (f", x{threads} virtual threads" if threads > 1 else "")
                       + ". " + _split_text(split))
        super().__init__(message)


def _split_text(split) -> str:
    if split is None:
        return "Repair: compute it at a deeper loop (fewer tiles per buffer)"
    loops, dim, entries, factor, nbytes, room = split
    where = (f"the loop over {' / '.join(loops)}" if loops else
             f"the loop over dimension {dim}")
    return (f"A split that fits: split {where} by factor {factor} (compute_at the outer "
            f"part): {entries} -> {factor} entries along dimension {dim}, about {nbytes} "
            f"bytes <= {room} bytes left in the buffer")


class BufferScopeError(ScheduleError):
    """Buffer ``buffer`` kept in memory ``scope`` cannot be lowered there: ``problem``
    is one of :attr:`PROBLEMS` (``kernels``: the two kernels using it; ``unit``/``dim``:
    the part that grows with the sizes; ``shape``/``device_shape``: its entries and the
    device's; ``extent``: a symbolic extent)."""

    PROBLEMS = {
        "two_kernels": "the {scope} buffer '{buffer}' is used by two kernels ({first} and "
                       "{second}); a {scope} buffer lives in one kernel: compute it at a loop "
                       "of its reader inside the loops bound to blockIdx (compute_at), or "
                       "use the \"global\" scope",
        "grows": "the {scope} buffer '{buffer}' needs a part of {buffer} per {unit} that "
                 "grows with the sizes (dimension {dim}); compute it at a loop whose tiles "
                 "have a constant size (s[{buffer!r}].compute_at(...) inside the bound loops)",
        "no_such_memory": "'{buffer}' is kept in {scope!r} memory, which the accelerator does "
                          "not have: cache it into 'inp' or 'wgt' (s.cache_read) or keep it "
                          "in 'acc' (s[stage].set_scope('acc'))",
        "entry_shape": "'{buffer}' ({scope}) has entries {shape}, the device's are "
                       "{device_shape}: write the computation in the packed layout (last two "
                       "dimensions one device tile)",
        "symbolic_extent": "buffer '{buffer}' has a symbolic extent {extent}; the accelerator "
                           "needs constant shapes",
    }

    def __init__(self, buffer: str, scope: str, problem: str, *,
                 kernels: tuple[str, str] = ("", ""), unit: str = "", dim: int | None = None,
                 shape: tuple = (), device_shape: tuple = (), extent=None):
        self.buffer, self.scope, self.problem = buffer, scope, problem
        self.kernels, self.unit, self.dim, self.extent = tuple(kernels), unit, dim, extent
        self.shape, self.device_shape = tuple(shape), tuple(device_shape)
        super().__init__(self.PROBLEMS[problem].format(
            buffer=buffer, scope=scope, first=self.kernels[0], second=self.kernels[-1],
            unit=unit, dim=dim, shape=self.shape, device_shape=self.device_shape,
            extent=extent))


class WorkItemRaceError(ScheduleError):
    """Two instances (``example``, a :class:`~polyopt.deps.counterexample.
    Counterexample`) touch ``array`` in different work-groups or work-items (``unit``)
    of ``kernel`` that nothing orders: ``problem`` is one of :attr:`PROBLEMS` (``scope``:
    the buffer's memory, for ``"scoped_buffer"``)."""

    PROBLEMS = {
        "across_groups": "they run in different work-groups of kernel {kernel}, and no "
                         "barrier orders work-groups. Split the computation into separate "
                         "kernels (compute the producer on its own with compute_root), stage "
                         "the data per group with cache_read(..., \"shared\"), or bind that "
                         "loop to threadIdx instead",
        "inside_thread_loops": "they run in different work-items of one group, inside the "
                               "same threadIdx loops: a barrier would have to go inside code "
                               "that only some work-items run. Bind a loop that carries no "
                               "dependence, or move the producer out of the threadIdx loops "
                               "(compute it at an outer loop)",
        "scoped_buffer": "the reader runs in another {unit} or another iteration of the loops "
                         "around the buffer, but a {scope} buffer has one copy per {unit}, "
                         "refilled in each iteration. Compute '{array}' at a loop of its "
                         "reader inside the loops bound to {bound} (compute_at), or use the "
                         "\"global\" scope",
    }

    def __init__(self, array: str, example, unit: str, problem: str,
                 kernel: str | None = None, scope: str | None = None):
        self.array, self.example, self.unit, self.kernel = array, example, unit, kernel
        self.problem, self.scope = problem, scope
        bound = "blockIdx" if unit == "work-group" else "threadIdx"
        super().__init__(f"{example}: " + self.PROBLEMS[problem].format(
            kernel=kernel, unit=unit, scope=scope, array=array, bound=bound))


class AcceleratorMappingError(ScheduleError):
    """Statement ``what`` has no accelerator instruction: ``problem`` is one of
    :attr:`PROBLEMS` (``target``: the buffer it writes, ``value``: what it computes,
    ``source``/``shapes``: a copy's source and both entry shapes, ``array``/``other``:
    a value ``other`` overwrote in the accumulators before ``what`` read it)."""

    PROBLEMS = {
        "overwritten": "{what} reads '{array}' after '{other}', computed in place of it in "
                       "the accumulators, overwrote it: compute '{other}' after every reader "
                       "of '{array}' (or from a copy: a zero stage plus '{array}')",
        "global_compute": "statement {what} ({value}) computes '{target}' in global memory "
                          "from global memory: on the accelerator every computation happens "
                          "in its buffers; cache its inputs into 'inp'/'wgt' and keep it in "
                          "'acc'",
        "copy_computes": "the copy {what} into '{target}' computes {value}: a DMA load only "
                         "copies (or pads with 0)",
        "entry_shapes": "'{source}' has entries {source_shape} but '{target}' "
                        "{target_shape}: pack it in the device layout",
        "store_computes": "the store {what} into '{target}' computes {value}: a STORE "
                          "narrows accumulators to int8 (.astype('int8')), or one of several "
                          "by an index condition (if_then_else); do the rest in ALU stages",
        "reset_not_zero": "{what} sets '{target}' to {value}; the accumulators can only be "
                          "reset to 0",
        "gemm_buffers": "the tensorized {what} must accumulate in 'acc' from 'inp' and 'wgt' "
                        "buffers (cache_read its operands there and set_scope('acc') its "
                        "stage)",
        "alu_operation": "{what} computes {value} in 'acc': the ALU applies x // 2**s, "
                         "minimum/maximum with a constant, + or * a constant or another "
                         "accumulator tile, in place of the accumulators it reads",
    }

    def __init__(self, what: str, problem: str, *, target: str | None = None,
                 value=None, source: str | None = None, shapes: tuple = ((), ()),
                 array: str | None = None, other: str | None = None):
        self.what, self.problem, self.target, self.value = what, problem, target, value
        self.source, self.shapes, self.array, self.other = source, tuple(shapes), array, other
        super().__init__(self.PROBLEMS[problem].format(
            what=what, target=target, value=value, source=source,
            source_shape=self.shapes[0], target_shape=self.shapes[-1], array=array,
            other=other))


class MissingInstructionsError(TensorizeError):
    """A tensorized kernel (stage ``stage`` tensorized with ``intrinsic``) or a template
    (``fact``: the :class:`~polyopt.machine.TargetInfo` flag it needs) needs instructions
    ``missing`` that the CPU ``cpu`` lacks."""

    def __init__(self, missing: tuple[str, ...], cpu: str, stage: str | None = None,
                 intrinsic: str | None = None, fact: str | None = None):
        self.missing, self.cpu, self.stage, self.intrinsic = tuple(missing), cpu, stage, intrinsic
        self.fact = fact
        if stage is None:
            message = (f"this template tensorizes with {self.missing[0]}, which the CPU {cpu} "
                       f"lacks (TargetInfo.{fact} is False); schedule the computation without "
                       "tensorize (po.auto_schedule), or pass "
                       "target_info=po.TargetInfo.for_cpu('znver4') to build for a CPU that "
                       "has it")
        else:
            message = (f"stage '{stage}' is tensorized with '{intrinsic}', whose code needs "
                       f"{', '.join(self.missing)}; the CPU it is compiled for ({cpu}) lacks "
                       "it.  Choose intrinsics with the machine model "
                       "(po.TargetInfo.host().has_vnni / has_bf16 / has_amx_int8 / "
                       "has_avx512), or build for a CPU that has them "
                       "(target='llvm -mcpu=znver4') and export the kernel")
        super().__init__(message)
