"""What TVM code reads from a stage after primitives rewrote it: ``s[B].op`` and the
``op`` of a tensor a primitive made (``BF = s.rfactor(B, ki)``; ``BF.op.axis``).

TVM refreshes ``s[B].op`` after ``rfactor``: its ``reduce_axis`` is then the loop over
the partial results.  ``stage_op`` gives the op itself while the stage computes it as
written, and otherwise a view listing the stage's current statement's axes.

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((4, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> B = po.compute((4,), lambda i: po.sum(A[i, k], axis=k), name="B")
>>> s = po.create_schedule(B)
>>> s[B].op is B.op
True
>>> ko, ki = s[B].split(k, factor=8)
>>> BF = s.rfactor(B, ki)
>>> [a.name for a in BF.op.axis], [a.name for a in s[B].op.reduce_axis]
(['k_inner', 'i'], ['k_inner'])
"""

from __future__ import annotations

import dataclasses

from ..errors import InvalidArgumentError
from ..schedule_errors import StorePredicateError
from ..domain.schedule import init_hoisted
from ..te.tensor import Tensor, tensor_of


@dataclasses.dataclass(frozen=True)
class StageOp:
    """A stage's op as TVM code sees it: ``name``, ``axis``, ``reduce_axis`` (loops of the
    stage, accepted by its primitives), ``input_tensors`` and ``output(0)``."""

    name: str
    axis: tuple
    reduce_axis: tuple
    input_tensors: tuple
    tensor: object
    body: object = None   # the statement's value (an update reads the accumulator)

    def output(self, index: int = 0):
        return self.tensor

    num_outputs = 1


def stage_op(program, stage_name: str, loop):
    """``s[T].op``: T's op while its statement is the one it defines, else a view of
    the stage's statement (after ``rfactor``, ``cache_write``); ``loop(name)`` is the
    stage's loop of that name, as primitives return it."""
    stage = program.stage(stage_name)
    main = program.statement(stage.main)
    tensor = main.target.tensor
    op = tensor.op
    written = tuple(getattr(op, "axis", ())) + tuple(getattr(op, "reduce_axis", ()))
    if all(any(a is b for b in main.iter_vars) for a in written):
        return op  # its statement still runs over its axes (compute_at adds outer ones)
    spatial, reduce = _split_axes(stage, main, loop)
    inputs = {id(a.tensor): a.tensor for a in (program.array(r.array) for r in main.reads)
              if a.tensor is not tensor}
    return StageOp(stage_name, spatial, reduce, tuple(inputs.values()), tensor, main.value)


def _split_axes(stage, main, loop) -> tuple[tuple, tuple]:
    """The statement's data-parallel axes, and its reduction loops (after a split of a
    reduce axis, its loops are the parts: ``k.outer``)."""
    spatial = tuple(v for v, d in zip(main.iter_vars, main.dims) if d not in stage.reduce_dims)
    reduce = tuple(loop(a.name) for a in stage.axes if stage.involves_reduce(a))
    return spatial, reduce


def refresh_partial_op(program, partial, loop) -> None:
    """Give the tensor ``s.rfactor`` returned the axes of its statement: ``BF.op.axis``
    (in the order of its shape: the factored loop at ``factor_axis``, the output's
    axes around it) and ``BF.op.reduce_axis``."""
    array = program.array_of(partial)
    stage = next(s for s in program.stages if s.name == array.name)
    main = program.statement(stage.main)
    spatial, reduce = _split_axes(stage, main, loop)
    place = {a.name: k for k, a in enumerate(stage.axes)}  # (made in the shape's order)
    spatial = tuple(sorted(spatial, key=lambda v: place.get(
        main.dims[next(k for k, w in enumerate(main.iter_vars) if w is v)], len(place))))
    partial.op = dataclasses.replace(partial.op, axis=spatial, reduce_axis=reduce)
    assert tensor_of(partial.op) is partial


def stage_computing(program, tensor) -> str | None:
    """The stage whose statement uses ``tensor``'s axes, for a tensor the program has no
    array of: a scan's init or update (``s[s_update]`` is the scan's update stage)."""
    axes = tuple(getattr(tensor.op, "axis", ()))
    if not axes:
        return None
    for stage in program.stages:
        main = program.statement(stage.main)
        if len(main.iter_vars) >= len(axes) and all(
                a is b for a, b in zip(axes, main.iter_vars)):
            return stage.name
    return None


def check_store_predicate(program, stage_name: str, predicate) -> None:
    """``s[B].set_store_predicate(tx.var.equal(0))`` after binding a reduction loop of B to
    ``tx``: polyopt's reduction across work-items already stores once per group, from its
    first work-item, so the predicate holds by construction; other predicates are
    refused (polyopt has no general store predicate yet)."""
    tag, value = getattr(predicate, "thread_tag", None), getattr(predicate, "value", None)
    stage = program.stage(stage_name)
    bound = [a for a in stage.axes if a.kind == tag and stage.involves_reduce(a)]
    if tag is None or value != 0 or not bound:
        raise StorePredicateError(stage_name)


def tuple_owner(program, stage_name: str) -> str:
    """The stage that schedules ``stage_name``: itself, or for an output of a reduction
    over a tuple, the first output's stage (TVM schedules all outputs as one stage)."""
    stage = program.stage(stage_name)
    return stage.attach.stage if init_hoisted(stage) else stage_name


def with_sibling_outputs(outputs):
    """``create_schedule``'s outputs as tensors: an op stands for its tensors, and a
    tensor of a multi-output compute brings its siblings (TVM schedules them as one)."""
    items = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    result = []
    for item in items:
        if not isinstance(item, Tensor) and tensor_of(item) is None:
            raise InvalidArgumentError(
                f"create_schedule takes computed tensors (or their .op), a list of them, "
                f"or a po.kernel; got {type(item).__name__} {item!r}")
        op = getattr(item, "op", item)
        members = getattr(op, "outputs", ())
        if len(members) < 2:
            members = [tensor_of(item) or item]
        result += [m for m in members if not any(m is r for r in result)]
    if len(result) == 1 and not isinstance(outputs, (list, tuple)):
        return result[0]
    return result


def detached_from_step(program, producer: str, consumer: str, axis: str):
    """A scan's step stage (fused with the time loop of the scan it feeds) about to be
    computed at a loop of that scan, or of another of its steps, inside the time loop, as
    TVM's scan tutorial does (and its scan group test):
    the stage is taken out of the fusion first, since ``compute_at`` attaches a root
    stage (the result runs it inside the same time step again)."""
    import dataclasses

    from ..domain.schedule import Attach

    stage = program.stage(producer)
    target = program.stage(consumer)
    if stage.attach.kind != "with" or stage.attach.outer_dims:
        return program
    scan = stage.attach.stage  # the stage whose time loop the step shares
    cells = getattr(getattr(program.statement(program.stage(scan).main).target.tensor.op,
                            "group", None), "cells", ())
    produced = program.statement(stage.main).target.tensor
    in_scan = consumer == scan or (target.attach.kind == "with" and target.attach.stage == scan)
    if not (any(produced is cell for cell in cells) and in_scan
            and stage.attach.depth <= target.axis(axis) + 1):
        return program
    stages = tuple(dataclasses.replace(s, attach=Attach()) if s.name == producer else s
                   for s in program.stages)
    return program.with_stages(stages)
