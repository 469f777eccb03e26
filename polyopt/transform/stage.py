"""``s[C]``: the stage of a schedule that computes one tensor, and its primitives.

Each method of :class:`Stage` names its loops (a :class:`~.steps.LoopAxis`, an
``IterVar`` or a loop's name), applies the registered primitive through its
:class:`~.schedule.Schedule` (checked unless ``check=False``) and returns the new
loops; ``can_<primitive>`` tries it on a fork of the schedule.

>>> import polyopt as po
>>> A = po.placeholder((16, 16), name="A")
>>> B = po.compute((16, 16), lambda i, j: A[i, j] * 2, name="B")
>>> s = po.create_schedule(B)
>>> s[B].axes
(LoopAxis(B.i), LoopAxis(B.j))
>>> s[B].can_parallel(B.op.axis[1]), s[B].fuse(*s[B].axes).name
(True, 'i.j.fused')
"""

from __future__ import annotations

from ..errors import (IllegalScheduleError, InvalidArgumentError, ScheduleError, public,
                      public_methods)
from ..schedule_errors import ForeignAxisError, UnknownPragmaError
from ..te.expr import IterVar
from ..te.tensor import Tensor
from . import attach
from .bind import VIRTUAL_THREADS
from .stage_views import check_store_predicate, stage_op
from .steps import LoopAxis, Step


def plain(value):
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
        return [plain(v) for v in value]
    return value


@public_methods
class Stage:
    """The part of a schedule that computes one tensor (or one statement of a kernel)."""

    def __init__(self, schedule, name: str):  # schedule: a po.Schedule
        self.schedule = schedule
        self.name = name

    @property
    def _stage(self):
        return self.schedule.program.stage(self.name)

    @property
    def op(self):
        """The op this stage computes; after ``rfactor`` or ``cache_write`` a view of its
        current statement, with its loops (see :mod:`.stage_views`)."""
        return stage_op(self.schedule.program, self.name, self._loop)

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
                raise ForeignAxisError(self.name, axis.name)
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

    def _apply(self, primitive: str, args: tuple, kwargs: dict | None = None, *,
               check: bool = True, recorded: dict | None = None):
        """Apply the registered ``primitive`` to this stage with ``args`` (names) and
        record it (with ``recorded`` as its keyword arguments, default ``kwargs``)."""
        kwargs = kwargs or {}
        shown = kwargs if recorded is None else recorded
        step = Step(self.name, primitive, tuple(plain(a) for a in args),
                    tuple((k, plain(v)) for k, v in shown.items()))
        return self.schedule._step(step, self.name, *args, check=check, **kwargs)

    # -- loop primitives ---------------------------------------------------------------
    def split(self, axis, factor: int | None = None, nparts: int | None = None, *,
              check: bool = True) -> tuple[LoopAxis, LoopAxis]:
        """``outer, inner = s[C].split(C.op.axis[0], factor=8)``."""
        name = self._axis(axis)
        shown = {"factor": factor} if factor is not None else {"nparts": nparts}
        outer, inner = self._apply("split", (name,), {"factor": factor, "nparts": nparts},
                                   check=check, recorded=shown)
        return self._loop(outer), self._loop(inner)

    def tile(self, x, y, x_factor: int, y_factor: int, *, check: bool = True):
        """``xo, yo, xi, yi = s[C].tile(i, j, 8, 8)``."""
        names = self._apply("tile", (self._axis(x), self._axis(y), x_factor, y_factor),
                            check=check)
        return tuple(self._loop(n) for n in names)

    def reorder(self, *axes, check: bool = True) -> None:
        """``s[C].reorder(k, i, j)``: these loops, in this order."""
        self._apply("reorder", tuple(self._axis(a) for a in axes), check=check)

    def fuse(self, outer, inner, *more, check: bool = True) -> LoopAxis:
        """``f = s[C].fuse(i_inner, j_inner)``: two adjacent loops become one (more than
        two, as TVM allows: ``s[C].fuse(i, j, k)``, fuse them pairwise from the outside)."""
        if more:
            return self.fuse(self.fuse(outer, inner, check=check), *more, check=check)
        return self._loop(self._apply("fuse", (self._axis(outer), self._axis(inner)),
                                      check=check))

    def skew(self, outer, inner, factor: int = 1, *, check: bool = True) -> None:
        """``s[S].skew(t, i, 1)``: loop ``i`` becomes ``i + 1 * t``."""
        self._apply("skew", (self._axis(outer), self._axis(inner), factor), check=check)

    def shift(self, axis, offset: int, *, check: bool = True) -> None:
        """``s[C].shift(i, 1)``: iteration ``v`` runs at ``v + 1``."""
        self._apply("shift", (self._axis(axis), offset), check=check)

    def reverse(self, axis, *, check: bool = True) -> None:
        """``s[C].reverse(i)``: run the loop backwards."""
        self._apply("reverse", (self._axis(axis),), check=check)

    def transform(self, relation: str, *, check: bool = True) -> tuple[LoopAxis, ...]:
        """``s[S].transform("{ [t, i] -> [t, t + i] }")``: any affine map of the loops."""
        self._apply("transform", (relation,), check=check)
        return self.axes

    def wavefront(self, *axes, parallel: bool = True, check: bool = True) -> LoopAxis:
        """``w = s[S].wavefront(t, i, j)``: an outer loop over ``t + i + j`` and the
        loops ``i, j`` inside it, made parallel when they carry no dependence (as after
        skewing, when every distance in the band is non-negative)."""
        names = [self._axis(a) for a in axes]
        name = self._apply("wavefront", tuple(names), check=check,
                           recorded={"parallel": parallel})
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
        names = self._apply("diamond_tile", (self._axis(time), self._axis(space), size),
                            check=check)
        return tuple(self._loop(n) for n in names)

    # -- loop kinds ----------------------------------------------------------------------
    def parallel(self, axis, *, check: bool = True) -> LoopAxis:
        """Run the loop's iterations in parallel; it must carry no dependence."""
        name = self._axis(axis)
        self._apply("parallel", (name,), check=check)
        return self._loop(name)

    def vectorize(self, axis, *, check: bool = True) -> LoopAxis:
        """Run the loop with SIMD instructions; it must carry no dependence."""
        name = self._axis(axis)
        self._apply("vectorize", (name,), check=check)
        return self._loop(name)

    def unroll(self, axis, *, check: bool = True) -> LoopAxis:
        """Unroll the loop (always legal: the order does not change)."""
        name = self._axis(axis)
        self._apply("unroll", (name,), check=check)
        return self._loop(name)

    def pragma(self, axis, pragma_type: str, pragma_value=None) -> None:
        """``s[C].pragma(x, "import_llvm", ll_code)`` (TVM's): link LLVM IR that the
        stage's intrinsics call into the built module; ``"import_c"`` takes C source,
        compiled when building (see :mod:`polyopt.tensorize.pragma`).  Recorded like a
        primitive; it changes no loop.  Other pragmas: the error says what to write."""
        if pragma_type in ("import_llvm", "import_c"):
            self._apply("pragma", (self._axis(axis), pragma_type, pragma_value), check=False)
            return
        raise UnknownPragmaError(pragma_type, ("import_llvm", "import_c"), stage=self.name)

    def bind(self, axis, tag: str, *, check: bool = True) -> LoopAxis:
        """``s[C].bind(io, "blockIdx.x")``: run the loop's iterations on OpenCL work-groups
        (``blockIdx.x|y|z``) or work-items (``threadIdx.x|y|z``); it must carry no
        dependence (see :mod:`polyopt.transform.bind`)."""
        tag = getattr(tag, "thread_tag", tag)  # te.thread_axis("threadIdx.x") objects
        if tag == "cthread":  # VTA's: interleaved on the accelerator (see virtual_thread)
            return self.virtual_thread(axis, check=check)
        if tag in VIRTUAL_THREADS:  # TVM's virtual threads run one after the other
            return self.unroll(axis, check=check)
        name = self._axis(axis)
        self._apply("bind", (name, tag), check=check)
        return self._loop(name)

    def virtual_thread(self, axis, *, check: bool = True) -> LoopAxis:
        """Interleave the loop's iterations on an accelerator (``target="accel"``), each
        with its own copies of the buffers computed inside it: the loads of one overlap
        the compute of the other (VTA's latency hiding).  Checked like ``bind``."""
        name = self._axis(axis)
        self._apply("virtual_thread", (name,), check=check)
        return self._loop(name)

    def set_scope(self, scope: str) -> None:
        """Keep this stage's tensor in ``scope`` (``"acc"``: the accelerator's
        accumulator buffer, ``"inp"``/``"wgt"``: its input and weight buffers)."""
        self._apply("set_scope", (scope,))

    def set_store_predicate(self, predicate) -> None:
        """TVM's ``s[B].set_store_predicate(tx.var.equal(0))`` after a reduction across
        threads: accepted (stores already happen once per group), see
        :func:`.stage_views.check_store_predicate`."""
        check_store_predicate(self.schedule.program, self.name, predicate)

    # -- where the stage is computed ------------------------------------------------
    def compute_with(self, other, axis, *, check: bool = True) -> None:
        """Share ``other``'s loops down to ``axis``, without recomputation."""
        target = self.schedule[other]
        self._apply("compute_with", (target.name, target._axis(axis)), check=check)

    def compute_at(self, other, axis, *, check: bool = True) -> None:
        """Compute, inside each iteration of ``other``'s loop ``axis``, the part of this
        stage that ``other`` reads there (overlapping tiles recompute their halo)."""
        target = self.schedule[other]
        try:
            self._apply("compute_at", (target.name, target._axis(axis)), check=check)
        except attach.ReaderOutsideError as err:  # retried when that reader is attached
            self.schedule.defer(lambda: self.compute_at(other, axis, check=check), err)

    def compute_inline(self, *, check: bool = True) -> None:
        """Substitute this stage's expression into its readers (it gets no loops).  On an
        in-place kernel: into the reads that get their value from it, when every such
        read would see the same inputs and nothing else needs what it wrote."""
        self._apply("compute_inline", (), check=check)

    def compute_root(self, *, check: bool = True) -> None:
        """Compute this stage on its own again, before its readers."""
        self._apply("compute_root", (), check=check)

    def __repr__(self) -> str:
        return f"Stage({self.name})"


def _can(primitive: str):
    def can(self, *args, **kwargs) -> bool:
        trial = self.schedule.fork()
        try:
            getattr(Stage(trial, self.name), primitive)(*args, **kwargs)
        except (IllegalScheduleError, ScheduleError):
            return False
        return True

    can.__name__ = can.__qualname__ = f"can_{primitive}"
    can.__doc__ = f"Whether ``{primitive}`` with these arguments would be accepted."
    return public(can)


for _primitive in ("split", "tile", "reorder", "fuse", "skew", "shift", "reverse", "transform",
                   "wavefront", "diamond_tile",
                   "parallel", "vectorize", "unroll", "bind", "compute_with", "compute_at",
                   "compute_inline", "compute_root"):
    setattr(Stage, f"can_{_primitive}", _can(_primitive))
