"""The checked schedule as a value, and the registry of primitives that advance it.

A :class:`ScheduleState` is a frozen pair: the program as transformed so far and the
*reference* it must stay equivalent to.  A tensor-expression program's reference is its
exact dependences (:class:`DependenceReference`); an in-place kernel's, once a primitive
rewrote its statements, is the kernel's own dataflow (:class:`KernelReference`).  Each
reference has one method, ``check(program, step)``, that checks a new program after a
step.  Copying a state is free: ``can_*``, ``replay``, undoing a template and forking
thousands of variants for a search all copy the value.

A primitive is a registered :class:`~.registry.Primitive` (:mod:`.registry`): its
name, a pure ``apply(state, ...)`` returning the new state and the primitive's result,
the repair its refusals suggest, and how its ``Stage`` method converts, records and
returns.  ``po.Schedule`` records the steps on top of the state.

>>> import polyopt as po
>>> A = po.placeholder((8,), name="A")
>>> B = po.compute((8,), lambda i: A[i] * 2, name="B")
>>> state = ScheduleState.start(po.create_schedule(B).program)
>>> split = PRIMITIVES["split"]
>>> after, (outer, inner) = split.apply(state, "B", "i", factor=4)
>>> after.check('s["B"].split("i", factor=4)', split)
>>> [a.name for a in after.program.stage("B").axes], [a.name for a in state.program.stage("B").axes]
(['i.outer', 'i.inner'], ['i'])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..deps.dataflow import Dependences, compute_dependences
from ..deps.legality import Violation
from ..domain.program import Program
from ..domain.schedule import CONCURRENT_KINDS
from ..errors import CheckEffortError
from .check import check_marked_loops_of, check_schedule
from .limited_deps import limited_dependences
from .inplace import KernelRewrites
from .registry import PRIMITIVES, Primitive, register  # noqa: F401 (re-exported)


class Lazy:
    """A value computed when first asked for, then kept (it depends only on what made
    it, so copies of a state may share it)."""

    __slots__ = ("_make", "_value")
    _UNSET = object()

    def __init__(self, make: Callable[[], object] | None = None, value=_UNSET):
        self._make, self._value = make, value

    def get(self):
        if self._value is Lazy._UNSET:
            self._value = self._make()
            self._make = None
        return self._value


@dataclass(frozen=True, slots=True)
class DependenceReference:
    """The exact dependences that every schedule of the program must respect: those of
    the program in its reference order (for a tensor-expression program rewritten by
    a cache, an rfactor or an inlining: every stage at the root, in definition order)."""

    deps: Lazy
    reassociate: bool = False  # a reduction's updates may run in any order

    @classmethod
    def of(cls, program: Program, *, reassociate: bool = False) -> "DependenceReference":
        return cls(Lazy(lambda: compute_dependences(program)), reassociate)

    def dependences(self) -> Dependences:
        return self.deps.get()

    def check(self, program: Program, step: str, primitive: "Primitive | None" = None,
              marking: str | None = None) -> None:
        check_schedule(program, self.dependences(), step, repair=_repair(primitive, program),
                       marking=marking, reassociate=self.reassociate)


@dataclass(frozen=True, slots=True)
class KernelReference:
    """An in-place kernel: its own dataflow is the reference of a program whose
    statements a primitive rewrote (``rewrites``: every read and every final element
    must stay the same, for all sizes); ``deps`` are the exact dependences of
    ``program``, the last program so rewritten, which later loop primitives (they keep
    the statements) must respect."""

    rewrites: KernelRewrites
    program: Program
    deps: Lazy
    validated: list  # [the statements last validated against ``rewrites``] (a memo)

    @classmethod
    def of(cls, program: Program, rewrites: KernelRewrites) -> "KernelReference":
        return cls(rewrites, program, Lazy(lambda: _dependences_or_effort(program)), [None])

    def dependences(self) -> Dependences:
        found = self.deps.get()
        if isinstance(found, CheckEffortError):  # (kept: not tried again at every step)
            raise found
        return found

    def check(self, program: Program, step: str, primitive: "Primitive | None" = None,
              marking: str | None = None) -> None:
        if self.rewrites.rewritten and self.validated[0] is not program.statements:
            self.rewrites.check(program, step, primitive.hint if primitive else None)
            self.validated[0] = program.statements
        concurrent = any(a.kind in CONCURRENT_KINDS for st in program.stages for a in st.axes)
        if program is self.program:  # its own dependences hold by construction
            if concurrent:
                check_marked_loops_of(program, self.dependences, step, marking=marking)
            return
        if isinstance(self.deps.get(), CheckEffortError) and not concurrent:
            # the dependences are beyond the effort bound (a rewrite under symbolic
            # nparts splits): the cheaper exact route, the values every read gets and
            # every element ends with, compared with the kernel's (hang_m2, issue 32)
            self.rewrites.check(program, step, primitive.hint if primitive else None)
            return
        check_schedule(program, self.dependences(), step, repair=_repair(primitive, program),
                       marking=marking, reassociate=True)  # (kernels: exact updates only)


Reference = DependenceReference | KernelReference


def _dependences_or_effort(program: Program) -> "Dependences | CheckEffortError":
    """:func:`limited_dependences`, or the :class:`CheckEffortError` that stopped it."""
    try:
        return limited_dependences(program)
    except CheckEffortError as err:
        return err


@dataclass(frozen=True, slots=True)
class ScheduleState:
    """A program as scheduled so far, the reference it must stay equivalent to, and the
    program as it was created (recomputed stages return to it with compute_root)."""

    program: Program
    reference: Reference
    original: Program
    outputs: tuple[str, ...] = ()  # the arrays the caller gets (never inlined)
    strict_fp: bool = False  # reductions accumulate in their written order (no reassoc)

    @classmethod
    def start(cls, program: Program, outputs: tuple[str, ...] = (), *,
              strict_fp: bool = False) -> "ScheduleState":
        """The default schedule of ``program``.  A tensor-expression program's reductions
        may accumulate in any order (TVM's semantics: results may differ in rounding)
        unless ``strict_fp``; an in-place kernel's schedule keeps its order, and with
        ``strict_fp`` its code does too (no reassociation of ``+=`` in LLVM)."""
        if any(a.role == "inout" for a in program.arrays):  # an in-place kernel
            reference = KernelReference.of(program, KernelRewrites.start(program))
        else:
            reference = DependenceReference.of(program, reassociate=not strict_fp)
        return cls(program, reference, program, tuple(outputs), strict_fp)

    @property
    def kernel(self) -> KernelRewrites | None:
        """How an in-place kernel's program relates to the kernel (None otherwise)."""
        ref = self.reference
        return ref.rewrites if isinstance(ref, KernelReference) else None

    def advanced(self, program: Program, reference: Reference | None = None
                 ) -> "ScheduleState":
        """The state after a step: a new program (and, after a rewrite, a new reference)."""
        return dataclasses.replace(self, program=program,
                                   reference=reference or self.reference)

    def rewritten(self, program: Program, deps: Dependences | Callable[[], Dependences]
                  ) -> "ScheduleState":
        """After a rewrite of a tensor-expression program: ``deps`` (or a function
        computing them) are the new reference."""
        lazy = Lazy(deps) if callable(deps) else Lazy(value=deps)
        reassociate = getattr(self.reference, "reassociate", False)
        return self.advanced(program, DependenceReference(lazy, reassociate))

    def kernel_rewritten(self, program: Program, rewrites: KernelRewrites) -> "ScheduleState":
        """After a rewrite of an in-place kernel, validated against ``rewrites``."""
        return self.advanced(program, KernelReference.of(program, rewrites))

    def check(self, step: str, primitive: "Primitive | None" = None,
              marking: str | None = None) -> None:
        """Raise IllegalScheduleError unless the program respects the reference (and
        the checks of later layers, :data:`STATE_CHECKS`, pass)."""
        self.reference.check(self.program, step, primitive, marking)
        for check in STATE_CHECKS:
            check(self, step)


# checks that later layers add to every state check: ``check(state, step)`` raises a
# ScheduleError (e.g. polyopt.tensorize: every tensorized tile is still one legal step)
STATE_CHECKS: list[Callable[["ScheduleState", str], None]] = []


def _repair(primitive: Primitive | None, program: Program):
    if primitive is None or primitive.repair is None:
        return None
    return lambda violation: primitive.repair(violation, program)
