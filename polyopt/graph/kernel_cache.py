"""The kernels of fused groups in the on-disk kernel cache (the one AOT libraries use).

A group's kernel is found by two keys of :class:`~polyopt.aot.cache.DiskCache`
(``$POLYOPT_CACHE``, by default ``~/.cache/polyopt``):

* its *request*: what the group is before it is lowered (its signature from
  :func:`~polyopt.graph.executor.group_signature`, the thread count, the target, the
  versions and a digest of polyopt's own source), so a second compile of a model in a
  new process neither lowers, schedules nor compiles anything;
* its *content hash* (:func:`~polyopt.target.signature.content_hash`, the key
  ``po.build`` uses, with the versions and the source digest too): a kernel someone else
  built from the same program with the same code is reused.

Loaded kernels are linked in by LLVM's JIT from their object code (no C compiler).
``KernelCache.loaded`` and ``.built`` count what a compile found and what it built.

>>> import tempfile
>>> cache = KernelCache(tempfile.mkdtemp())
>>> cache.find(cache.request(("group",), 1)) is None, cache.loaded, cache.built
(True, 0, 0)
"""

from __future__ import annotations

import hashlib
import time

from ..aot.cache import DiskCache, default_cache_dir
from ..errors import PolyoptError
from ..lower import lower
from ..target.base import get_target, target_key
from ..target.signature import Signature, content_hash, signature_of, versions_text


class KernelCache:
    """Find and keep group kernels in the disk cache at ``root`` (None: the default)."""

    def __init__(self, root: str | None = None, target: str = "llvm"):
        self.disk = DiskCache(root or default_cache_dir())
        self.backend = get_target(target)
        self.key = target_key(self.backend)
        self.loaded = 0  # kernels taken from the disk
        self.built = 0   # kernels compiled (and stored)

    def request(self, description, num_threads: int) -> str:
        """The request key of a kernel described by ``description`` (a repr-able value
        saying everything the kernel depends on) for ``num_threads`` threads."""
        text = repr((description, num_threads, self.key, versions_text()))
        return hashlib.sha256(text.encode()).hexdigest()

    def find(self, request: str):
        """``(kernel, metadata)`` cached under ``request``, or None."""
        digest = self.disk.lookup(request)
        found = self._load(digest) if digest else None
        if found is not None:
            self.loaded += 1
        return found

    def build(self, schedule, args, *, num_threads: int, request: str | None = None,
              meta: dict | None = None):
        """The kernel of ``schedule`` over ``args``: from the cache by content when it is
        there, else compiled and stored; remembered under ``request``."""
        start = time.perf_counter()
        func = lower(schedule, args, target=self.backend)
        options = {"num_threads": num_threads}
        digest = content_hash(func, self.key, options)
        found = self._load(digest)
        if found is not None:
            self.loaded += 1
        else:
            from ..target.llvm.export import imported_symbols, load_object
            from ..target.llvm.jit import object_code  # llvmlite: only where kernels are built

            _, module = self.backend.compile(func, **options)
            code = object_code(module, self.backend.cpu)
            info = {"signature": signature_of(func).to_json(),
                    "imports": imported_symbols(str(module)),
                    "seconds": round(time.perf_counter() - start, 3), **(meta or {})}
            try:
                self.disk.put(digest, code, info)
            except (OSError, PolyoptError):
                request = None  # an unwritable cache: the kernel still runs
            found = load_object(code, Signature.from_json(info["signature"]),
                                info["imports"], self.backend.cpu), info
            self.built += 1
        if request is not None:
            try:
                self.disk.remember(request, digest)
            except (OSError, PolyoptError):
                pass
        return found

    def _load(self, digest: str):
        entry = self.disk.get(digest)
        if entry is None:
            return None
        code, meta = entry
        from ..target.llvm.export import load_object  # llvmlite: only when a kernel loads

        try:
            signature = Signature.from_json(meta["signature"])
            return load_object(code, signature, meta.get("imports", []),
                               self.backend.cpu), meta
        except (PolyoptError, KeyError, TypeError):
            return None  # unusable here (a library missing, an old entry): build again
