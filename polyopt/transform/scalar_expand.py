"""Scalar expansion into the stored elements: each value of a scalar kept in the array
element it ends up stored to, so the scalar no longer serializes the loops around it.

A scalar temporary (a C local such as ``w``) written in a loop makes every iteration
depend on the previous one: nothing can be reordered.  ``s.expand_scalar("w")`` gives
each of its live ranges a cell of its own: the element that the live range's last
statement stores (``A[i][j] = w / A[j][j]`` ends the range that ``w = A[i][j]``
started), so no memory is added.  Precisely, every instance of a statement that reads
or writes ``w`` uses instead the element written by the first instance that follows
it of a *store* (a statement that reads ``w`` and writes another array).  A statement
that then copies an element onto itself (``A[i][j] = A[i][j]``) is dropped.

The rewrite is checked exactly (:func:`polyopt.deps.equivalence.same_values`): every
read gets the value it got before (a read of the element standing for the read of
``w``), and every element of the kernel's arrays ends with the same value; else it is
refused.  The rewritten kernel is the reference later primitives are checked against.

>>> import polyopt as po
>>> k = po.from_c('''
... #define N 10
... void rowsum(int n, double A[N][N], double y[N]) {
...   int i, j;
...   double w;
... #pragma scop
...   for (i = 0; i < n; i++) {
...     w = 0.0;
...     for (j = 0; j < n; j++)
...       w += A[i][j];
...     y[i] = w;
...   }
... #pragma endscop
... }''')
>>> s = po.create_schedule(k)
>>> s.expand_scalar("w")
>>> [f"{st.target} = {st.value}" for st in s.program.statements]
['y[i] = 0.0', 'y[i] = y[i] + A[i, j]']
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..deps.dataflow import flow_accesses
from ..deps.equivalence import identity_origin, same_values
from ..domain.accesses import read_accesses
from ..domain.affine import AffineSpace
from ..domain.program import Program
from ..errors import InvalidArgumentError
from ..schedule_errors import ScalarExpansionError
from ..te.expr import Const, TensorRead
from ..te.substitute import transform
from .attach import rebuild_statement
from .inplace import without_stage
from .rewrite import new_array, new_tensor
from .rfactor import single_aff, aff_to_expr, bound, minus, nonnegative


def expand_scalar(program: Program, scalar, dims: int | None = None) -> Program:
    """``program`` with ``scalar`` (a name, or a list of names: all expanded at once,
    with one check) replaced by the elements its values are stored to, or with
    ``dims``, by a new array indexed by the outermost ``dims`` loops of each statement
    (see the module doc); raises IllegalScheduleError when that changes a value and
    ScheduleError when a scalar is not a scalar temporary that can be so expanded."""
    names = [scalar] if isinstance(scalar, str) else list(scalar)
    if not names or not all(isinstance(n, str) for n in names) or len(set(names)) < len(names):
        raise InvalidArgumentError(f"expand_scalar takes a scalar's name or a list of "
                                   f"distinct names, got {scalar!r}")
    original, expanded = program, program
    retagged = isl.UnionMap.empty(program.context.get_space())
    private, touched = set(names), set()
    for name in names:
        expanded, tags, arrays, rewritten = _expanded_one(expanded, name, dims)
        retagged, private, touched = retagged.union(tags), private | arrays, touched | rewritten
    step = (f"s.expand_scalar({_names_text(scalar)}"
            + (f", dims={dims})" if dims is not None else ")"))
    same_values(original, expanded,
                origins={st.name: identity_origin(original, st.name)
                         for st in original.statements},
                retagged=retagged, private=frozenset(private), primitive=step)
    for name in sorted(touched):
        if _self_copy(expanded.statement(name)):
            expanded = expanded.with_stages(
                without_stage(expanded.stages, name),
                statements=tuple(st for st in expanded.statements if st.name != name))
    return expanded


def _names_text(scalar) -> str:
    if isinstance(scalar, str):
        return f'"{scalar}"'
    return "[" + ", ".join(f'"{n}"' for n in scalar) + "]"


def _expanded_one(program: Program, scalar: str, dims: int | None):
    """``(program with scalar expanded (unchecked), retagged reads, the new or reused
    temporaries, the statements rewritten)``."""
    array = program.array(scalar)
    if array.shape != () or array.role != "compute":
        raise ScalarExpansionError(scalar, "not_a_scalar")
    users = [st for st in program.statements
             if any(a.array == scalar for a in st.accesses)]
    if dims is None:
        elements = _stored_elements(program, users, scalar)
    else:
        program, elements = _new_elements(program, users, scalar, dims)
    array_of = {id(a.tensor): a for a in program.arrays}
    rewritten, retagged = {}, isl.UnionMap.empty(program.context.get_space())
    for stmt in users:
        new = _rewritten(program, stmt, scalar, elements[stmt.name], array_of)
        rewritten[stmt.name] = new
        home = _access_of(new, elements[stmt.name].tensor, array_of)
        for access in stmt.reads:
            if access.array == scalar:
                retagged = retagged.union(isl.UnionMap.from_map(
                    home.domain_map().apply_range(access.relation.domain_map().reverse())))
    expanded = program.replace(statements=tuple(rewritten.get(st.name, st)
                                                for st in program.statements))
    temporaries = {array_of[id(e.tensor)].name for e in elements.values()
                   if array_of[id(e.tensor)].role == "compute"}
    return expanded, retagged, temporaries, set(rewritten)


def _stored_elements(program: Program, users, scalar: str) -> dict[str, TensorRead]:
    stores = [st for st in users if any(a.array == scalar for a in st.reads)
              and all(a.array != scalar for a in st.writes)]
    if not stores:
        raise ScalarExpansionError(scalar, "never_stored")
    homes = _homes(program, users, stores)
    return {st.name: _element(program, st, homes[st.name]) for st in users}


def _new_elements(program: Program, users, scalar: str, dims: int):
    """A new array ``<scalar>_x`` per live range of the scalar (``live_ranges``) and,
    per statement, its element: the statement's outermost ``dims`` loops, each minus
    the lowest value it takes in the statements of its live range (deriche's ``ym1``
    serves a sweep along rows, then one along columns: an array of ``w`` and one of
    ``h`` elements rather than one of ``max(w, h)``)."""
    if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
        raise InvalidArgumentError(f"expand_scalar: dims must be a positive integer, got "
                                   f"{dims!r}")
    if any(len(st.iter_vars) < dims for st in users):
        raise ScalarExpansionError(scalar, "too_few_loops", dims=dims)
    elements = {}
    for group in live_ranges(program, scalar, users):
        lows, extents = [], []
        for k in range(dims):  # one offset per dimension, shared by the range's statements
            values = None
            for stmt in group:
                line = stmt.domain.project_out(isl.dim_type.set, k + 1,
                                               len(stmt.dims) - k - 1) \
                    .project_out(isl.dim_type.set, 0, k).reset_tuple_id()
                values = line if values is None else values.union(line)
            values = values.coalesce()
            low, high = values.dim_min(0).coalesce(), values.dim_max(0).coalesce()
            lows.append(bound(low, program, True, "expand_scalar"))
            if isinstance(lows[-1], Const):  # the least start over all sizes: the extent
                low = isl.PwAff.val_on_domain(high.domain(),  # reaches from it
                                              isl.Val(str(lows[-1].value)))
            extent = high.sub(low).add_constant_val(isl.Val(1)).coalesce()
            expression = bound(extent, program, False, "expand_scalar")
            extents.append(expression if _never_negative(expression, extent, program)
                           else nonnegative(expression))
        dtype = program.array(scalar).dtype  # the tensor named as its array (a fresh name)
        tensor = new_tensor(new_array(program, new_tensor(f"{scalar}_x", (), dtype)).name,
                            tuple(extents), dtype)
        program = program.replace(arrays=program.arrays + (new_array(program, tensor),))
        elements.update({st.name: TensorRead(tensor, tuple(
            minus(st.iter_vars[k], lows[k]) for k in range(dims))) for st in group})
    return program, elements


def live_ranges(program: Program, scalar: str, users) -> list[list]:
    """``users`` (the statements that read or write ``scalar``) in groups between
    which no value of the scalar flows (exact dataflow: the last write before each
    read), in program order; a group's statements may then use a copy of their own."""
    reads, writes = flow_accesses(program, scalar)
    schedule = isl.UnionMap.empty(program.context.get_space())
    for stmt in users:  # the users' rows only (the others touch no element of it)
        schedule = schedule.union(isl.UnionMap.from_map(program.schedule_of(stmt.name)))
    info = (isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
            .set_schedule_map(schedule.gist_params(program.context)).compute_flow())
    group_of = {st.name: st.name for st in users}

    def root(name):
        while group_of[name] != name:
            name = group_of[name]
        return name
    pairs = []
    info.get_must_dependence().foreach_map(lambda m: pairs.append(
        (m.get_tuple_name(isl.dim_type.in_), m.get_tuple_name(isl.dim_type.out))))
    for writer, reader in pairs:
        group_of[root(writer)] = root(reader)
    groups = {}
    for stmt in users:
        groups.setdefault(root(stmt.name), []).append(stmt)
    return list(groups.values())


def _never_negative(expression, extent: isl.PwAff, program: Program) -> bool:
    """Whether an extent's expression is at least 0 at every size the program allows
    (isl's extent is defined only where the loops run: elsewhere the expression, such
    as ``n - 4`` at ``n = 3``, may be negative)."""
    if isinstance(expression, Const):
        return expression.value >= 0
    values = isl.PwAff.from_aff(single_aff(extent, "expand_scalar")).intersect_domain(program.context)
    least = values.min_val()
    return not (least.is_neginfty() or least.is_nan()) and least.to_python() >= 0


def _access_of(stmt, tensor, array_of) -> isl.Map:
    name = array_of[id(tensor)].name
    return next(a.relation for a in stmt.accesses if a.array == name)


def _homes(program: Program, users, stores) -> dict[str, isl.Map]:
    """Per statement using the scalar: ``{ S[s] -> X[e] }``, the element written by the
    first store instance that runs after (or is) ``S[s]``."""
    schedule = program.schedule_map()
    store_times = isl.UnionMap.empty(schedule.get_space())
    for store in stores:
        store_times = store_times.union(
            schedule.intersect_domain(isl.UnionSet.from_set(store.domain)))
    writes = _store_writes(stores)
    homes = {}
    for stmt in users:
        if stmt in stores:
            home = _single_write(stmt)
        else:
            own = schedule.intersect_domain(isl.UnionSet.from_set(stmt.domain))
            later = own.lex_lt_union_map(store_times).apply_range(store_times)
            first = later.lexmin().apply_range(store_times.reverse()).apply_range(writes)
            if first.is_empty():
                raise ScalarExpansionError(None, "no_store_after", statement=stmt.name)
            if first.n_map() != 1:
                raise ScalarExpansionError(None, "several_arrays", statement=stmt.name)
            home = isl.Map.from_union_map(first)
        if not home.is_single_valued() or not home.domain().is_equal(stmt.domain):
            raise ScalarExpansionError(None, "not_one_store", statement=stmt.name)
        homes[stmt.name] = home
    return homes


def _store_writes(stores) -> isl.UnionMap:
    result = None
    for store in stores:
        write = isl.UnionMap.from_map(_single_write(store))
        result = write if result is None else result.union(write)
    return result


def _single_write(stmt) -> isl.Map:
    (write,) = stmt.writes
    return write.relation


def _element(program: Program, stmt, home: isl.Map) -> TensorRead:
    """The element ``home`` gives, in ``stmt``'s loop variables."""
    pieces = []
    isl.PwMultiAff.from_map(home).foreach_piece(lambda _set, ma: pieces.append(ma))
    if len(pieces) != 1:
        raise ScalarExpansionError(None, "not_affine", statement=stmt.name)
    indices = tuple(aff_to_expr(pieces[0].get_aff(k), list(stmt.iter_vars),
                                list(program.params))
                    for k in range(pieces[0].dim(isl.dim_type.out)))
    return TensorRead(program.array(home.get_tuple_name(isl.dim_type.out)).tensor, indices)


def _rewritten(program: Program, stmt, scalar: str, element: TensorRead, array_of: dict):
    """``stmt`` with its reads and write of ``scalar`` on ``element``."""
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    scalar_reads = {id(node) for node, access in read_accesses(stmt, space)
                    if access.array == scalar}
    value = transform(stmt.value, lambda n: element if id(n) in scalar_reads else None)
    if stmt.target.tensor is program.array(scalar).tensor:
        stmt = dataclasses.replace(stmt, target=element)
    return rebuild_statement(stmt, value, array_of, program)


def _self_copy(stmt) -> bool:
    """``X[e] = X[e]``: the statement writes the element it reads, unchanged."""
    value = stmt.value
    if not isinstance(value, TensorRead) or len(stmt.reads) != 1:
        return False
    (read,), (write,) = stmt.reads, stmt.writes
    return read.array == write.array and read.relation.is_equal(write.relation)
