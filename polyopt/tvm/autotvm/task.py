"""``autotvm.template``, ``autotvm.get_config``, ``autotvm.task.create``: TVM's tunable
templates on :mod:`polyopt.tune`.

A template is a function ``f(*args) -> (schedule, tensors)`` that asks for its
configuration with :func:`get_config` and defines knobs on it (``cfg.define_split``...).
:func:`create` runs it once on a :class:`~polyopt.tune.ConfigSpace` to collect the knobs
and returns a :class:`polyopt.tune.Task` (``task.config_space`` is that space); tuning
runs it on each point.  Called directly, the template takes its configuration from the
innermost ``autotvm.apply_history_best(...)`` context (the best record of its task), or
the first point of its space outside one.

>>> import polyopt as te
>>> @template("doc/scale")
... def scale(n):
...     A = te.placeholder((n,), name="A")
...     B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
...     s = te.create_schedule(B.op)
...     cfg = get_config()
...     cfg.define_split("tile", B.op.axis[0], num_outputs=2)
...     cfg["tile"].apply(s, B, B.op.axis[0])
...     return s, [A, B]
>>> task = create("doc/scale", args=(16,), target="llvm")
>>> len(task.config_space)
5
"""

from __future__ import annotations

import contextlib
import functools
import threading

from ...errors import InvalidArgumentError, PolyoptError, public
from ...tune import Task, template_task
from ...tune.records import current_best

__all__ = ["create", "get_config", "template"]

TEMPLATES: dict = {}  # name -> the template function as written
_STATE = threading.local()  # .config: the configuration a template running now gets


def _current():
    return getattr(_STATE, "config", None)


@contextlib.contextmanager
def _configured(config):
    before = _current()
    _STATE.config = config
    try:
        yield config
    finally:
        _STATE.config = before


@public
def get_config():
    """The configuration of the template running now: a ConfigSpace while its knobs are
    collected, a point (ConfigEntity) while it is instantiated."""
    config = _current()
    if config is None:
        raise PolyoptError("autotvm.get_config() is called inside a function decorated with "
                           "@autotvm.template(name), while autotvm.task.create(name, ...) "
                           "or a tuner runs it (or when it is called directly)")
    return config


@public
def template(name: str, func=None):
    """``@autotvm.template("tutorial/matmul")``: register a tunable template under
    ``name``; the decorated function stays callable (see the module docstring)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"autotvm.template takes the template's name (a "
                                   f"non-empty string), got {name!r}")

    def register(function):
        if not callable(function):
            raise InvalidArgumentError(f"@autotvm.template({name!r}) decorates a function, "
                                       f"got {type(function).__name__}")
        TEMPLATES[name] = function

        @functools.wraps(function)
        def call(*args, **kwargs):
            if _current() is not None:  # (a tuner instantiating it)
                return function(*args, **kwargs)
            if kwargs:
                raise InvalidArgumentError(
                    f"call the template {name!r} with positional arguments only (they "
                    f"name its task, as autotvm.task.create's args= do), got "
                    f"{sorted(kwargs)} by keyword")
            task = create(name, args, target=_current_target())
            config = current_best(task) or task.space.get(0)
            with _configured(config):
                return function(*args)

        call.template_name = name
        return call

    return register if func is None else register(func)


def _current_target() -> str:
    from ..current_target import current_string
    return current_string()


def _run_template(cfg, name: str, *args):
    """What :func:`polyopt.tune.template_task` calls: the template of ``name`` with
    ``cfg`` as its configuration."""
    with _configured(cfg):
        return TEMPLATES[name](*args)


@public
def create(task_name: str, args=(), target="llvm", target_host=None) -> Task:
    """``autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")``:
    the tuning task of a registered template with these arguments."""
    if task_name not in TEMPLATES:
        known = ", ".join(sorted(TEMPLATES)) or "none yet"
        raise InvalidArgumentError(f"no autotvm template is named {task_name!r} (registered: "
                                   f"{known}); decorate it with @autotvm.template(name)")
    target = str(target)
    task = template_task(task_name, _Instantiate(task_name), tuple(args), target)
    task.config_space = task.space
    task.args = tuple(args)
    return task


class _Instantiate:
    """``(cfg, *args) -> (schedule, tensors)`` of a registered template, by name (a value
    that can be sent to another process that registered the same template)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, cfg, *args):
        return _run_template(cfg, self.name, *args)

