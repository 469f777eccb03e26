"""The polyhedral program: statements with exact domains and accesses, and a schedule.

Every layer below works on a :class:`Program`.  It is a value: transforms return a
new one (``program.replace(schedule=...)``) and never change it in place.

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] + 1, name="B")
>>> program = po.create_schedule(B).program
>>> print(program.statement("B").domain)
[n] -> { B[i] : 0 <= i < n }
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum

import islpy as isl

from ..errors import InvalidArgumentError
from ..te.expr import Expr, IterVar, TensorRead, Var
from ..te.tensor import Tensor
from .memo import IdentityMemo
from .schedule import Axis, StageRecord, build_schedule, order_rows


class AccessKind(str, Enum):
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True, slots=True)
class Access:
    """``relation`` maps each instance of ``stmt`` to the element of ``array`` it touches."""

    stmt: str
    array: str
    kind: AccessKind
    relation: isl.Map


@dataclass(frozen=True, slots=True)
class Array:
    """A tensor as the program stores it.

    ``role`` is "placeholder" (an input, only read), "compute" (defined by the
    program: an output or a temporary) or "inout" (a kernel parameter that the
    program reads and writes in place).  ``scope`` is where a backend keeps it:
    "global" (device or host memory), "shared" (one copy per work-group, OpenCL's
    ``__local``) or "local" (one copy per work-item, private memory); the scopes come
    from ``cache_read``/``cache_write``.
    """

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    tensor: Tensor
    role: str
    scope: str = "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def written(self) -> bool:
        """Whether the program writes this array ("compute" and "inout")."""
        return self.role in ("compute", "inout")


@dataclass(frozen=True, slots=True)
class Statement:
    """``target = value`` for every point of ``domain``.

    ``iter_vars`` are the axes that ``target`` and ``value`` use, one per dimension of
    ``domain`` and in the same order.  ``op`` names the compute it came from.
    ``derived`` are more variables they may use, each a function of the instance that
    the loop AST computes from the loop variables (lowering adds them, e.g. the index
    ``i - 6 * i_outer`` into a contracted temporary).
    """

    name: str
    domain: isl.Set
    iter_vars: tuple[IterVar, ...]
    target: TensorRead
    value: Expr
    accesses: tuple[Access, ...]
    op: str
    derived: tuple[tuple[IterVar, isl.PwAff], ...] = ()

    @property
    def index_vars(self) -> tuple[IterVar, ...]:
        """The variables a loop AST instance of this statement binds, in order."""
        return self.iter_vars + tuple(var for var, _ in self.derived)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(self.domain.get_var_names(isl.dim_type.set))

    @property
    def reads(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if a.kind is AccessKind.READ)

    @property
    def writes(self) -> tuple[Access, ...]:
        return tuple(a for a in self.accesses if a.kind is AccessKind.WRITE)


@dataclass(frozen=True, slots=True)
class Program:
    """Statements, arrays and parameters, and a schedule.

    ``stages`` describe the schedule loop by loop (what primitives edit); ``schedule``
    and ``loop_axes`` (the :class:`Axis` behind each schedule dimension of each
    statement) are derived from them.  A schedule given directly as an isl object
    has no stages.
    """

    statements: tuple[Statement, ...]
    arrays: tuple[Array, ...]
    params: tuple[Var, ...]
    context: isl.Set
    schedule: isl.Schedule
    stages: tuple[StageRecord, ...] = ()
    loop_axes: tuple[tuple[str, tuple[Axis | None, ...]], ...] = ()
    # sub-nests replaced by intrinsics: (stage, loop, TensorIntrin), see polyopt.tensorize
    tensorized: tuple = ()
    # code linked into the built module: (stage, loop, Import) from s[C].pragma(loop,
    # "import_llvm" | "import_c", code), see polyopt.tensorize.pragma
    imports: tuple = ()
    # math functions call libm's scalar functions in every loop, as a C compiler does
    # without -ffast-math (the C front end's programs: gcc's numbers bit for bit); else
    # a vectorized loop may call libmvec's vector exp/log/tanh (within 4 ULP of libm)
    scalar_math: bool = False

    def replace(self, **changes) -> Program:
        """This program with some fields changed.  The schedule has one source of truth:
        the stages, from which ``schedule`` and ``loop_axes`` are derived again (when
        first read) whenever the stages, the statements' domains or the context change;
        or an isl schedule given directly (``replace(schedule=...)``), which has no
        stages and no loop axes.

        >>> import polyopt as po
        >>> A = po.placeholder((4,), name="A")
        >>> B = po.compute((4,), lambda i: A[i] + 1, name="B")
        >>> p = po.create_schedule(B).program
        >>> hand = p.replace(schedule=isl.Schedule.from_domain(p.domains))
        >>> hand.stages, hand.loop_axes
        ((), ())
        """
        if "loop_axes" in changes:
            raise InvalidArgumentError("loop_axes are derived from the stages; replace the "
                                       "stages or the schedule instead")
        fields = {name: _raw(self, name) for name in _FIELDS}
        if "schedule" in changes:  # an isl schedule given directly
            if changes.get("stages"):
                raise InvalidArgumentError("replace the stages or the schedule, not both: "
                                           "the schedule is derived from the stages")
            fields.update(changes, stages=(), loop_axes=())
            return Program(**fields)
        fields.update(changes)
        if fields["stages"] and not _same_schedule_inputs(self, fields):
            pending = _PendingSchedule(fields["statements"], tuple(fields["stages"]),
                                       fields["context"])
            fields.update(stages=tuple(fields["stages"]), schedule=pending, loop_axes=pending)
        return Program(**fields)

    def with_stages(self, stages: tuple[StageRecord, ...], **changes) -> Program:
        """This program scheduled by ``stages`` (with other fields changed too).  Its
        ``schedule`` and ``loop_axes`` are built when first read: a schedule template
        applies a dozen primitives unchecked, and only the last program is scanned."""
        return self.replace(stages=tuple(stages), **changes)

    def stage(self, name: str) -> StageRecord:
        for stage in self.stages:
            if stage.name == name:
                return stage
        known = ", ".join(s.name for s in self.stages)
        raise InvalidArgumentError(f"no stage named '{name}'; the stages are: {known}")

    def schedule_map(self) -> isl.UnionMap:
        """The flat schedule, restricted to the statements' domains."""
        result = isl.UnionMap.empty(self.context.get_space())
        for row in _rows(self.schedule).values():
            result = result.union(isl.UnionMap.from_map(row))
        return result.intersect_domain(self.domains)

    def schedule_rows(self) -> dict[str, isl.Map]:
        """Each statement's row of the flat schedule (not restricted to its domain; a
        statement without instances may have none)."""
        return _rows(self.schedule)

    def order_rows(self) -> dict[str, isl.Map]:
        """:meth:`schedule_rows` with each split recorded as order-equivalent ordered by
        its whole loop (:func:`~.schedule.order_rows`): the same order of instances, so
        the same dataflow, for isl's dataflow analysis."""
        return _ORDER_ROWS.get((self.schedule,), lambda: order_rows(
            self.statements, self.stages, self.schedule_rows()))

    def schedule_of(self, stmt: str) -> isl.Map:
        """The schedule row of one statement, on its domain."""
        domain = self.statement(stmt).domain
        return _SCHEDULE_ROWS.get((self.schedule, stmt, domain),
                                  lambda: self._schedule_row(stmt, domain))

    def _schedule_row(self, stmt: str, domain: isl.Set) -> isl.Map:
        row = _rows(self.schedule).get(stmt)
        if row is None:  # no instance: an empty map of the right spaces
            width = max((m.dim(isl.dim_type.out) for m in _rows(self.schedule).values()),
                        default=0)
            space = isl.Space.create_from_names(
                isl.DEFAULT_CONTEXT, in_=list(self.statement(stmt).dims),
                out=[f"c{k}" for k in range(width)],
                params=list(domain.get_var_names(isl.dim_type.param)))
            row = isl.Map.empty(space.set_tuple_name(isl.dim_type.in_, stmt))
        return row.intersect_domain(domain)

    def axis_at(self, stmt: str, dim: int) -> Axis | None:
        """The loop that schedule dimension ``dim`` of statement ``stmt`` enumerates."""
        loop_axes = self.loop_axes
        axes = _BY_NAME.get((loop_axes, "axes"), lambda: dict(reversed(loop_axes))).get(stmt)
        return None if axes is None or dim >= len(axes) else axes[dim]

    def statement(self, name: str) -> Statement:
        found = _by_name(self.statements).get(name)
        if found is not None:
            return found
        known = ", ".join(s.name for s in self.statements)
        raise InvalidArgumentError(f"no statement named '{name}'; the program has: {known}")

    def array(self, name: str) -> Array:
        found = _by_name(self.arrays).get(name)
        if found is not None:
            return found
        known = ", ".join(a.name for a in self.arrays)
        raise InvalidArgumentError(f"no array named '{name}'; the program has: {known}")

    def array_of(self, tensor: Tensor) -> Array:
        found = _BY_TENSOR.get((self.arrays,), lambda: _by_tensor(self.arrays)).get(id(tensor))
        if found is not None and found.tensor is tensor:
            return found
        raise InvalidArgumentError(
            f"tensor '{tensor.name}' is not part of this program; pass tensors that the "
            "scheduled outputs are computed from"
        )

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    @property
    def domains(self) -> isl.UnionSet:
        result = isl.UnionSet.empty(self.context.get_space())
        for stmt in self.statements:
            result = result.union(isl.UnionSet.from_set(stmt.domain))
        return result

    def statements_accessing(self, array: str) -> tuple[Statement, ...]:
        """The statements that read or write ``array``, in program order."""
        users = _USERS.get((self.statements,), lambda: _users(self.statements))
        return users.get(array, ())

    def accesses(self, kind: AccessKind | None = None,
                 array: str | None = None) -> isl.UnionMap:
        """Union of the access relations, optionally of one kind and one array."""
        result = isl.UnionMap.empty(self.context.get_space())
        index = _ACCESS_INDEX.get((self.statements,), lambda: _access_index(self.statements))
        for access in index.get(array, ()) if array is not None else (
                a for stmt in self.statements for a in stmt.accesses):
            if kind is None or access.kind is kind:
                result = result.union(isl.UnionMap.from_map(access.relation))
        return result


class _PendingSchedule:
    """The value of ``schedule`` and ``loop_axes`` until one of them is read."""

    __slots__ = ("statements", "stages", "context")

    def __init__(self, statements, stages, context):
        self.statements, self.stages, self.context = statements, stages, context


class _BuiltWhenRead:
    """A field of :class:`Program` that may hold a :class:`_PendingSchedule`: reading it
    builds the schedule and stores both fields (the slot's own ``__set__``: the program
    is frozen for everyone else, and its value does not change)."""

    def __init__(self, slot):
        self.slot = slot

    def __get__(self, program, owner=None):
        if program is None:
            return self
        value = self.slot.__get__(program, owner)
        if type(value) is _PendingSchedule:
            schedule, loop_axes, rows = build_schedule(value.statements, value.stages,
                                                       value.context)
            _ROWS.get((schedule,), lambda: _split_map(rows))
            _SLOTS["schedule"].__set__(program, schedule)
            _SLOTS["loop_axes"].__set__(program, loop_axes)
            value = self.slot.__get__(program, owner)
        return value

    def __set__(self, program, value):
        self.slot.__set__(program, value)


_SLOTS = {name: Program.__dict__[name] for name in ("schedule", "loop_axes")}
_FIELDS = tuple(f.name for f in dataclasses.fields(Program))


def _raw(program: Program, name: str):
    """A field's value as stored (a pending schedule stays pending)."""
    slot = _SLOTS.get(name)
    return slot.__get__(program, Program) if slot is not None else getattr(program, name)


def _same_schedule_inputs(program: Program, fields: dict) -> bool:
    """Whether ``fields`` derive the same schedule as ``program``: the same stages,
    context and statement domains (the objects: primitives make new ones)."""
    new_stages, old_stages = tuple(fields["stages"]), program.stages
    if len(new_stages) != len(old_stages) or any(a is not b for a, b in zip(new_stages,
                                                                          old_stages)):
        return False
    if fields["context"] is not program.context:
        return False
    old, new = program.statements, fields["statements"]
    return old is new or (len(old) == len(new) and all(
        a.name == b.name and a.domain is b.domain for a, b in zip(old, new)))
for _name, _slot in _SLOTS.items():
    setattr(Program, _name, _BuiltWhenRead(_slot))
del _name, _slot

_ROWS = IdentityMemo(size=64)
_ORDER_ROWS = IdentityMemo(size=16)
_ACCESS_INDEX = IdentityMemo(size=16)
_USERS = IdentityMemo(size=16)
_BY_NAME = IdentityMemo(size=64)


def _users(statements: tuple[Statement, ...]) -> dict[str, tuple[Statement, ...]]:
    """The statements accessing each array, in statement order."""
    users: dict[str, dict[int, Statement]] = {}
    for stmt in statements:
        for access in stmt.accesses:
            users.setdefault(access.array, {})[id(stmt)] = stmt
    return {array: tuple(found.values()) for array, found in users.items()}
_BY_TENSOR = IdentityMemo(size=32)


def _by_name(items: tuple) -> dict:
    """``items`` (statements or arrays) by name: the first of each name, as a search
    in order finds it."""
    return _BY_NAME.get((items,), lambda: {i.name: i for i in reversed(items)})


def _by_tensor(arrays: tuple[Array, ...]) -> dict[int, Array]:
    return {id(a.tensor): a for a in reversed(arrays)}


def _access_index(statements: tuple[Statement, ...]) -> dict[str, list[Access]]:
    """The accesses of ``statements`` per array, in statement order."""
    index: dict[str, list[Access]] = {}
    for stmt in statements:
        for access in stmt.accesses:
            index.setdefault(access.array, []).append(access)
    return index
_SCHEDULE_ROWS = IdentityMemo()


def _rows(schedule: isl.Schedule) -> dict[str, isl.Map]:
    """Each statement's row of ``schedule`` (flattened once per schedule object)."""
    return _ROWS.get((schedule,), lambda: _split_rows(schedule))


def _split_rows(schedule: isl.Schedule) -> dict[str, isl.Map]:
    return _split_map(schedule.get_map())


def _split_map(rows: isl.UnionMap) -> dict[str, isl.Map]:
    result: dict[str, isl.Map] = {}
    rows.foreach_map(lambda m: result.__setitem__(m.get_tuple_name(isl.dim_type.in_), m))
    return result
