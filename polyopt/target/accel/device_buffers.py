"""The accelerator's buffers: where each device array lives, a copy per virtual thread.

Arrays are in the device's packed layout: their last two dimensions are one *entry* of
their buffer (:func:`entry_shape`).  :class:`DeviceBuffers` (a part of
:class:`.select.Selector`) gives each array of scope ``inp``, ``wgt`` or ``acc`` its
first entry, one copy per iteration of the virtual-thread loop it is computed in
(:func:`thread_copies`), and lets an elementwise ``acc`` stage share the entries of the
accumulators it is computed in place of.

>>> from polyopt.machine.accel import VTA
>>> entry_shape(VTA, "wgt"), entry_shape(VTA, "acc")
((16, 16), (1, 16))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ast.nodes import For, walk
from ...errors import BackendError
from ...lowering_errors import AcceleratorMappingError, BufferScopeError
from ...machine.accel import AccelConfig
from ...names import sanitize
from ...te.expr import Const
from .enumerate import loop_values
from .stage_values import alu_source

DEVICE_SCOPES = ("inp", "wgt", "acc")


@dataclass
class Layout:
    """Where each device array lives: its buffer, first entry, entries per copy, and
    the virtual-thread loop (AST variable) whose iterations get their own copies."""

    buffer: dict = field(default_factory=dict)
    base: dict = field(default_factory=dict)
    size: dict = field(default_factory=dict)
    thread_loop: dict = field(default_factory=dict)
    copies: dict = field(default_factory=dict)


def entry_shape(config: AccelConfig, scope: str) -> tuple[int, int]:
    return {"inp": (config.batch, config.block_in), "wgt": (config.block_out,
                                                            config.block_in)}.get(
        scope, (config.batch, config.block_out))


def constant_extents(shape, what: str) -> tuple[int, ...]:
    out = []
    for extent in shape:
        if not (isinstance(extent, Const) and isinstance(extent.value, int)):
            raise BackendError(f"{what} has a symbolic extent {extent}; the accelerator "
                               "needs constant shapes")
        out.append(extent.value)
    return tuple(out)


def leading_entries(index: list, shape: tuple[int, ...]) -> np.ndarray:
    """Row-major entry number of the leading (non-entry) indices."""
    linear = np.zeros_like(index[0]) if index else 0
    for value, extent in zip(index[:-2], shape[:-2]):
        linear = linear * extent + value
    return linear


class DeviceBuffers:
    """The buffer layout of a :class:`.select.Selector`: its ``layout``, and which array
    each accumulator entry holds now (``holder``, for stages computed in place)."""

    def _allocate(self, copies: dict[str, int]) -> None:
        used = {s: 0 for s in DEVICE_SCOPES}
        aliases = self._aliases()
        for array in self.func.temps:
            if array.scope not in DEVICE_SCOPES:
                raise BufferScopeError(array.name, array.scope, "no_such_memory")
            shape = constant_extents(array.shape, f"buffer '{array.name}'")
            if shape[-2:] != entry_shape(self.config, array.scope):
                raise BufferScopeError(array.name, array.scope, "entry_shape",
                                       shape=shape[-2:],
                                       device_shape=entry_shape(self.config, array.scope))
            self.layout.buffer[array.name] = array.scope
            entries = int(np.prod(shape[:-2], dtype=np.int64))
            loop, count = copies.get(array.name, (None, 1))
            self.layout.thread_loop[array.name], self.layout.copies[array.name] = loop, count
            self.layout.size[array.name] = entries
            if array.name in aliases:
                self.layout.base[array.name] = self.layout.base[aliases[array.name]]
                continue
            self.layout.base[array.name] = used[array.scope]
            used[array.scope] += entries * count

    def _aliases(self) -> dict[str, str]:
        """Elementwise ``acc`` stages computed in place of the accumulators they read."""
        result = {}
        temps = {a.name: a for a in self.func.temps}
        for stmt in self.program.statements:
            target = self.program.array_of(stmt.target.tensor)
            if target.name not in temps or target.scope != "acc":
                continue
            source = alu_source(stmt.value)
            if source is not None:
                name = self.program.array_of(source.tensor).name
                if name in temps and temps[name].scope == "acc":
                    result[target.name] = result.get(name, name)
        return result

    def _hold(self, entries: np.ndarray, name: str) -> None:
        self.holder[entries] = self.holder_ids.setdefault(name, len(self.holder_ids))

    def _expect(self, entries: np.ndarray, name: str, reader: str) -> None:
        """Refuse reading ``name`` from entries an in-place stage has overwritten."""
        held = self.holder[entries]
        wanted = self.holder_ids.get(name, -2)
        wrong = held[(held >= 0) & (held != wanted)]
        if len(wrong):
            other = next(n for n, i in self.holder_ids.items() if i == wrong[0])
            raise AcceleratorMappingError(reader, "overwritten", array=name, other=other)

    def entry(self, name: str, leading: np.ndarray) -> np.ndarray:
        loop = self.layout.thread_loop[name]
        copy = 0 if loop is None else self.threads.get(loop, 0) % self.layout.copies[name]
        return self.layout.base[name] + copy * self.layout.size[name] + leading


def thread_copies(func) -> dict[str, tuple[str, int]]:
    """For each device array computed inside a virtual-thread loop, that loop's AST
    variable and trip count (each iteration gets its own copy)."""
    loops = {}
    for node in walk(func.body):
        if isinstance(node, For) and node.kind == "vthread":
            low, trips = loop_values(node, {}, 1)
            loops[node.var] = int(trips[0])
    result = {}
    for footprint in func.footprints:
        for name in footprint.loops:
            var = sanitize(name)
            if var in loops:
                result[footprint.array] = (var, loops[var])
    return result
