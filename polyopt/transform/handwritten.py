"""Checking a hand-written schedule against a program's exact dependences.

``po.check(s, schedule=...)`` replaces the schedule of ``s`` (a :class:`Schedule`, a
``Program`` or anything with a ``.program``) by the one given and reports whether it
runs every dependence source before its sink, with a counterexample for every broken
dependence, and which of its dimensions are parallel loops.  The dependences are
those of the program as built (``s.deps``; for a bare ``Program``, the dependences
under its own schedule).  With ``schedule=None`` the current schedule is checked.

The schedule is one affine map per statement, from the statement's instances to
time; instances run in the lexicographic order of their times.  It may be given as

* an isl union map, as text or an ``isl.UnionMap``:
  ``"[N] -> { S0[t, i, j] -> [t, t + i, t + i + j] }"`` (input dimensions are taken by
  position; parameters must be the program's, any subset of them);
* an isl schedule tree (``isl.Schedule`` or its text, ``{ domain: "...", child: ... }``),
  flattened with ``get_map()``;
* a dict, or JSON (text or a ``.json`` file), in the spirit of Polly's JSCoP::

    {"statements": [
        {"name": "C_init",   "schedule": "[M, N] -> { C_init[i, j] -> [j, i, 0, 0] }"},
        {"name": "C_update", "schedule": "{ C_update[i, j, k] -> [j, i, 1, k] }"}]}

  each entry maps the statement ``name`` and nothing else (other keys, such as
  JSCoP's ``domain`` and ``accesses``, are ignored);
* a path (``str`` without ``{`` or ``os.PathLike``) to a file holding one of these.

Every statement needs a map, defined and single-valued on its whole domain, and all
maps must have the same number of output dimensions (no implicit zero padding: write
trailing zeros, as in the ``[j, i, 0, 0]`` above) and the same range tuple name (none,
usually).  Anything else raises :class:`ScheduleFormatError` saying what to fix
(the text, JSON and files are read by :mod:`.schedule_input`).

``report.parallel_loops`` describes every dimension of every statement's schedule:
"static" when its value does not depend on the instance (it orders statements), else
a loop, "sequential" when some dependence pair runs in one iteration of the loops
around it (the same time prefix as an instance of the statement) but in two different
iterations of it, and "parallel" otherwise.

>>> import polyopt as po
>>> M, N, K = po.var("M"), po.var("N"), po.var("K")
>>> A = po.placeholder((M, K), name="A"); B = po.placeholder((K, N), name="B")
>>> k = po.reduce_axis((0, K), name="k")
>>> C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
>>> report = po.check(po.create_schedule(C), schedule=
...     "[K] -> { C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, K - 1 - k] }",
...     strict_fp=True)  # (without it, the sum may be reassociated: legal)
>>> report.legal
False
>>> print(report.violations[0].sink)
C_update[i=0, j=0, k=1]
>>> print(po.check(po.create_schedule(C), schedule=
...     "{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }"))
legal
loops:
  C_init: dimension 0 (j): parallel; dimension 1 (i): parallel; dimension 2: static 0; dimension 3: static 0
  C_update: dimension 0 (j): parallel; dimension 1 (i): parallel; dimension 2: static 1; dimension 3 (k): sequential (carries flow, anti, output C_update -> C_update)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import islpy as isl

from ..deps.dataflow import Dependence, Dependences, compute_dependences
from ..deps.effort import bounded_effort
from ..deps.describe import aff_text
from ..deps.legality import Violation, carried_pairs, find_violations
from ..deps.reductions import reassociated
from ..domain.affine import parts
from ..domain.program import Program
from ..domain.schedule import band_of_members
from ..errors import InvalidArgumentError, ScheduleFormatError, public, public_methods
from .schedule_input import fail, isl_reason, merge_pieces, read_schedule


@dataclass(frozen=True, slots=True)
class LoopStatus:
    """Schedule dimension ``dim`` of ``statement``: its value, and whether it is a
    ``"parallel"`` loop (carries no dependence), a ``"sequential"`` one or ``"static"``
    (the same value for every instance: it orders statements, it is no loop)."""

    statement: str
    dim: int
    expression: str
    kind: str
    carried: tuple[Dependence, ...] = field(default=(), compare=False, repr=False)

    @property
    def parallel(self) -> bool:
        return self.kind == "parallel"

    def __str__(self) -> str:
        if self.kind == "static":
            return f"dimension {self.dim}: static {self.expression}"
        text = f"dimension {self.dim} ({self.expression}): {self.kind}"
        if self.carried:
            kinds = list(dict.fromkeys(d.kind for d in self.carried))
            pairs = list(dict.fromkeys(f"{d.source} -> {d.sink}" for d in self.carried))
            text += f" (carries {', '.join(kinds)} {', '.join(pairs)})"
        return text


@public_methods
@dataclass(frozen=True, slots=True)
class CheckReport:
    """The outcome of :func:`check`; ``str(report)`` is the readable report."""

    legal: bool
    violations: tuple[Violation, ...]
    parallel_loops: tuple[LoopStatus, ...]
    program: Program = field(compare=False, repr=False)

    def loops_of(self, statement: str) -> tuple[LoopStatus, ...]:
        return tuple(loop for loop in self.parallel_loops if loop.statement == statement)

    def __str__(self) -> str:
        if self.legal:
            lines = ["legal"]
        else:
            count = len(self.violations)
            lines = [f"illegal: {count} dependence{'s' if count > 1 else ''} violated"]
            lines += [f"  - {v.explain()}" for v in self.violations]
        lines.append("loops:")
        for stmt in self.program.statements:
            loops = self.loops_of(stmt.name)
            lines.append(f"  {stmt.name}: " + ("; ".join(map(str, loops)) if loops
                                               else "no instances"))
        return "\n".join(lines)


@public
def check(program_or_schedule, schedule=None, *, deps: Dependences | None = None,
          strict_fp: bool | None = None) -> CheckReport:
    """Check ``schedule`` (see the module docstring for the forms it takes) against the
    exact dependences of ``program_or_schedule``; ``deps`` reuses ones already computed.

    The verdict is the one the schedule primitives and ``s.check()`` give: a reduction's
    updates may accumulate in any order (TVM's semantics, :mod:`polyopt.deps.reductions`)
    unless ``strict_fp=True``; ``strict_fp=None`` follows the schedule
    (``po.create_schedule(..., strict_fp=...)``; a bare program reassociates, an in-place
    kernel relaxes only its exact updates, as its primitives do).  The loop report uses
    the exact dependences: a reduction loop is sequential (its iterations would race).

    >>> import polyopt as po
    >>> A = po.placeholder((8,), name="A")
    >>> B = po.compute((8,), lambda i: A[i] * 2, name="B")
    >>> po.check(po.create_schedule(B), schedule="{ B[i] -> [7 - i] }").legal
    True
    """
    program = getattr(program_or_schedule, "program", program_or_schedule)
    if not isinstance(program, Program):
        raise InvalidArgumentError(f"po.check takes a po.Schedule, a Program or a kernel, "
                                  f"got {program_or_schedule!r}")
    if deps is None:
        deps = getattr(program_or_schedule, "deps", None)
        if not isinstance(deps, Dependences):
            deps = compute_dependences(program)
    built = program  # its stages say which statements are a reduction's updates
    if schedule is not None:
        program = program.replace(schedule=schedule_from(program, schedule))
    if strict_fp is not None and not isinstance(strict_fp, bool):
        raise InvalidArgumentError(f"po.check: strict_fp is True, False or None, got "
                                   f"{strict_fp!r}")
    order = reassociated(built, deps) if _reassociates(program_or_schedule, strict_fp) \
        else deps
    violations = tuple(find_violations(program, order))
    return CheckReport(not violations, violations, _loops(program, deps), program)


def _reassociates(program_or_schedule, strict_fp: bool | None) -> bool:
    """Whether reductions may accumulate in any order (see :func:`check`)."""
    if strict_fp is not None:
        return not strict_fp
    reference = getattr(getattr(program_or_schedule, "state", None), "reference", None)
    return getattr(reference, "reassociate", True)  # (a kernel's: its exact updates)


def schedule_from(program: Program, spec) -> isl.Schedule:
    """The isl schedule that ``spec`` describes for ``program``, after every check."""
    entries, origin = read_schedule(spec)
    entries = [(named, merge_pieces(umap, origin)) for named, umap in entries]
    with bounded_effort("the check of the schedule's form"):
        umap = _checked(program, entries, origin)
        if umap.is_empty():  # no statement has an instance (at these sizes): no order
            return isl.Schedule.from_domain(program.domains)
        try:
            band = _band_of(umap)
        except isl.Error as err:
            raise ScheduleFormatError(f"isl cannot make an affine schedule of it "
                                      f"({isl_reason(err)}); write each dimension as a "
                                      "quasi-affine expression") from None
        return isl.Schedule.from_domain(program.domains).insert_partial_schedule(band)


def _band_of(umap: isl.UnionMap) -> isl.MultiUnionPwAff:
    """``MultiUnionPwAff.from_union_map(umap)``, one output dimension at a time: isl's
    conversion of the whole map splits every dimension on the others' local variables
    (28 pieces each for ``{ B[i] -> [floor(i/64), floor(i/32) mod 2, ..., i mod 2] }``,
    doubling per level), one dimension at a time keeps one piece each."""
    maps: list[isl.Map] = []
    umap.foreach_map(maps.append)
    width = maps[0].dim(isl.dim_type.out)
    if width == 0 or any(m.dim(isl.dim_type.out) != width for m in maps):
        return isl.MultiUnionPwAff.from_union_map(umap)  # isl's own message for these
    dims: list = [None] * width
    for relation in maps:
        for k in range(width):
            value = isl.UnionPwAff.from_pw_aff(_dimension(relation, k))
            dims[k] = value if dims[k] is None else dims[k].union_add(value)
    return band_of_members(dims, umap.get_space())


def _dimension(relation: isl.Map, k: int) -> isl.PwAff:
    """Output dimension ``k`` of the single-valued ``relation`` as a function (of as
    many pieces as that dimension alone needs, see :func:`_band_of`)."""
    width = relation.dim(isl.dim_type.out)
    one = relation.project_out(isl.dim_type.out, k + 1, width - k - 1) \
        .project_out(isl.dim_type.out, 0, k)
    return isl.PwMultiAff.from_map(one).get_pw_aff(0)


def _checked(program: Program, entries, origin: str) -> isl.UnionMap:
    """One map per statement (named like its dimensions), checked, in a union."""
    known = {s.name: s for s in program.statements}
    rows: dict[str, isl.Map] = {}
    for named, umap in entries:
        maps = parts(umap)
        for relation in maps:
            name = relation.get_tuple_name(isl.dim_type.in_) if relation.has_tuple_name(
                isl.dim_type.in_) else None
            if named is not None and name != named:
                fail(f"the JSON entry of statement {named} maps {name or 'an unnamed tuple'}"
                      f"; write {named}[...] -> [...]")
            if name not in known:
                fail(f"the {origin} maps unknown statement {name or '(unnamed)'}; "
                      f"the program's statements are: {', '.join(known)}")
            rows[name] = rows[name].union(relation) if name in rows else relation
    missing = [name for name in known if name not in rows]
    if missing:
        fail(f"the {origin} has no map for statement{'s' if len(missing) > 1 else ''} "
              f"{', '.join(missing)}; every statement needs one")
    extra = set().union(*(r.get_var_names(isl.dim_type.param) for r in rows.values()))
    extra -= set(program.param_names)
    if extra:
        fail(f"the {origin} uses parameter{'s' if len(extra) > 1 else ''} "
              f"{', '.join(sorted(extra))} that the program does not have; its parameters "
              f"are: {', '.join(program.param_names) or '(none)'}")
    _check_ranges(rows, origin)
    result = isl.UnionMap.empty(program.context.get_space())
    for name, relation in rows.items():
        result = result.union(isl.UnionMap.from_map(_checked_row(program, name, relation)))
    return result


def _check_ranges(rows: dict[str, isl.Map], origin: str) -> None:
    widths = {name: r.dim(isl.dim_type.out) for name, r in rows.items()}
    if len(set(widths.values())) > 1:
        listed = ", ".join(f"{name} has {w}" for name, w in widths.items())
        fail(f"the {origin}'s maps have different numbers of output dimensions ({listed}); "
              "give every statement the same number, padding with trailing zeros")
    if 0 in widths.values():
        fail(f"the {origin} maps statements to zero-dimensional times; give at least one "
              "output dimension")
    tuples = {name: r.get_tuple_name(isl.dim_type.out) or "(none)" for name, r in rows.items()}
    if len(set(tuples.values())) > 1:
        listed = ", ".join(f"{name} -> {t}" for name, t in tuples.items())
        fail(f"the {origin}'s maps have different range tuple names ({listed}); use the "
              "same name everywhere, or none: S0[i] -> [i]")


def _checked_row(program: Program, name: str, relation: isl.Map) -> isl.Map:
    stmt = program.statement(name)
    dims = stmt.dims
    if relation.dim(isl.dim_type.in_) != len(dims):
        fail(f"the map of statement {name} has {relation.dim(isl.dim_type.in_)} input "
              f"dimensions but {name} has {len(dims)}: write {name}[{', '.join(dims)}] -> [...]")
    for pos, dim in enumerate(dims):
        relation = relation.set_dim_name(isl.dim_type.in_, pos, dim)
    relation = relation.reset_tuple_id(isl.dim_type.out).intersect_domain(stmt.domain)
    within = relation.intersect_params(program.context)
    domain = stmt.domain.intersect_params(program.context)
    uncovered = domain.subtract(within.domain())
    if not uncovered.is_empty():
        fail(f"the map of statement {name} gives no time to {_point(uncovered)}; it must "
              f"be defined on the statement's whole domain {domain}")
    if not within.is_single_valued():
        same = isl.Map.identity(within.get_space().domain().map_from_set())
        twice = within.lex_lt_map(within).intersect(same).domain()
        fail(f"the map of statement {name} gives several times to {_point(twice)}; a "
              "schedule must be a function of the instance")
    simpler = relation.gist_domain(stmt.domain)  # isl flattens it faster, e.g. in schedule_of
    return simpler if simpler.is_single_valued() else relation


def _point(instances: isl.Set, *, when: bool = True, named: bool = True) -> str:
    """``S0[i=5] (when N=6)``: one element of ``instances`` (``A[5]`` unnamed)."""
    point = instances.sample_point()
    names = instances.get_var_names(isl.dim_type.set)
    values = [point.get_coordinate_val(isl.dim_type.set, k).to_python()
              for k in range(len(names))]
    coords = (f"{n}={v}" if named else str(v) for n, v in zip(names, values))
    text = f"{instances.get_tuple_name()}[{', '.join(coords)}]"
    params = instances.get_var_names(isl.dim_type.param)
    if params and when:
        text += " (when " + ", ".join(
            f"{p}={point.get_coordinate_val(isl.dim_type.param, k).to_python()}"
            for k, p in enumerate(params)) + ")"
    return text


def _loops(program: Program, deps: Dependences) -> tuple[LoopStatus, ...]:
    """Each dimension of each statement's row: static, or a loop that is parallel unless
    some dependence pair runs inside one of its instances (same time prefix before the
    dimension, as one instance of the statement has) in two of its iterations."""
    times = program.schedule_map()
    maps = parts(times)
    if not maps:
        return ()
    rows = {s.name: times.extract_map(isl.Space.map_from_domain_and_range(
        s.domain.get_space(), maps[0].get_space().range())) for s in program.statements}
    result = []
    for stmt in program.statements:
        row = rows[stmt.name]
        if row.is_empty() or not row.is_single_valued():
            continue
        for dim in range(row.dim(isl.dim_type.out)):
            value = _dimension(row, dim)
            affs: list[isl.Aff] = []
            value.foreach_piece(lambda _set, aff: affs.append(aff))
            text = _expression(affs, value, stmt.dims)
            if not any(a.involves_dims(isl.dim_type.in_, 0, len(stmt.dims)) for a in affs):
                result.append(LoopStatus(stmt.name, dim, text, "static"))
                continue
            axis = program.axis_at(stmt.name, dim)
            if axis is not None:
                text = f"loop {axis.name}: {text}"
            found = tuple(dep for dep, _ in carried_pairs(program, deps, stmt.name, dim))
            result.append(LoopStatus(stmt.name, dim, text,
                                     "sequential" if found else "parallel", found))
    return tuple(result)


def _expression(affs: list[isl.Aff], value: isl.PwAff, dims: tuple[str, ...]) -> str:
    if len(affs) == 1:
        return aff_text(affs[0], list(dims))
    return re.sub(r"^\[[^\]]*\] -> ", "", str(value.coalesce())).strip("{} ")
