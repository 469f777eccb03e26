"""Tell LLVM's loop vectorizer that a vectorized loop's iterations are independent.

A loop marked vectorized asks LLVM to vectorize it (``llvm.loop.vectorize.enable``), but
LLVM still runs its own dependence analysis and keeps the loop scalar when it cannot
prove the iterations independent (e.g. a skewed stencil whose accesses move by ``-N - 2``
elements per iteration).  polyopt knows better: when no two iterations of the loop
touch one element with one of them writing it (:func:`polyopt.deps.races.racing_access`
on the program after storage contraction, so a temporary buffer reused by every
iteration counts), every load and store inside the loop joins a new access group
(``!llvm.access.group``) that the loop lists in ``llvm.loop.parallel_accesses``.  That
is the whole guarantee LLVM's annotation asks for: no memory dependence carried by the
loop, at any distance.  A reduction along the loop (its accumulator written in every
iteration) fails the test and keeps LLVM's own analysis, which recognizes reductions.

The schedule's own check of ``vectorize`` (``transform.check.check_loop_carries_nothing``:
no dependence carried at any distance, and no race) proves the same before storage
contraction; the test is repeated on what is emitted because templates mark loops with
``check=False`` and contraction may make every iteration use one buffer.

LLVM calls a loop parallel only when every instruction in it that touches memory is
in one of its groups, so an untagged access (e.g. a call in the loop) just falls back
to LLVM's analysis.

>>> from llvmlite import ir
>>> m = ir.Module()
>>> a, b = access_group(m), access_group(m)
>>> a == b, str(a).split(" = ")[1]
(False, 'distinct !{}')
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import For, runs
from ...deps.races import racing_access


class _AccessGroup(ir.values.MDValue):
    """``distinct !{}``: equal only to itself (llvmlite merges equal metadata nodes)."""

    def descr(self, buf):
        buf += ("distinct !{}", "\n")

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def access_group(module: ir.Module) -> ir.values.MDValue:
    """A new access group of ``module``."""
    return _AccessGroup(module, [], name=str(len(module.metadata)))


def parallel_accesses(module: ir.Module, group) -> ir.values.MDValue:
    """The loop property ``!{!"llvm.loop.parallel_accesses", group}``."""
    return module.add_metadata([ir.MetaDataString(module, "llvm.loop.parallel_accesses"),
                                group])


def tag(instruction: ir.Instruction, groups: list, module: ir.Module) -> None:
    """Put a load or store into the access groups ``groups`` (of the enclosing loops)."""
    if groups:
        node = groups[0] if len(groups) == 1 else module.add_metadata(list(groups))
        instruction.set_metadata("llvm.access.group", node)


def has_independent_iterations(program, loop: For, memo: dict) -> bool:
    """Whether no two iterations of ``loop`` touch one element, one of them writing it
    (False when the loop's schedule dimension or statements are unknown).  ``memo``
    keeps the answers per loop (a loop versioned on full tiles appears twice)."""
    run = next(runs(loop.body), None)
    if loop.dim is None or run is None:
        return False
    key = (run.stmt, loop.dim)
    if key not in memo:
        memo[key] = racing_access(program, run.stmt, loop.dim) is None
    return memo[key]
