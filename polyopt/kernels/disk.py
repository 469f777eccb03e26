"""The on-disk kernel cache: one verified entry format, safe for concurrent builders.

``objects/ab/<key>.o`` is a kernel's object code and ``objects/ab/<key>.json`` its
metadata (its signature, imports, build time, what the caller added) with an
``integrity`` record: the SHA-256 of the object, and one SHA-256 binding the key, the
object's hash and the rest of the metadata (:func:`entry_integrity`).  ``<key>`` is the
kernel's :func:`~polyopt.kernels.key.kernel_key`.  An entry is verified before it is
returned: one truncated, swapped or edited, or whose metadata lacks what readers need,
is a miss (removed, to be built again), never loaded.

``<kind>/ab/<request>`` (``requests`` for operator libraries, ``graph-requests`` for the
graph layer) maps what a caller asked for before lowering to a key, with a hash binding
the two: a record copied onto another request is not followed.

Every file is written under a temporary name and renamed: two builders writing the same
entry write the same bytes, and a reader sees a whole file or none.  The folder is
``$POLYOPT_CACHE``, by default ``$XDG_CACHE_HOME/polyopt`` (``~/.cache/polyopt``); it is
made private (mode 0700) and used only when it belongs to this user: otherwise
:attr:`DiskCache.problem` says why, every read misses and every write raises
:class:`~polyopt.errors.BackendError`.

>>> import tempfile
>>> cache = DiskCache(tempfile.mkdtemp())
>>> cache.put("ab" * 32, b"\\x7fELF...", {"signature": {}, "seconds": 0.5})
>>> cache.get("ab" * 32)[1]["seconds"], cache.info()["kernels"]
(0.5, 1)
>>> cache.remember("cd" * 32, "ab" * 32); cache.lookup("cd" * 32) == "ab" * 32
True
"""

from __future__ import annotations

import functools
import json
import os
import shutil

from ..errors import BackendError, InvalidArgumentError
from ..private_folder import digest as sha256_of, make_private
from ..target.linker import write_atomically

_HEX = frozenset("0123456789abcdef")
REQUESTS = "requests"


def default_cache_dir() -> str:
    configured = os.environ.get("POLYOPT_CACHE")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "polyopt")


def is_digest(text) -> bool:
    """Whether ``text`` is a hex SHA-256 (a kernel key or a request key)."""
    return isinstance(text, str) and len(text) == 64 and set(text) <= _HEX


def entry_integrity(key: str, code: bytes, meta: dict) -> dict:
    """What binds an entry to its content: the SHA-256 of the object code, and one of the
    key, the object's hash and the metadata (all of it but this record).

    >>> record = entry_integrity("ab" * 32, b"code", {"seconds": 1.0})
    >>> record == entry_integrity("ab" * 32, b"code", {"seconds": 1.0, "integrity": {}})
    True
    >>> record == entry_integrity("ab" * 32, b"code", {"seconds": 2.0})
    False
    """
    rest = {k: v for k, v in meta.items() if k != "integrity"}
    object_sha = sha256_of(code)
    text = json.dumps([key, object_sha, rest], sort_keys=True)
    return {"object_sha256": object_sha, "entry_sha256": sha256_of(text.encode())}


class DiskCache:
    """Kernel objects by key, and the indexes from request keys to kernel keys."""

    def __init__(self, root: str | None = None):
        self.root = os.path.abspath(root or default_cache_dir())

    @functools.cached_property
    def problem(self) -> str | None:
        """Why the cache cannot be used (None: it can): checked once, on first use."""
        return make_private(self.root)

    def _path(self, kind: str, key: str, suffix: str = "") -> str:
        if len(key) < 3 or not set(key) <= _HEX:
            raise InvalidArgumentError(f"a cache key is a hex digest, got {key!r}")
        return os.path.join(self.root, kind, key[:2], key + suffix)

    def get(self, key: str) -> tuple[bytes, dict] | None:
        """``(object code, metadata)`` as :meth:`put` stored them, or None when absent or
        not intact."""
        if not is_digest(key) or self.problem:
            return None
        try:
            with open(self._path("objects", key, ".json"), encoding="utf-8") as file:
                meta = json.load(file)
            with open(self._path("objects", key, ".o"), "rb") as file:
                code = file.read()
        except (OSError, ValueError):
            return None
        if not _intact(key, code, meta):
            self._discard(key)
            return None
        return code, {k: v for k, v in meta.items() if k != "integrity"}

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def stores(self, key: str) -> bool:
        """Whether an entry's files are there, unread (:meth:`get` verifies them)."""
        return is_digest(key) and all(os.path.exists(self._path("objects", key, suffix))
                                      for suffix in (".json", ".o"))

    def put(self, key: str, code: bytes, meta: dict) -> None:
        """Store an object and its metadata, sealed by :func:`entry_integrity` (the object
        first: the metadata marks it whole)."""
        self._writable()
        if not is_digest(key):
            raise InvalidArgumentError(f"a kernel key is a hex SHA-256, got {key!r}")
        self._ensure(self._path("objects", key))
        write_atomically(self._path("objects", key, ".o"), code)
        meta = {**meta, "integrity": entry_integrity(key, code, meta)}
        write_atomically(self._path("objects", key, ".json"),
                         json.dumps(meta, sort_keys=True).encode())

    def lookup(self, request: str, kind: str = REQUESTS) -> str | None:
        """The key a request was built under, when its record verifies and the entry is
        still cached and intact."""
        if not is_digest(request) or self.problem:
            return None
        try:
            with open(self._path(kind, request), encoding="utf-8") as file:
                record = json.load(file)
            key = record["key"]
            if record["check"] != sha256_of(f"{request} {key}".encode()):
                return None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return key if is_digest(key) and self.has(key) else None

    def remember(self, request: str, key: str, kind: str = REQUESTS) -> None:
        """Record that ``request`` was built under ``key``."""
        self._writable()
        if not is_digest(request):
            raise InvalidArgumentError(f"a request key is a hex SHA-256, got {request!r}")
        self._ensure(self._path(kind, request))
        record = {"key": key, "check": sha256_of(f"{request} {key}".encode())}
        write_atomically(self._path(kind, request), json.dumps(record).encode())

    def _writable(self) -> None:
        if self.problem:
            raise BackendError(f"the kernel cache cannot be used: {self.problem}; set "
                               "POLYOPT_CACHE to a folder of yours")

    def _ensure(self, path: str) -> None:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        except OSError as err:
            raise BackendError(f"cannot write to the kernel cache {self.root}: {err}") from err

    def _discard(self, key: str) -> None:
        for suffix in (".json", ".o"):
            try:
                os.remove(self._path("objects", key, suffix))
            except OSError:
                pass

    def info(self) -> dict:
        """``{"path", "kernels", "bytes"}``."""
        kernels = size = 0
        for folder, _, files in os.walk(self.root):
            for name in files:
                try:
                    size += os.path.getsize(os.path.join(folder, name))
                except OSError:  # removed by a concurrent clear
                    continue
                if name.endswith(".o"):
                    kernels += 1
        return {"path": self.root, "kernels": kernels, "bytes": size}

    def clear(self) -> int:
        """Remove every entry; the number of kernels removed."""
        removed = self.info()["kernels"]
        for kind in os.listdir(self.root) if os.path.isdir(self.root) else ():
            if kind == "objects" or kind.endswith(REQUESTS):
                shutil.rmtree(os.path.join(self.root, kind), ignore_errors=True)
        return removed


def _intact(key: str, code: bytes, meta) -> bool:
    """Whether an entry is the one its metadata was sealed for, and the metadata has
    what every reader needs."""
    return (isinstance(meta, dict) and meta.get("integrity") == entry_integrity(key, code, meta)
            and isinstance(meta.get("signature"), dict)
            and isinstance(meta.get("seconds"), (int, float))
            and not isinstance(meta.get("seconds"), bool))
