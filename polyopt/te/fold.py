"""Bottom-up evaluation of trees of any depth, without recursion.

Expressions, loop trees and isl ASTs can be as deep as the user's program (a sum of
5,000 terms is a tree 5,000 deep): every walk over them uses :func:`fold`, whose
stack is a Python list, so no depth reaches the interpreter's recursion limit.

>>> tree = ("+", ("+", 1, 2), 3)
>>> fold(tree, lambda t: t[1:] if isinstance(t, tuple) else (),
...      lambda t, values: sum(values) if isinstance(t, tuple) else t)
6
"""

from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def fold(root: T, children: Callable[[T], Sequence[T]],
         combine: Callable[[T, list[R]], R]) -> R:
    """``combine(node, [the results of its children])`` for every node, children first
    (left to right), and the result at ``root``."""
    results: list[R] = []
    stack: list[tuple[T, int]] = [(root, -1)]
    while stack:
        node, count = stack.pop()
        if count >= 0:  # its children are done: their results are the last ``count``
            values = results[len(results) - count:] if count else []
            del results[len(results) - count:]
            results.append(combine(node, values))
            continue
        kids = children(node)
        stack.append((node, len(kids)))
        stack.extend((kid, -1) for kid in reversed(kids))
    return results[0]
