"""The one path from a lowered program to a kernel, through the caches.

:func:`build_kernel` turns ``(lowered function, target, options)`` into a :class:`Built`
kernel of one of three forms:

* ``"kernel"``: the backend's own callable (``po.build``'s result: for LLVM a JIT-compiled
  kernel with its IR and assembly), kept in the in-memory cache;
* ``"linked"``: LLVM object code, taken from or stored in the disk cache when one is
  given, linked into the process (what the graph layer runs), kept in memory;
* ``"object"``: the object code and its metadata only, through the disk cache (what
  operator libraries link; libraries are built in worker processes, so object code is
  not kept in memory).

The in-memory cache (:data:`~polyopt.kernels.memory.build_cache`) and the disk cache
(:class:`~polyopt.kernels.disk.DiskCache`) are keyed by
:func:`~polyopt.kernels.key.kernel_key`: structurally equal programs share a kernel; a
different target CPU, feature or option does not.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A"); B = po.compute((4,), lambda i: A[i] + 1, name="B")
>>> func = po.lower(po.create_schedule(B), [A, B], target="llvm")
>>> first = build_kernel(func, "llvm", {"num_threads": 1})
>>> again = build_kernel(func, "llvm", {"num_threads": 1})
>>> again.kernel is first.kernel, again.source, len(first.key)
(True, 'memory', 64)
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import time

from ..errors import BackendError, InvalidArgumentError, PolyoptError
from ..target.base import get_target, target_key
from ..target.signature import Signature, signature_of
from .disk import DiskCache
from .key import kernel_key
from .memory import build_cache

FORMS = ("kernel", "linked", "object")


@dataclasses.dataclass(frozen=True)
class Built:
    """A built kernel: its ``key``, the callable ``kernel`` (None for ``"object"``), the
    object ``code`` (LLVM forms), ``meta`` (signature, imports, seconds, the caller's
    metadata), where it came from (``source``: ``"built"``, ``"memory"`` or ``"disk"``)
    and why the disk cache could not keep it (``store_error``)."""

    key: str
    form: str
    kernel: object = None
    code: bytes | None = None
    meta: dict = dataclasses.field(default_factory=dict)
    source: str = "built"
    store_error: str | None = None


def memory_key(key: str, form: str) -> str:
    """The in-memory cache's key of a kernel of ``form`` (``po.build``'s kernels: the key)."""
    return key if form == "kernel" else f"{key}.{form}"


def build_kernel(func, target="llvm", options: dict | None = None, *, form: str = "kernel",
                 disk: DiskCache | None = None, meta: dict | None = None,
                 cache=None, key: str | None = None) -> Built:
    """The kernel of the lowered function ``func`` for ``target`` (a target string or
    backend) with the backend's build ``options``: from memory, from ``disk`` (LLVM forms)
    or built now and stored in both.  ``meta`` is kept beside a new entry; ``cache`` is
    the in-memory cache (default :data:`~polyopt.kernels.memory.build_cache`; anything
    with ``get`` and item assignment); ``key``, when the caller computed it already."""
    if form not in FORMS:
        raise InvalidArgumentError(f"form is one of {', '.join(FORMS)}, got {form!r}")
    backend = get_target(target) if isinstance(target, str) else target
    options = dict(options or {})
    key = key or kernel_key(func, target_key(backend), options)
    cache = build_cache if cache is None else cache
    if form != "object":
        found = cache.get(memory_key(key, form))
        if found is not None:
            _copy_to_disk(found, disk)
            return dataclasses.replace(found, source="memory")
    if form == "kernel":
        start = time.perf_counter()
        with collector_paused():
            kernel = backend.build(func, **options)
        built = Built(key, form, kernel, None, {
            "seconds": round(time.perf_counter() - start, 3), **(meta or {})})
    else:
        built = _object_kernel(func, backend, options, key, form, disk, meta)
    if form != "object":
        cache[memory_key(key, form)] = built
    return built


def _copy_to_disk(built: Built, disk: DiskCache | None) -> None:
    """Store a kernel found in memory in ``disk`` when that folder lacks it (it was built
    for another cache folder): whoever asks ``disk`` for it later, as an export does,
    finds it there."""
    if disk is None or built.code is None or disk.stores(built.key):  # (no hashing)
        return
    try:
        disk.put(built.key, built.code, built.meta)
    except (OSError, PolyoptError):
        pass  # an unwritable cache: the kernel still runs


def load_kernel(key: str, target, disk: DiskCache, *, form: str = "linked",
                cache=None) -> Built | None:
    """The kernel stored under ``key`` without its program: from memory, else linked from
    the verified disk entry; None when neither has a usable one."""
    backend = get_target(target) if isinstance(target, str) else target
    cache = build_cache if cache is None else cache
    if form != "object":
        found = cache.get(memory_key(key, form))
        if found is not None:
            return dataclasses.replace(found, source="memory")
    built = _from_disk(key, backend, disk, form)
    if built is not None and form != "object":
        cache[memory_key(key, form)] = built
    return built


def adopt_object(key: str, code: bytes, meta: dict, target="llvm", *, cache=None) -> Built:
    """A kernel compiled in another process (``build_kernel(..., form="object")``'s
    ``key``, ``code`` and ``meta``) linked here and kept in the in-memory cache as
    ``po.build``'s kernel of ``key``: a later ``po.build`` of the same program and
    options finds it instead of compiling (a tuning run's build workers,
    :mod:`polyopt.tune.dask_runner`).  Its SHA-256, when ``meta`` holds one
    (``"sha256"``), must match the code."""
    import hashlib

    backend = get_target(target) if isinstance(target, str) else target
    if not isinstance(code, bytes) or not isinstance(meta, dict):
        raise InvalidArgumentError("adopt_object takes the object code (bytes) and its "
                                   "metadata (a dict)")
    if "sha256" in meta and hashlib.sha256(code).hexdigest() != meta["sha256"]:
        raise BackendError(f"the object code of kernel {key[:12]} does not match its "
                           f"SHA-256 (damaged in transit); build it here instead")
    built = Built(key, "kernel", _link(code, meta, backend), code, meta, "adopted")
    (build_cache if cache is None else cache)[memory_key(key, "kernel")] = built
    return built


def _object_kernel(func, backend, options, key, form, disk, meta) -> Built:
    """An LLVM kernel as object code: the disk entry when it verifies and links, else
    compiled (and stored)."""
    if not hasattr(backend, "compile") or not hasattr(backend, "cpu"):
        raise InvalidArgumentError(f"only the llvm target builds object code, not "
                                   f"{getattr(backend, 'name', backend)!r}")
    found = _from_disk(key, backend, disk, form) if disk is not None else None
    if found is not None:
        return found
    from ..target.llvm.export import imported_symbols
    from ..target.llvm.jit import object_code  # llvmlite: only where kernels are built

    from ..target.llvm.export import amx_request_ir
    from ..target.llvm.amx import ir_uses_amx
    from ..target.llvm.jit import parse

    start = time.perf_counter()
    signature = signature_of(func)
    with collector_paused():
        _, module = backend.compile(func, **options)
        text = str(module)
        amx = ir_uses_amx(text)
        if amx:  # binds "amx_tiles" to the code: _link checks the request is defined
            module.link_in(parse(amx_request_ir(signature.name)))
        code = object_code(module, backend.cpu)
    info = {"signature": signature.to_json(),
            "imports": imported_symbols(text),
            "seconds": round(time.perf_counter() - start, 3), **(meta or {})}
    if amx:  # AMX tiles: whoever links it asks for the tile state
        info["amx_tiles"] = True
    store_error = None
    if disk is not None:
        try:
            disk.put(key, code, info)
        except (OSError, PolyoptError) as err:  # a full disk, an unusable folder
            store_error = str(err)
    kernel = _link(code, info, backend) if form == "linked" else None
    return Built(key, form, kernel, code, info, "built", store_error)


def _from_disk(key: str, backend, disk: DiskCache | None, form: str) -> Built | None:
    entry = disk.get(key) if disk is not None else None
    if entry is None:
        return None
    code, info = entry
    if form != "linked":
        return Built(key, form, None, code, info, "disk")
    try:
        return Built(key, form, _link(code, info, backend), code, info, "disk")
    except (PolyoptError, KeyError, TypeError):
        return None  # unusable here (a library missing, an old entry): build it again


def _link(code: bytes, info: dict, backend):
    from ..target.llvm.export import load_object  # llvmlite: only when a kernel links

    if not isinstance(info.get("imports", []), list):
        raise BackendError("a cached kernel's imports are not a list; build it again")
    return load_object(code, Signature.from_json(info["signature"]),
                       info.get("imports", []), backend.cpu,
                       amx_tiles=info.get("amx_tiles", False))  # (see _object_kernel)


@contextlib.contextmanager
def collector_paused():
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
