"""The registry of schedule primitives: one registration gives a primitive everything.

``@register(name, ...)`` on a pure ``apply(state, stage, ...) -> (state, result)`` makes

- the step (``PRIMITIVES[name].apply``), checked against the state's reference;
- the method ``s[C].<name>`` of :class:`~.stage.Stage`: ``apply``'s signature without
  ``state`` and ``stage``, plus ``check=True`` (unless ``checked`` fixes it), and
  ``apply``'s docstring (``help()`` and ``inspect.signature`` show both);
- ``s[C].can_<name>``: whether the method would be accepted (tried on a fork);
- the step's text in ``s.script()`` and its replay (``s.replay``);
- its entry in ``docs/primitives.md`` (:mod:`polyopt.transform.reference`).

With ``scope="schedule"`` (``apply(state, ...)``, no stage) the method is ``s.<name>``
of :class:`~.schedule.Schedule` instead (the primitives that add stages, and take
tensors: ``TENSOR``, or the stage computing one: ``WRITER``).

How the method's arguments become the step's is declared, not coded: ``params`` says
which are loops of the stage (``LOOP``), loops of another stage argument
(``loop_of("other")``), other stages (``STAGE``), converted values, or recorded as
keywords; ``returns`` what the method gives back.  A later layer (e.g.
:mod:`polyopt.tensorize`) registers its primitives the same way; :func:`on_register`
lets the layers that make methods (``Stage``, ``Schedule``) follow every registration.

>>> def halve(state, stage, axis):
...     '''``outer, inner = s[C].halve(i)``: loop ``i`` in two halves.'''
>>> primitive = Primitive("halve", halve, params={"axis": LOOP}, returns="loops")
>>> str(primitive.method_signature())
'(self, axis, *, check=True)'
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InvalidArgumentError

# what the method returns: the step's result as a loop of the stage (a name), as loops
# (names), the stage's loops after the step, the result as it is, or nothing
RETURNS = ("loop", "loops", "axes", "value", None)
KINDS = ("loop", "stage", "tensor", "writer", "value")
SCOPES = ("stage", "schedule")  # s[C].<name>(...) or s.<name>(...)


@dataclass(frozen=True, slots=True)
class Param:
    """How one argument of a primitive's method becomes the step's argument.

    ``kind``: ``"loop"`` (a :class:`~.steps.LoopAxis`, ``IterVar`` or loop name of the
    stage, or of the stage given as argument ``of``), ``"stage"`` (a tensor, stage or
    stage name; on the schedule, a list of them too), ``"tensor"`` (a tensor or its
    name, given to ``apply`` as the tensor, recorded by its array's name), ``"writer"``
    (the name of the stage computing a tensor, or a kernel's stage), or ``"value"``; ``convert`` then maps the value (e.g. an intrinsic to
    its key).  A ``keyword`` argument (default: the keyword-only ones) is recorded as
    ``name=value``, left out when it is the default unless ``omit_default`` is False."""

    kind: str = "value"
    of: str | None = None
    convert: Callable | None = None
    keyword: bool | None = None
    omit_default: bool = True


LOOP = Param("loop")
STAGE = Param("stage")
TENSOR = Param("tensor")
WRITER = Param("writer")
KEYWORD = Param(keyword=True)
VALUE = Param()


def loop_of(stage_param: str) -> Param:
    """A loop of the stage given as argument ``stage_param`` (``compute_at``'s axis)."""
    return Param("loop", of=stage_param)


@dataclass(frozen=True, slots=True)
class Primitive:
    """A schedule primitive: ``apply(state, stage, *args, **kwargs) -> (state, result)``
    (pure: the input state is unchanged), and what a refusal suggests: ``repair``
    (violation, program) -> text or None, and ``hint`` for in-place kernel rewrites.
    ``marks`` names the primitives that mark the loop they take (its first argument).

    The method: ``params`` (by name; others are values), ``returns`` (:data:`RETURNS`),
    ``checked`` (None: a ``check=True`` keyword; True/False: always/never checked),
    ``defer_on`` (refusals of these types wait: ``Schedule.defer``), ``front`` (for a
    method that is more than one step: ``front(stage, step, *args, **kwargs)``, whose
    signature the method takes, calling ``step(...)`` with ``apply``'s arguments),
    ``scope`` (``"schedule"``: a method of ``Schedule``, ``s.<name>``, whose ``apply``
    takes the state without a stage) and ``doc`` (default ``apply``'s docstring)."""

    name: str
    apply: Callable
    repair: Callable | None = None
    hint: str | None = None
    marks: bool = False
    params: dict = field(default_factory=dict)
    returns: str | None = None
    checked: bool | None = None
    defer_on: tuple = ()
    front: Callable | None = None
    scope: str = "stage"
    doc: str | None = None

    @property
    def docstring(self) -> str:
        return inspect.cleandoc(self.doc or self.apply.__doc__ or f"The ``{self.name}`` "
                                "primitive.")

    def step_signature(self) -> inspect.Signature:
        """``apply``'s parameters after the state (and the stage), unannotated."""
        skip = 2 if self.scope == "stage" else 1
        parameters = list(inspect.signature(self.apply).parameters.values())[skip:]
        return inspect.Signature([p.replace(annotation=p.empty) for p in parameters])

    def method_signature(self) -> inspect.Signature:
        """The signature of ``s[C].<name>``: ``self``, the step's (or ``front``'s)
        parameters and, unless ``checked`` fixes it, ``check=True``."""
        if self.front is not None:
            parameters = list(inspect.signature(self.front).parameters.values())[2:]
            parameters = [p.replace(annotation=p.empty) for p in parameters]
        else:
            parameters = list(self.step_signature().parameters.values())
        if self.checked is None and all(p.name != "check" for p in parameters):
            parameters.append(inspect.Parameter("check", inspect.Parameter.KEYWORD_ONLY,
                                                default=True))
        own = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return inspect.Signature([own] + parameters)

    def recorded_as_keyword(self, parameter: inspect.Parameter) -> bool:
        keyword = self.param(parameter.name).keyword
        return parameter.kind == parameter.KEYWORD_ONLY if keyword is None else keyword

    def param(self, name: str) -> Param:
        return self.params.get(name, VALUE)


PRIMITIVES: dict[str, Primitive] = {}
# (name, primitive or None when removed) -> None: Stage and Schedule install methods
_INSTALLERS: list[Callable[[str, "Primitive | None"], None]] = []


def register(name: str, *, repair=None, hint: str | None = None, marks: bool = False,
             params: dict | None = None, returns: str | None = None,
             checked: bool | None = None, defer_on: tuple = (), front=None,
             scope: str = "stage", doc: str | None = None):
    """Decorator registering ``apply`` as primitive ``name`` (see :class:`Primitive`),
    with its method on ``Stage`` (and ``can_<name>``); it returns ``apply``."""
    def decorate(apply):
        primitive = Primitive(name, apply, repair, hint, marks, dict(params or {}),
                              returns, checked, tuple(defer_on), front, scope, doc)
        _validate(primitive)
        PRIMITIVES[name] = primitive
        try:
            for install in _INSTALLERS:
                install(name, primitive)
        except BaseException:
            unregister(name)
            raise
        return apply
    return decorate


def unregister(name: str) -> None:
    """Remove primitive ``name`` and its methods (e.g. one a test registered)."""
    if PRIMITIVES.pop(name, None) is not None:
        for install in _INSTALLERS:
            install(name, None)


def on_register(install: Callable[[str, "Primitive | None"], None]) -> None:
    """Call ``install(name, primitive)`` for every primitive registered so far and
    every later one (``install(name, None)`` when one is removed)."""
    _INSTALLERS.append(install)
    for name, primitive in list(PRIMITIVES.items()):
        install(name, primitive)


def _validate(primitive: Primitive) -> None:
    name = primitive.name
    if not name.isidentifier() or name.startswith("_"):
        raise InvalidArgumentError(f"a primitive's name must be a Python name without a "
                                   f"leading underscore, got {name!r}")
    if name in PRIMITIVES and PRIMITIVES[name].apply is not primitive.apply:
        raise InvalidArgumentError(f"primitive '{name}' is registered already (by "
                                   f"{PRIMITIVES[name].apply.__module__}); choose another "
                                   "name, or unregister it first")
    if primitive.returns not in RETURNS or primitive.scope not in SCOPES:
        raise InvalidArgumentError(f"primitive '{name}': returns must be one of {RETURNS} "
                                   f"and scope one of {SCOPES}")
    known = primitive.step_signature().parameters
    if any(spec.kind not in KINDS for spec in primitive.params.values()):
        raise InvalidArgumentError(f"primitive '{name}': a param's kind must be one of {KINDS}")
    if primitive.scope == "schedule" and any(
            spec.kind == "loop" and spec.of is None for spec in primitive.params.values()):
        raise InvalidArgumentError(f"primitive '{name}' is on the schedule: its loops are "
                                   "loops of a stage argument (loop_of('name'))")
    for param, spec in primitive.params.items():
        if param not in known or (spec.of is not None and spec.of not in known):
            raise InvalidArgumentError(
                f"primitive '{name}': params name '{param}'"
                f"{'' if spec.of is None else ' of ' + repr(spec.of)}, but apply's "
                f"parameters after the state are {', '.join(known) or 'none'}")
