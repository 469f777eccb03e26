"""Statements and stages of ``po.scan``.

A scanned tensor ``Y`` gets two statements: ``Y_init`` for the first steps and ``Y``
for the updates.  The updates of states scanned together share their time loop, and
all their inits run before it.

>>> import polyopt as po
>>> m, n = po.var("m"), po.var("n")
>>> X = po.placeholder((m, n), name="X"); st = po.placeholder((m, n), name="st")
>>> init = po.compute((1, n), lambda _, i: X[0, i], name="init")
>>> upd = po.compute((m, n), lambda t, i: st[t - 1, i] + X[t, i], name="upd")
>>> Y = po.scan(init, upd, st, name="Y")
>>> program = po.create_schedule(Y).program
>>> print(program.statement("Y").domain)
[m, n] -> { Y[t, i] : 0 < t < m and 0 <= i < n }
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..errors import InvalidArgumentError
from ..names import NameGenerator
from ..te.expr import TensorRead
from .accesses import statement_accesses
from .affine import AffineSpace
from .program import Array, Statement
from .schedule import Attach, StageRecord, identity_axes


def scan_statements(array: Array, array_of: dict, params: tuple[str, ...],
                    stmt_names: NameGenerator) -> list[Statement]:
    """``[init, update]`` statements of the scanned tensor ``array``."""
    op = array.tensor.op
    reserved = params + tuple(a.name for a in array_of.values())
    init = _statement(stmt_names.fresh(f"{array.name}_init"), op.init_axis, op.init_body,
                      array, array_of, params, reserved, first_step=None, steps=op.shape[0])
    update = _statement(stmt_names.fresh(array.name), op.axis, op.update_body, array,
                        array_of, params, reserved, first_step=op.init_steps, steps=None)
    group = {id(t) for t in op.group.outputs}
    for access in init.reads:
        if id(array_of_name(array_of, access.array).tensor) in group:
            raise InvalidArgumentError(
                f"the init of scan '{array.name}' reads the scan's state; the init may only "
                "read other tensors")
    for access in update.reads:
        if id(array_of_name(array_of, access.array).tensor) not in group:
            continue
        later = access.relation.order_ge(isl.dim_type.out, 0, isl.dim_type.in_, 0)
        if not later.is_empty():
            raise InvalidArgumentError(
                f"the update of scan '{array.name}' reads {access.array} at the current or a "
                "later time step; a scan's update may only read earlier steps (t - 1, ...)")
    return [init, update]


def array_of_name(array_of: dict, name: str) -> Array:
    return next(a for a in array_of.values() if a.name == name)


def _statement(name, axes, body, array, array_of, params, reserved, first_step, steps):
    """``first_step`` starts the update after the init; ``steps`` stops the init at the
    scan's length (an init of 1 step does nothing for a scan of 0 steps)."""
    dims_gen = NameGenerator(reserved=reserved)
    dims = tuple(dims_gen.fresh(ax.name) for ax in axes)
    space = AffineSpace(name, axes, dims, params)
    space.context = f"scan '{array.name}'"
    bounds = [ax.dom for ax in axes]
    if first_step is not None:
        bounds[0] = (first_step, axes[0].hi)
    domain = space.box(bounds)
    if steps is not None:
        domain = domain.intersect(space.dim(0).lt_set(space.pw_aff(steps)))
    target = TensorRead(array.tensor, axes)
    accesses = statement_accesses(name, domain, target, body, array_of, space)
    return Statement(name, domain, axes, target, body, accesses, array.tensor.op.name)


def scan_stages(groups: list[tuple[Array, list[Statement]]], cells=()) -> list[StageRecord]:
    """Stages of the states of one scan group: every init, then the fused updates, each
    step running first the ``cells`` (the other stages of a step, in order)."""
    inits = [StageRecord(stmts[0].name, stmts[0].name, identity_axes(stmts[0].domain))
             for _, stmts in groups]
    updates = []
    for array, stmts in groups:
        attach = Attach() if not updates else Attach("with", updates[0].name, 1)
        updates.append(StageRecord(array.name, stmts[1].name, identity_axes(stmts[1].domain),
                             attach=attach))
    fused = [dataclasses.replace(c, attach=Attach("with", updates[0].name, 1)) for c in cells]
    return inits + fused + updates
