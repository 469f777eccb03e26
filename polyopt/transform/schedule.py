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
from ..domain.schedule import CONCURRENT_KINDS, Attach, identity_axes
from ..frontend.kernel import Kernel
from ..errors import (IllegalScheduleError, InvalidArgumentError, PolyoptError, ScheduleError,
                      public, public_methods)
from ..te.expr import IterVar
from ..te.tensor import PlaceholderOp, Tensor
from . import attach, cache, diamond, inplace, kernel_rfactor, loops, rfactor
from .bind import bind_tag
from .check import check_schedule
from .layout import relayout


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


@public_methods
class Schedule:
    """A program with a schedule; primitives on its stages return and record new programs."""

    def __init__(self, program: Program, outputs: tuple = (), default_args=None):
        self.program = program
        self.original = program
        self.outputs = outputs
        self.default_args = default_args
        self.steps: list[Step] = []
        self._deps: Dependences | None = None
        # in-place kernels: how rewrites relate the program to the original kernel
        self.kernel = (inplace.KernelRewrites.start(program)
                       if any(a.role == "inout" for a in program.arrays) else None)

    @property
    def deps(self) -> Dependences:
        """The dependences every schedule of this program must respect."""
        if self._deps is None:
            self._deps = compute_dependences(self.program)
        elif callable(self._deps):  # computed when first needed (see apply)
            self._deps = self._deps()
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
        if len(outcome) > 2:  # a rewrite's own: computed, to compute, or None (validated)
            deps = outcome[2]
        else:
            before = self.program
            deps = self._deps if self._deps is not None else (
                lambda: compute_dependences(before))
        if deps is None:  # a validated kernel rewrite: its own order defines it
            deps = lambda: compute_dependences(new_program)  # noqa: E731
        elif check:
            deps = deps() if callable(deps) else deps
            check_schedule(new_program, deps, str(step))
        self.program = new_program
        self._deps = deps
        self.steps.append(step)
        return result

    # -- primitives that add stages -------------------------------------------------
    def _tensor(self, value) -> Tensor:
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
        return _plain(value)

    def _rewrite(self, primitive: str, args: tuple, run, check: bool, kwargs: tuple = ()):
        step = Step(None, primitive, tuple(self._recorded(a) for a in args), kwargs)

        def rewrite(program):
            result, tensor = run(program)
            return result, tensor, lambda: reference_dependences(result)

        return self.apply(step, rewrite, check=check)

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
        if self.kernel is not None:
            if layout is not None:
                raise ScheduleError("cache_read(..., layout=) is not supported on in-place "
                                    "kernels yet; copy without a layout change")
            return self._kernel_cache_read(source, scope, names, check)

        def run(program):
            result, cached = cache.cache_read(program, source, scope, names)
            if layout is not None:
                result = relayout(result, cached, layout)
            return result, cached

        return self._rewrite("cache_read", (source, scope, names), run, check,
                             (("layout", layout),) if layout is not None else ())

    def cache_write(self, tensor, scope: str, *, layout: str | None = None,
                    check: bool = True) -> Tensor:
        """``CL = s.cache_write(C, "local")``: C's computation goes to CL, then CL is copied
        to C (``s[C]`` is the copy).  ``layout=`` stores CL in another order, as for
        :meth:`cache_read` (e.g. an accumulator tile with the vectorized index last)."""
        if self.kernel is not None:
            if layout is not None:
                raise ScheduleError("cache_write(..., layout=) is not supported on in-place "
                                    "kernels yet")
            return self._kernel_cache_write(tensor, scope, check)
        target = self._tensor(tensor)
        name = self._stage_name(target)

        def run(program):
            result, cached = cache.cache_write(program, target, scope, name)
            if layout is not None:
                result = relayout(result, cached, layout)
            return result, cached

        return self._rewrite("cache_write", (target, scope), run, check,
                             (("layout", layout),) if layout is not None else ())

    def rfactor(self, tensor, axis, *, check: bool = True) -> Tensor:
        """``CF = s.rfactor(C, ki)``: partial reductions over loop ``ki`` of C."""
        if self.kernel is not None:
            return self._kernel_rfactor(tensor, axis, check)
        name = self._stage_name(self._tensor(tensor))
        axis_name = self[name]._axis(axis)
        return self._rewrite("rfactor", (name, axis_name),
                             lambda p: rfactor.rfactor(p, name, axis_name), check)

    def _kernel_cache_read(self, source: Tensor, scope: str, names: list[str], check: bool):
        if len(names) != 1:
            raise ScheduleError("cache_read on an in-place kernel takes one reader stage at a "
                                "time (each reader gets its own buffer)")
        step = Step(None, "cache_read", (source.name, scope, names), ())

        return self._apply_kernel(step, lambda program: inplace.cache_read(
            program, self.kernel, source, scope, names[0]), check)

    def _kernel_rfactor(self, target, axis, check: bool) -> Tensor:
        """On a kernel: split a ``+=`` statement alone in its nest into partial sums; the
        result becomes the reference later rewrites are validated against."""
        if not self.kernel.only_inlined or self.kernel.inlined is not None:
            raise ScheduleError("on an in-place kernel, apply rfactor before the other "
                                "rewrites (compute_inline, compute_at, caches)")
        stage = self._writer_stage(target)
        axis_name = self[stage]._axis(axis)
        step = Step(None, "rfactor", (stage, axis_name), ())

        def run(program):
            result, partial = kernel_rfactor.rfactor(program, stage, axis_name)
            return result, partial, inplace.KernelRewrites.start(result)

        return self._apply_kernel(step, run, check, by_construction=True)

    def _kernel_cache_write(self, target, scope: str, check: bool) -> Tensor:
        """On a kernel: ``target`` is a stage (or an array one statement writes)."""
        stage = self._writer_stage(target)
        step = Step(None, "cache_write", (stage, scope), ())

        return self._apply_kernel(step, lambda program: inplace.cache_write(
            program, self.kernel, stage, scope), check)

    def _writer_stage(self, target) -> str:
        if isinstance(target, Stage) or (isinstance(target, str) and any(
                st.name == target for st in self.program.stages)):
            return self._stage_name(target)
        array = self.program.array_of(self._tensor(target))
        writers = [st.name for st in self.program.stages
                   if any(w.array == array.name for w in self.program.statement(st.main).writes)]
        if len(writers) != 1:
            raise ScheduleError(f"'{array.name}' is written by {', '.join(writers) or 'no stage'}"
                                f"; pass the stage to cache: s.cache_write(s[\"S1\"], ...)")
        return writers[0]

    def _apply_kernel(self, step: Step, run, check: bool, *, hint: str | None = None,
                      by_construction: bool = False):
        """Apply a rewrite of an in-place kernel, ``run(program) -> (program, value,
        KernelRewrites)``.  It is validated against the kernel (``KernelRewrites.check``:
        every read and every final element the same; ``hint`` is the repair a refusal
        suggests), which covers the order of everything, unless it is valid
        ``by_construction``; loops marked parallel or vectorized are then re-checked
        against the dependences of the rewritten program.  Those dependences are
        otherwise computed when a later primitive needs them."""
        states = []

        def outcome(program):
            result, value, state = run(program)
            if check and not by_construction:
                state.check(result, str(step), hint)
            states.append(state)
            marked = any(a.kind in CONCURRENT_KINDS
                         for stage in result.stages for a in stage.axes)
            if check and marked:
                return result, value, compute_dependences(result)
            return result, value, None

        value = self.apply(step, outcome, check=check)
        self.kernel = states[0]
        return value

    def check(self) -> None:
        """Raise :class:`IllegalScheduleError` if the current schedule is illegal (after
        primitives applied with ``check=False``)."""
        if self.kernel is not None and self.kernel.rewritten:
            self.kernel.check(self.program, "the schedule")
        check_schedule(self.program, self.deps, "the schedule")

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


def reference_dependences(program: Program) -> Dependences:
    """The dependences of a rewritten program, computed under its reference order:
    every stage at the root, in definition order, over its own dimensions (the order
    that defines what a tensor-expression program computes).  The current schedule is
    then checked against them like any other.  In-place kernels have no such order;
    their rewrites are validated against the original kernel instead (inplace.py)."""
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


@public_methods
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
    def _mark(self, primitive: str, kind: str, axis, check: bool, extra: tuple = ()
              ) -> LoopAxis:
        name = self._axis(axis)
        level = self._stage.axis(name) + 1

        def run(program):
            def change(member, old):
                return [dataclasses.replace(old[0], kind=kind)]
            from .group import edit_band

            return edit_band(program, self.name, level, level, change), None

        # the check of every step also checks that loops marked parallel or vectorized
        # carry no dependence (transform.check.check_marked_loops)
        self._run(primitive, (name,) + extra, {}, run, check=check)
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

    def bind(self, axis, tag: str, *, check: bool = True) -> LoopAxis:
        """``s[C].bind(io, "blockIdx.x")``: run the loop's iterations on OpenCL work-groups
        (``blockIdx.x|y|z``) or work-items (``threadIdx.x|y|z``); it must carry no
        dependence (see :mod:`polyopt.transform.bind`)."""
        return self._mark("bind", bind_tag(tag), axis, check, extra=(tag,))

    # -- where the stage is computed ------------------------------------------------
    def compute_with(self, other, axis, *, check: bool = True) -> None:
        """Share ``other``'s loops down to ``axis``, without recomputation."""
        target = self.schedule[other]
        name = target._axis(axis)
        self._run("compute_with", (target.name, name), {}, lambda p: (attach.compute_with(
            p, self.name, target.name, name), None), check=check)

    def compute_at(self, other, axis, *, check: bool = True) -> None:
        """Compute, inside each iteration of ``other``'s loop ``axis``, the part of this
        stage that ``other`` reads there (overlapping tiles recompute their halo)."""
        target = self.schedule[other]
        name = target._axis(axis)
        schedule = self.schedule
        if schedule.kernel is not None:
            step = Step(self.name, "compute_at", (target.name, name), ())

            def rewrite(program):
                result, state = inplace.compute_at(program, lambda: schedule.deps,
                                                   schedule.kernel, schedule.original,
                                                   self.name, target.name, name)
                return result, None, state

            schedule._apply_kernel(step, rewrite, check, hint="compute it at a deeper loop")
            return

        def run(program):
            result, deps, _ = attach.compute_at(program, self.schedule.deps, self.name,
                                                target.name, name, self.schedule.output_names)
            return result, None, deps

        self._run("compute_at", (target.name, name), {}, run, check=check)

    def compute_inline(self, *, check: bool = True) -> None:
        """Substitute this stage's expression into its readers (it gets no loops).  On an
        in-place kernel: into the reads that get their value from it, when every such
        read would see the same inputs and nothing else needs what it wrote."""
        schedule = self.schedule
        if schedule.kernel is not None:
            step = Step(self.name, "compute_inline", (), ())

            def rewrite(program):
                result, state = inplace.compute_inline(program, schedule.kernel, self.name)
                return result, None, state

            schedule._apply_kernel(step, rewrite, check)
            return

        def run(program):
            result = attach.compute_inline(program, self.name, self.schedule.output_names)
            return result, None, lambda: reference_dependences(result)

        self._run("compute_inline", (), {}, run, check=check)

    def compute_root(self, *, check: bool = True) -> None:
        """Compute this stage on its own again, before its readers."""
        schedule = self.schedule
        if schedule.kernel is not None and self._stage.attach.outer_dims:
            def rewrite(program):
                result, _ = attach.compute_root(program, self.name, schedule.original)
                return result, None, schedule.kernel.restored(result, self._stage)

            schedule._apply_kernel(Step(self.name, "compute_root", (), ()), rewrite, check)
            return

        def run(program):
            result, rewritten = attach.compute_root(program, self.name, schedule.original)
            if rewritten:
                return result, None, lambda: reference_dependences(result)
            return result, None

        self._run("compute_root", (), {}, run, check=check)

    def __repr__(self) -> str:
        return f"Stage({self.name})"


def _can(primitive: str):
    def can(self, *args, **kwargs) -> bool:
        trial = Schedule(self.schedule.program, self.schedule.outputs, self.schedule.default_args)
        trial.original = self.schedule.original
        trial._deps = self.schedule._deps
        trial.kernel = self.schedule.kernel
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
                   "parallel", "vectorize", "unroll", "bind", "compute_with", "compute_at",
                   "compute_inline", "compute_root"):
    setattr(Stage, f"can_{_primitive}", _can(_primitive))


@public
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
