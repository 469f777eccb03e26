"""``po.build``: lower a schedule and compile it for a target, with a per-process cache.

>>> import numpy as np, polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
>>> s = po.create_schedule(B)
>>> po.build(s, [A, B]) is po.build(s, [A, B])
True
"""

from __future__ import annotations

import contextlib
import gc

from .errors import public
from .extern_build import build_with_externs, extern_tensors
from .lower import lower
from .target.base import get_target
from .target.spec import parse_target

_CACHE: dict[tuple, object] = {}


@public
def build(schedule, args=None, target: str = "llvm", name: str | None = None, *,
          target_host=None, **options):
    """A callable ``f(*arrays, **vars)`` computing ``schedule``'s outputs into ``args``
    (by default, for a ``po.kernel`` schedule, the kernel's parameters in order).
    ``target`` may carry TVM's flags (``"llvm -mcpu=..."``: parsed, the host CPU is
    used); ``target_host`` is accepted and unused (kernels launch from Python)."""
    target, _flags = parse_target(target)
    externs = extern_tensors(schedule)
    if externs:  # po.extern: the calls run first, then the kernel built without them
        return build_with_externs(schedule, args, externs, lambda kernel_args: _build(
            schedule, kernel_args, target, name, options), name)
    return _build(schedule, args, target, name, options)


def _build(schedule, args, target: str, name: str | None, options: dict):
    backend = get_target(target)
    with _collector_paused():
        func = lower(schedule, args, name=name, target=backend)
        key = (target, str(func), str(func.program.schedule), tuple(sorted(options.items())))
        kernel = _CACHE.get(key)
        if kernel is None:
            kernel = backend.build(func, **options)
            _CACHE[key] = kernel
    return kernel


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a kernel is built: code generation
    allocates tens of thousands of IR objects that all stay alive until the end, and
    each collection they trigger walks every object of the process (a heavily
    unrolled kernel spent more time there than building its IR)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
