"""What a name means inside a kernel: a loop variable, a scalar temporary, an array
parameter, or a value of the function's closure, globals or builtins.

Scopes follow the loop and ``if`` nesting.  A temporary is a plain forward
substitution: it may be used later in the block that assigns it (and in blocks nested
there), as long as no array its value reads has been written in between; anything else
(a value carried from an earlier iteration, one assigned in only one branch, a value
that would be stale) is refused.

>>> scopes = Scopes(globals_={"K": 3}, closure={}, params={})
>>> scopes.resolve_outer("K"), scopes.resolve_outer("range") is range
(3, True)
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

from ..te.expr import Expr, IterVar, TensorRead
from ..te.tensor import walk

_MISSING = object()


@dataclass(eq=False, slots=True)
class LoopName:
    var: IterVar
    line: int


@dataclass(eq=False, slots=True)
class TempName:
    value: Expr
    reads: frozenset[str]  # names of the arrays the value reads
    line: int


@dataclass(eq=False, slots=True)
class DeadName:
    """A name an inner loop re-bound: after that loop Python leaves it at the last value."""

    line: int


class Scopes:
    """A stack of blocks (function body, loop bodies, branches) binding local names."""

    def __init__(self, globals_: dict, closure: dict, params: dict):
        self.globals = globals_
        self.closure = closure
        self.params = params  # parameter name -> Tensor
        self.stack: list[dict[str, object]] = [{}]
        self.stale: dict[int, tuple[str, int]] = {}  # id(TempName) -> (array, line)

    # -- blocks ---------------------------------------------------------------------
    def push(self) -> None:
        self.stack.append({})

    def pop(self) -> None:
        """Leave a block; names an inner loop clobbered stay clobbered outside it."""
        block = self.stack.pop()
        for name, binding in block.items():
            if isinstance(binding, DeadName) and self.lookup(name) is not None:
                self.stack[-1][name] = binding

    # -- local names ----------------------------------------------------------------
    def lookup(self, name: str):
        """The innermost binding of a local name, or None."""
        for block in reversed(self.stack):
            if name in block:
                return block[name]
        return None

    def in_current_block(self, name: str) -> bool:
        return name in self.stack[-1]

    def bind_loop(self, name: str, var: IterVar, line: int) -> None:
        self.stack[-1][name] = LoopName(var, line)

    def end_loop(self, name: str, line: int) -> None:
        """After a loop: its variable is gone, and an outer name it shadowed is clobbered."""
        if self.lookup(name) is not None:
            self.stack[-1][name] = DeadName(line)

    def bind_temp(self, name: str, value: Expr, line: int) -> None:
        reads = frozenset(node.tensor.name for node in walk(value)
                          if isinstance(node, TensorRead))
        self.stack[-1][name] = TempName(value, reads, line)

    # -- staleness of temporaries ------------------------------------------------------
    def mark_written(self, arrays, line: int) -> None:
        """Arrays written at ``line``: temporaries reading them can no longer be substituted."""
        arrays = set(arrays)
        for block in self.stack:
            for binding in block.values():
                if isinstance(binding, TempName) and id(binding) not in self.stale:
                    hit = sorted(binding.reads & arrays)
                    if hit:
                        self.stale[id(binding)] = (hit[0], line)

    def staleness(self, binding: TempName) -> tuple[str, int] | None:
        return self.stale.get(id(binding))

    def snapshot(self) -> dict[int, tuple[str, int]]:
        return dict(self.stale)

    def restore(self, saved: dict[int, tuple[str, int]]) -> None:
        self.stale = dict(saved)

    def merge(self, other: dict[int, tuple[str, int]]) -> None:
        """After both branches of an ``if``: stale if stale on either path."""
        for key, value in other.items():
            self.stale.setdefault(key, value)

    # -- names from outside the function ----------------------------------------------
    def resolve_outer(self, name: str):
        """The value of a name that is not local: closure, then globals, then builtins."""
        for table in (self.closure, self.globals):
            value = table.get(name, _MISSING)
            if value is not _MISSING:
                return value
        return getattr(builtins, name, _MISSING)

    @staticmethod
    def missing(value) -> bool:
        return value is _MISSING


def function_namespace(fn) -> tuple[dict, dict]:
    """``(globals, closure)`` of a function; empty closure cells are left out."""
    closure = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            closure[name] = cell.cell_contents
        except ValueError:  # a cell not yet filled
            pass
    return fn.__globals__, closure
