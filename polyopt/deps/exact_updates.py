"""Updates by ``max`` or ``min`` of integers, reordered: the dependences that fix the
order of the updates of one element relaxed, as reductions' are (:mod:`.reductions`).

An in-place kernel's statement ``T[e] = max(T[e], x)`` (``maximum``/``minimum`` of
integers, ``x`` not reading ``T[e]``) updates ``T[e]`` by an operation that is exactly
associative and commutative: integers have no rounding and no NaN, so the updates of
one element may run in any order and give the same bits.  (Not for floating point:
``a >= b ? a : b`` with a NaN depends on the order of its operands.)  Statements that
so update one array by the same operation form a group (nussinov's five
``table[i][j] = max(table[i][j], ...)``) when they are the only statements writing it
and every other read of an element comes after its last update (a partial maximum
that is read, or a plain write in between, fixes the order: no relaxation then).

For a group, the dependences between two updates of one element are dropped; a
dependence that goes through the element an update writes is widened to all the
updates of that element (so they all run after what the first waited for, and before
what the last was waited for), on either side.  Every other dependence stays:
``table[i][k] + table[k + 1][j]`` still reads the final values of those elements.
A loop marked parallel or vectorized is still checked against the exact dependences.

>>> import polyopt as po
>>> k = po.from_c('''
... #define N 10
... void rowmax(int n, int A[N][N], int m[N]) {
...   int i, j;
... #pragma scop
...   for (i = 0; i < n; i++)
...     for (j = 0; j < n; j++)
...       m[i] = m[i] >= A[i][j] ? m[i] : A[i][j];
... #pragma endscop
... }''')
>>> s = po.create_schedule(k)
>>> exact_update_groups(s.program)
{('m', 'maximum'): ('S0',)}
>>> [d.kind for d in s.deps], [d.kind for d in relaxed_updates(s.program, s.deps)]
(['flow', 'anti', 'output'], [])
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.accesses import read_accesses
from ..domain.affine import AffineSpace
from ..domain.memo import IdentityMemo
from ..domain.program import Program
from .. import dtypes
from ..te.expr import Call, TensorRead
from .dataflow import Dependences

_EXACT = ("maximum", "minimum")
_RELAXED = IdentityMemo(size=64)


def exact_update_groups(program: Program) -> dict[tuple[str, str], tuple[str, ...]]:
    """``{(array, operation): statements}``: the statements ``T[e] = op(T[e], x)`` of an
    exact operation (see the module doc), grouped by the array and operation, when they
    are the only statements that write the array (a plain write, or an update by
    another operation, between two updates of an element would fix their order)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for stmt in program.statements:
        operation = _exact_update(program, stmt)
        if operation is not None:
            groups.setdefault((stmt.writes[0].array, operation), []).append(stmt.name)
    writers = {}
    for stmt in program.statements:
        for access in stmt.writes:
            writers.setdefault(access.array, set()).add(stmt.name)
    return {key: tuple(names) for key, names in groups.items()
            if writers[key[0]] == set(names)}


def _final_reads_only(program: Program, deps: Dependences, array: str, names) -> bool:
    """Whether every read of ``array`` but the updates' own (of the element they update)
    comes after the last update of its element: no anti dependence enters an update
    from another read (a partial maximum read between two updates fixes their order)."""
    for dep in deps:
        if dep.kind != "anti" or dep.array != array or dep.sink not in names:
            continue
        if dep.source not in names:
            return False
        own = program.statement(dep.source).writes[0].relation
        if not dep.elements.intersect_domain(dep.relation.domain()).subtract(own).is_empty():
            return False
    return True


def _exact_update(program: Program, stmt) -> str | None:
    value = stmt.value
    if not isinstance(value, Call) or value.func not in _EXACT or len(stmt.writes) != 1:
        return None
    (write,) = stmt.writes
    array = program.array(write.array)
    if not dtypes.is_int(array.dtype) or not dtypes.is_int(value.dtype):
        return None
    written = write.relation.intersect_domain(stmt.domain)
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    accumulators, others = 0, []
    for node, access in read_accesses(stmt, space):
        if access.array != write.array:
            continue
        if any(node is arg for arg in value.args) and isinstance(node, TensorRead) and \
                access.relation.intersect_domain(stmt.domain).is_equal(written):
            accumulators += 1
        else:
            others.append(access)
    if accumulators != 1:
        return None
    for access in others:  # an operand reading the element being updated: not exact
        if not access.relation.intersect(written).intersect_params(program.context).is_empty():
            return None
    return value.func


def relaxed_updates(program: Program, deps: Dependences) -> Dependences:
    """``deps`` with the order of every exact update group relaxed (see above)."""
    return _RELAXED.get((deps, program.statements), lambda: _relaxed(program, deps))


def _relaxed(program: Program, deps: Dependences) -> Dependences:
    groups = {key: names for key, names in exact_update_groups(program).items()
              if _final_reads_only(program, deps, key[0], names)}
    return _relax(program, deps, groups) if groups else deps


def _relax(program: Program, deps: Dependences, groups: dict) -> Dependences:
    member = {name: (array, names) for (array, _), names in groups.items() for name in names}
    writes = {name: program.statement(name).writes[0].relation.intersect_domain(
        program.statement(name).domain) for name in member}

    def same_cell(a: str, b: str) -> isl.Map:
        return writes[a].apply_range(writes[b].reverse())

    found: dict[tuple, list] = {}
    for dep in deps:
        source = member.get(dep.source)
        sink = member.get(dep.sink)
        source = source[1] if source and source[0] == dep.array else None
        sink = sink[1] if sink and sink[0] == dep.array else None
        if source is None and sink is None:
            found.setdefault((dep.kind, dep.source, dep.sink, dep.array), []).append(
                (dep.relation, dep.elements))
            continue
        relation = dep.relation
        if source is not None and source is sink:  # the order of the updates of a cell
            relation = relation.subtract(same_cell(dep.source, dep.sink))
        targets = {dep.sink: [relation]}
        if sink is not None:  # through the element the sink updates: before all its updates
            through = relation.intersect(dep.elements.apply_range(writes[dep.sink].reverse()))
            if not through.is_empty():
                for other in sink:
                    targets.setdefault(other, []).append(
                        through.apply_range(same_cell(dep.sink, other)))
        result = {(dep.source, t): _union(rs) for t, rs in targets.items()}
        if source is not None:  # through the element the source updates: after all of them
            mine = dep.elements.intersect(writes[dep.source]).domain()
            for (_, target), relation in list(result.items()):
                through = relation.intersect_domain(mine)
                if through.is_empty():
                    continue
                for other in source:
                    widened = same_cell(other, dep.source).apply_range(through)
                    key = (other, target)
                    result[key] = widened if key not in result else result[key].union(widened)
        for (a, b), relation in result.items():
            if not relation.is_empty():
                elements = dep.elements if a == dep.source else writes[a]
                found.setdefault((dep.kind, a, b, dep.array), []).append((relation, elements))
    kept = []
    for (kind, a, b, array), parts in found.items():
        relation = _union([r for r, _ in parts]).coalesce()
        elements = _union([e for _, e in parts]).coalesce()
        template = next(d for d in deps if d.kind == kind and d.array == array)
        kept.append(dataclasses.replace(template, source=a, sink=b, relation=relation,
                                        elements=elements))
    return Dependences(tuple(kept))


def _union(maps: list) -> isl.Map:
    result = maps[0]
    for m in maps[1:]:
        result = result.union(m)
    return result
