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

Nothing is loaded on trust: each entry's metadata records the SHA-256 of its object and
a hash binding that to the content hash, the signature, the imports and the rest of the
metadata; the request index records the request with its content hash.  An entry that
does not verify (truncated, swapped, edited) is ignored and built again, never linked.
The cache folder belongs to the user and to nobody else (created ``0700``; one owned by
another user, or writable by others, is refused with :class:`CacheFolderError`).

>>> import tempfile
>>> cache = KernelCache(tempfile.mkdtemp())
>>> cache.find(cache.request(("group",), 1)) is None, cache.loaded, cache.built
(True, 0, 0)
"""

from __future__ import annotations

import hashlib
import json
import os
import time

from ..aot.cache import DiskCache, default_cache_dir
from ..errors import InvalidArgumentError, PolyoptError
from ..private_folder import digest as sha256_of, make_private
from ..target.linker import write_atomically
from ..lower import lower
from ..target.base import get_target, target_key
from ..target.signature import Signature, content_hash, signature_of, versions_text


class KernelCache:
    """Find and keep group kernels in the disk cache at ``root`` (None: the default)."""

    def __init__(self, root: str | None = None, target: str = "llvm"):
        self.disk = DiskCache(private_folder(root or default_cache_dir()))
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
        digest = self._lookup(request)
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
            info["integrity"] = entry_integrity(digest, code, info)
            try:
                self.disk.put(digest, code, info)
            except (OSError, PolyoptError):
                request = None  # an unwritable cache: the kernel still runs
            found = load_object(code, Signature.from_json(info["signature"]),
                                info["imports"], self.backend.cpu), info
            self.built += 1
        if request is not None:
            try:
                self._remember(request, digest)
            except (OSError, PolyoptError):
                pass
        return found

    def _index(self, request: str) -> str:
        if len(request) != 64 or not all(c in "0123456789abcdef" for c in request):
            raise InvalidArgumentError(f"a request key is a SHA-256 digest, got {request!r}")
        return os.path.join(self.disk.root, "graph-requests", request[:2], request)

    def _lookup(self, request: str) -> str | None:
        """The content hash remembered for ``request``, when its record verifies."""
        try:
            with open(self._index(request), encoding="utf-8") as file:
                record = json.load(file)
            digest = record["digest"]
            if record["check"] == sha256_of(f"{request} {digest}".encode()):
                return digest
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def _remember(self, request: str, digest: str) -> None:
        path = self._index(request)
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        record = {"digest": digest, "check": sha256_of(f"{request} {digest}".encode())}
        write_atomically(path, json.dumps(record).encode())

    def _load(self, digest: str):
        entry = self.disk.get(digest)
        if entry is None:
            return None
        code, meta = entry
        if not isinstance(meta, dict) or meta.get("integrity") != entry_integrity(
                digest, code, meta):
            return None  # truncated, swapped or edited: build it again
        from ..target.llvm.export import load_object  # llvmlite: only when a kernel loads

        try:
            signature = Signature.from_json(meta["signature"])
            return load_object(code, signature, meta.get("imports", []),
                               self.backend.cpu), meta
        except (PolyoptError, KeyError, TypeError):
            return None  # unusable here (a library missing, an old entry): build again


class CacheFolderError(InvalidArgumentError):
    """A kernel cache folder that another user owns or may write."""


def private_folder(path: str) -> str:
    """``path``, created ``0700`` when missing; refused unless it is a real folder of
    this user that nobody else may write (kernels are loaded from it)."""
    path = os.path.abspath(os.fspath(path))
    problem = make_private(path)
    if problem:
        raise CacheFolderError(f"cannot use the kernel cache: {problem}; polyopt loads "
                               "machine code from it, so it must be yours alone: pass "
                               "cache=False or another folder (POLYOPT_CACHE)")
    return path


def entry_integrity(digest: str, code: bytes, meta: dict) -> dict:
    """What binds a cache entry to its content: the SHA-256 of the object code, and one
    of the content hash, the object's hash and the metadata (all but this record)."""
    # (all but this record and the object's hash, which DiskCache.put adds to it)
    rest = {k: v for k, v in meta.items() if k not in ("integrity", "object_sha256")}
    object_sha = sha256_of(code)
    text = json.dumps([digest, object_sha, rest], sort_keys=True)
    return {"object_sha256": object_sha, "entry_sha256": sha256_of(text.encode())}
