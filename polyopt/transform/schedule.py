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

import ast
import dataclasses
from dataclasses import dataclass

from ..deps.dataflow import Dependences, compute_dependences
from ..domain.from_te import program_from_outputs
from ..domain.program import Program
from ..domain.schedule import Attach, identity_axes
from ..frontend.kernel import Kernel
from ..errors import IllegalScheduleError, InvalidArgumentError, PolyoptError, ScheduleError
from ..te.expr import IterVar
from ..te.tensor import PlaceholderOp, Tensor
from . import attach, cache, diamond, loops, rfactor
from .check import check_loop_carries_nothing, check_schedule


@dataclass(frozen=True, slots=True)
class LoopAxis:
    """A loop of a stage, as returned by primitives and accepted by them."""

    stage: str
    name: str
    kind: str = "serial"

    def __repr__(self) -> str:
        return f"LoopAxis({self.stage}.{self.name})"


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded primitive call."""

    stage: str | None
    primitive: str
    args: tuple
    kwargs: tuple

    def __str__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs]
        target = "s" if self.stage is None else f"s[{self.stage!r}]".replace("'", '"')
        return f"{target}.{self.primitive}({', '.join(parts)})".replace("'", '"')


class Schedule:
    """A program with a schedule; primitives on its stages return and record new programs."""

    def __init__(self, program: Program, outputs: tuple = (), default_args=None):
        self.program = program
        self.original = program
        self.outputs = outputs
        self.default_args = default_args
        self.steps: list[Step] = []
        self._deps: Dependences | None = None

    @property
    def deps(self) -> Dependences:
        """The dependences every schedule of this program must respect."""
        if self._deps is None:
            self._deps = compute_dependences(self.program)
        return self._deps

    def __getitem__(self, key) -> "Stage":
        return Stage(self, self._stage_name(key))

    def _stage_name(self, key) -> str:
        if isinstance(key, Stage):
            return key.name
        if isinstance(key, Tensor):
            if isinstance(key.op, PlaceholderOp):
                raise InvalidArgumentError(f"s[...] takes a computed tensor, got placeholder "
                                           f"'{key.name}'")
            return self.program.array_of(key).name
        if isinstance(key, str):
            self.program.stage(key)
            return key
        raise InvalidArgumentError(f"s[...] takes a tensor or a stage name, got {key!r}")

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(self.program.array_of(t).name for t in self.outputs
                     if any(a.tensor is t for a in self.program.arrays))

    @property
    def stages(self) -> tuple["Stage", ...]:
        return tuple(Stage(self, s.name) for s in self.program.stages)

    # -- applying and recording ----------------------------------------------------
    def apply(self, step: Step, run, *, check: bool = True):
        """Run ``run(program) -> (program, result[, dependences])``, check the new
        schedule against the dependences (new ones when the program was rewritten), and
        record the step."""
        outcome = run(self.program)
        new_program, result = outcome[0], outcome[1]
        deps = outcome[2] if len(outcome) > 2 else self.deps
        if check:
            check_schedule(new_program, deps, str(step))
        self.program = new_program
        self._deps = deps
        self.steps.append(step)
        return result

    # -- primitives that add stages -------------------------------------------------
    def _tensor(self, value) -> Tensor:
        if isinstance(value, Tensor):
            return value
        if isinstance(value, str):  # an array name, or the tensor's own (a recorded step)
            for array in self.program.arrays:
                if value in (array.name, array.tensor.name):
                    return array.tensor
            return self.program.array(value).tensor
        raise InvalidArgumentError(f"expected a tensor or its name, got {value!r}")

    def _rewrite(self, primitive: str, args: tuple, run, check: bool):
        step = Step(None, primitive, tuple(_plain(a) for a in args), ())

        def rewrite(program):
            result, tensor = run(program)
            return result, tensor, reference_dependences(result, primitive)

        return self.apply(step, rewrite, check=check)

    def cache_read(self, tensor, scope: str, readers, *, check: bool = True) -> Tensor:
        """``AS = s.cache_read(A, "shared", [B])``: B reads a copy of A made by a new stage."""
        source = self._tensor(tensor)
        names = [self._stage_name(r) for r in (readers if isinstance(readers, (list, tuple))
                                               else [readers])]
        return self._rewrite("cache_read", (source, scope, names),
                             lambda p: cache.cache_read(p, source, scope, names), check)

    def cache_write(self, tensor, scope: str, *, check: bool = True) -> Tensor:
        """``CL = s.cache_write(C, "local")``: C's computation goes to CL, then CL is copied
        to C (``s[C]`` is the copy)."""
        target = self._tensor(tensor)
        name = self._stage_name(target)
        return self._rewrite("cache_write", (target, scope),
                             lambda p: cache.cache_write(p, target, scope, name), check)

    def rfactor(self, tensor, axis, *, check: bool = True) -> Tensor:
        """``CF = s.rfactor(C, ki)``: partial reductions over loop ``ki`` of C."""
        name = self._stage_name(self._tensor(tensor))
        axis_name = self[name]._axis(axis)
        return self._rewrite("rfactor", (name, axis_name),
                             lambda p: rfactor.rfactor(p, name, axis_name), check)

    def check(self) -> None:
        """Raise :class:`IllegalScheduleError` if the current schedule is illegal (after
        primitives applied with ``check=False``)."""
        check_schedule(self.program, self.deps, "the schedule")
        for stage in self.program.stages:
            for level, axis in enumerate(stage.axes, start=1):
                if axis.kind in ("parallel", "vectorized"):
                    check_loop_carries_nothing(self.program, self.deps, stage.name, level,
                                               f"{axis.kind} loop '{axis.name}'")

    def is_legal(self) -> bool:
        try:
            self.check()
        except IllegalScheduleError:
            return False
        return True

    def script(self) -> str:
        """The recorded primitive calls, as Python that :meth:`replay` runs again."""
        return "\n".join(str(step) for step in self.steps)

    def replay(self, script) -> "Schedule":
        """Apply recorded steps (a list of :class:`Step` or the text of :meth:`script`)."""
        steps = parse_script(script) if isinstance(script, str) else list(script)
        for step in steps:
            target = self if step.stage is None else self[step.stage]
            method = getattr(target, step.primitive, None)
            if method is None or step.primitive.startswith("_"):
                raise InvalidArgumentError(f"unknown primitive '{step.primitive}' in {step}")
            method(*step.args, **dict(step.kwargs))
        return self

    def __repr__(self) -> str:
        return f"Schedule({', '.join(s.name for s in self.program.stages)})"


def reference_dependences(program: Program, primitive: str) -> Dependences:
    """The dependences of a rewritten program, computed under its reference order:
    every stage at the root, in definition order, over its own dimensions (the order
    that defines what a tensor-expression program computes).  The current schedule is
    then checked against them like any other.  In-place kernels have no such order
    once rewritten, so these primitives are refused on them."""
    if any(a.role == "inout" for a in program.arrays):
        raise ScheduleError(
            f"{primitive} is not supported on in-place kernels (po.kernel): their arrays "
            "are read and written in place, so a copy or a re-association would change "
            "what is read")
    stages = tuple(dataclasses.replace(s, axes=identity_axes(program.statement(s.main).domain),
                                       attach=Attach()) for s in program.stages)
    return compute_dependences(program.with_stages(stages))


def parse_script(text: str) -> list[Step]:
    """Steps from lines like ``s["C"].split("i", factor=4)`` (literals only)."""
    steps = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            call = ast.parse(line, mode="eval").body
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                raise ValueError("not a primitive call")
            owner = call.func.value
            if isinstance(owner, ast.Name) and owner.id == "s":
                stage = None
            elif (isinstance(owner, ast.Subscript) and isinstance(owner.value, ast.Name)
                  and owner.value.id == "s"):
                stage = ast.literal_eval(owner.slice)
            else:
                raise ValueError("calls must be on s or s[...]")
            args = tuple(ast.literal_eval(a) for a in call.args)
            kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in call.keywords)
        except (SyntaxError, ValueError) as err:
            raise InvalidArgumentError(f"line {number} of the schedule script: {err}: {line}") \
                from None
        steps.append(Step(stage, call.func.attr, args, kwargs))
    return steps


def _plain(value):
    """A recordable form of an argument: names instead of objects."""
    if isinstance(value, LoopAxis):
        return value.name
    if isinstance(value, Stage):
        return value.name
    if isinstance(value, IterVar):
        return value.name
    if isinstance(value, Tensor):
        return value.name
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class Stage:
    """The part of a schedule that computes one tensor (or one statement of a kernel)."""

    def __init__(self, schedule: Schedule, name: str):
        self.schedule = schedule
        self.name = name

    @property
    def _stage(self):
        return self.schedule.program.stage(self.name)

    @property
    def op(self):
        main = self.schedule.program.statement(self._stage.main)
        return main.target.tensor.op

    @property
    def axes(self) -> tuple[LoopAxis, ...]:
        """The stage's loops, outermost first."""
        return tuple(LoopAxis(self.name, a.name, a.kind) for a in self._stage.axes)

    def _axis(self, axis) -> str:
        stage = self._stage
        if isinstance(axis, LoopAxis):
            name = axis.name
        elif isinstance(axis, IterVar):
            main = self.schedule.program.statement(stage.main)
            positions = [k for k, v in enumerate(main.iter_vars) if v is axis]
            if not positions:
                raise InvalidArgumentError(
                    f"axis '{axis.name}' does not belong to stage '{self.name}'")
            name = main.dims[positions[0]]
        elif isinstance(axis, str):
            name = axis
        else:
            raise InvalidArgumentError(f"expected a loop of stage '{self.name}', got {axis!r}")
        stage.axis(name)  # raises ScheduleError naming the loops when unknown
        return name

    def _loop(self, name: str) -> LoopAxis:
        stage = self._stage
        axis = stage.axes[stage.axis(name)]
        return LoopAxis(self.name, axis.name, axis.kind)

    def _run(self, primitive: str, args: tuple, kwargs: dict, run, *, check=True):
        step = Step(self.name, primitive, tuple(_plain(a) for a in args),
                    tuple((k, _plain(v)) for k, v in kwargs.items()))
        return self.schedule.apply(step, run, check=check)

    # -- loop primitives ---------------------------------------------------------------
    def split(self, axis, factor: int | None = None, nparts: int | None = None, *,
              check: bool = True) -> tuple[LoopAxis, LoopAxis]:
        """``outer, inner = s[C].split(C.op.axis[0], factor=8)``."""
        name = self._axis(axis)
        kwargs = {"factor": factor} if factor is not None else {"nparts": nparts}
        outer, inner = self._run("split", (name,), kwargs, lambda p: loops.split(
            p, self.name, name, factor=factor, nparts=nparts), check=check)
        return self._loop(outer), self._loop(inner)

    def tile(self, x, y, x_factor: int, y_factor: int, *, check: bool = True):
        """``xo, yo, xi, yi = s[C].tile(i, j, 8, 8)``."""
        xn, yn = self._axis(x), self._axis(y)
        names = self._run("tile", (xn, yn, x_factor, y_factor), {}, lambda p: loops.tile(
            p, self.name, xn, yn, x_factor, y_factor), check=check)
        return tuple(self._loop(n) for n in names)

    def reorder(self, *axes, check: bool = True) -> None:
        """``s[C].reorder(k, i, j)``: these loops, in this order."""
        names = [self._axis(a) for a in axes]
        self._run("reorder", tuple(names), {}, lambda p: (loops.reorder(p, self.name, names),
                                                         None), check=check)

    def fuse(self, outer, inner, *, check: bool = True) -> LoopAxis:
        """``f = s[C].fuse(i_inner, j_inner)``: two adjacent loops become one."""
        a, b = self._axis(outer), self._axis(inner)
        name = self._run("fuse", (a, b), {}, lambda p: loops.fuse(p, self.name, a, b),
                         check=check)
        return self._loop(name)

    def skew(self, outer, inner, factor: int = 1, *, check: bool = True) -> None:
        """``s[S].skew(t, i, 1)``: loop ``i`` becomes ``i + 1 * t``."""
        a, b = self._axis(outer), self._axis(inner)
        self._run("skew", (a, b, factor), {}, lambda p: (loops.skew(p, self.name, a, b, factor),
                                                         None), check=check)

    def shift(self, axis, offset: int, *, check: bool = True) -> None:
        """``s[C].shift(i, 1)``: iteration ``v`` runs at ``v + 1``."""
        name = self._axis(axis)
        self._run("shift", (name, offset), {}, lambda p: (loops.shift(p, self.name, name,
                                                                      offset), None), check=check)

    def reverse(self, axis, *, check: bool = True) -> None:
        """``s[C].reverse(i)``: run the loop backwards."""
        name = self._axis(axis)
        self._run("reverse", (name,), {}, lambda p: (loops.reverse(p, self.name, name), None),
                  check=check)

    def transform(self, relation: str, *, check: bool = True) -> tuple[LoopAxis, ...]:
        """``s[S].transform("{ [t, i] -> [t, t + i] }")``: any affine map of the loops."""
        self._run("transform", (relation,), {}, lambda p: (loops.transform_loops(
            p, self.name, relation), None), check=check)
        return self.axes

    def wavefront(self, *axes, parallel: bool = True, check: bool = True) -> LoopAxis:
        """``w = s[S].wavefront(t, i, j)``: an outer loop over ``t + i + j`` and the
        loops ``i, j`` inside it, made parallel when they carry no dependence (as after
        skewing, when every distance in the band is non-negative)."""
        names = [self._axis(a) for a in axes]
        name = self._run("wavefront", tuple(names), {"parallel": parallel}, lambda p:
                         loops.wavefront(p, self.name, names), check=check)
        if parallel:
            for inner in names[1:]:
                if self.can_parallel(inner):
                    self.parallel(inner, check=check)
        return self._loop(name)

    def diamond_tile(self, time, space, size: int, *, check: bool = True
                     ) -> tuple[LoopAxis, LoopAxis]:
        """``band, tile = s[S].diamond_tile(t, i, 32)``: diamonds along ``t + i`` and
        ``t - i`` (loops ``t.diamond``, ``i.diamond`` marked parallel, then ``t, i``), so that
        every tile of the first time band starts at once; see
        :mod:`polyopt.transform.diamond`."""
        t, i = self._axis(time), self._axis(space)
        names = self._run("diamond_tile", (t, i, size), {}, lambda p: diamond.diamond_tile(
            p, self.name, t, i, size), check=check)
        return tuple(self._loop(n) for n in names)

    # -- loop kinds ----------------------------------------------------------------------
    def _mark(self, primitive: str, kind: str, axis, check: bool) -> LoopAxis:
        name = self._axis(axis)
        level = self._stage.axis(name) + 1

        def run(program):
            def change(member, old):
                return [dataclasses.replace(old[0], kind=kind)]
            from .group import edit_band

            return edit_band(program, self.name, level, level, change), None

        # the check of every step also checks that loops marked parallel or vectorized
        # carry no dependence (transform.check.check_marked_loops)
        self._run(primitive, (name,), {}, run, check=check)
        return self._loop(name)

    def parallel(self, axis, *, check: bool = True) -> LoopAxis:
        """Run the loop's iterations in parallel; it must carry no dependence."""
        return self._mark("parallel", "parallel", axis, check)

    def vectorize(self, axis, *, check: bool = True) -> LoopAxis:
        """Run the loop with SIMD instructions; it must carry no dependence."""
        return self._mark("vectorize", "vectorized", axis, check)

    def unroll(self, axis, *, check: bool = True) -> LoopAxis:
        """Unroll the loop (always legal: the order does not change)."""
        return self._mark("unroll", "unrolled", axis, check)

    # -- where the stage is computed ------------------------------------------------
    def compute_with(self, other, axis, *, check: bool = True) -> None:
        """Share ``other``'s loops down to ``axis``, without recomputation."""
        target = self.schedule[other]
        name = target._axis(axis)
        self._run("compute_with", (target.name, name), {}, lambda p: (attach.compute_with(
            p, self.name, target.name, name), None), check=check)

    def _refuse_in_place(self, primitive: str) -> None:
        if any(a.role == "inout" for a in self.schedule.program.arrays):
            raise ScheduleError(
                f"{primitive} is not supported on in-place kernels (po.kernel) yet: it "
                "recomputes or substitutes values, which needs single-assignment arrays; "
                "use compute_with to share loops between statements instead")

    def compute_at(self, other, axis, *, check: bool = True) -> None:
        """Compute, inside each iteration of ``other``'s loop ``axis``, the part of this
        stage that ``other`` reads there (overlapping tiles recompute their halo)."""
        self._refuse_in_place("compute_at")
        target = self.schedule[other]
        name = target._axis(axis)

        def run(program):
            result, deps = attach.compute_at(program, self.schedule.deps, self.name,
                                             target.name, name, self.schedule.output_names)
            return result, None, deps

        self._run("compute_at", (target.name, name), {}, run, check=check)

    def compute_inline(self, *, check: bool = True) -> None:
        """Substitute this stage's expression into its readers (it gets no loops)."""
        self._refuse_in_place("compute_inline")
        def run(program):
            result = attach.compute_inline(program, self.name, self.schedule.output_names)
            return result, None, reference_dependences(result, "compute_inline")

        self._run("compute_inline", (), {}, run, check=check)

    def compute_root(self, *, check: bool = True) -> None:
        """Compute this stage on its own again, before its readers."""
        def run(program):
            result, rewritten = attach.compute_root(program, self.name, self.schedule.original)
            if rewritten:
                return result, None, reference_dependences(result, "compute_inline")
            return result, None

        self._run("compute_root", (), {}, run, check=check)

    def __repr__(self) -> str:
        return f"Stage({self.name})"


def _can(primitive: str):
    def can(self, *args, **kwargs) -> bool:
        trial = Schedule(self.schedule.program, self.schedule.outputs, self.schedule.default_args)
        trial.original = self.schedule.original
        trial._deps = self.schedule.deps
        try:
            getattr(Stage(trial, self.name), primitive)(*args, **kwargs)
        except (IllegalScheduleError, ScheduleError):
            return False
        return True

    can.__name__ = f"can_{primitive}"
    can.__doc__ = f"Whether ``{primitive}`` with these arguments would be accepted."
    return can


for _primitive in ("split", "tile", "reorder", "fuse", "skew", "shift", "reverse", "transform",
                   "wavefront", "diamond_tile",
                   "parallel", "vectorize", "unroll", "compute_with", "compute_at",
                   "compute_inline", "compute_root"):
    setattr(Stage, f"can_{_primitive}", _can(_primitive))


def create_schedule(outputs) -> Schedule:
    """The default schedule of the computation of ``outputs`` (a tensor or a list), or of
    a ``po.kernel`` (whose parameters become the default argument list)."""
    if isinstance(outputs, Kernel):
        return Schedule(outputs.program, outputs.outputs, default_args=outputs.args)
    program = program_from_outputs(outputs)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    return Schedule(program, outputs)


__all__ = ["Schedule", "Stage", "LoopAxis", "Step", "create_schedule", "parse_script",
           "PolyoptError"]
