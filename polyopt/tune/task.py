"""A tuning task: a kernel, its space of schedules and the target it is tuned for.

``Task(name, space, instantiate, args_signature, target)``: ``instantiate(config)``
returns ``(schedule, tensors)`` for a point of ``space`` (every primitive it calls is
checked; a point the check refuses is never measured).  ``task.signature`` names the
kernel by content: the structural hash (:func:`polyopt.kernels.structural_hash`) of its
default schedule's lowered program, with the target's key (CPU and features).
:func:`template_task` makes one from a TVM-style template ``func(cfg, *args)``.

>>> import polyopt as po
>>> def scale(cfg, n):
...     A = po.placeholder((n,), name="A")
...     B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
...     s = po.create_schedule(B)
...     cfg.define_split("split", n, num_outputs=2)
...     cfg["split"].apply(s, B, B.op.axis[0])
...     return s, [A, B]
>>> task = template_task("scale", scale, (64,))
>>> len(task.space), len(task.signature)
(7, 64)
>>> print(task.instantiate(task.space.get(3))[0].script())
s["B"].split("i", factor=8)
"""

from __future__ import annotations

import collections
import functools
import hashlib

from ..errors import InvalidArgumentError, PolyoptError, public, public_methods
from ..kernels.key import structural_hash
from ..lower import lower
from ..machine import TargetInfo
from ..target.base import get_target, target_key
from ..transform.schedule import Schedule
from .space import ConfigEntity, ConfigSpace

__all__ = ["Task", "template_task", "unscheduled"]
RECENT = 64  # points whose schedules a task keeps (the tuner's, then the runner's call)


@public
def unscheduled(schedule: Schedule) -> Schedule:
    """``schedule`` before its first primitive (its program as written)."""
    state = schedule.before[0] if schedule.before else schedule.state
    return Schedule(None, schedule.output_tensors, schedule.default_args, state=state)


@public_methods
class Task:
    """See the module docstring.  ``default`` (optional) returns the untuned
    ``(schedule, tensors)`` that candidates are timed against and checked against
    (default: point 0's schedule before its primitives); ``sizes`` gives the values of
    symbolic sizes when measuring (``{"n": 1000}``); ``inputs(seed)`` (optional) the
    values of the kernel's arguments, by name, where seeded uniform random ones will not
    do (a factorization's well-conditioned matrix)."""

    def __init__(self, name: str, space: ConfigSpace, instantiate, args_signature=None,
                 target: str = "llvm", *, default=None, sizes: dict | None = None,
                 inputs=None):
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"a task's name is a non-empty string, got {name!r}")
        if not isinstance(space, ConfigSpace) or not space.knobs:
            raise InvalidArgumentError(f"a task needs a ConfigSpace with at least one knob "
                                       f"value, got {space!r}")
        if not callable(instantiate) or (default is not None and not callable(default)):
            raise InvalidArgumentError("instantiate (and default, if given) must be callables "
                                       "returning (schedule, tensors)")
        if inputs is not None and not callable(inputs):
            raise InvalidArgumentError("inputs, if given, is a callable inputs(seed) -> "
                                       "{argument name: array}")
        if not isinstance(target, str):
            raise InvalidArgumentError(f"a task's target is a target string such as 'llvm' "
                                       f"or 'llvm -mcpu=znver4', got {target!r}")
        get_target(target)  # (an unknown target: refused here)
        self.name, self.space, self._instantiate = name, space, instantiate
        self.args_signature = args_signature
        self.target, self._default = target, default
        self.sizes = dict(sizes or {})
        self.inputs = inputs
        self._recent: collections.OrderedDict = collections.OrderedDict()

    def __getstate__(self):  # (pickled for other processes: without the recent points)
        state = dict(self.__dict__)
        state["_recent"] = collections.OrderedDict()
        return state

    @property
    def operator(self) -> str:
        """What records of other shapes share (the task's name): model training data."""
        return self.name

    @functools.cached_property
    def target_key(self) -> str:
        """The target's key (backend, CPU, features), as kernel keys name it."""
        return target_key(get_target(self.target))

    @functools.cached_property
    def target_info(self) -> TargetInfo:
        return TargetInfo.for_target(self.target)

    def instantiate(self, config: ConfigEntity):
        """``(schedule, tensors)`` of point ``config`` (checked primitives: an illegal
        point raises a ScheduleError)."""
        if not isinstance(config, ConfigEntity):
            raise InvalidArgumentError(f"instantiate takes a point of the task's space "
                                       f"(task.space.get(i)), got {type(config).__name__}")
        key = (config.index, id(config.space))
        found = self._recent.get(key)
        if found is None:
            found = _checked(self._instantiate(config), "instantiate")
            self._recent[key] = found
            while len(self._recent) > RECENT:
                self._recent.popitem(last=False)
        return found

    def default_instance(self):
        """The untuned ``(schedule, tensors)``."""
        if self._default is not None:
            return _checked(self._default(), "default")
        schedule, tensors = self.instantiate(self.space.get(0))
        return unscheduled(schedule), tensors

    @functools.cached_property
    def signature(self) -> str:
        """A hex SHA-256 of the default schedule's lowered program and the target key."""
        schedule, tensors = self.default_instance()
        digest = hashlib.sha256()
        for part in (structural_hash(lower(schedule, tensors)), self.target_key,
                     structural_hash(self.sizes)):
            digest.update(part.encode())
            digest.update(b"\0")
        return digest.hexdigest()

    def __repr__(self):
        return f"Task({self.name!r}, {len(self.space)} points, target={self.target!r})"


def _checked(result, what: str):
    if not (isinstance(result, tuple) and len(result) == 2 and
            isinstance(result[0], Schedule)):
        raise InvalidArgumentError(f"a task's {what} must return (schedule, tensors), got "
                                   f"{type(result).__name__}")
    schedule, tensors = result
    if tensors is None and schedule.default_args is not None:
        tensors = list(schedule.default_args)
    return schedule, list(tensors) if tensors is not None else None


@public
def template_task(name: str, func, args=(), target: str = "llvm", **task_options) -> Task:
    """A task from a template ``func(cfg, *args) -> (schedule, tensors)`` that defines
    its knobs on ``cfg`` (``cfg.define_split``...) and applies them: run once on a
    :class:`ConfigSpace` to collect the knobs, then on each point."""
    if not callable(func):
        raise InvalidArgumentError(f"template_task takes a template function, got "
                                   f"{type(func).__name__}")
    args = tuple(args) if isinstance(args, (list, tuple)) else (args,)
    space = ConfigSpace()
    try:
        _checked(func(space, *args), "template")
    except PolyoptError:
        raise
    except Exception as err:  # noqa: BLE001  (the user's template: named as such)
        raise InvalidArgumentError(f"template {name!r} failed while defining its knobs "
                                   f"({type(err).__name__}: {err})") from err
    if not space.knobs:
        raise InvalidArgumentError(f"template {name!r} defines no knob (cfg.define_split, "
                                   f"define_knob, ...)")
    return Task(name, space, lambda config: func(config, *args), args_signature=args,
                target=target, **task_options)
