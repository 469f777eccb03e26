"""TVM's stage groups: ``g = s.create_group(outputs, inputs)`` names the stages between
``inputs`` and ``outputs``, to move them together: ``g.compute_at(s[C], axis)``.

A scan's steps form a group from the start (TVM's scan group: ``s[update].group``):
a step computed at another step of the same scan shares its loops (see
:func:`~.attach.shares_outer_loops`), and a group made of steps is moved inside the
scan's loops the same way.

A group changes nothing by itself; ``g.compute_at`` is one ``compute_at`` step per
stage of the group computed at the root (those already attached inside the group stay),
each checked and recorded like any other (``s.script()`` replays them without the
group).  Groups nest: a group made of stages of an earlier one contains it.

>>> import polyopt as po
>>> A = po.placeholder((8, 8), name="A")
>>> B = po.compute((8, 8), lambda i, j: A[i, j] + 1, name="B")
>>> C = po.compute((8, 8), lambda i, j: B[i, j] * 2, name="C")
>>> D = po.compute((8, 8), lambda i, j: C[i, j] - 1, name="D")
>>> s = po.create_schedule(D)
>>> g = s.create_group(outputs=C, inputs=A)
>>> g.num_child_stages, s[B].group == g
(2, True)
>>> g.compute_at(s[D], D.op.axis[0])
>>> [st.attach.stage for st in s.program.stages[:2]]
['D', 'D']
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InvalidArgumentError, public_methods
from ..te.scan import ScanOp
from ..te.tensor import PlaceholderOp, Tensor, tensor_of


@dataclass
class GroupRecord:
    """One group: the stages directly in it, its parent group (an index) and the stage
    it was computed at."""

    stages: set = field(default_factory=set)
    parent: int | None = None
    attach: str | None = None


@public_methods
class StageGroup:
    """A group of stages of a schedule (a view of its record)."""

    def __init__(self, schedule, index: int):
        self.schedule, self.index = schedule, index

    @property
    def _record(self) -> GroupRecord:
        return self.schedule.group_records[self.index]

    @property
    def group(self) -> "StageGroup | None":
        """The group this group is in, or None."""
        parent = self._record.parent
        return None if parent is None else StageGroup(self.schedule, parent)

    @property
    def num_child_stages(self) -> int:
        """How many stages and groups are directly in this group."""
        return len(self._record.stages) + sum(
            1 for r in self.schedule.group_records if r.parent == self.index)

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The stages in this group and in the groups inside it, in definition order."""
        inside = {self.index}
        records = self.schedule.group_records
        while True:
            more = {k for k, r in enumerate(records) if r.parent in inside} - inside
            if not more:
                break
            inside |= more
        names = set().union(*(records[k].stages for k in inside))
        return tuple(s.name for s in self.schedule.program.stages if s.name in names)

    @property
    def attach_stage(self):
        """The stage the group was computed at (``g.compute_at``), or None."""
        attach = self._record.attach
        return None if attach is None else self.schedule[attach]

    def compute_at(self, parent, axis) -> None:
        """Compute each stage of the group that is computed at the root inside
        ``parent``'s loop ``axis`` (readers first; each a checked ``compute_at``).  A
        stage attached to another stage of the group stays there: it is computed at the
        root first and attached again to the same loop afterwards (all or nothing)."""
        schedule, program = self.schedule, self.schedule.program
        names = self.stage_names
        inner, moving = [], []
        for name in names:
            attach = program.stage(name).attach
            if attach.kind == "with" and attach.outer_dims and attach.stage in names:
                loop = program.stage(attach.stage).axes[attach.depth - 1].name
                inner.append((name, attach.stage, loop))
            elif attach.kind == "with" and not attach.outer_dims and \
                    attach.stage not in names and _is_scan(program, attach.stage):
                moving.append(name)  # a scan's step, sharing the scan's time loop
        with schedule.atomic():
            for name, _, _ in inner:
                schedule[name].compute_root()
            moved = {name for name, _, _ in inner}
            roots = [n for n in names if n not in moved and (
                n in moving or schedule.program.stage(n).attach.kind == "root")]
            for name in reversed(roots):
                schedule[name].compute_at(parent, axis)
            for name, stage, loop in reversed(inner):
                schedule[name].compute_at(schedule[stage], loop)
        self._record.attach = schedule[parent].name

    def __eq__(self, other) -> bool:
        return isinstance(other, StageGroup) and other.schedule is self.schedule and \
            other.index == self.index

    def __hash__(self) -> int:
        return hash((id(self.schedule), self.index))

    def __repr__(self) -> str:
        return f"StageGroup({', '.join(self.stage_names)})"


def scan_groups(program) -> list[GroupRecord]:
    """One group per scan of ``program``: its steps (the stages sharing its time loop,
    as it defines them) and the scan's own stage (its last step; not its init)."""
    last = {}
    for stage in program.stages:
        tensor = program.statement(stage.main).target.tensor
        if stage.attach.kind == "root" and isinstance(tensor.op, ScanOp):
            last[id(tensor.op)] = stage.name
    records = []
    for name in last.values():
        steps = {s.name for s in program.stages if s.attach.kind == "with"
                 and s.attach.stage == name and not s.attach.outer_dims}
        records.append(GroupRecord(stages=steps | {name}))
    return records


def _is_scan(program, name: str) -> bool:
    return isinstance(program.statement(program.stage(name).main).target.tensor.op, ScanOp)


def _is_state_read(tensor: Tensor, reader: Tensor | None) -> bool:
    """Whether ``reader`` (a step of a scan) reads ``tensor`` as the scan's state (TVM's
    state placeholder, ``s_state[t - 1]``): a group's input, not a stage of it."""
    op = tensor.op
    return isinstance(op, ScanOp) and reader is not None and (
        reader.op is op or any(reader is c for c in op.group.cells))


def _listed(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def create_group(schedule, outputs, inputs, include_inputs: bool = False) -> StageGroup:
    """The group of the stages computing ``outputs`` from ``inputs`` (the computed
    tensors between them; ``inputs`` too with ``include_inputs``), see the module."""
    stops = {id(t) for t in (tensor_of(v) or v for v in _listed(inputs))}
    tensors, seen = [], set()
    queue = [(tensor_of(v) or v, None) for v in _listed(outputs)]
    while queue:
        tensor, reader = queue.pop()
        if not isinstance(tensor, Tensor):
            raise InvalidArgumentError(f"create_group takes tensors, got {tensor!r}")
        if id(tensor.op) in seen or isinstance(tensor.op, PlaceholderOp) or \
                _is_state_read(tensor, reader):
            continue
        seen.add(id(tensor.op))
        if id(tensor) in stops and not include_inputs:
            continue
        tensors.append(tensor)
        if id(tensor) not in stops:
            queue += [(t, tensor) for t in tensor.op.input_tensors]
    names = {schedule._stage_name(t) for t in tensors}
    if not names:
        raise InvalidArgumentError("create_group: no computed stage lies between these "
                                   "inputs and outputs")
    records = schedule.group_records
    chains = {n: _chain(records, n) for n in names}
    common = _common_prefix(list(chains.values()))
    parent = common[-1] if common else None
    records.append(GroupRecord(parent=parent))
    new = len(records) - 1
    for name, chain in chains.items():
        below = chain[len(common):]
        if not below:  # directly in the common parent (or in no group): into the new one
            if parent is not None:
                records[parent].stages.discard(name)
            records[new].stages.add(name)
        else:  # in a group inside the common parent: that group goes into the new one
            records[below[0]].parent = new
    return StageGroup(schedule, new)


def _chain(records: list[GroupRecord], name: str) -> list[int]:
    """The groups containing stage ``name``, outermost first."""
    inner = [k for k, r in enumerate(records) if name in r.stages]
    chain = []
    current = inner[0] if inner else None
    while current is not None:
        chain.append(current)
        current = records[current].parent
    return chain[::-1]


def _common_prefix(chains: list[list[int]]) -> list[int]:
    prefix = []
    for values in zip(*chains):
        if len(set(values)) != 1:
            break
        prefix.append(values[0])
    return prefix


def group_of(schedule, name: str) -> StageGroup | None:
    """The innermost group containing stage ``name``, or None."""
    chain = _chain(schedule.group_records, name)
    return StageGroup(schedule, chain[-1]) if chain else None
