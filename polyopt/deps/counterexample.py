"""The one counterexample printer: a concrete pair of instances that a schedule (or a
parallel loop, or a GPU mapping) puts in the wrong order or runs at once.

:func:`find_pair` picks the pair (small sizes first, then the lexicographically first
pair: readable and stable) and the element both instances touch; :func:`describe`
renders it, with the dependence when there is one.  Legality refusals
(:class:`~polyopt.deps.legality.Violation`), races between iterations of a parallel
loop, OpenCL barrier refusals, tensorize refusals and ``po.check`` reports all print
through :func:`describe`.

>>> pair = Counterexample("anti", "S[i=0]", "T[i=1]", "A[1]", {"n": 2})
>>> describe(pair, "but the new schedule runs the write first")
'S[i=0] reads A[1] before T[i=1] overwrites it, but the new schedule runs the write first (when n=2)'
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import islpy as isl

from ..domain.program import AccessKind, Program
from .describe import describe_map

@dataclass(frozen=True, slots=True)
class Counterexample:
    """``source`` (``"S[t=1, i=2]"``) runs first and ``sink`` second in the original
    order; both touch ``element`` (``"A[2]"``); ``params`` are the sizes of the example.
    ``kind``: ``"flow"`` (the source writes, the sink reads), ``"anti"`` (the source
    reads, the sink writes) or ``"output"`` (both write)."""

    kind: str
    source: str
    sink: str
    element: str
    params: dict[str, int]

    def __str__(self) -> str:
        return describe(self)


@dataclass(frozen=True, slots=True)
class ValueSource:
    """Where a value comes from: ``kind`` ``"written"`` (by the instance ``at``,
    ``"S0[i=0]"``), ``"entry"`` (the value the element ``at`` had on entry), ``"unset"``
    (an element of the buffer ``at`` that nothing wrote) or ``"unresolved"`` (passed
    through more copies than polyopt follows)."""

    kind: str
    at: str = ""

    def __str__(self) -> str:
        return {"written": f"the value written by {self.at}",
                "entry": f"the value {self.at} had on entry",
                "unset": f"an element of buffer {self.at} that nothing wrote",
                "unresolved": "a value passed through more copies than polyopt follows "
                              "(move the copies to fewer iterations)"}[self.kind]


@dataclass(frozen=True, slots=True)
class ChangedValue:
    """A point where a rewrite changes the values: ``kind`` ``"read"`` (the instance
    ``reader`` would read ``element`` from ``source``, where the original order reads
    ``original``, None when it does not read it), ``"unwritten"`` (nothing would write
    ``element``; the original leaves ``source`` in it), ``"extra"`` (``element`` would
    end with ``source``, which the original does not write), ``"other"`` (``element``
    would not end with ``source``, as in the original) or ``"unfilled"`` (the statement
    ``reader`` reads elements of the buffer ``element`` that no copy fills);
    ``params``: the sizes of the example."""

    kind: str
    element: str
    source: ValueSource | None = None
    params: dict = None
    reader: str | None = None
    original: ValueSource | None = None

    def __str__(self) -> str:
        return describe_change(self)


def describe_change(change: ChangedValue) -> str:
    """What would change at ``change``, with the sizes of the example.

    >>> describe_change(ChangedValue("read", "A[1]", ValueSource("entry", "A[1]"), {"n": 2},
    ...                              "S[i=1]", ValueSource("written", "S[i=0]")))
    'S[i=1] would read A[1] from the value A[1] had on entry, but in the original order it reads the value written by S[i=0] (when n=2)'
    """
    when = when_text(change.params or {})
    if change.kind == "read":
        expected = f", but in the original order it reads {change.original}" \
            if change.original is not None else ""
        return f"{change.reader} would read {change.element} from {change.source}{expected}{when}"
    if change.kind == "unfilled":
        return (f"{change.reader} reads elements of buffer {change.element} that no copy "
                "fills with one element of the array it mirrors; copy what it reads before it")
    what = {"unwritten": f"nothing would write it, where the original order leaves "
                         f"{change.source}",
            "extra": f"it would end with {change.source}, where the original order does not "
                     "write it",
            "other": f"it would not end with {change.source}, as in the original order"}
    return (f"{change.element}: {what[change.kind]}{when}; every element the kernel writes "
            "must end with the same value")


def when_text(params: dict[str, int]) -> str:
    """``" (when n=2, m=1)"``, or nothing for a program without sizes.

    >>> when_text({"n": 2}), when_text({})
    (' (when n=2)', '')
    """
    return (" (when " + ", ".join(f"{k}={v}" for k, v in params.items()) + ")") if params \
        else ""


def describe(pair: Counterexample, consequence: str | None = None, dependence=None,
             distance: tuple[int, ...] | None = None) -> str:
    """What the two instances do, then ``consequence`` (what goes wrong), the sizes and,
    when given, the ``dependence`` (``[flow dependence S -> T through A; dependence
    distance (1, 0)]``)."""
    facts = {
        "flow": f"{pair.source} writes {pair.element} that {pair.sink} reads",
        "anti": f"{pair.source} reads {pair.element} before {pair.sink} overwrites it",
        "output": f"{pair.source} and then {pair.sink} write {pair.element}",
    }
    text = facts[pair.kind] + (f", {consequence}" if consequence else "") + \
        when_text(pair.params)
    if dependence is not None:
        steps = f"; dependence distance ({', '.join(map(str, distance))})" \
            if distance is not None else ""
        text += (f" [{dependence.kind} dependence {dependence.source} -> {dependence.sink} "
                 f"through {dependence.array}{steps}]")
    return text


def find_pair(program: Program, kind: str, pairs: isl.Map, array: str,
              elements: isl.Map | None = None) -> Counterexample:
    """The first pair of ``pairs`` (``{ source[..] -> sink[..] }``, a dependence of
    ``kind`` through ``array`` or part of one) and the element of ``array`` both touch:
    one the source touches through ``elements`` (``{ source[..] -> array[..] }``;
    default: its accesses) and the sink touches too.  Without a concrete pair, the
    instances are named by the relation."""
    source = pairs.get_tuple_name(isl.dim_type.in_)
    sink = pairs.get_tuple_name(isl.dim_type.out)
    try:
        param_values, coords = first_point(pairs)
    except isl.Error:
        return Counterexample(kind, f"an instance of {source}",
                              f"an instance of {sink} ({describe_map(pairs)})",
                              f"an element of {array}", {})
    n_in = pairs.dim(isl.dim_type.in_)
    params = dict(zip(pairs.get_space().get_var_names(isl.dim_type.param), param_values))
    if elements is None:
        mine = _accesses(program, source, array, source_kind(kind))
        elements = mine[0] if len(mine) == 1 else None
    element = _shared_element(program, kind, sink, array, elements, coords[:n_in],
                              coords[n_in:], params)
    return Counterexample(kind, instance_text(program, source, coords[:n_in]),
                          instance_text(program, sink, coords[n_in:]), element, params)


def source_kind(kind: str) -> AccessKind:
    return AccessKind.READ if kind == "anti" else AccessKind.WRITE


def sink_kind(kind: str) -> AccessKind:
    return AccessKind.READ if kind == "flow" else AccessKind.WRITE


def instance_text(program: Program, stmt: str, values: list[int]) -> str:
    """``S[t=1, i=2]``: the instance of ``stmt`` at ``values``."""
    if not _has_statement(program, stmt):
        return f"{stmt}[{', '.join(map(str, values))}]"
    dims = program.statement(stmt).dims
    return f"{stmt}[{', '.join(f'{d}={v}' for d, v in zip(dims, values))}]"


def _accesses(program: Program, stmt: str, array: str, kind: AccessKind) -> list[isl.Map]:
    """The relations of ``stmt``'s accesses of ``kind`` to ``array``, in order."""
    if not _has_statement(program, stmt):
        return []
    return [a.relation for a in program.statement(stmt).accesses
            if a.array == array and a.kind is kind]


def _shared_element(program: Program, kind: str, sink: str, array: str, elements,
                    source: list[int], sink_at: list[int], params: dict[str, int]) -> str:
    """The element of ``array`` that the two instances really share: one the source
    touches through ``elements`` and the sink touches too (a statement may touch
    several elements of the array, e.g. a stencil's reads)."""
    if elements is None:
        return f"an element of {array}"
    try:
        return _element_text(program, kind, sink, array, elements, source, sink_at, params)
    except isl.Error:  # (spaces that do not fit: name the array only)
        return f"an element of {array}"


def _element_text(program, kind, sink, array, elements, source, sink_at, params) -> str:
    touched = _fixed(elements, source, params).range()
    for theirs in _accesses(program, sink, array, sink_kind(kind)):
        shared = touched.intersect(_fixed(theirs, sink_at, params).range())
        if not shared.is_empty():
            touched = shared
            break
    if touched.is_empty():
        return f"an element of {array}"
    point = touched.sample_point()
    index = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
             for k in range(touched.dim(isl.dim_type.set))]
    return f"{array}[{', '.join(map(str, index))}]"


def _fixed(relation: isl.Map, instance: list[int], params: dict[str, int]) -> isl.Map:
    """``relation`` restricted to one instance and to the parameter values."""
    point = isl.Set.universe(relation.get_space().domain())
    for pos, value in enumerate(instance):
        point = point.fix_val(isl.dim_type.set, pos, isl.Val(value))
    names = relation.get_space().get_var_names(isl.dim_type.param)
    for name, value in params.items():
        if name in names:
            point = point.fix_val(isl.dim_type.param, names.index(name), isl.Val(value))
    return relation.intersect_domain(point)


def _has_statement(program: Program, name: str) -> bool:
    return any(s.name == name for s in program.statements)


def first_point(pairs: isl.Map) -> tuple[list[int], list[int]]:
    """Parameter values and coordinates of one pair: small parameters (the first in
    lexicographic order within growing boxes), then the lexicographically first pair
    for them (a readable, stable counterexample); any pair when no small parameters
    have one.

    The search is bounded: isl's lexmin over the parameters and the pair together can
    take minutes on relations with floor divisions (a diamond-tiled reduction), while
    an emptiness test with the parameters fixed, and the lexmin of the bounded pairs
    that remain, take microseconds.

    >>> first_point(isl.Map("[n] -> { S[i] -> S[i + 1] : 3 <= i < n }"))
    ([4], [3, 4])
    """
    wrapped = pairs.wrap()
    n_par = wrapped.dim(isl.dim_type.param)
    n_set = wrapped.dim(isl.dim_type.set)
    params = _small_parameters(wrapped, n_par)
    if params is not None:
        fixed = wrapped
        for pos, value in enumerate(params):
            fixed = fixed.fix_val(isl.dim_type.param, pos, isl.Val(value))
        try:
            first = fixed.lexmin()
        except isl.Error:  # isl (bundled with islpy 2026.2.2) fails on some sets with
            first = fixed  # divisions ("affine expression involves some of the domain
            # dimensions"): any pair of these small parameters is a witness too
        if not first.is_empty():
            point = first.sample_point()
            return list(params), [point.get_coordinate_val(isl.dim_type.set, k).to_python()
                                  for k in range(n_set)]
    point = wrapped.sample_point()
    return ([point.get_coordinate_val(isl.dim_type.param, k).to_python() for k in range(n_par)],
            [point.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n_set)])


_PARAMETER_CHECKS = 400  # emptiness tests at most, in the search for small parameters


def _small_parameters(wrapped: isl.Set, n_par: int) -> tuple[int, ...] | None:
    """The first parameter values, in lexicographic order within the boxes [0, 1],
    [0, 3], [0, 7], ... of the parameter space, for which ``wrapped`` has a point;
    None when none is found within :data:`_PARAMETER_CHECKS` tests."""
    if n_par == 0:
        return () if not wrapped.is_empty() else None
    checked: set[tuple[int, ...]] = set()
    bound = 1
    while len(checked) < _PARAMETER_CHECKS:
        for values in itertools.product(range(bound + 1), repeat=n_par):
            if values in checked:
                continue
            if len(checked) >= _PARAMETER_CHECKS:
                return None
            checked.add(values)
            fixed = wrapped
            for pos, value in enumerate(values):
                fixed = fixed.fix_val(isl.dim_type.param, pos, isl.Val(value))
            try:
                if not fixed.is_empty():
                    return values
            except isl.Error:  # see first_point: try other parameters
                continue
        bound = 2 * bound + 1
    return None
