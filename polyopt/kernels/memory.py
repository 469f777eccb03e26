"""The one in-memory kernel cache of the process: bounded, least recently used out first.

Every kernel built through :func:`polyopt.kernels.build_kernel` (``po.build``, the graph
layer, the LSTM runner) is kept here under its key (:func:`~polyopt.kernels.key.kernel_key`,
with the kind of kernel for kernels linked from object code), at most
``build_cache.size`` of them (default 256; ``POLYOPT_BUILD_CACHE_SIZE`` sets it at import,
``po.build_cache.set_size(n)`` later, 0 turns caching off).  A kernel leaving the cache
stays usable while referenced; a released one (``f.release()``) is dropped on lookup.

A second, small table remembers *requests*: what a caller asked for before lowering (a
schedule's identity for ``po.build``, a fused group's description for the graph layer),
with the key it was built under and a note, so a repeated request neither lowers nor
schedules again.

>>> cache = BuildCache(2)
>>> cache["k1"] = "kernel one"; cache["k2"] = "kernel two"; cache["k3"] = "kernel three"
>>> cache.get("k1"), cache.get("k3"), cache.info()["evictions"]
(None, 'kernel three', 1)
>>> cache.remember(("group", 1), "k3", {"template": "conv"})
>>> cache.recall(("group", 1)), cache.recall_note(("group", 1))
('k3', {'template': 'conv'})
"""

from __future__ import annotations

import collections
import os

from ..errors import InvalidArgumentError

DEFAULT_CACHE_SIZE = 256


class BuildCache:
    """Kernels by key, least recently used evicted first, and recent requests."""

    def __init__(self, size: int):
        self._kernels: collections.OrderedDict[str, object] = collections.OrderedDict()
        self._recent: collections.OrderedDict[object, tuple] = collections.OrderedDict()
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
        """Forget every kernel and request (the kernels stay usable where referenced)."""
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
        """What is cached under ``key``, or None (a released kernel is dropped)."""
        entry = self._kernels.get(key)
        if entry is not None and _released(entry):
            del self._kernels[key]
            entry = None
        if entry is None:
            self.misses += 1
            return None
        self._kernels.move_to_end(key)
        self.hits += 1
        return entry

    def __setitem__(self, key: str, entry) -> None:
        self._kernels[key] = entry
        self._kernels.move_to_end(key)
        self._trim()

    def remember(self, request, key: str, note=None) -> None:
        """Remember that ``request`` (a hashable value) was built under ``key``, with
        ``note`` (which also keeps alive what the request names by identity)."""
        self._recent[request] = (key, note)
        self._recent.move_to_end(request)
        while len(self._recent) > max(self.size, 1) * 2:
            self._recent.popitem(last=False)

    def recall(self, request) -> str | None:
        """The key ``request`` was built under, or None."""
        found = self._recent.get(request)
        return None if found is None else found[0]

    def recall_note(self, request):
        """The note remembered with ``request``, or None."""
        found = self._recent.get(request)
        return None if found is None else found[1]

    def _trim(self) -> None:
        while len(self._kernels) > self.size:
            self._kernels.popitem(last=False)
            self.evictions += 1


def _released(entry) -> bool:
    kernel = getattr(entry, "kernel", entry)  # a Built record, or a kernel
    return bool(getattr(kernel, "released", False))


def size_from_environment() -> int:
    """``POLYOPT_BUILD_CACHE_SIZE``, or the default."""
    text = os.environ.get("POLYOPT_BUILD_CACHE_SIZE", "")
    if not text:
        return DEFAULT_CACHE_SIZE
    if not text.isdigit():
        raise InvalidArgumentError(f"POLYOPT_BUILD_CACHE_SIZE must be an integer >= 0, "
                                   f"got {text!r}")
    return int(text)


build_cache = BuildCache(size_from_environment())
