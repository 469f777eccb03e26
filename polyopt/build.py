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

from .lower import lower
from .target.base import get_target

_CACHE: dict[tuple, object] = {}


def build(schedule, args=None, *, target: str = "llvm", name: str | None = None, **options):
    """A callable ``f(*arrays, **vars)`` computing ``schedule``'s outputs into ``args``
    (by default, for a ``po.kernel`` schedule, the kernel's parameters in order)."""
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
