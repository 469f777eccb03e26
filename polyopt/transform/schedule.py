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

from ..deps.dataflow import Dependences
from ..domain.from_te import program_from_outputs
from ..frontend.kernel import Kernel
from ..errors import (CheckEffortError, IllegalScheduleError, InvalidArgumentError,
                      PolyoptError, ScheduleError, public, public_methods)
from ..schedule_errors import AmbiguousWriterError, PartlySharedLoopsError
from ..te.tensor import PlaceholderOp, Tensor, tensor_of
from . import primitives, schedule_primitives  # noqa: F401 (register the primitives)
from .stage import Stage, plain, recorded
from .stage_group import StageGroup, create_group, scan_groups
from .stage_views import stage_computing, tuple_owner, with_sibling_outputs
from .registry import on_register
from .state import PRIMITIVES, ScheduleState
from .steps import Step, parse_script


@public_methods
class Schedule:
    """A recorder of primitive calls on top of a :class:`ScheduleState` value (the
    program as scheduled so far and the reference it must stay equivalent to)."""

    def __init__(self, program, outputs: tuple = (), default_args=None, *,
                 strict_fp: bool = False, state: ScheduleState | None = None):
        self.output_tensors = outputs  # (s.outputs: TVM's, their ops)
        self.default_args = default_args
        self.state = state or ScheduleState.start(program, tuple(
            a.name for t in outputs for a in program.arrays if a.tensor is t),
            strict_fp=strict_fp)
        self.steps: list[Step] = []
        self.before: list[ScheduleState] = []  # the state before each step (undo, replay)
        self.deferred: list = []  # compute_at calls waiting for another reader (defer)
        # TVM's stage groups (see .stage_group): a scan's steps form one from the start
        self.group_records: list = scan_groups(self.state.program)

    @property
    def outputs(self) -> tuple:
        """TVM's ``s.outputs``: the ops of the output tensors (``s.output_tensors``)."""
        return tuple(getattr(t, "op", t) for t in self.output_tensors)

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
        copy = Schedule(None, self.output_tensors, self.default_args, state=self.state)
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
        try:
            state, result = primitive.apply(self.state, *args, **kwargs)
        except PartlySharedLoopsError as err:
            if step.primitive != "reorder" or not err.attached:
                raise
            self._reorder_before_attaching(step, err, check)
            return None
        if check:
            marking = step.args[0] if primitive.marks and step.args else None
            state.check(str(step), primitive, marking)
        self.before.append(self.state)
        self.state = state
        self.steps.append(step)
        self._retry_deferred()
        return result

    def _reorder_before_attaching(self, step: Step, refusal: PartlySharedLoopsError,
                                  check: bool) -> None:
        """TVM's ``reorder`` of loops another stage is attached inside: the attached
        stage stays at the loop it names (TVM attaches to a loop, not a depth).  Done as
        the reorder made before the first ``compute_at``/``compute_with`` into this
        stage, then the steps since replayed (each checked as before); refused with
        ``refusal`` if a later step changed this stage or the replay is refused."""
        attached = [k for k, done in enumerate(self.steps) if done.args
                    and done.primitive in ("compute_at", "compute_with")
                    and done.args[0] == step.stage]
        later = self.steps[attached[0]:] if attached else []
        if not later or self.deferred or any(done.stage in (None, step.stage)
                                             for done in later):
            raise refusal
        kept = self.state, list(self.steps), list(self.before)
        first = attached[0]
        self.state, self.steps[first:], self.before[first:] = self.before[first], [], []
        try:
            self._apply_steps([step] + later, checked=check)
        except PolyoptError:
            self.state, self.steps, self.before = kept[0], kept[1], kept[2]
            self.deferred.clear()
            raise refusal from None

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

    def _primitive(self, primitive, *args, check: bool = True, **kwargs):
        """Apply the registered ``primitive`` on the schedule as its registration
        declares (:mod:`.registry`): the arguments converted (tensors, stages, loops),
        the step recorded, checked unless ``check`` is False; returns its result."""
        bound = primitive.step_signature().bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        for name in sorted(values, key=lambda n: primitive.param(n).kind == "loop"):
            spec = primitive.param(name)
            if spec.kind == "loop":
                value = self[values[spec.of]]._axis(values[name])
            else:
                value = self.converted(spec.kind, values[name])
            values[name] = value if spec.convert is None else spec.convert(value)
        step = Step(None, primitive.name, *recorded(primitive, bound, self._recorded))
        checked = check if primitive.checked is None else primitive.checked
        result = self._step(step, *bound.args, check=checked, **bound.kwargs)
        return result if primitive.returns == "value" else None

    def converted(self, kind: str, value):
        """An argument of a primitive as its ``apply`` takes it (:class:`.registry.Param`
        ``kind``): a stage's name (or a list of them), a tensor, the name of the stage
        writing a tensor, or the value itself."""
        if kind == "stage":
            return [self._stage_name(v) for v in value] if isinstance(value, (list, tuple)) \
                else self._stage_name(value)
        if kind == "tensor":
            return self._tensor(value)
        if kind == "writer":
            return self._writer_stage(value) if self.kernel is not None else \
                self._stage_name(self._tensor(value))
        return value

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
        """The groups: one per scan (its steps), then those made by :meth:`create_group`."""
        return tuple(StageGroup(self, k) for k in range(len(self.group_records)))

    def __reduce__(self):
        """Pickled as its tensors and its script: unpickling replays the steps on a new
        schedule of the same tensors (an in-place kernel's schedule is not pickled)."""
        if self.kernel is not None or self.default_args is not None:
            raise InvalidArgumentError("a schedule of an in-place kernel cannot be pickled; "
                                       "pickle s.script() and replay it on a new schedule")
        return _unpickled, (self.output_tensors, self.strict_fp, self.script())

    def __repr__(self) -> str:
        return f"Schedule({', '.join(s.name for s in self.program.stages)})"


def _unpickled(outputs: tuple, strict_fp: bool, script: str) -> Schedule:
    schedule = create_schedule(list(outputs), strict_fp=strict_fp)
    return schedule.replay(script) if script else schedule


def _method(primitive):
    """``s.<name>``: a registered primitive on the schedule (its own signature and
    docstring, so that ``help()`` and ``inspect.signature`` show them)."""
    signature = primitive.method_signature()

    def method(self, *args, **kwargs):
        signature.bind(self, *args, **kwargs)  # (a mismatch: InvalidArgumentError)

        def step(*step_args, **step_kwargs):
            return self._primitive(primitive, *step_args, **step_kwargs)
        if primitive.front is not None:
            return primitive.front(self, step, *args, **kwargs)
        return step(*args, **kwargs)

    method.__module__ = primitive.apply.__module__  # (help() names the registration)
    return _named(method, primitive.name, signature, primitive.docstring)


def _can(primitive):
    name = primitive.name

    def can(self, *args, **kwargs) -> bool:
        trial = self.fork()
        try:
            getattr(trial, name)(*args, **kwargs)
        except (IllegalScheduleError, ScheduleError):
            return False
        return True

    signature = primitive.method_signature().replace(return_annotation=bool)
    return _named(can, f"can_{name}", signature,
                  f"Whether ``{name}`` with these arguments would be accepted.")


def _named(function, name: str, signature, doc: str):
    function.__name__, function.__qualname__ = name, f"Schedule.{name}"
    function.__signature__, function.__doc__ = signature, doc
    return public(function)


def _install(name: str, primitive) -> None:
    """Make (or, when ``primitive`` is None or on a stage, remove) ``s.<name>`` and
    ``s.can_<name>`` (a registration's installer, :func:`.registry.on_register`)."""
    generated = _GENERATED.setdefault(name, set())
    if primitive is not None and primitive.scope == "schedule":
        for attr in (name, f"can_{name}"):
            if attr in vars(Schedule) and attr not in generated:
                raise InvalidArgumentError(f"primitive '{name}' would replace "
                                           f"Schedule.{attr}; choose another name")
        setattr(Schedule, name, _method(primitive))
        setattr(Schedule, f"can_{name}", _can(primitive))
        generated.update((name, f"can_{name}"))
        return
    for attr in generated:
        delattr(Schedule, attr)
    generated.clear()


_GENERATED: dict[str, set] = {}  # primitive -> the Schedule attributes made for it
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
