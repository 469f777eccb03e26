"""Memoize pure functions of immutable objects (isl sets, maps, schedules) by identity.

isl objects are values: every operation returns a new one, so a result computed from
the same objects is still right.  Schedule primitives rebuild a whole program from
mostly unchanged pieces, and the checks ask for the same rows many times: an
:class:`IdentityMemo` keeps recent results keyed by the identity of their inputs
(plain ints, strings and frozensets by value), and holds the inputs so that their ids
are not reused while an entry lives.

>>> calls = []
>>> memo = IdentityMemo(size=2)
>>> a, b = object(), object()
>>> def f(x, n):
...     calls.append(n)
...     return n * 2
>>> memo.get((a, 1), lambda: f(a, 1)), memo.get((a, 1), lambda: f(a, 1))
(2, 2)
>>> memo.get((b, 1), lambda: f(b, 1)), calls
(2, [1, 1])
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")
_BY_VALUE = (int, str, frozenset, type(None))


class IdentityMemo:
    """The last ``size`` results, keyed by the identity of their inputs."""

    def __init__(self, size: int = 256):
        self.size = size
        self._entries: dict[tuple, tuple[tuple, object]] = {}

    def get(self, inputs: tuple, compute: Callable[[], T]) -> T:
        """``compute()``, or its result from an earlier call with the same ``inputs``."""
        key = tuple(x if isinstance(x, _BY_VALUE) else (id(x),) for x in inputs)
        found = self._entries.get(key)
        if found is not None:
            return found[1]
        result = compute()
        if len(self._entries) >= self.size:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = (inputs, result)  # holding the inputs keeps their ids unique
        return result

    def clear(self) -> None:
        self._entries.clear()
