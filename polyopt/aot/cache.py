"""The on-disk kernel cache, content-addressed and safe for concurrent builders.

``objects/ab/<hash>.o`` is a kernel's object code and ``objects/ab/<hash>.json`` its
signature and build time, where ``<hash>`` is the kernel's content hash (the lowered
function and schedule, target CPU and features, options, versions: see
:func:`polyopt.target.signature.content_hash`).  ``requests/ab/<key>`` maps a variant
as a spec asks for it (:func:`polyopt.aot.spec.request_key`) to that hash, so a warm
rebuild needs no lowering.  Every file is written under a temporary name and renamed:
two builders writing the same entry write the same bytes, and a reader sees a whole
file or none.  The folder is ``$POLYOPT_CACHE``, by default ``$XDG_CACHE_HOME/polyopt``
(``~/.cache/polyopt``).

>>> import tempfile
>>> cache = DiskCache(tempfile.mkdtemp())
>>> cache.put("ab" * 32, b"\\x7fELF...", {"seconds": 0.5})
>>> cache.get("ab" * 32)[1]["seconds"], cache.info()["kernels"]
(0.5, 1)
"""

from __future__ import annotations

import json
import os
import shutil

from ..errors import InvalidArgumentError
from ..target.linker import write_atomically


def default_cache_dir() -> str:
    configured = os.environ.get("POLYOPT_CACHE")
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "polyopt")


class DiskCache:
    """Kernel objects by content hash, and the index from request keys to hashes."""

    def __init__(self, root: str | None = None):
        self.root = os.path.abspath(root or default_cache_dir())

    def _path(self, kind: str, key: str, suffix: str = "") -> str:
        if len(key) < 3 or not all(c in "0123456789abcdef" for c in key):
            raise InvalidArgumentError(f"a cache key is a hex digest, got {key!r}")
        return os.path.join(self.root, kind, key[:2], key + suffix)

    def get(self, content_hash: str) -> tuple[bytes, dict] | None:
        """``(object code, metadata)`` or None."""
        try:
            with open(self._path("objects", content_hash, ".json"), encoding="utf-8") as file:
                meta = json.load(file)
            with open(self._path("objects", content_hash, ".o"), "rb") as file:
                code = file.read()
        except (OSError, ValueError):
            return None
        return code, meta

    def has(self, content_hash: str) -> bool:
        return os.path.exists(self._path("objects", content_hash, ".json"))

    def put(self, content_hash: str, code: bytes, meta: dict) -> None:
        """Store an object and its metadata (the object first: metadata marks it whole)."""
        self._ensure(self._path("objects", content_hash))
        write_atomically(self._path("objects", content_hash, ".o"), code)
        write_atomically(self._path("objects", content_hash, ".json"),
                         json.dumps(meta, sort_keys=True).encode())

    def lookup(self, request: str) -> str | None:
        """The content hash a request key was built into, if it is still cached."""
        try:
            with open(self._path("requests", request), encoding="utf-8") as file:
                content_hash = file.read().strip()
        except OSError:
            return None
        return content_hash if content_hash and self.has(content_hash) else None

    def remember(self, request: str, content_hash: str) -> None:
        self._ensure(self._path("requests", request))
        write_atomically(self._path("requests", request), content_hash.encode())

    def _ensure(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)

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
