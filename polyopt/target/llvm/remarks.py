"""Which loops marked vectorized LLVM left scalar, read from the optimized IR.

Every loop ID polyopt emits carries a marker ``!{!"polyopt.loop", i32 <n>, !"<loop>"}``.
LLVM's vectorizer replaces the ``llvm.loop.vectorize.*`` hints of a loop it vectorizes
with ``llvm.loop.isvectorized``; a loop that still asks for vectorization after the
pipeline is one it refused (it also prints "loop not vectorized" on stderr).  A loop
that the optimizer removed altogether (fully unrolled, e.g. after vectorizing it into
a single iteration) is not reported.  On polyopt's own IR the same function lists the
loops marked vectorized.

>>> text = '''!1 = distinct !{!1, !2, !3}
... !2 = !{!"llvm.loop.vectorize.enable", i1 true}
... !3 = !{!"polyopt.loop", i32 4, !"t_inner"}'''
>>> loops_asking_for_vectors(text)
('t_inner',)
"""

from __future__ import annotations

import re

# LLVM prints ``!{!"a", i1 true}``, llvmlite ``!{ !"a", i1 1 }``
_NODE = re.compile(r"^(![0-9]+) = (?:distinct )?!\{ ?(.*?) ?\}$", re.MULTILINE)
_MARKER = re.compile(r'^!"polyopt\.loop", i32 [0-9]+, !"([^"]*)"$')
_REFERENCE = re.compile(r"![0-9]+")
_ASKS = re.compile(r'^!"llvm\.loop\.vectorize\.enable", i1 (true|1)$')


def loop_ids(ir_text: str) -> list[tuple[str, tuple[str, ...]]]:
    """``(loop name, the text of each property)`` for every loop ID in ``ir_text`` that
    carries polyopt's marker, in order."""
    nodes = dict(_NODE.findall(ir_text))
    found = []
    for name, operands in nodes.items():
        references = _REFERENCE.findall(operands)
        if not references or references[0] != name:
            continue  # not a loop ID (those refer to themselves first)
        parts = tuple(nodes.get(r, "") for r in references[1:])
        markers = [m.group(1) for m in map(_MARKER.match, parts) if m]
        if markers:
            found.append((markers[0], parts))
    return found


def asks_for_vectors(properties: tuple[str, ...]) -> bool:
    """Whether a loop ID with ``properties`` (see :func:`loop_ids`) asks for vectors."""
    return any(map(_ASKS.match, properties))


def loops_asking_for_vectors(ir_text: str) -> tuple[str, ...]:
    """The names of the loops whose ID in ``ir_text`` asks for vectorization (in
    optimized IR: those LLVM did not vectorize), in the order of their IDs, each once."""
    return tuple(dict.fromkeys(name for name, properties in loop_ids(ir_text)
                               if asks_for_vectors(properties)))
