"""Memory conflicts between iterations of a loop meant to run in parallel.

Dependences say what must stay ordered; a parallel loop also needs that no two of its
iterations touch the same element when one of them writes it.  For ordinary programs
that is what carried dependences already say.  It matters when stages are recomputed
per tile (``compute_at``): overlapping tiles write the same elements of a shared buffer
(harmless in sequence, a race in parallel).

>>> import polyopt as po
>>> A = po.placeholder((10,), name="A")
>>> B = po.compute((10,), lambda i: A[i] * 2, name="B")
>>> C = po.compute((8,), lambda i: B[i] + B[i + 2], name="C")
>>> s = po.create_schedule(C)
>>> io, ii = s[C].split(C.op.axis[0], factor=4)
>>> s[B].compute_at(s[C], io)
>>> print(racing_access(s.program, "C", 2))  # dimension 2: the loop i.outer
B[i_outer=0, i=4] writes B[4] that C[i=4] reads, in another iteration
"""

from __future__ import annotations

import islpy as isl

from ..domain.memo import IdentityMemo
from ..domain.program import AccessKind, Program
from .dataflow import Dependence, Dependences
from .counterexample import describe, find_pair
from .legality import carried_pairs, loop_statements


def racing_access(program: Program, stmt: str, dim: int,
                  private: frozenset[str] = frozenset()) -> str | None:
    """A description of two iterations of the loop at schedule dimension ``dim`` of
    ``stmt`` that touch one element, one of them writing it; None when there are none.
    Arrays named in ``private`` are skipped: each iteration has its own copy (a buffer
    in a work-group's ``__local`` memory, when the loop is bound to work-groups).

    The answer is :func:`.legality.carried_pairs` (the one analysis of what a loop
    carries) asked about the memory conflicts instead of the dependences.  Memoized:
    a loop's check asks first whether it has any conflict, then again with its private
    buffers left out."""
    return _RACES.get((program.schedule, program.statements, program.context, stmt, dim,
                       private), lambda: _racing_access(program, stmt, dim, private))


_RACES = IdentityMemo()


def _racing_access(program: Program, stmt: str, dim: int,
                   private: frozenset[str]) -> str | None:
    inside = {a.array for name in loop_statements(program, stmt, dim)
              for a in program.statement(name).accesses}  # (others: no race in the loop)
    for array in program.arrays:
        if array.name in private or array.name not in inside:
            continue
        conflicts = _CONFLICTS.get((program.statements, array.name),
                                   lambda: memory_conflicts(program, array.name))
        found = carried_pairs(program, conflicts, stmt, dim, limit=1)
        if found:
            return _describe(program, *found[0])
    return None


_CONFLICTS = IdentityMemo()  # per program's statements and array: one relation object
# per conflict, so that the loops asked about share its times (legality.time_pairs)


def memory_conflicts(program: Program, array: str, *, stmts=None,
                     storage=None) -> Dependences:
    """Every pair of instances that touch one element of ``array``, the first writing it
    (an "output" conflict when both write, else "anti"), whatever the order: what must
    not run at once (the conflicts with reads come first).

    ``stmts``: only these statements (default: all).  ``storage(stmt, access)``: where
    an access really goes, as a map from instances (default: ``access.relation``, the
    element; an OpenCL plan passes each work-group's copy of a ``__local`` buffer)."""
    where = storage or (lambda stmt, access: access.relation)
    chosen = program.statements if stmts is None else [program.statement(s) for s in stmts]
    accesses = [(s.name, a) for s in chosen for a in s.accesses if a.array == array]
    accesses.sort(key=lambda pair: pair[1].kind is AccessKind.WRITE)  # reads first
    found = []
    for source, write in accesses:
        if write.kind is not AccessKind.WRITE:
            continue
        writes = where(source, write).intersect_domain(program.statement(source).domain)
        for sink, other in accesses:
            touches = where(sink, other).intersect_domain(program.statement(sink).domain)
            pairs = writes.apply_range(touches.reverse())
            if pairs.is_empty():
                continue
            kind = "output" if other.kind is AccessKind.WRITE else "anti"
            found.append(Dependence(kind, source, sink, array, pairs, writes))
    return Dependences(tuple(found))


def _describe(program: Program, conflict: Dependence, pairs: isl.Map) -> str:
    """The first pair of ``pairs`` (the writer first) through :func:`.counterexample.
    describe`: a write then a read is a flow pair, two writes an output pair."""
    kind = "output" if conflict.kind == "output" else "flow"
    pair = find_pair(program, kind, pairs, conflict.array, conflict.elements)
    return describe(pair, "in another iteration")
