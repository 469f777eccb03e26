"""``po.build``: lower a schedule and compile it for a target, with a per-process cache.

Kernels are built by :func:`polyopt.kernels.build_kernel`, the one build path, and cached
by :func:`~polyopt.kernels.key.kernel_key` (a structural hash of the lowered function, the
target with its CPU and features, the options and the versions of polyopt, islpy and
llvmlite) in the process's one bounded in-memory cache, ``po.build_cache``
(:mod:`polyopt.kernels.memory`), least recently used first out, at most
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

from .errors import InvalidArgumentError, public
from .extern_build import build_with_externs, extern_tensors
from .domain.program import Program
from .kernels.builder import build_kernel, collector_paused
from .kernels.key import kernel_key
from .kernels.memory import DEFAULT_CACHE_SIZE, BuildCache, build_cache
from .lower import LoweredFunc, lower
from .target.base import get_target, target_key

__all__ = ["BuildCache", "DEFAULT_CACHE_SIZE", "build", "build_cache"]
_CACHE = build_cache  # the name benchmarks clear (and tests replace)


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
    with collector_paused():
        key = cache.recall(request) if request is not None and hasattr(cache, "recall") \
            else None
        built = cache.get(key) if key is not None else None
        if built is None:
            func = lower(schedule, args, name=name, target=backend, passes=passes)
            key = kernel_key(func, backend_key, options)  # (func.passes: the pipeline run)
            built = build_kernel(func, backend, options, cache=cache, key=key)
            if request is not None and hasattr(cache, "remember"):
                cache.remember(request, key, (program, tuple(args or ())))
    kernel = built.kernel
    kernel.content_hash = key
    return kernel


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
