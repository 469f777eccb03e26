"""Exact dependences of a program under its schedule (isl's dataflow analysis).

* flow (read after write): value-based, each read's last writer;
* anti (write after read) and output (write after write): the last access before
  each write, with writes killing older accesses.

Checking a schedule against these direct dependences suffices: every longer chain
of conflicting accesses is a sequence of them.

>>> import polyopt as po
>>> m, n = po.var("m"), po.var("n"); A = po.placeholder((m, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> S = po.compute((m,), lambda i: po.sum(A[i, k], axis=k), name="S")
>>> print(po.deps(po.create_schedule(S)).flow[1])
flow S_update[i, k] -> S_update[i, k + 1] through S[i] for 0 <= i < m and 0 <= k <= -2 + n
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from ..errors import public, public_methods
from ..domain.affine import parts
from ..domain.program import AccessKind, Program
from ..domain.schedule import fixed_entry
from .describe import describe_map, function_text


@dataclass(frozen=True, slots=True)
class Dependence:
    """Instances of ``source`` that must run before the related instances of ``sink``.

    ``relation`` maps source instances to sink instances; ``elements`` maps each source
    instance to the element of ``array`` through which the dependence goes.
    """

    kind: str  # flow | anti | output
    source: str
    sink: str
    array: str
    relation: isl.Map
    elements: isl.Map

    def __str__(self) -> str:
        text = describe_map(self.relation)
        through = function_text(self.elements)
        if through is not None:
            through = through.split(" -> ", 1)[1]
        else:
            through = f"{self.array}[...]"
        head, _, tail = text.partition(" for ")
        return f"{self.kind} {head} through {through}" + (f" for {tail}" if tail else "")


@public_methods
@dataclass(frozen=True, slots=True)
class Dependences:
    """All dependences of a program; iterate, filter by kind, or union them."""

    items: tuple[Dependence, ...]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def flow(self) -> tuple[Dependence, ...]:
        return tuple(d for d in self.items if d.kind == "flow")

    @property
    def anti(self) -> tuple[Dependence, ...]:
        return tuple(d for d in self.items if d.kind == "anti")

    @property
    def output(self) -> tuple[Dependence, ...]:
        return tuple(d for d in self.items if d.kind == "output")

    def between(self, source: str, sink: str, kind: str | None = None) -> isl.UnionMap:
        """Union of the relations from statement ``source`` to statement ``sink``."""
        result = None
        for dep in self.items:
            if dep.source == source and dep.sink == sink and kind in (None, dep.kind):
                rel = isl.UnionMap.from_map(dep.relation)
                result = rel if result is None else result.union(rel)
        if result is None:
            return isl.UnionMap.empty(isl.Space.params_alloc(isl.DEFAULT_CONTEXT, 0))
        return result

    def union(self, kinds=("flow", "anti", "output")) -> isl.UnionMap | None:
        result = None
        for dep in self.items:
            if dep.kind in kinds:
                rel = isl.UnionMap.from_map(dep.relation)
                result = rel if result is None else result.union(rel)
        return result

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.items) or "(no dependences)"


@public
def compute_dependences(program: Program) -> Dependences:
    """Flow, anti and output dependences of ``program`` under its current schedule.

    Each array is analysed with only the statements that access it (a chain of K
    statements costs K small analyses, not K analyses of the whole program), and an
    array that one statement writes entirely before others read it needs no isl
    dataflow analysis at all (see :func:`_written_before_read`)."""
    items: list[Dependence] = []
    rows = program.order_rows()  # (the same order: splits by their whole loop)
    context = program.context
    space = context.get_space()
    for array, users in _users_by_array(program).items():
        writes = [(stmt, r) for stmt, kind, r in users if kind is AccessKind.WRITE]
        if not writes:
            continue
        reads = [(stmt, r) for stmt, kind, r in users if kind is AccessKind.READ]
        found = _written_before_read(array, writes, reads, rows)
        if found is not None:
            items += found
            continue
        # see flow_accesses and flow_schedule for the gist and the constant columns
        write_union = _union([r for _, r in writes], space).gist_params(context)
        if write_union.is_empty():
            continue
        read_union = _union([r for _, r in reads], space).gist_params(context)
        names = dict.fromkeys(stmt for stmt, _, _ in users)
        schedule = _without_constant_columns(
            _union([rows[name] for name in names if name in rows], space))
        flow = (isl.UnionAccessInfo.from_sink(read_union).set_must_source(write_union)
                .set_schedule_map(schedule).compute_flow())
        items += _split("flow", array, flow.get_full_must_dependence())
        anti = (isl.UnionAccessInfo.from_sink(write_union).set_may_source(read_union)
                .set_kill(write_union).set_schedule_map(schedule).compute_flow())
        items += _split("anti", array, anti.get_full_may_dependence())
        if written_once(write_union):  # no element written twice: no output dependence
            continue
        output = (isl.UnionAccessInfo.from_sink(write_union).set_must_source(write_union)
                  .set_schedule_map(schedule).compute_flow())
        items += _split("output", array, output.get_full_must_dependence())
    return Dependences(tuple(items))


def _users_by_array(program: Program) -> dict[str, list[tuple[str, AccessKind, isl.Map]]]:
    """Per array (in the program's order), its accesses as (statement, kind, relation),
    in one pass over the statements."""
    found: dict[str, list] = {a.name: [] for a in program.arrays}
    for stmt in program.statements:
        for access in stmt.accesses:
            found[access.array].append((stmt.name, access.kind, access.relation))
    return found


def _written_before_read(array: str, writes, reads, rows) -> list[Dependence] | None:
    """The dependences through ``array`` when one statement writes each of its elements
    at most once and runs entirely before every statement that reads it (a chain of
    statements at the root of the schedule); None in every other case, which isl's
    dataflow analysis answers.  Then a read of a written element reads it from its only
    write (the flow is the writes joined with the reads), no read comes before a write
    (no anti dependence) and no write follows another (no output dependence)."""
    writer, written = writes[0]
    if len(writes) != 1 or writer not in rows or not written.is_injective():
        return None
    first = fixed_entry(rows[writer], 0)
    by_reader: dict[str, isl.Map] = {}
    for stmt, relation in reads:
        entry = fixed_entry(rows[stmt], 0) if stmt in rows else None
        if first is None or entry is None or not entry > first:
            return None
        by_reader[stmt] = relation if stmt not in by_reader else by_reader[stmt].union(relation)
    items = []
    for reader, relation in sorted(by_reader.items()):
        pairs = written.apply_range(relation.reverse()).coalesce()
        if pairs.is_empty():
            continue
        elements = written.intersect_domain(pairs.domain()).coalesce()
        items.append(Dependence("flow", writer, reader, array, pairs, elements))
    return items


def _union(maps: list[isl.Map], space: isl.Space) -> isl.UnionMap:
    """The union of ``maps`` (of any spaces), built in one balanced pass."""
    pieces = [isl.UnionMap.from_map(m) for m in maps] or [isl.UnionMap.empty(space)]
    while len(pieces) > 1:
        pieces = [pieces[k].union(pieces[k + 1]) if k + 1 < len(pieces) else pieces[k]
                  for k in range(0, len(pieces), 2)]
    return pieces[0]


def flow_schedule(program: Program, statements=None) -> isl.UnionMap:
    """The schedule as isl's dataflow analysis gets it: the flat map (the same
    relations as the schedule tree, about twice as fast on our single-band
    schedules; a split recorded as order-equivalent ordered by its whole loop,
    :meth:`Program.order_rows`) without its constant columns, nor the constraints on the sizes that
    the context implies (see :func:`flow_accesses`)."""
    rows = isl.UnionMap.empty(program.context.get_space())
    for name, row in program.order_rows().items():
        if statements is None or name in statements:  # (only those: a smaller analysis)
            rows = rows.union(isl.UnionMap.from_map(row))
    return _without_constant_columns(rows.intersect_domain(program.domains)
                                     .gist_params(program.context))


def flow_accesses(program: Program, array: str) -> tuple[isl.UnionMap, isl.UnionMap]:
    """The reads and writes of ``array`` as isl's dataflow analysis gets them: without
    the constraints on the sizes that the program's context implies.  The results hold
    for sizes in the context, where every caller uses them, and this routes around an
    isl error ("affine expression involves some of the domain dimensions", isl bundled
    with islpy 2026.2.2) when some accesses carry such a constraint (``M >= 0``) and
    others do not."""
    context = program.context
    return (program.accesses(AccessKind.READ, array).gist_params(context),
            program.accesses(AccessKind.WRITE, array).gist_params(context))


def _without_constant_columns(schedule: isl.UnionMap) -> isl.UnionMap:
    """``schedule`` without the columns that hold one constant in every row: the same
    order, so the same dependences.

    This also routes around a crash: the isl bundled with islpy 2026.2.2
    ("included-with-islpy") segfaults in ``isl_basic_map_swap_div`` inside
    ``isl_union_access_info_compute_flow`` (may sources + kills) on some 2d+1 schedules
    whose static columns are all zero; ``tests/deps/test_isl_workarounds.py`` keeps the
    isl-level reproducer.

    >>> compact = _without_constant_columns(isl.UnionMap(
    ...     "{ S[i] -> [0, i, 0]; T[i] -> [0, i, 1] }"))
    >>> compact.is_equal(isl.UnionMap("{ S[i] -> [i, 0]; T[i] -> [i, 1] }"))
    True
    """
    maps = parts(schedule)
    if not maps:
        return schedule
    width = maps[0].dim(isl.dim_type.out)
    constant = []
    for dim in range(width):
        values = set()
        for relation in maps:
            value = relation.plain_get_val_if_fixed(isl.dim_type.out, dim)
            if value.is_nan():
                break
            values.add(value.to_python())
        else:
            if len(values) == 1:
                constant.append(dim)
    if not constant or len(constant) == width:
        return schedule
    result = None
    for relation in maps:
        for dim in reversed(constant):
            relation = relation.project_out(isl.dim_type.out, dim, 1)
        part = isl.UnionMap.from_map(relation)
        result = part if result is None else result.union(part)
    return result


def written_once(writes: isl.UnionMap) -> bool:
    """Whether the writes (instance -> element) are one statement's and no two of its
    instances write one element (a copy into a cache, an elementwise compute), so that
    no write follows another to the same element.

    >>> written_once(isl.UnionMap("{ S[i, j] -> A[j, i] : 0 <= i, j < 4 }"))
    True
    >>> written_once(isl.UnionMap("{ S[i, k] -> A[i] : 0 <= i, k < 4 }"))
    False
    """
    maps = parts(writes)
    return len(maps) == 1 and maps[0].is_injective()


def _split(kind: str, array: str, full: isl.UnionMap) -> list[Dependence]:
    """One :class:`Dependence` per (source, sink) pair of ``Src[..] -> [Sink[..] -> A[..]]``."""
    grouped: dict[tuple[str, str], tuple[isl.Map, isl.Map]] = {}
    maps = parts(full)
    for tagged in maps:
        relation = tagged.range_factor_domain().coalesce()
        elements = tagged.range_factor_range().coalesce()
        key = (relation.get_tuple_name(isl.dim_type.in_),
               relation.get_tuple_name(isl.dim_type.out))
        if key in grouped:
            old_rel, old_el = grouped[key]
            relation = old_rel.union(relation).coalesce()
            elements = old_el.union(elements).coalesce()
        grouped[key] = (relation, elements)
    return [Dependence(kind, src, sink, array, rel, el)
            for (src, sink), (rel, el) in sorted(grouped.items())]
