"""``s[C]``: the stage of a schedule that computes one tensor, and its primitives.

Each registered primitive (:mod:`.registry`) is a method of :class:`Stage`, made
from its registration: it names its loops (a :class:`~.steps.LoopAxis`, an ``IterVar``
or a loop's name), applies the primitive through its :class:`~.schedule.Schedule`
(checked unless ``check=False``) and returns the new loops; ``can_<primitive>`` tries
it on a fork of the schedule.

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
from ..schedule_errors import ForeignAxisError
from ..te.expr import IterVar
from ..te.tensor import Tensor
from . import primitives  # noqa: F401 (registers the primitives: Stage's methods)
from .registry import Param, Primitive, on_register
from .relations import iter_var_attr, stage_relations
from .stage_group import group_of
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
        return tuple(LoopAxis(self.name, a.name, a.kind) for a in self._stage.axes
                     if not a.fused_part)  # (a fuse's inner part: the loop before it)

    @property
    def leaf_iter_vars(self) -> tuple[LoopAxis, ...]:
        """TVM's name for :attr:`axes`: the stage's loops after its splits and fuses
        (``C.op.axis[1] in s[C].leaf_iter_vars``: whether that axis is still a loop)."""
        return LeafLoops(self, self.axes)

    @property
    def relations(self) -> tuple:
        """How the stage's loops came from one another (TVM's ``IterVarRelation``:
        ``Split``, ``Fuse``, ``Singleton``), see :mod:`.relations`."""
        return stage_relations(self.schedule, self.name)

    @property
    def iter_var_attrs(self) -> "IterVarAttrs":
        """TVM's ``s[C].iter_var_attrs[loop].iter_type`` (``IterVar.Unrolled`` ...),
        ``.pragma_keys`` and ``.tensor_intrin`` of the stage's loops."""
        return IterVarAttrs(self)

    @property
    def group(self):
        """The innermost group (``s.create_group``) this stage is in, or None."""
        return group_of(self.schedule, self.name)

    def __eq__(self, other) -> bool:
        return isinstance(other, Stage) and other.schedule is self.schedule and \
            other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self.schedule), self.name))

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

    def _step(self, primitive: Primitive, *args, check: bool = True, **kwargs):
        """Apply ``primitive`` to this stage as its registration declares: the
        arguments (``apply``'s) converted to names, the step recorded, checked unless
        ``check`` is False, and the result returned as loops (see :mod:`.registry`)."""
        bound = primitive.step_signature().bind(*args, **kwargs)
        bound.apply_defaults()
        values = bound.arguments
        for name in sorted(values, key=lambda n: primitive.param(n).kind != "stage"):
            spec = primitive.param(name)
            kind = bound.signature.parameters[name].kind
            convert = (self._converter(spec, values) if kind != kind.VAR_POSITIONAL else
                       lambda vs, one=self._converter(spec, values): tuple(map(one, vs)))
            values[name] = convert(values[name])
        step = Step(self.name, primitive.name, *recorded(primitive, bound))
        checked = check if primitive.checked is None else primitive.checked
        try:
            result = self.schedule._step(step, self.name, *bound.args, check=checked,
                                         **bound.kwargs)
        except primitive.defer_on as err:  # retried when the schedule allows it
            self.schedule.defer(lambda: self._step(primitive, *args, check=check, **kwargs),
                                err)
            return None
        if primitive.returns == "loop":
            return self._loop(result)
        if primitive.returns == "loops":
            return tuple(self._loop(n) for n in result)
        if primitive.returns == "axes":
            return self.axes
        return result if primitive.returns == "value" else None

    def _converter(self, spec: Param, values: dict):
        """How an argument of kind ``spec`` becomes a name (then ``spec.convert``)."""
        if spec.kind == "loop":
            owner = self if spec.of is None else self.schedule[values[spec.of]]
            convert = owner._axis
        elif spec.kind in ("stage", "tensor", "writer"):
            convert = lambda value: self.schedule.converted(spec.kind, value)  # noqa: E731
        else:
            convert = _same
        return convert if spec.convert is None else lambda v: spec.convert(convert(v))

    def set_store_predicate(self, predicate) -> None:
        """TVM's ``s[B].set_store_predicate(tx.var.equal(0))`` after a reduction across
        threads: accepted (stores already happen once per group), see
        :func:`.stage_views.check_store_predicate`."""
        check_store_predicate(self.schedule.program, self.name, predicate)

    def __repr__(self) -> str:
        return f"Stage({self.name})"


class LeafLoops(tuple):
    """``s[C].leaf_iter_vars``: the loops (a tuple of :class:`LoopAxis`); ``in`` also
    takes the compute's ``IterVar`` (TVM's leaves are IterVars): whether it is a loop."""

    def __new__(cls, stage: Stage, loops):
        leaves = super().__new__(cls, loops)
        leaves._stage = stage
        return leaves

    def __contains__(self, loop) -> bool:
        if isinstance(loop, IterVar):
            try:
                return any(a.name == self._stage._axis(loop) for a in self)
            except (InvalidArgumentError, ScheduleError):
                return False
        return any(a is loop or (isinstance(a, LoopAxis) and a == loop) for a in self)


class IterVarAttrs:
    """``s[C].iter_var_attrs``: ``[loop]`` (a loop, ``IterVar`` or name) gives the loop's
    :class:`~.relations.IterVarAttr`."""

    def __init__(self, stage: Stage):
        self._stage = stage

    def __getitem__(self, loop):
        stage = self._stage
        return iter_var_attr(stage.schedule, stage.name, stage._axis(loop))

    def __contains__(self, loop) -> bool:
        try:
            self._stage._axis(loop)
        except (InvalidArgumentError, ScheduleError):
            return False
        return True


def _same(value):
    return value


def recorded(primitive: Primitive, bound, plain=plain) -> tuple[tuple, tuple]:
    """The arguments and keyword arguments a step records: names (``plain``),
    keywords as the registration says, those left at their default left out."""
    args, kwargs = [], []
    for parameter in bound.signature.parameters.values():
        value = bound.arguments[parameter.name]
        if parameter.kind == parameter.VAR_POSITIONAL:
            args += [plain(v) for v in value]
        elif not primitive.recorded_as_keyword(parameter):
            args.append(plain(value))
        elif not (primitive.param(parameter.name).omit_default and
                  _is_default(value, parameter.default)):
            kwargs.append((parameter.name, plain(value)))
    return tuple(args), tuple(kwargs)


def _is_default(value, default) -> bool:
    return value is default or (type(value) is type(default) and value == default)


def _method(primitive: Primitive):
    """``s[C].<name>``: the registered primitive's method (its own signature and
    docstring, so that ``help()`` and ``inspect.signature`` show them)."""
    name, signature = primitive.name, primitive.method_signature()

    def method(self, *args, **kwargs):
        signature.bind(self, *args, **kwargs)  # (a mismatch: InvalidArgumentError)

        def step(*step_args, **step_kwargs):
            return self._step(primitive, *step_args, **step_kwargs)
        if primitive.front is not None:
            return primitive.front(self, step, *args, **kwargs)
        return step(*args, **kwargs)

    method.__module__ = primitive.apply.__module__  # (help() names the registration)
    return _named(method, name, signature, primitive.docstring)


def _can(primitive: Primitive):
    name = primitive.name

    def can(self, *args, **kwargs) -> bool:
        trial = self.schedule.fork()
        try:
            getattr(Stage(trial, self.name), name)(*args, **kwargs)
        except (IllegalScheduleError, ScheduleError):
            return False
        return True

    signature = primitive.method_signature()
    doc = f"Whether ``{name}`` with these arguments would be accepted."
    return _named(can, f"can_{name}", signature.replace(return_annotation=bool), doc)


def _named(function, name: str, signature, doc: str):
    function.__name__, function.__qualname__ = name, f"Stage.{name}"
    function.__signature__, function.__doc__ = signature, doc
    return public(function)


def _install(name: str, primitive: Primitive | None) -> None:
    """Make (or, when ``primitive`` is None, remove) ``s[C].<name>`` and ``can_<name>``
    (a registration's installer, :func:`.registry.on_register`)."""
    generated = _GENERATED.setdefault(name, set())
    if primitive is not None:
        for attr in (name, f"can_{name}"):
            if attr in vars(Stage) and attr not in generated:
                raise InvalidArgumentError(f"primitive '{name}' would replace Stage.{attr}; "
                                           "choose another name")
    if primitive is None or primitive.scope != "stage":
        for attr in generated:
            delattr(Stage, attr)
        generated.clear()
        return
    setattr(Stage, name, _method(primitive))
    setattr(Stage, f"can_{name}", _can(primitive))
    generated.update((name, f"can_{name}"))


_GENERATED: dict[str, set] = {}  # primitive -> the Stage attributes made for it
on_register(_install)
