"""The on-disk kernel cache, content-addressed, verified, safe for concurrent builders.

``objects/ab/<hash>.o`` is a kernel's object code and ``objects/ab/<hash>.json`` its
signature, build time and the object's SHA-256 (``object_sha256``), where ``<hash>`` is
the kernel's content hash (the lowered function and schedule, target CPU and features,
options, versions: see :func:`polyopt.target.signature.content_hash`).
``requests/ab/<key>`` maps a variant as a spec asks for it
(:func:`polyopt.aot.spec.request_key`) to that hash, so a warm rebuild needs no lowering.
An entry whose object does not match its recorded hash (truncated, swapped, edited), or
whose metadata is incomplete, is a miss: it is removed and built again.  Every file is
written under a temporary name and renamed: two builders writing the same entry write
the same bytes, and a reader sees a whole file or none.  The folder is
``$POLYOPT_CACHE``, by default ``$XDG_CACHE_HOME/polyopt`` (``~/.cache/polyopt``); it is
made private (mode 0700) and used only when it belongs to this user: otherwise
:attr:`DiskCache.problem` says why, every read misses and every write raises
:class:`~polyopt.errors.BackendError`.

>>> import tempfile
>>> cache = DiskCache(tempfile.mkdtemp())
>>> cache.put("ab" * 32, b"\\x7fELF...", {"signature": {}, "seconds": 0.5})
>>> cache.get("ab" * 32)[1]["seconds"], cache.info()["kernels"]
(0.5, 1)
"""

from __future__ import annotations

import functools
import json
import os
import shutil

from ..errors import BackendError, InvalidArgumentError
from ..private_folder import digest, make_private
from ..target.linker import write_atomically

_HEX = frozenset("0123456789abcdef")


def default_cache_dir() -> str:
    configured = os.environ.get("POLYOPT_CACHE")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "polyopt")


def is_digest(text) -> bool:
    """Whether ``text`` is a hex SHA-256 (a content hash or a request key)."""
    return isinstance(text, str) and len(text) == 64 and set(text) <= _HEX


class DiskCache:
    """Kernel objects by content hash, and the index from request keys to hashes."""

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

    def get(self, content_hash: str) -> tuple[bytes, dict] | None:
        """``(object code, metadata)``, or None when absent or not intact."""
        if not is_digest(content_hash) or self.problem:
            return None
        try:
            with open(self._path("objects", content_hash, ".json"), encoding="utf-8") as file:
                meta = json.load(file)
            with open(self._path("objects", content_hash, ".o"), "rb") as file:
                code = file.read()
        except (OSError, ValueError):
            return None
        if not _intact(code, meta):
            self._discard(content_hash)
            return None
        return code, meta

    def has(self, content_hash: str) -> bool:
        return self.get(content_hash) is not None

    def put(self, content_hash: str, code: bytes, meta: dict) -> None:
        """Store an object and its metadata with the object's hash (the object first: the
        metadata marks it whole)."""
        self._writable()
        self._ensure(self._path("objects", content_hash))
        write_atomically(self._path("objects", content_hash, ".o"), code)
        meta = {**meta, "object_sha256": digest(code)}
        write_atomically(self._path("objects", content_hash, ".json"),
                         json.dumps(meta, sort_keys=True).encode())

    def lookup(self, request: str) -> str | None:
        """The content hash a request key was built into, if it is still cached."""
        if not is_digest(request) or self.problem:
            return None
        try:
            with open(self._path("requests", request), encoding="utf-8") as file:
                content_hash = file.read().strip()
        except (OSError, ValueError):
            return None
        return content_hash if is_digest(content_hash) and self.has(content_hash) else None

    def remember(self, request: str, content_hash: str) -> None:
        self._writable()
        self._ensure(self._path("requests", request))
        write_atomically(self._path("requests", request), content_hash.encode())

    def _writable(self) -> None:
        if self.problem:
            raise BackendError(f"the kernel cache cannot be used: {self.problem}; set "
                               "POLYOPT_CACHE to a folder of yours")

    def _ensure(self, path: str) -> None:
        try:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        except OSError as err:
            raise BackendError(f"cannot write to the kernel cache {self.root}: {err}") from err

    def _discard(self, content_hash: str) -> None:
        for suffix in (".json", ".o"):
            try:
                os.remove(self._path("objects", content_hash, suffix))
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
        for kind in ("objects", "requests"):
            shutil.rmtree(os.path.join(self.root, kind), ignore_errors=True)
        return removed


def _intact(code: bytes, meta) -> bool:
    """Whether an entry's object is the one its metadata was written for, and the
    metadata has what every reader needs."""
    return (isinstance(meta, dict) and meta.get("object_sha256") == digest(code)
            and isinstance(meta.get("signature"), dict)
            and isinstance(meta.get("seconds"), (int, float))
            and not isinstance(meta.get("seconds"), bool))
