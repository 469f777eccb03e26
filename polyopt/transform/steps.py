"""Recorded schedule steps: one primitive call each, printed as Python and read back.

``s.script()`` prints a schedule's :class:`Step` list, one line per call;
:func:`parse_script` reads such text again (literal arguments only), for
``s.replay(...)``.

>>> steps = parse_script('s["C"].split("i", factor=4)\\ns.cache_write("C", "local")')
>>> steps[0]
Step(stage='C', primitive='split', args=('i',), kwargs=(('factor', 4),))
>>> print(steps[1])
s.cache_write("C", "local")
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass

from ..errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class LoopAxis:
    """A loop of a stage, as returned by primitives and accepted by them."""

    stage: str
    name: str
    kind: str = "serial"

    def __repr__(self) -> str:
        return f"LoopAxis({self.stage}.{self.name})"


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded primitive call."""

    stage: str | None
    primitive: str
    args: tuple
    kwargs: tuple

    def __str__(self) -> str:
        parts = [_literal(a) for a in self.args] + [f"{k}={_literal(v)}" for k, v in self.kwargs]
        target = "s" if self.stage is None else f"s[{_literal(self.stage)}]"
        return f"{target}.{self.primitive}({', '.join(parts)})"


def _literal(value) -> str:
    """``value`` as a Python literal, strings in double quotes (escaped where needed, so
    code given to a pragma survives ``s.script()``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return f"[{', '.join(map(_literal, value))}]"
    if isinstance(value, tuple):
        return f"({', '.join(map(_literal, value))}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def parse_script(text: str) -> list[Step]:
    """Steps from lines like ``s["C"].split("i", factor=4)`` (literals only)."""
    steps = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            call = ast.parse(line, mode="eval").body
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
                raise ValueError("not a primitive call")
            owner = call.func.value
            if isinstance(owner, ast.Name) and owner.id == "s":
                stage = None
            elif (isinstance(owner, ast.Subscript) and isinstance(owner.value, ast.Name)
                  and owner.value.id == "s"):
                stage = ast.literal_eval(owner.slice)
            else:
                raise ValueError("calls must be on s or s[...]")
            args = tuple(ast.literal_eval(a) for a in call.args)
            kwargs = tuple((k.arg, ast.literal_eval(k.value)) for k in call.keywords)
        except (SyntaxError, ValueError) as err:
            raise InvalidArgumentError(f"line {number} of the schedule script: {err}: {line}") \
                from None
        steps.append(Step(stage, call.func.attr, args, kwargs))
    return steps
