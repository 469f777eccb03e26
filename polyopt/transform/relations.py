"""TVM's views of a stage's loops: ``s[C].relations``, how they came from one another,
and ``s[C].iter_var_attrs``, what each is (:class:`IterVarAttr`).

Each split, tile, fuse and ``fuse()`` of no loops applied to a stage is one or two
relations between its loops (TVM's ``IterVarRelation``): :class:`Split` (``parent``
into ``outer`` and ``inner``), :class:`Fuse` (``outer`` and ``inner`` into ``fused``)
and :class:`Singleton` (a new loop of one iteration).  They are read from the
schedule's recorded steps and the loops before and after each.

>>> import polyopt as po
>>> A = po.placeholder((16,), name="A")
>>> B = po.compute((16,), lambda i: A[i] * 2, name="B")
>>> s = po.create_schedule(B)
>>> xo, xi = s[B].split(B.op.axis[0], factor=4)
>>> s[B].relations
(Split(parent=LoopAxis(B.i), outer=LoopAxis(B.i.outer), inner=LoopAxis(B.i.inner), factor=4, nparts=None),)
"""

from __future__ import annotations

from dataclasses import dataclass

from .steps import LoopAxis


@dataclass(frozen=True, slots=True)
class Split:
    """Loop ``parent`` split into ``outer`` and ``inner`` (by ``factor`` or ``nparts``)."""

    parent: LoopAxis
    outer: LoopAxis
    inner: LoopAxis
    factor: object = None
    nparts: object = None


@dataclass(frozen=True, slots=True)
class Fuse:
    """Adjacent loops ``outer`` and ``inner`` fused into ``fused``."""

    outer: LoopAxis
    inner: LoopAxis
    fused: LoopAxis


@dataclass(frozen=True, slots=True)
class Singleton:
    """A loop ``iter`` of one iteration added by ``fuse()`` of no loops."""

    iter: LoopAxis


def stage_relations(schedule, stage: str) -> tuple:
    """The relations between the loops of ``stage`` made by the schedule's steps, in
    the order they were made."""
    relations = []
    states = schedule.before[1:] + [schedule.state]
    for step, before, after in zip(schedule.steps, schedule.before, states):
        if step.stage != stage or step.primitive not in ("split", "tile", "fuse", "singleton"):
            continue
        old = {a.name: a for a in before.program.stage(stage).axes}
        new = {a.name: a for a in after.program.stage(stage).axes}

        def loop(axis):
            return LoopAxis(stage, axis.name, axis.kind)
        gone = [loop(a) for name, a in old.items() if name not in new]
        made = [loop(a) for name, a in new.items() if name not in old]
        kwargs = dict(step.kwargs)
        if step.primitive == "split":
            relations.append(Split(gone[0], made[0], made[1], kwargs.get("factor"),
                                   kwargs.get("nparts")))
        elif step.primitive == "tile":
            x_factor, y_factor = (list(step.args[2:]) + [kwargs.get("x_factor"),
                                                         kwargs.get("y_factor")])[:2]
            outer_x, outer_y, inner_x, inner_y = made
            relations += [Split(gone[0], outer_x, inner_x, x_factor),
                          Split(gone[1], outer_y, inner_y, y_factor)]
        elif step.primitive == "fuse":
            relations.append(Fuse(gone[0], gone[1], made[0]))
        else:
            relations.append(Singleton(made[0]))
    return tuple(relations)


# TVM's IterVar types (``tvm.te.schedule.IterVar.Unrolled`` ...), by polyopt loop kind
ITER_TYPES = {"DataPar": 0, "ThreadIndex": 1, "CommReduce": 2, "Ordered": 3, "Opaque": 4,
              "Unrolled": 5, "Vectorized": 6, "Parallelized": 7, "Tensorized": 8}
_BY_KIND = {"unrolled": "Unrolled", "vectorized": "Vectorized", "parallel": "Parallelized"}


class PragmaKey(str):
    """A pragma's name, also as TVM's ``StringImm`` (``.value``)."""

    __slots__ = ()

    @property
    def value(self) -> str:
        return str(self)


@dataclass(frozen=True, slots=True)
class IterVarAttr:
    """TVM's ``s[C].iter_var_attrs[loop]``: the loop's ``iter_type`` (one of
    :data:`ITER_TYPES`), its ``pragma_keys`` and the key of the ``tensor_intrin`` it
    is tensorized with (as ``s.script()`` records it; None if not tensorized)."""

    iter_type: int
    pragma_keys: tuple = ()
    tensor_intrin: object = None


def iter_var_attr(schedule, stage: str, loop: str) -> IterVarAttr:
    """The attributes of loop ``loop`` of ``stage`` (its kind, the steps that named it)."""
    record = schedule.program.stage(stage)
    axis = record.axes[record.axis(loop)]
    kind = _BY_KIND.get(axis.kind)
    if kind is None:
        kind = "ThreadIndex" if axis.kind != "serial" else \
            "CommReduce" if record.involves_reduce(axis) else "DataPar"
    pragmas, intrin = [], None
    for step in schedule.steps:
        if step.stage == stage and step.args and step.args[0] == loop:
            if step.primitive == "pragma":
                pragmas.append(PragmaKey(step.args[1]))
            elif step.primitive == "tensorize":
                kind, intrin = "Tensorized", step.args[1]
    return IterVarAttr(ITER_TYPES[kind], tuple(pragmas), intrin)
