"""Does a rewritten program compute the same values?  Exact, by comparing dataflow.

Primitives that add, copy or recompute statements (``compute_at``, ``cache_read``)
change what the program is, not only its order.  On in-place kernels there is no
single-assignment order to fall back on, so such a rewrite is validated directly:

* every read of the rewritten program gets its value (following copy statements
  back to what they copied) from an instance that stands for the same original
  instance, or from the same initial element, as the original read;
* every element of an argument array is last written by the counterpart of its
  last writer in the original program (so the caller sees the same contents).

Each instance of the rewritten program is then computed from the same values as its
original, by induction over the execution order: the two programs agree everywhere.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def twice(A: po.f64[N], B: po.f64[N]):
...     for i in range(N):
...         B[i] = A[i] * 2
>>> p = po.create_schedule(twice).program
>>> same_values(p, p, origins={"S0": identity_origin(p, "S0")}) is None
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ..domain.affine import parts
from ..domain.program import AccessKind, Program
from ..schedule_errors import ChangedValuesError
from .dataflow import flow_accesses, flow_schedule
from .counterexample import ChangedValue, ValueSource, first_point, instance_text

_INIT = "__initial_"
_UNSET = "__unset_"
_UNRESOLVED = "__unresolved"
_CHASE_ROUNDS = 5  # chains of up to 2**5 copies


@dataclass(frozen=True, slots=True)
class Rewrite:
    """How a rewritten program relates to the original one.

    ``origins`` maps each statement that stands for an original one to the relation
    from its instances to the original instances (a projection when it recomputes);
    ``copies`` are new statements ``X[e] = Y[e]`` (one read, one write); ``aliases``
    maps each new buffer to the array whose elements it mirrors (same indices).
    """

    origins: dict[str, isl.Map]
    copies: frozenset[str] = frozenset()
    aliases: dict[str, str] = field(default_factory=dict)
    relaid: frozenset[str] = frozenset()  # buffers stored in another order (a layout)


def identity_origin(program: Program, stmt: str) -> isl.Map:
    """The origin relation of a statement that a rewrite leaves as it was."""
    return isl.Map.identity(isl.Space.map_from_set(program.statement(stmt).domain.get_space())
                            ).intersect_domain(program.statement(stmt).domain)


def same_values(original: Program, rewritten: Program, *, origins: dict[str, isl.Map],
                copies=frozenset(), aliases=None, inlined: isl.UnionMap | None = None,
                retagged: isl.UnionMap | None = None, private=frozenset(),
                relaid=frozenset(), primitive: str = "the rewrite", hint: str | None = None) -> None:
    """Raise :class:`IllegalScheduleError` unless ``rewritten`` (under its schedule)
    computes what ``original`` (under its schedule) computes; see the module doc.

    ``inlined`` gives the reads that inlining added to statements, each with the source
    it must have (the source of the inlined statement's read in the original).  ``hint``
    (a repair) ends the message when a read would change.  ``retagged`` maps reads of
    the rewritten program to the original reads they stand for (``[S[s] -> A[i, j]] ->
    [S[s] -> w[]]``: an expanded scalar); ``private`` are temporaries whose final
    contents nobody sees."""
    rewrite = Rewrite(origins, frozenset(copies), dict(aliases or {}), frozenset(relaid))
    before = value_sources(original)
    if inlined is not None:
        clash = inlined.intersect_domain(before.domain()).subtract(before)
        if not clash.is_empty():
            raise ChangedValuesError(primitive, _read_example(clash, before, original))
        before = before.union(inlined)
    resolved = _effective_sources(rewritten, rewrite)
    after = _restrict_readers(resolved, set(rewrite.origins))
    last_after = _chase_last(_last_writers(rewritten, rewrite, private), rewritten, rewrite,
                             resolved)
    tags = _tag_map(rewritten, rewrite)
    if retagged is not None:  # a read the original made only as the scalar's
        tags = tags.subtract_domain(retagged.domain().subtract(before.domain())).union(
            retagged)
    instances = _instance_map(rewrite, after.range().union(last_after.range()))
    mapped = after.apply_domain(tags).apply_range(instances)
    wrong = mapped.subtract(before).intersect_params(original.context)
    if not wrong.is_empty():
        raise ChangedValuesError(primitive, _read_example(wrong, before, original),
                                 repair=hint)
    last_before = _last_writers(original, rewrite=None, private=private)
    last_after = last_after.apply_range(instances)
    differ = last_after.subtract(last_before).union(last_before.subtract(last_after))
    differ = differ.intersect_params(original.context)
    if not differ.is_empty():
        raise ChangedValuesError(primitive, _element_example(differ, last_before, last_after,
                                                             original))


# -- where each read gets its value --------------------------------------------------
def value_sources(program: Program, buffers=frozenset()) -> isl.UnionMap:
    """``{ [Reader[r] -> X[e]] -> source }`` for every read, the source being the last
    writer instance, ``__initial_X[e]`` (the caller's value) or ``__unset_X[e]`` (a
    buffer element nothing wrote)."""
    result = isl.UnionMap.empty(program.context.get_space())
    for array in program.arrays:
        reads, writes = flow_accesses(program, array.name)
        if reads.is_empty():
            continue
        users = {st.name for st in program.statements_accessing(array.name)}
        schedule = flow_schedule(program, users)  # (the statements that access it)
        info = (isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
                .set_schedule_map(schedule).compute_flow())
        found = info.get_full_must_dependence()  # W -> [R -> X[e]]
        result = result.union(found.reverse())
        missing = info.get_must_no_source()      # R -> X[e]
        prefix = _UNSET if array.name in buffers else _INIT
        result = result.union(_initial(missing.range_map(), array.name, prefix))
    return result.coalesce()


def _initial(tagged_to_element: isl.UnionMap, array: str, prefix: str) -> isl.UnionMap:
    """``[R -> X[e]] -> X[e]`` renamed to ``[R -> X[e]] -> <prefix>X[e]``."""
    result = isl.UnionMap.empty(tagged_to_element.get_space())
    maps = parts(tagged_to_element)
    for m in maps:
        result = result.union(isl.UnionMap.from_map(
            m.set_tuple_name(isl.dim_type.out, prefix + array)))
    return result


def _copy_reads(program: Program, rewrite: Rewrite) -> isl.UnionMap:
    """``{ Copy[c] -> [Copy[c] -> Y[e]] }``: a copy's value is what it read."""
    result = isl.UnionMap.empty(program.context.get_space())
    for name in rewrite.copies:
        (read,) = program.statement(name).reads
        result = result.union(isl.UnionMap.from_map(read.relation.domain_map().reverse()))
    return result


def _effective_sources(program: Program, rewrite: Rewrite) -> isl.UnionMap:
    """The sources of all reads, following copies back to what they copied.  Each
    round doubles the length of the chains of copies followed; reads at the end of a
    longer chain get the source ``__unresolved`` (so they are refused, never accepted
    unchecked)."""
    sources = value_sources(program, frozenset(rewrite.aliases))
    through = _copy_reads(program, rewrite)
    copies = _statement_set(program, rewrite.copies)
    for _ in range(max(len(rewrite.copies) + 1, _CHASE_ROUNDS)):
        via_copy = sources.intersect_range(copies)
        if via_copy.is_empty():
            break
        sources = sources.subtract_range(copies).union(
            via_copy.apply_range(through).apply_range(sources))
    else:
        unresolved = sources.intersect_range(copies).domain()
        sources = sources.subtract_range(copies).union(isl.UnionMap.from_domain_and_range(
            unresolved, isl.UnionSet.from_set(isl.Set.universe(
                isl.Space.set_alloc(isl.DEFAULT_CONTEXT, 0, 0).set_tuple_name(
                    isl.dim_type.set, _UNRESOLVED)))))
    return sources


def _restrict_readers(sources: isl.UnionMap, readers: set[str]) -> isl.UnionMap:
    kept = isl.UnionMap.empty(sources.get_space())
    maps = parts(sources)
    for m in maps:
        reader = m.domain().unwrap().get_tuple_name(isl.dim_type.in_)
        if reader in readers:
            kept = kept.union(isl.UnionMap.from_map(m))
    return kept


def _statement_set(program: Program, names) -> isl.UnionSet:
    result = isl.UnionSet.empty(program.context.get_space())
    for name in names:
        result = result.union(isl.UnionSet.from_set(program.statement(name).domain))
    return result


def _tag_map(program: Program, rewrite: Rewrite) -> isl.UnionMap:
    """``[S'[s] -> X'[e]] -> [S[orig(s)] -> X[e]]`` for the reads of the rewritten
    statements (buffers renamed to the arrays they mirror)."""
    result = isl.UnionMap.empty(program.context.get_space())
    for name, origin in rewrite.origins.items():
        for access in program.statement(name).reads:
            base = rewrite.aliases.get(access.array, access.array)
            if access.array in rewrite.relaid:
                rename = _filled_from(program, rewrite, access)
            else:
                rename = _rename(access.relation.range(), base)
            result = result.union(isl.UnionMap.from_map(
                origin.product(rename).intersect_domain(access.relation.wrap())))
    return result


def _filled_from(program: Program, rewrite: Rewrite, access) -> isl.Map:
    """``{ B[b] -> X[e] }``: the element of the mirrored array that the copies put in
    each element of the relaid buffer ``B`` that ``access`` reads (one each, else
    refused)."""
    filled = None
    for name in rewrite.copies:
        copy = program.statement(name)
        (write,), (read,) = copy.writes, copy.reads
        if write.array == access.array:
            found = write.relation.reverse().apply_range(read.relation)
            filled = found if filled is None else filled.union(found)
    unfilled = access.relation.range() if filled is None else \
        access.relation.range().subtract(filled.domain())
    if not unfilled.intersect_params(program.context).is_empty() or \
            not filled.is_single_valued():
        raise ChangedValuesError("the copies", ChangedValue("unfilled", access.array,
                                                            reader=access.stmt))
    return filled


def _rename(elements: isl.Set, name: str) -> isl.Map:
    identity = isl.Map.identity(isl.Space.map_from_set(elements.get_space()))
    return identity.set_tuple_name(isl.dim_type.out, name)


def _instance_map(rewrite: Rewrite, sources: isl.UnionSet) -> isl.UnionMap:
    """Rewritten instances to original ones; the initial and unset elements among
    ``sources`` map to themselves."""
    result = isl.UnionMap.empty(sources.get_space())
    for origin in rewrite.origins.values():
        result = result.union(isl.UnionMap.from_map(origin))
    spaces = parts(sources)
    for elements in spaces:
        if elements.get_tuple_name().startswith((_INIT, _UNSET, _UNRESOLVED)):
            result = result.union(isl.UnionMap.from_map(isl.Map.identity(
                isl.Space.map_from_set(elements.get_space()))))
    return result


# -- what each element holds at the end ----------------------------------------------
def _last_writers(program: Program, rewrite: Rewrite | None, private=frozenset()
                  ) -> isl.UnionMap:
    """``{ X[e] -> last writer }`` for the arrays the caller sees (not buffers, nor the
    ``private`` temporaries)."""
    schedule = isl.UnionMap.empty(program.context.get_space())
    for row in program.order_rows().values():  # (the same order: splits by their loop)
        schedule = schedule.union(isl.UnionMap.from_map(row))
    schedule = schedule.intersect_domain(program.domains)
    result = isl.UnionMap.empty(program.context.get_space())
    for array in program.arrays:
        if (not array.written or array.name in private
                or (rewrite is not None and array.name in rewrite.aliases)):
            continue
        writes = program.accesses(AccessKind.WRITE, array.name)
        if writes.is_empty():
            continue
        when = writes.reverse().apply_range(schedule)     # X[e] -> time of a write
        last = when.lexmax()
        result = result.union(last.apply_range(schedule.reverse()).intersect(writes.reverse()))
    return result.coalesce()


def _chase_last(last: isl.UnionMap, program: Program, rewrite: Rewrite,
                sources: isl.UnionMap) -> isl.UnionMap:
    """Last writers that are copies replaced by the source of what they copied
    (``sources``: :func:`_effective_sources`)."""
    copies = _statement_set(program, rewrite.copies)
    by_copy = last.intersect_range(copies)
    if by_copy.is_empty():
        return last
    followed = by_copy.apply_range(_copy_reads(program, rewrite)).apply_range(sources)
    return last.subtract_range(copies).union(followed)


# -- explaining a difference ---------------------------------------------------------
def _point(relation: isl.UnionMap) -> tuple[isl.Map, dict[str, int], list[int]]:
    maps = parts(relation)
    m = maps[0]
    values, coords = first_point(m)
    return m, dict(zip(m.get_space().get_var_names(isl.dim_type.param), values)), coords


def _domain_point(m: isl.Map, coords: list[int], params: dict[str, int]) -> isl.UnionSet:
    """The point of ``m``'s domain at the first ``coords`` (and these parameters)."""
    point = isl.Set.universe(m.get_space().domain())
    for k in range(point.dim(isl.dim_type.set)):
        point = point.fix_val(isl.dim_type.set, k, isl.Val(coords[k]))
    for k, name in enumerate(m.get_space().get_var_names(isl.dim_type.param)):
        point = point.fix_val(isl.dim_type.param, k, isl.Val(params[name]))
    return isl.UnionSet.from_set(point)


def _source(program: Program, space: isl.Space, coords: list[int]) -> ValueSource:
    name = space.get_tuple_name(isl.dim_type.set)
    if name.startswith(_INIT):
        return ValueSource("entry", f"{name[len(_INIT):]}[{', '.join(map(str, coords))}]")
    if name.startswith(_UNSET):
        return ValueSource("unset", name[len(_UNSET):])
    if name == _UNRESOLVED:
        return ValueSource("unresolved")
    return ValueSource("written", instance_text(program, name, coords))


def _read_example(wrong, before, original) -> ChangedValue:
    m, params, coords = _point(wrong)
    tagged = m.get_space().domain().unwrap()
    reader = tagged.get_tuple_name(isl.dim_type.in_)
    n_reader = tagged.dim(isl.dim_type.in_)
    n_elem = tagged.dim(isl.dim_type.out)
    array = tagged.get_tuple_name(isl.dim_type.out)
    instance = instance_text(original, reader, coords[:n_reader])
    element = f"{array}[{', '.join(map(str, coords[n_reader:n_reader + n_elem]))}]"
    got = _source(original, m.get_space().range(), coords[n_reader + n_elem:])
    expected = None
    right = before.intersect_domain(_domain_point(m, coords, params))
    if not right.is_empty():
        r, _, rc = _point(right)
        expected = _source(original, r.get_space().range(), rc[n_reader + n_elem:])
    return ChangedValue("read", element, got, params, instance, expected)


def _element_example(differ, last_before, last_after, original) -> ChangedValue:
    m, params, coords = _point(differ)
    array = m.get_space().get_tuple_name(isl.dim_type.in_)
    n = m.dim(isl.dim_type.in_)
    element = f"{array}[{', '.join(map(str, coords[:n]))}]"
    source = _source(original, m.get_space().range(), coords[n:])
    fixed = _domain_point(m, coords, params)
    if last_after.intersect_domain(fixed).is_empty():
        kind = "unwritten"
    elif last_before.intersect_domain(fixed).is_empty():
        kind = "extra"
    else:
        kind = "other"
    return ChangedValue(kind, element, source, params)
