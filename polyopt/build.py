"""``po.build``: lower a schedule and compile it for a target, with a per-process cache.

Kernels are cached by content (:func:`polyopt.target.signature.content_hash`: the
lowered function and schedule, the target with its CPU and features, the options and the
versions of polyopt, islpy and llvmlite), least recently used first out, at most
``po.build_cache.size`` of them (default 256; ``POLYOPT_BUILD_CACHE_SIZE`` sets it at
import, ``po.build_cache.set_size(n)`` later, 0 turns caching off).  A kernel leaving the
cache stays usable while referenced; ``f.release()`` frees its machine code now.

>>> import numpy as np, polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
>>> s = po.create_schedule(B)
>>> po.build(s, [A, B]) is po.build(s, [A, B])
True
>>> po.build_cache.info()["size"] == po.build_cache.size
True
"""

from __future__ import annotations

import collections
import contextlib
import gc
import os

from .errors import InvalidArgumentError, public
from .extern_build import build_with_externs, extern_tensors
from .domain.program import Program
from .lower import LoweredFunc, lower
from .target.base import get_target, target_key
from .target.signature import content_hash

DEFAULT_CACHE_SIZE = 256


class BuildCache:
    """Compiled kernels by content hash, least recently used evicted first.

    A second, small table remembers the hash of recently built (program, arguments,
    name, target, options): a repeated ``po.build`` of an unchanged schedule neither
    lowers nor prints it again."""

    def __init__(self, size: int):
        self._kernels: collections.OrderedDict[str, object] = collections.OrderedDict()
        self._recent: collections.OrderedDict[tuple, tuple] = collections.OrderedDict()
        self.size = 0
        self.set_size(size)
        self.hits = self.misses = self.evictions = 0

    def set_size(self, size: int) -> None:
        """Keep at most ``size`` kernels (0: cache nothing); evicts the excess now."""
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidArgumentError(f"the build cache size must be an integer >= 0, "
                                       f"got {size!r}")
        self.size = size
        self._trim()

    def clear(self) -> None:
        """Forget every kernel (they stay usable where referenced)."""
        self._kernels.clear()
        self._recent.clear()

    def info(self) -> dict:
        return {"size": self.size, "kernels": len(self._kernels), "hits": self.hits,
                "misses": self.misses, "evictions": self.evictions}

    def __len__(self) -> int:
        return len(self._kernels)

    def __contains__(self, key: str) -> bool:
        return key in self._kernels

    def get(self, key: str):
        """The live kernel cached under ``key``, or None (a released one is dropped)."""
        kernel = self._kernels.get(key)
        if kernel is not None and getattr(kernel, "released", False):
            del self._kernels[key]
            kernel = None
        if kernel is None:
            self.misses += 1
            return None
        self._kernels.move_to_end(key)
        self.hits += 1
        return kernel

    def __setitem__(self, key: str, kernel) -> None:
        self._kernels[key] = kernel
        self._kernels.move_to_end(key)
        self._trim()

    def remember(self, request: tuple, key: str, keep_alive) -> None:
        self._recent[request] = (key, keep_alive)
        self._recent.move_to_end(request)
        while len(self._recent) > max(self.size, 1) * 2:
            self._recent.popitem(last=False)

    def recall(self, request: tuple) -> str | None:
        found = self._recent.get(request)
        return None if found is None else found[0]

    def _trim(self) -> None:
        while len(self._kernels) > self.size:
            self._kernels.popitem(last=False)
            self.evictions += 1


def _size_from_environment() -> int:
    text = os.environ.get("POLYOPT_BUILD_CACHE_SIZE", "")
    if not text:
        return DEFAULT_CACHE_SIZE
    if not text.isdigit():
        raise InvalidArgumentError(f"POLYOPT_BUILD_CACHE_SIZE must be an integer >= 0, "
                                   f"got {text!r}")
    return int(text)


build_cache = BuildCache(_size_from_environment())
_CACHE = build_cache  # the name benchmarks clear


@public
def build(schedule, args=None, target: str = "llvm", name: str | None = None, *,
          target_host=None, **options):
    """A callable ``f(*arrays, **vars)`` computing ``schedule``'s outputs into ``args``
    (by default, for a ``po.kernel`` schedule, the kernel's parameters in order).

    ``target`` is ``"llvm"`` (this CPU), ``"llvm -mcpu=NAME -mattr=+f,-g"`` (a named
    CPU and features) or ``"opencl"`` (TVM's other flags are parsed and ignored);
    ``target_host`` is accepted and unused (kernels launch from Python);
    ``f.signature`` says what the kernel takes.  ``passes`` edits the target's lowering
    pipeline, e.g. ``passes=lambda p: p.insert(Pass("mine", run), after="unroll")``
    (see ``polyopt.lower.pipeline_of``)."""
    if isinstance(schedule, LoweredFunc):
        raise InvalidArgumentError(
            "build takes the schedule, not what lower returns: write tvm.build(s, [A, B, C], "
            "target) (polyopt lowers it itself; print(tvm.lower(s, [A, B, C])) shows the loops)")
    if not isinstance(getattr(schedule, "program", schedule), Program):
        raise InvalidArgumentError(f"build takes a schedule from po.create_schedule or a "
                                   f"po.kernel, got {type(schedule).__name__}")
    externs = extern_tensors(schedule)
    if externs:  # po.extern: the calls run first, then the kernel built without them
        return build_with_externs(schedule, args, externs, lambda kernel_args: _build(
            schedule, kernel_args, target, name, options), name)
    return _build(schedule, args, target, name, options)


def _build(schedule, args, target, name: str | None, options: dict):
    backend = get_target(target)
    options = dict(options)
    passes = options.pop("passes", None)
    backend_key = target_key(backend)
    program = getattr(schedule, "program", schedule)
    request = _request(program, args, name, backend_key, options) if passes is None else None
    cache = _CACHE
    with _collector_paused():
        key = cache.recall(request) if request is not None and hasattr(cache, "recall") \
            else None
        kernel = cache.get(key) if key is not None else None
        if kernel is None:
            func = lower(schedule, args, name=name, target=backend, passes=passes)
            key = content_hash(func, backend_key + _pipeline_key(func, passes), options)
            kernel = cache.get(key)
            if kernel is None:
                kernel = backend.build(func, **options)
                cache[key] = kernel
            if request is not None and hasattr(cache, "remember"):
                cache.remember(request, key, (program, tuple(args or ())))
    kernel.content_hash = key
    return kernel


def _pipeline_key(func: LoweredFunc, passes) -> str:
    """The passes that made ``func`` when the user edited the pipeline (what they did
    need not show in the printed function)."""
    return "" if passes is None else " -passes=" + ",".join(func.passes)


def _request(program, args, name, backend_key, options):
    """What a build was asked for, by identity (programs and tensors are immutable),
    or None when it cannot be told apart that way."""
    try:
        items = tuple(sorted(options.items()))
        hash(items)
    except TypeError:
        return None
    if args is not None and not isinstance(args, (list, tuple)):
        return None
    arg_ids = None if args is None else tuple(id(a) for a in args)
    return (id(program), arg_ids, name, backend_key, items)


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
