"""One generator for every name polyopt makes up (statements, arrays, loop variables).

Names are valid isl and C identifiers, never an isl or C keyword, and never repeat
within one generator.

>>> names = NameGenerator(reserved={"N"})
>>> names.fresh("C"), names.fresh("C"), names.fresh("N"), names.fresh("i.outer"), names.fresh("and")
('C', 'C_1', 'N_1', 'i_outer', 'and_')
"""

from __future__ import annotations

import re

_KEYWORDS = frozenset(
    # isl's set/map syntax
    "and or not exists mod floor ceil min max infty NaN true false domain range".split()
    # C and OpenCL C, which generated code is written in
    + "auto break case char const continue default do double else enum extern float for "
      "goto if inline int long register restrict return short signed sizeof static struct "
      "switch typedef union unsigned void volatile while kernel global local private "
      "constant half bool".split()
)


def sanitize(name: str) -> str:
    """Turn any string into a valid identifier: ``"i.outer"`` becomes ``"i_outer"``."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if text[0].isdigit():
        text = "v" + text
    if text in _KEYWORDS:
        text += "_"
    return text


class NameGenerator:
    """Hands out sanitized names that are distinct from each other and from ``reserved``."""

    def __init__(self, reserved=()):
        # a frozenset is shared, not copied: one per program serves all its statements
        self._reserved = reserved if isinstance(reserved, frozenset) else frozenset(reserved)
        self._taken: set[str] = set()

    def fresh(self, base: str) -> str:
        name = sanitize(base)
        candidate, counter = name, 0
        while candidate in self._taken or candidate in self._reserved:
            counter += 1
            candidate = f"{name}_{counter}"
        self._taken.add(candidate)
        return candidate

    def reserve(self, name: str) -> None:
        self._taken.add(name)
