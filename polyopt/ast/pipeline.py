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

A user adds a pass of their own the same way, with :meth:`Pipeline.insert`, through
``po.lower(..., passes=edit)`` or ``po.build(..., passes=edit)``, where ``edit`` takes
the target's pipeline and returns the one to run (its passes are printed with
``POLYOPT_PRINT_PASSES=1`` like the others; ``print(pipeline)`` lists the names):

>>> print(base.insert(Pass("mine", tag_dma), after="scan_schedule"))
scan_schedule -> mine -> contract_storage

A target class does it in its ``passes`` method::

    class AccelTarget:
        def passes(self, pipeline):
            return pipeline.insert_after("contract_storage", Pass("insert_dma", insert_dma))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import InvalidArgumentError, PolyoptError


@dataclass(frozen=True, slots=True)
class Pass:
    """One lowering step: ``run`` maps a ``polyopt.lower.LoweredFunc`` to a new one."""

    name: str
    run: Callable

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name or not callable(self.run):
            raise InvalidArgumentError(
                f"a Pass is a name (a non-empty string) and a function from a LoweredFunc "
                f"to a new one, got Pass({self.name!r}, {self.run!r})")


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The lowering passes in order; a value: each edit returns a new pipeline."""

    passes: tuple[Pass, ...]
    kind: str = "lowering"  # what its passes transform, for messages ("graph": po.graph)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def __str__(self) -> str:
        return " -> ".join(self.names)

    def insert(self, step: Pass, *, after: str | None = None,
               before: str | None = None) -> "Pipeline":
        """``step`` inserted right after the pass named ``after`` or right before the one
        named ``before`` (exactly one of them)."""
        if not isinstance(step, Pass):
            raise InvalidArgumentError(
                f"insert takes a Pass(name, run), run mapping a LoweredFunc (a Graph for "
                f"graph passes) to a new one; got {step!r}")
        if (after is None) == (before is None):
            raise InvalidArgumentError(
                "insert needs exactly one of after= or before= (the name of a pass: "
                f"{', '.join(self.names)})")
        if step.name in self.names:
            raise InvalidArgumentError(f"the {self.kind} pipeline already has a pass named "
                                       f"{step.name!r}; "
                                       "give the new pass another name")
        return self.insert_after(after, step) if after is not None else \
            self.insert_before(before, step)

    def insert_after(self, name: str, *passes: Pass) -> "Pipeline":
        at = self._index(name) + 1
        return Pipeline(self.passes[:at] + passes + self.passes[at:], self.kind)

    def insert_before(self, name: str, *passes: Pass) -> "Pipeline":
        at = self._index(name)
        return Pipeline(self.passes[:at] + passes + self.passes[at:], self.kind)

    def append(self, *passes: Pass) -> "Pipeline":
        """``passes`` last: right before the target generates code."""
        return Pipeline(self.passes + passes, self.kind)

    def without(self, *names: str) -> "Pipeline":
        for name in names:
            self._index(name)
        return Pipeline(tuple(p for p in self.passes if p.name not in names), self.kind)

    def _index(self, name: str) -> int:
        if name not in self.names:
            raise InvalidArgumentError(
                f"no {self.kind} pass named {name!r}; the passes are: {', '.join(self.names)}")
        return self.names.index(name)


def edited(pipeline: Pipeline, passes) -> Pipeline:
    """``pipeline`` after the user's edit ``passes``: None (unchanged), a function from
    the pipeline to the one to run, or a :class:`Pipeline` to run as it is."""
    if passes is None:
        return pipeline
    result = passes if isinstance(passes, Pipeline) else None
    if result is None and callable(passes):
        result = passes(pipeline)
    if not isinstance(result, Pipeline):
        raise InvalidArgumentError(
            "passes must be a Pipeline or a function from the target's Pipeline to the one "
            "to run, e.g. passes=lambda p: p.insert(Pass('mine', run), after='unroll'); "
            f"got {passes!r}" + ("" if result is None else f" returning {result!r}"))
    return result


def run_inserted(step: Pass, value, kind: type):
    """``step.run(value)`` for a pass the user inserted: its own failures, and results
    that are not a ``kind``, are reported naming the pass."""
    try:
        result = step.run(value)
    except PolyoptError:
        raise
    except Exception as err:
        raise InvalidArgumentError(
            f"the inserted pass {step.name!r} failed: {type(err).__name__}: {err}") from err
    if not isinstance(result, kind):
        raise InvalidArgumentError(
            f"the inserted pass {step.name!r} returned {type(result).__name__}; a pass "
            f"returns a {kind.__name__} (dataclasses.replace of its argument, or it)")
    return result
