"""The user-facing schedule: primitives on stages, each checked against exact dependences.

``s = po.create_schedule(C)`` builds the program with its default schedule; ``s[C]``
is the stage of compute ``C``.  Every primitive replaces ``s.program`` by a new
program and, unless called with ``check=False``, refuses (``IllegalScheduleError``)
a schedule that would run a dependence in the wrong order.  ``can_<primitive>``
answers without raising.  The calls are recorded: ``s.script()`` prints them as
Python and ``replay`` runs them on a fresh schedule.

>>> import polyopt as po
>>> A = po.placeholder((16, 16), name="A")
>>> B = po.compute((16, 16), lambda i, j: A[i, j] * 2, name="B")
>>> s = po.create_schedule(B)
>>> io, ii = s[B].split(B.op.axis[0], factor=4)
>>> s[B].parallel(io).name
'i.outer'
>>> print(s.script())
s["B"].split("i", factor=4)
s["B"].parallel("i.outer")
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect

from ..deps.dataflow import Dependences
from ..domain.from_te import program_from_outputs
from ..frontend.kernel import Kernel
from ..errors import (CheckEffortError, IllegalScheduleError, InvalidArgumentError,
                      PolyoptError, ScheduleError, public, public_methods)
from ..schedule_errors import AmbiguousWriterError, PrimitiveOrderError
from ..te.tensor import PlaceholderOp, Tensor, tensor_of
from . import primitives  # noqa: F401 (registers every primitive in PRIMITIVES)
from .stage import Stage, plain
from .stage_group import StageGroup, create_group
from .stage_views import refresh_partial_op, stage_computing, tuple_owner, with_sibling_outputs
from .registry import on_register
from .state import PRIMITIVES, ScheduleState
from .steps import Step, parse_script


@public_methods
class Schedule:
    """A recorder of primitive calls on top of a :class:`ScheduleState` value (the
    program as scheduled so far and the reference it must stay equivalent to)."""

    def __init__(self, program, outputs: tuple = (), default_args=None, *,
                 strict_fp: bool = False, state: ScheduleState | None = None):
        self.outputs = outputs
        self.default_args = default_args
        self.state = state or ScheduleState.start(program, tuple(
            a.name for t in outputs for a in program.arrays if a.tensor is t),
            strict_fp=strict_fp)
        self.steps: list[Step] = []
        self.before: list[ScheduleState] = []  # the state before each step (undo, replay)
        self.deferred: list = []  # compute_at calls waiting for another reader (defer)
        self.group_records: list = []  # TVM's stage groups (see .stage_group)

    @property
    def strict_fp(self) -> bool:
        """Whether reductions keep their written order (see :func:`create_schedule`)."""
        return self.state.strict_fp

    @property
    def reassociates(self) -> bool:
        """Whether reductions may accumulate in another order (tensor expressions unless
        ``strict_fp=True``; never in-place kernels, whose order is the program's)."""
        return getattr(self.state.reference, "reassociate", False)

    @property
    def program(self):
        return self.state.program

    @property
    def original(self):
        return self.state.original

    @property
    def kernel(self):
        """For an in-place kernel: how the program relates to the kernel (else None)."""
        return self.state.kernel

    @property
    def deps(self) -> Dependences:
        """The dependences every schedule of this program must respect."""
        return self.state.reference.dependences()

    def fork(self) -> "Schedule":
        """An independent copy (the state is a value: nothing is recomputed).  A
        ``compute_at`` still waiting for another reader (:meth:`defer`) stays with the
        original."""
        copy = Schedule(None, self.outputs, self.default_args, state=self.state)
        copy.steps, copy.before = list(self.steps), list(self.before)
        copy.group_records = [dataclasses.replace(r, stages=set(r.stages))
                              for r in self.group_records]
        return copy

    def defer(self, attempt, error: PolyoptError) -> None:
        """Keep a ``compute_at`` that must wait for another reader to be attached (TVM
        accepts the calls in any order); it is retried after every later primitive, and
        lowering raises ``error`` if it never succeeds."""
        self.deferred.append((attempt, error))

    def _retry_deferred(self) -> None:
        pending, self.deferred = self.deferred, []
        for attempt, _ in pending:
            try:
                attempt()  # succeeds, or defers itself again
            except PolyoptError as err:  # possible now but refused: lowering says so
                self.deferred.append((attempt, err))

    def check_deferred(self) -> None:
        """Raise the error of a deferred ``compute_at`` that never became possible."""
        if self.deferred:
            raise self.deferred[0][1]

    @contextlib.contextmanager
    def atomic(self):
        """Steps made inside ``with s.atomic():`` are undone if it raises (e.g. a
        template whose final check fails leaves the schedule as it was)."""
        state, count = self.state, len(self.steps)
        try:
            yield self
        except BaseException:
            self.state, self.steps[count:], self.before[count:] = state, [], []
            raise

    def __getitem__(self, key) -> "Stage":
        return Stage(self, self._stage_name(key))

    def _stage_name(self, key) -> str:
        key = tensor_of(key) or key  # an op, as TVM code passes: s[C.op]
        if isinstance(key, Stage):
            return key.name
        if isinstance(key, Tensor):
            if isinstance(key.op, PlaceholderOp):
                raise InvalidArgumentError(f"s[...] takes a computed tensor, got placeholder "
                                           f"'{key.name}'")
            if not any(a.tensor is key for a in self.program.arrays):
                return stage_computing(self.program, key) or self.program.array_of(key).name
            return tuple_owner(self.program, self.program.array_of(key).name)
        if isinstance(key, str):
            self.program.stage(key)
            return key
        raise InvalidArgumentError(f"s[...] takes a tensor or a stage name, got {key!r}")

    @property
    def output_names(self) -> tuple[str, ...]:
        return self.state.outputs

    @property
    def stages(self) -> tuple["Stage", ...]:
        return tuple(Stage(self, s.name) for s in self.program.stages)

    # -- applying and recording ----------------------------------------------------
    def _step(self, step: Step, *args, check: bool = True, **kwargs):
        """Apply the registered primitive ``step.primitive`` to the state with these
        arguments, check the new state against its reference (unless ``check`` is
        False) and record the step."""
        primitive = PRIMITIVES[step.primitive]
        state, result = primitive.apply(self.state, *args, **kwargs)
        if check:
            marking = step.args[0] if primitive.marks and step.args else None
            state.check(str(step), primitive, marking)
        self.before.append(self.state)
        self.state = state
        self.steps.append(step)
        self._retry_deferred()
        return result

    # -- primitives that add stages -------------------------------------------------
    def _tensor(self, value) -> Tensor:
        value = tensor_of(value) or value
        if isinstance(value, Tensor):
            return value
        if isinstance(value, str):  # an array name (as steps record it), or the tensor's
            for array in self.program.arrays:
                if value == array.name:
                    return array.tensor
            for array in self.program.arrays:
                if value == array.tensor.name:
                    return array.tensor
            return self.program.array(value).tensor
        raise InvalidArgumentError(f"expected a tensor or its name, got {value!r}")

    def _recorded(self, value):
        """An argument as a step records it: a tensor by its array's name, which is
        unique (two caches of one tensor share the tensor's name, ``C.local``)."""
        if isinstance(value, Tensor) and any(a.tensor is value for a in self.program.arrays):
            return self.program.array_of(value).name
        if isinstance(value, (list, tuple)):
            return [self._recorded(v) for v in value]
        return plain(value)

    def _rewrite(self, primitive: str, args: tuple, check: bool, layout=None):
        kwargs = (("layout", layout),) if layout is not None else ()
        step = Step(None, primitive, tuple(self._recorded(a) for a in args), kwargs)
        return self._step(step, *args, check=check, **dict(kwargs))

    def cache_read(self, tensor, scope: str, readers, *, layout: str | None = None,
                   check: bool = True) -> Tensor:
        """``AS = s.cache_read(A, "shared", [B])``: B reads a copy of A made by a new stage.
        ``layout="{ [i, k] -> [floor(i / 6), k, i mod 6] }"`` stores the copy in that order
        (packing, see :mod:`polyopt.transform.layout`).

        On an in-place kernel the copy is made right before each instance of the (one)
        reader; ``s[AS].compute_at(s[B], axis)`` then makes it once per iteration."""
        source = self._tensor(tensor)
        names = [self._stage_name(r) for r in (readers if isinstance(readers, (list, tuple))
                                               else [readers])]
        if not names:
            raise InvalidArgumentError("cache_read needs at least one reader stage")
        if self.kernel is not None:  # recorded by the name of the array it copies
            kwargs = (("layout", layout),) if layout is not None else ()
            step = Step(None, "cache_read", (source.name, scope, names), kwargs)
            return self._step(step, source, scope, names, check=check, **dict(kwargs))
        inlined = self._inlining_step(source)
        if inlined is not None:
            return self._cache_read_before_inline(inlined, source, scope, names, check, layout)
        return self._rewrite("cache_read", (source, scope, names), check, layout)

    def _inlining_step(self, tensor: Tensor) -> int | None:
        """The index of the step that inlined the stage computing ``tensor`` (now gone
        from the program), or None."""
        if any(a.tensor is tensor for a in self.program.arrays):
            return None
        for index, step in enumerate(self.steps):
            if step.primitive == "compute_inline" and any(
                    a.tensor is tensor and a.name == step.stage
                    for a in self.before[index].program.arrays):
                return index
        return None

    def _cache_read_before_inline(self, index: int, source: Tensor, scope: str, names,
                                  check: bool, layout) -> Tensor:
        """TVM's ``s[P].compute_inline()`` then ``s.cache_read(P, "shared", [C])``: the
        cache computes P's expression (P is inlined into the copy).  The steps from the
        inlining on are undone, the copy made, and those steps replayed."""
        later = self.steps[index:]
        makers = [str(st) for st in later[1:] if st.primitive in
                  ("cache_read", "cache_write", "rfactor")]
        if makers:
            raise PrimitiveOrderError(
                "cache_read", makers[0],
                f"cache_read of '{source.name}', inlined before {makers[0]}: make the copy "
                "before the steps that add stages (call cache_read right after "
                f"s[{source.name!r}].compute_inline(), or before it)", stage=source.name)
        self.state, self.steps, self.before = (self.before[index], self.steps[:index],
                                               self.before[:index])
        cached = self._rewrite("cache_read", (source, scope, names), check, layout)
        self.replay(later)
        return cached

    def cache_write(self, tensor, scope: str, *, layout: str | None = None,
                    check: bool = True) -> Tensor:
        """``CL = s.cache_write(C, "local")``: C's computation goes to CL, then CL is copied
        to C (``s[C]`` is the copy).  ``layout=`` stores CL in another order, as for
        :meth:`cache_read` (e.g. an accumulator tile with the vectorized index last).
        On an in-place kernel, ``tensor`` is a stage (or an array one stage writes)."""
        if self.kernel is not None:
            stage = self._writer_stage(tensor)
            step = Step(None, "cache_write", (stage, scope), ())
            return self._step(step, stage, scope, check=check, **(
                {"layout": layout} if layout is not None else {}))
        target = self._tensor(tensor)
        name = self._stage_name(target)
        kwargs = (("layout", layout),) if layout is not None else ()
        step = Step(None, "cache_write", (self._recorded(target), scope), kwargs)
        return self._step(step, name, scope, check=check, **dict(kwargs))

    def expand_scalar(self, scalar: str, dims: int | None = None, *,
                      check: bool = True) -> None:
        """``s.expand_scalar("w")``: an in-place kernel's scalar temporary ``w`` kept in
        the array elements its values are stored to, so that it no longer orders every
        loop around it; ``dims=1``: in a new array indexed by each statement's outermost
        loop (see :mod:`polyopt.transform.scalar_expand`); a list of names: all at once,
        with one check."""
        if isinstance(scalar, (list, tuple)) and scalar and \
                all(isinstance(n, str) for n in scalar):
            scalar = list(scalar)
        elif not isinstance(scalar, str):
            raise InvalidArgumentError(f"expand_scalar takes the scalar's name or a list of "
                                       f"names, got {scalar!r}")
        kwargs = (("dims", dims),) if dims is not None else ()
        self._step(Step(None, "expand_scalar", (scalar,), kwargs), scalar, check=check,
                   **dict(kwargs))

    def rfactor(self, tensor, axis, *, check: bool = True) -> Tensor:
        """``CF = s.rfactor(C, ki)``: partial reductions over loop ``ki`` of C."""
        if self.kernel is not None:
            name = self._writer_stage(tensor)
        else:
            name = self._stage_name(self._tensor(tensor))
        axis_name = self[name]._axis(axis)
        partial = self._step(Step(None, "rfactor", (name, axis_name), ()), name, axis_name,
                             check=check)
        if self.kernel is None:  # TVM's BF.op.axis and a refreshed s[B].op
            array = self.program.array_of(partial).name
            refresh_partial_op(self.program, partial, self[array]._loop)
        return partial

    def _writer_stage(self, target) -> str:
        if isinstance(target, Stage) or (isinstance(target, str) and any(
                st.name == target for st in self.program.stages)):
            return self._stage_name(target)
        array = self.program.array_of(self._tensor(target))
        writers = [st.name for st in self.program.stages
                   if any(w.array == array.name for w in self.program.statement(st.main).writes)]
        if len(writers) != 1:
            raise AmbiguousWriterError(array.name, tuple(writers))
        return writers[0]

    def check(self) -> None:
        """Raise :class:`IllegalScheduleError` if the current schedule is illegal (after
        primitives applied with ``check=False``)."""
        self.state.check("the schedule")

    def is_legal(self) -> bool:
        """Whether :meth:`check` passes; a check stopped by its effort bound raises its
        :class:`CheckEffortError` (the schedule is neither legal nor illegal as far as
        polyopt knows)."""
        try:
            self.check()
        except CheckEffortError:
            raise
        except ScheduleError:  # illegal, or a later layer's check (a tensorize) fails
            return False
        return True

    def script(self) -> str:
        """The recorded primitive calls, as Python that :meth:`replay` runs again."""
        return "\n".join(str(step) for step in self.steps)

    def replay(self, script, *, check: bool = True) -> "Schedule":
        """Apply recorded steps (a list of :class:`Step` or the text of :meth:`script`)
        as one change: each checked as it is applied; if one is refused as illegal, the
        steps run unchecked and the schedule they make is checked once (a script whose
        steps are legal only together, as ``po.auto_schedule``'s ``compute_root``
        before its ``transform``, replays); if that is illegal too, nothing is applied.
        ``check=False``: all unchecked.

        >>> import polyopt as po
        >>> A = po.placeholder((8,), name="A")
        >>> B = po.compute((8,), lambda i: A[i] + 1.0, name="B")
        >>> s = po.create_schedule(B)
        >>> s.replay('s["B"].split("i", factor=4)').script()
        's["B"].split("i", factor=4)'
        """
        if isinstance(script, str):
            steps = parse_script(script)
        elif isinstance(script, (list, tuple)) and all(isinstance(s, Step) for s in script):
            steps = list(script)
        else:
            raise InvalidArgumentError(f"replay takes the text of s.script() or a list of "
                                       f"steps (s.steps), got {script!r}")
        if check:
            try:  # step by step, each checked, as they were first applied
                with self.atomic():
                    self._apply_steps(steps, checked=True)
                return self
            except IllegalScheduleError:
                pass  # perhaps legal only together: the schedule they make decides
        with self.atomic():
            self._apply_steps(steps, checked=False)
            if check:
                self.state.check("the replayed script")
        return self

    def _apply_steps(self, steps: list[Step], *, checked: bool) -> None:
        for step in steps:
            primitive = PRIMITIVES.get(step.primitive)
            if primitive is None or (primitive.scope == "stage") != (step.stage is not None):
                raise InvalidArgumentError(f"unknown primitive '{step.primitive}' in {step}")
            target = self if step.stage is None else self[step.stage]
            unchecked = {} if checked or primitive.checked is not None else {"check": False}
            getattr(target, step.primitive)(*step.args, **dict(step.kwargs), **unchecked)

    def create_group(self, outputs, inputs, include_inputs: bool = False) -> StageGroup:
        """TVM's ``g = s.create_group(outputs=C, inputs=A)``: the stages between, moved
        together by ``g.compute_at(s[D], axis)`` (see :mod:`.stage_group`)."""
        return create_group(self, outputs, inputs, include_inputs)

    @property
    def groups(self) -> tuple[StageGroup, ...]:
        """The groups made by :meth:`create_group`."""
        return tuple(StageGroup(self, k) for k in range(len(self.group_records)))

    def __reduce__(self):
        """Pickled as its tensors and its script: unpickling replays the steps on a new
        schedule of the same tensors (an in-place kernel's schedule is not pickled)."""
        if self.kernel is not None or self.default_args is not None:
            raise InvalidArgumentError("a schedule of an in-place kernel cannot be pickled; "
                                       "pickle s.script() and replay it on a new schedule")
        return _unpickled, (self.outputs, self.strict_fp, self.script())

    def __repr__(self) -> str:
        return f"Schedule({', '.join(s.name for s in self.program.stages)})"


def _unpickled(outputs: tuple, strict_fp: bool, script: str) -> Schedule:
    schedule = create_schedule(list(outputs), strict_fp=strict_fp)
    return schedule.replay(script) if script else schedule


def _can(name: str):
    def can(self, *args, **kwargs) -> bool:
        trial = self.fork()
        try:
            getattr(trial, name)(*args, **kwargs)
        except (IllegalScheduleError, ScheduleError):
            return False
        return True

    can.__name__, can.__qualname__ = f"can_{name}", f"Schedule.can_{name}"
    can.__doc__ = f"Whether ``{name}`` with these arguments would be accepted."
    can.__signature__ = inspect.signature(getattr(Schedule, name)).replace(
        return_annotation=bool)
    return public(can)


def _install(name: str, primitive) -> None:
    """``s.can_<name>`` for a registered primitive on the schedule, whose method is
    written above (it takes the schedule's tensors); see :func:`.registry.on_register`."""
    attr = f"can_{name}"
    if primitive is not None and primitive.scope == "schedule":
        if not callable(vars(Schedule).get(name)):
            raise InvalidArgumentError(
                f"primitive '{name}' is registered on the schedule, but Schedule has no "
                f"method '{name}'; register it on a stage (scope='stage') instead")
        setattr(Schedule, attr, _can(name))
        _GENERATED.add(attr)
    elif attr in _GENERATED:
        delattr(Schedule, attr)
        _GENERATED.discard(attr)


_GENERATED: set = set()  # the can_<name> methods made for primitives on the schedule
on_register(_install)


@public
def create_schedule(outputs, *, strict_fp: bool = False) -> Schedule:
    """The default schedule of the computation of ``outputs`` (a tensor, its ``.op``, or
    a list of them), or of a ``po.kernel`` (whose parameters become the default argument
    list).  The reduce loops of a reduction may be reordered, split and fused freely
    (the sums are reassociated: results may differ in rounding); ``strict_fp=True``
    keeps every reduction in its written order, so results stay bit-identical."""
    if isinstance(outputs, Kernel):
        return Schedule(outputs.program, outputs.outputs, default_args=outputs.args,
                        strict_fp=strict_fp)
    outputs = with_sibling_outputs(outputs)
    program = program_from_outputs(outputs)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    return Schedule(program, outputs, strict_fp=strict_fp)


__all__ = ["Schedule", "create_schedule"]
