"""``target="accel"`` (or ``"vta"``): schedules compiled to the simulated accelerator.

The common lowering passes run first (caches contracted to their footprints, loops
scanned, the GEMM core's tiles tensorized); the target then adds two passes:

* ``accel_buffers`` (after ``tensorize``): every temporary is in a device scope and the
  buffers hold what one iteration of their loops needs, times the virtual threads that
  each keep their own copy; a refusal names the buffer, the footprint, the capacity and
  a split that fits;
* ``accel_select`` (last): the instruction stream (:mod:`.select`) with the tokens
  between the queues derived from the instructions' exact conflicts (:mod:`.tokens`).

``po.build(s, args, target="accel")`` returns a callable running the stream on the
simulator (:mod:`.sim`); ``f.report`` holds the counters and cycles of the last call,
``f.listing()`` the instructions.  ``-config=tpu-like`` picks the larger device.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...ast.pipeline import Pass
from ...errors import InvalidArgumentError, public_methods
from ...lowering_errors import BufferScopeError, DeviceCapacityError
from ...machine import MemoryScope, SCOPES, TargetInfo
from ...machine.accel import TPU_LIKE, VTA, AccelConfig
from .isa import listing
from .device_buffers import DEVICE_SCOPES, thread_copies
from .select import Selector
from .sim import run, uop_array

CONFIGS = {"vta": VTA, "tpu-like": TPU_LIKE}


def accel_info(config: AccelConfig) -> TargetInfo:
    """The device as a :class:`TargetInfo`: its buffers are the scopes inp, wgt, acc."""
    scopes = SCOPES + tuple(MemoryScope(name, "thread", 0, config.capacity(name))
                            for name in DEVICE_SCOPES)
    return TargetInfo(kind="accelerator", name=config.name, vector_bits=0,
                      vector_registers=0, scopes=scopes)


class AccelTarget:
    """``target="accel"``; ``-config=vta`` (default) or ``-config=tpu-like``."""

    supports_parallel = False
    supports_vector = False

    def __init__(self, config: str = "vta"):
        if config not in CONFIGS:
            raise InvalidArgumentError(f"unknown accelerator configuration {config!r}; use "
                                       f"one of {', '.join(CONFIGS)}")
        self.config = CONFIGS[config]
        self.name = "accel"
        self.key = f"accel -config={config}"
        self.info = accel_info(self.config)

    def passes(self, pipeline):
        return pipeline.insert_after(
            "tensorize", Pass("accel_buffers", self.check_buffers)).append(
            Pass("accel_select", self.select))

    def check_buffers(self, func):
        check_capacity(func, self.config)
        return func

    def select(self, func):
        compiled = Selector(func, self.config, thread_copies(func)).compile()
        return dataclasses.replace(func, device=compiled)

    def build(self, func, **options):
        if options:
            raise InvalidArgumentError(f"target accel takes no options, got "
                                       f"{', '.join(options)}")
        return AccelModule(func, self.config)


@public_methods
class AccelModule:
    """A compiled accelerator program: call it with NumPy arrays (the arguments in
    order, packed layouts); ``report`` is the last run's :class:`~.sim.Report`."""

    def __init__(self, func, config: AccelConfig):
        self.func, self.config = func, config
        self.program = func.device.program
        self.uops = func.device.uops
        self.report = None
        self.name = func.name

    def listing(self) -> str:
        """The instruction stream, one numbered line each, with its queue."""
        return listing(self.program)

    def export_library(self, path=None) -> None:
        """Not for accelerator programs: they run on polyopt's simulator, in this process."""
        raise InvalidArgumentError(
            "export_library saves LLVM kernels (target 'llvm'); an accelerator program "
            "(target 'accel') runs on polyopt's simulator in this process and is not saved: "
            "keep the schedule's script (s.script()) and build it again, or save "
            "f.listing() to read its instructions")

    def __call__(self, *arrays):
        arrays_of = self.func.arrays
        if len(arrays) != len(arrays_of):
            raise InvalidArgumentError(f"{self.name} takes {len(arrays_of)} arrays "
                                       f"({', '.join(a.name for a in arrays_of)}), got "
                                       f"{len(arrays)}")
        dram, outputs = {}, []
        for array, value in zip(arrays_of, arrays):
            shape = tuple(int(e.value) for e in array.shape)
            if not isinstance(value, np.ndarray) or value.shape != shape or \
                    value.dtype != np.dtype(array.dtype):
                raise InvalidArgumentError(
                    f"argument '{array.name}' must be a NumPy {array.dtype} array of shape "
                    f"{shape}, got {getattr(value, 'dtype', type(value).__name__)} "
                    f"{getattr(value, 'shape', '')}")
            if array.written and not value.flags.writeable:
                raise InvalidArgumentError(f"output '{array.name}' is read-only; pass a "
                                           "writable array")
            entry = shape[-2:]
            data = np.ascontiguousarray(value).reshape((-1,) + entry)
            dram[array.name] = data.copy() if array.written else data
            if array.written:
                outputs.append((value, dram[array.name]))
        dram["uops"] = uop_array(self.uops)
        self.report = run(self.program, dram, self.config)
        for value, data in outputs:
            value[...] = data.reshape(value.shape)
        return None


def check_capacity(func, config: AccelConfig) -> None:
    """Refuse a schedule whose buffers overflow (see the module)."""
    copies = _copies_before_scan(func)
    storage = func.storage
    usage = {s: [] for s in DEVICE_SCOPES}
    aliased = _aliased(func)
    for temp in func.temps:
        if temp.scope not in DEVICE_SCOPES or temp.name in aliased:
            continue
        extents = []
        for extent in temp.shape:
            if not hasattr(extent, "value") or not isinstance(extent.value, int):
                raise BufferScopeError(temp.name, temp.scope, "symbolic_extent",
                                       extent=extent)
            extents.append(extent.value)
        nbytes = int(np.prod(extents)) * np.dtype(temp.dtype).itemsize
        count = copies.get(temp.name, 1)
        usage[temp.scope].append((temp, extents, nbytes * count, count))
    for scope, items in usage.items():
        total, capacity = sum(i[2] for i in items), config.capacity(scope)
        if total <= capacity:
            continue
        temp, extents, nbytes, count = max(items, key=lambda i: i[2])
        footprint = storage.get(temp.name)
        loops = f"per iteration of {', '.join(footprint.loops)}" if footprint and \
            footprint.loops else "for the whole computation"
        raise DeviceCapacityError(
            f"{scope} buffer", total, capacity, buffer=temp.name, shape=tuple(extents),
            dtype=str(temp.dtype), nbytes=nbytes // count, per=loops, threads=count,
            split=_split_hint(func, temp, extents, capacity - (total - nbytes), count))


def _split_hint(func, temp, extents, room: int, count: int):
    """A split of the loop over the largest footprint dimension that fits ``room``
    (see :class:`~polyopt.lowering_errors.DeviceCapacityError`'s ``split``), or None."""
    item = np.dtype(temp.dtype).itemsize
    per_entry = int(np.prod(extents[-2:])) * item * count
    lead = list(extents[:-2])
    if not lead or room < per_entry:
        return None
    dim = int(np.argmax(lead))
    others = int(np.prod(lead)) // lead[dim]
    fit = room // (per_entry * others)
    if fit < 1:
        return None
    loops = tuple(_loops_of_dimension(func, temp.name, dim))
    return (loops, dim, lead[dim], fit, per_entry * others * fit, room)


def _loops_of_dimension(func, array: str, dim: int) -> list[str]:
    from ...te.expr import IterVar, TensorRead

    names = []
    program = func.program
    for stmt in program.statements:
        if program.array_of(stmt.target.tensor).name == array:
            continue
        stack = [stmt.value]
        while stack:
            expr = stack.pop()
            if isinstance(expr, TensorRead):
                if program.array_of(expr.tensor).name == array:
                    inner = [expr.indices[dim]]
                    while inner:
                        e = inner.pop()
                        if isinstance(e, IterVar) and e.name not in names and any(
                                e.name == v.name for v in stmt.iter_vars):
                            names.append(e.name)
                        inner += [x for x in (getattr(e, "a", None), getattr(e, "b", None),
                                              getattr(e, "value", None)) if x is not None]
                continue
            for name in ("a", "b", "value", "then", "otherwise", "cond"):
                child = getattr(expr, name, None)
                if child is not None and not isinstance(child, (str, int, float)):
                    stack.append(child)
            stack += list(getattr(expr, "args", ()))
    return [f"'{n}' of {s}" for n, s in ((n, _stage_of(program, n)) for n in names)]


def _stage_of(program, var: str) -> str:
    for stmt in program.statements:
        if any(v.name == var for v in stmt.iter_vars):
            return f"stage '{stmt.op}'"
    return "its reader"


def _copies_before_scan(func) -> dict[str, int]:
    """Copies per device array: the trip count of a virtual-thread loop among its attach
    loops (one copy per virtual thread)."""
    found = thread_copies(func) if func.body is not None else {}
    return {name: count for name, (_, count) in found.items()}


def _aliased(func) -> set[str]:
    selector = Selector.__new__(Selector)
    selector.func, selector.program = func, func.program
    return set(selector._aliases())
