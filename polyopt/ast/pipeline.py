"""Lowering pipelines: named passes in order, that targets extend at named points.

The common pipeline is ``polyopt.lower.PIPELINE``; ``Target.passes(pipeline)`` returns
the one a target builds from.

A target extends the common pipeline at named points (the LLVM target appends its
unrolling and OpenMP outlining; an accelerator would add its DMA insertion after
``contract_storage``; passes appended last run right before code generation):

>>> def tag_dma(func):  # a pass: LoweredFunc -> LoweredFunc (here it changes nothing)
...     return func
>>> base = Pipeline((Pass("scan_schedule", tag_dma), Pass("contract_storage", tag_dma)))
>>> base.insert_after("contract_storage", Pass("insert_dma", tag_dma)).names
('scan_schedule', 'contract_storage', 'insert_dma')
>>> base.without("scan_schedule").append(Pass("late", tag_dma)).names
('contract_storage', 'late')

A target class does it in its ``passes`` method::

    class AccelTarget:
        def passes(self, pipeline):
            return pipeline.insert_after("contract_storage", Pass("insert_dma", insert_dma))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Pass:
    """One lowering step: ``run`` maps a ``polyopt.lower.LoweredFunc`` to a new one."""

    name: str
    run: Callable


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The lowering passes in order; a value: each edit returns a new pipeline."""

    passes: tuple[Pass, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def insert_after(self, name: str, *passes: Pass) -> "Pipeline":
        at = self._index(name) + 1
        return Pipeline(self.passes[:at] + passes + self.passes[at:])

    def insert_before(self, name: str, *passes: Pass) -> "Pipeline":
        at = self._index(name)
        return Pipeline(self.passes[:at] + passes + self.passes[at:])

    def append(self, *passes: Pass) -> "Pipeline":
        """``passes`` last: right before the target generates code."""
        return Pipeline(self.passes + passes)

    def without(self, *names: str) -> "Pipeline":
        for name in names:
            self._index(name)
        return Pipeline(tuple(p for p in self.passes if p.name not in names))

    def _index(self, name: str) -> int:
        if name not in self.names:
            raise InvalidArgumentError(
                f"no lowering pass named {name!r}; the passes are: {', '.join(self.names)}")
        return self.names.index(name)
