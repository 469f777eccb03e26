"""Is a schedule legal? Exact answers from isl, with a concrete counterexample.

A schedule is legal when, for every dependence ``s -> t``, it runs ``s`` strictly
before ``t`` (for every parameter value the context allows).  A loop may run in
parallel when no dependence between two of its iterations goes from one iteration
to another (it "carries" none).

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
>>> s = po.create_schedule(S)
>>> deps = po.deps(s)
>>> find_violations(s.program, deps) == []
True
>>> [v.dependence.kind for v in carried_dependences(s.program, deps, "S_update", 4)]
['flow', 'anti', 'output']
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..domain.memo import IdentityMemo
from ..domain.program import Program
from ..errors import REPORT, InternalError
from ..schedule_errors import DependenceViolationError
from .counterexample import Counterexample, describe, find_pair
from .dataflow import Dependence, Dependences
from .effort import bounded_effort


@dataclass(frozen=True, slots=True)
class Violation:
    """A dependence the schedule breaks, with one concrete pair of instances."""

    dependence: Dependence
    pairs: isl.Map           # every violating (source, sink) pair
    source: str              # "S[t=1, i=2]"
    sink: str
    element: str             # "A[2]"
    params: dict[str, int]
    distance: tuple[int, ...] | None

    @property
    def example(self) -> Counterexample:
        """The pair of instances, for :func:`.counterexample.describe`."""
        return Counterexample(self.dependence.kind, self.source, self.sink, self.element,
                              self.params)

    def explain(self, consequence: str | None = None) -> str:
        """What the dependence is and why the schedule breaks it.

        ``consequence`` replaces the default "but the new schedule runs ... first"."""
        return describe(self.example, consequence or _DEFAULTS[self.dependence.kind],
                        self.dependence, self.distance)


_DEFAULTS = {"flow": "but the new schedule runs the reader first",
             "anti": "but the new schedule runs the write first",
             "output": "but the new schedule runs them in the other order"}


def _schedule_of(program: Program, stmt: str) -> isl.Map:
    return program.schedule_of(stmt)


def find_violations(program: Program, deps: Dependences, *, limit: int | None = None
                    ) -> list[Violation]:
    """Every dependence of ``deps`` that ``program``'s schedule runs in the wrong order
    (isl's effort bounded: :mod:`.effort`)."""
    with bounded_effort("the check that every dependence runs in order"):
        return _violations(program, deps, limit)


def _violations(program: Program, deps: Dependences, limit: int | None) -> list[Violation]:
    found = []
    for dep in deps:
        times = time_pairs(program, dep)
        if times.is_empty():
            continue
        not_after = _not_after(times.get_space().domain())
        if times.intersect(not_after).intersect_params(program.context).is_empty():
            continue
        source, sink = _schedule_of(program, dep.source), _schedule_of(program, dep.sink)
        wrong = source.apply_range(not_after).apply_range(sink.reverse())
        pairs = dep.relation.intersect(wrong).intersect_params(program.context)
        found.append(violation(program, dep, pairs))
        if limit is not None and len(found) >= limit:
            break
    return found


_TIME_PAIRS = IdentityMemo()


def _not_after(space: isl.Space) -> isl.Map:
    """Pairs of times ``t >= t'`` (lexicographically) in ``space``: one map per space
    (by its text; the dependences of a program mostly share one)."""
    return _SPACE_MAPS.get(("lex_ge", str(space)), lambda: isl.Map.lex_ge(space))


_SPACE_MAPS = IdentityMemo(size=64)  # (spaces and dimensions by text: values)


def time_pairs(program: Program, dep: Dependence) -> isl.Map:
    """The pairs of times at which the schedule runs the pairs of ``dep``: the tests
    (wrong order, carried by a loop) are cheap on them, and only a refusal's example
    goes back to instances (composing rows with the lexicographic order first can take
    seconds on tiled schedules with many floor divisions)."""
    source, sink = _schedule_of(program, dep.source), _schedule_of(program, dep.sink)
    return _TIME_PAIRS.get((dep.relation, source, sink), lambda: _TIME_PAIRS_BY_TEXT.get(
        (str(dep.relation), str(source), str(sink)),
        lambda: dep.relation.apply_domain(source).apply_range(sink)))


# the same relations come again as new objects (a replayed or forked schedule, the
# dependences recomputed after a rewrite): equal texts are equal maps
_TIME_PAIRS_BY_TEXT = IdentityMemo(size=64)


def carried_dependences(program: Program, deps: Dependences, stmt: str, dim: int
                        ) -> list[Violation]:
    """Dependences carried by the loop at schedule dimension ``dim`` of ``stmt``, each
    with an example pair (see :func:`carried_pairs`)."""
    return [violation(program, dep, pairs)
            for dep, pairs in carried_pairs(program, deps, stmt, dim)]


def carried_pairs(program: Program, deps: Dependences, stmt: str, dim: int, *,
                  limit: int | None = None) -> list[tuple[Dependence, isl.Map]]:
    """The one answer to "does this loop carry a dependence": the pairs of each
    dependence that run in one iteration of every loop enclosing ``dim`` (their times
    agree before ``dim``, as for an instance of ``stmt``) but in two iterations of the
    loop at ``dim`` of ``stmt``.  Legality (``parallel``, ``vectorize``, ``bind``) and
    ``po.check``'s loop report use it; it holds for any schedule, polyopt's or one
    written by hand.  ``limit``: stop after that many dependences.  isl's effort is
    bounded (:mod:`.effort`)."""
    with bounded_effort(f"the check whether loop dimension {dim} of {stmt} carries a "
                        "dependence"):
        return _carried_pairs(program, deps, stmt, dim, limit)


def _carried_pairs(program: Program, deps: Dependences, stmt: str, dim: int,
                   limit: int | None) -> list[tuple[Dependence, isl.Map]]:
    row = program.schedule_of(stmt)
    width = row.dim(isl.dim_type.out)
    if dim >= width:
        return []
    apart = other_iteration(row.get_space().range(), dim)
    loop = None
    found = []
    inside = loop_statements(program, stmt, dim)
    for dep in deps:
        if dep.source not in inside or dep.sink not in inside:
            continue  # (a constant before ``dim`` differs: never in one iteration of it)
        source, sink = program.schedule_of(dep.source), program.schedule_of(dep.sink)
        if source.dim(isl.dim_type.out) != width or sink.dim(isl.dim_type.out) != width:
            continue
        times = time_pairs(program, dep)
        # exact and cheap first: the pairs apart at ``dim`` with equal times before it
        # (``loop`` is a subset; when ``dep`` involves ``stmt`` the two are equal: its
        # times' prefixes are those of instances of ``stmt``)
        if times.is_empty() or times.intersect(apart).intersect_params(
                program.context).is_empty():
            continue
        if stmt not in (dep.source, dep.sink):
            if loop is None:
                loop = _loop_pairs(row, dim, apart)
            if times.intersect(loop).intersect_params(program.context).is_empty():
                continue
        within = apart if loop is None else loop
        same_loop = source.apply_range(within).apply_range(sink.reverse())
        pairs = dep.relation.intersect(same_loop).intersect_params(program.context)
        if not pairs.is_empty():
            found.append((dep, pairs))
            if limit is not None and len(found) >= limit:
                break
    return found


def _loop_pairs(row: isl.Map, dim: int, apart: isl.Map) -> isl.Map:
    """The pairs of ``apart`` whose loops enclosing ``dim`` are those of an instance of
    the statement scheduled by ``row``."""
    width = row.dim(isl.dim_type.out)
    prefixes = row.range().project_out(isl.dim_type.set, dim, width - dim)
    return apart.intersect_domain(prefixes.add_dims(isl.dim_type.set, width - dim))


def loop_statements(program: Program, stmt: str, dim: int) -> frozenset[str]:
    """The statements that run inside the loop at dimension ``dim`` of ``stmt``
    (:func:`shares_loop`): only their instances can meet in two of its iterations."""
    return _LOOP_STATEMENTS.get((program.schedule, program.statements, stmt, dim),
                                lambda: frozenset(st.name for st in program.statements
                                                  if shares_loop(program, st.name, stmt, dim)))


_LOOP_STATEMENTS = IdentityMemo()


def shares_loop(program: Program, other: str, stmt: str, dim: int) -> bool:
    """Whether ``other`` runs inside the loop at dimension ``dim`` of ``stmt``."""
    fixed = _fixed_entries(program)
    for name in (stmt, other):
        if name not in fixed:
            program.statement(name)  # (raises: no statement of that name)
    a, b = fixed[stmt], fixed[other]
    if a is None or b is None:  # (a statement without instances)
        return other == stmt
    return all(va is None or vb is None or va == vb for va, vb in zip(a[:dim], b[:dim]))


def _fixed_entries(program: Program) -> dict[str, tuple | None]:
    """Per statement, the entries of its schedule row that are one constant (else None
    at that position), or None when it has no instance; once per schedule."""
    return _FIXED_ENTRIES.get((program.schedule, program.statements),
                              lambda: {st.name: _row_constants(program.schedule_of(st.name))
                                       for st in program.statements})


_FIXED_ENTRIES = IdentityMemo(size=32)


def _row_constants(row: isl.Map) -> tuple | None:
    if row.is_empty():
        return None
    times = row.range()
    values = [times.plain_get_val_if_fixed(isl.dim_type.set, d)
              for d in range(times.dim(isl.dim_type.set))]
    return tuple(None if v.is_nan() else v.to_python() for v in values)


def other_iteration(space: isl.Space, dim: int) -> isl.Map:
    """Pairs of times equal before ``dim`` and different at ``dim`` (two iterations of
    the loop at that schedule dimension); built once per space and ``dim``."""
    return _SPACE_MAPS.get(("apart", str(space), dim), lambda: _other_iteration(space, dim))


def _other_iteration(space: isl.Space, dim: int) -> isl.Map:
    result = isl.Map.universe(isl.Space.map_from_set(space))
    for d in range(dim):
        result = result.equate(isl.dim_type.in_, d, isl.dim_type.out, d)
    return result.subtract(result.equate(isl.dim_type.in_, dim, isl.dim_type.out, dim))


def violation(program: Program, dep: Dependence, pairs: isl.Map) -> Violation:
    """``dep`` broken at ``pairs`` (some of its pairs), with the first of them."""
    pair = find_pair(program, dep.kind, pairs, dep.array, dep.elements)
    return Violation(dep, pairs, pair.source, pair.sink, pair.element, pair.params,
                     _uniform_distance(dep, pairs))


def _uniform_distance(dep: Dependence, pairs: isl.Map) -> tuple[int, ...] | None:
    """The constant distance ``sink - source`` of the violating ``pairs`` of a dependence
    within one statement (a dependence may have several distances, e.g. (0, 1) and
    (1, -1) for ``A[i] = A[i - 1] + A[i + 1]`` in a time loop: the pairs that a
    schedule breaks are what a repair must fix)."""
    if dep.source != dep.sink:
        return None
    deltas = pairs.deltas()
    if deltas.is_empty():
        return None
    point = deltas.sample_point()
    values = tuple(point.get_coordinate_val(isl.dim_type.set, k).to_python()
                   for k in range(deltas.dim(isl.dim_type.set)))
    single = isl.Set.universe(deltas.get_space())
    for pos, value in enumerate(values):
        single = single.fix_val(isl.dim_type.set, pos, isl.Val(value))
    return values if deltas.is_subset(single) else None


def ensure_legal(program: Program, deps: Dependences, *, transform: str,
                 repair=None) -> None:
    """Raise :class:`IllegalScheduleError` if ``program``'s schedule breaks a dependence.

    ``repair(violation)`` may return a suggestion, appended to the message.
    """
    ensure_every_instance(program, transform)
    violations = find_violations(program, deps, limit=1)
    if not violations:
        return
    first = violations[0]
    raise DependenceViolationError(transform, first,
                                   repair(first) if repair is not None else None)



def ensure_every_instance(program: Program, transform: str) -> None:
    """Raise :class:`InternalError` if the schedule leaves out an instance of a statement
    (for sizes the context allows). The primitives keep every instance by construction;
    this is the net under them, since a dropped instance would take its dependences
    with it. (Two instances at one time are allowed: isl runs them in some order, and a
    dependence between them is refused as a violation.)

    >>> import polyopt as po
    >>> n = po.var("n"); A = po.placeholder((n,), name="A")
    >>> B = po.compute((n,), lambda i: A[i] + 1, name="B")
    >>> ensure_every_instance(po.create_schedule(B).program, "split")
    """
    with bounded_effort("the check that the schedule runs every instance"):
        for stmt in program.statements:
            row = program.schedule_of(stmt.name).intersect_domain(stmt.domain)
            missing = stmt.domain.subtract(_scheduled(row)).intersect_params(program.context)
            if not missing.is_empty():
                raise InternalError(
                    f"{transform} built a schedule that leaves out instances of "
                    f"{stmt.name} ({missing.coalesce()}); {REPORT}")


def _scheduled(row: isl.Map) -> isl.Set:
    """The instances ``row`` gives a time: ``row.domain()`` when that has no existential
    variables, else the domain of ``row`` read as a function, whose pieces are defined
    with explicit floors, which isl subtracts at once and within its operation bound.
    (Under symbolic splits and a wavefront, projecting the time dimensions out left
    existential variables with coefficients of 12 digits, and subtracting that from the
    domain ran for minutes, out of reach of the bound: issue 32.  Reading every row as a
    function costs more where the projection is plain: nine nested splits.)  A row that is not single-valued (two times for
    one instance) is read through its lexicographic minimum, which has the same domain.

    >>> str(_scheduled(isl.Map("[n] -> { S[i] -> [o, i] : 0 <= i < n and i = 4o }")))
    '[n] -> { S[i] : (i) mod 4 = 0 and 0 <= i < n }'
    >>> str(_scheduled(isl.Map("[n] -> { S[i] -> [o] : 0 <= i < n and i <= o <= i + 1 }")))
    '[n] -> { S[i] : 0 <= i < n }'
    """
    domain = row.domain()
    if _divisions_known(domain):  # nothing existential: isl subtracts it at once
        return domain
    try:
        return isl.PwMultiAff.from_map(row).domain()
    except isl.Error:  # not single-valued (or out of effort: then so is the next call)
        return row.lexmin_pw_multi_aff().domain()


def _divisions_known(domain: isl.Set) -> bool:
    """Whether every integer division of ``domain`` is an explicit floor."""
    for piece in domain.get_basic_sets():
        for k in range(piece.dim(isl.dim_type.div)):
            try:
                piece.get_div(k)
            except isl.Error:  # "some divs are unknown"
                return False
    return True
