"""rfactor on in-place kernels: a ``+=`` reduction statement split into partial sums.

``s.rfactor("S1", ki)`` on ``C[i, j] += g(i, j, k)`` (its own loop nest, ``g`` not
reading ``C``) makes three statements, in place of the nest:

* ``C_rf_init[v, e] : C_rf[v, e] = 0`` for every element ``e`` the nest writes;
* ``C_rf_update[v, i, j, k] : C_rf[v, C's index] += g`` with ``v = ki(i, j, k)``, whose
  loop ``v`` is outermost and may run in parallel;
* ``S1[e, v] : C[e] += C_rf[v, e]`` (the stage ``S1`` now combines the partial sums).

Only the order of the additions changes (floating-point sums may round differently,
as with rfactor on tensor expressions).  The nest must hold the statement alone, so
nothing else sees the sums half-done; the rewritten kernel is then the new reference
that later rewrites are validated against.

>>> import polyopt as po
>>> N = po.var("N")
>>> @po.kernel
... def total(A: po.f64[N], y: po.f64[1]):
...     for i in range(N):
...         y[0] += A[i]
>>> s = po.create_schedule(total)
>>> io, ii = s["S0"].split("i", factor=4)
>>> yf = s.rfactor("S0", ii)
>>> [st.name for st in s.program.stages]
['y_rf_init', 'y_rf', 'S0']
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.accesses import read_accesses
from ..domain.affine import AffineSpace
from ..domain.program import Program
from ..domain.schedule import StageRecord, identity_axes
from ..schedule_errors import InPlaceKernelError, NotAReductionError
from ..te.expr import BinOp, Call, Const, IterVar, TensorRead
from ..te.tensor import walk
from .loops import axis_range
from .rewrite import (ZERO, expand_stage, fresh_statement_name, make_statement, new_array,
                      new_tensor)
from .rfactor import (append_range, bound, factor_position, lift, minus, placed,
                      prepend_range, with_leading_dim)


def rfactor(program: Program, stage_name: str, axis_name: str, factor_axis: int = 0
            ) -> tuple[Program, object]:
    """The kernel with ``stage_name``'s reduction split over loop ``axis_name`` (see the
    module doc; the partial sums' axis ``factor_axis`` is the factored loop); returns
    (program, partial-sum tensor)."""
    stage = program.stage(stage_name)
    stmt = program.statement(stage.main)
    _check_alone(program, stage)
    target, addend = _reduction(program, stmt)
    array = program.array(stmt.writes[0].array)
    position = factor_position(factor_axis, array.ndim)
    axis = stage.axes[stage.axis(axis_name)]
    lo, hi = axis_range(program, stage_name, axis)
    lo_expr = bound(lo, program, True)
    extent = bound(hi.sub(lo).add_constant_val(isl.Val(1)), program, False)
    if not isinstance(extent, Const):  # negative when the nest is empty
        extent = Call.make("maximum", extent, Const(0, "int64", True))
    partial = new_tensor(f"{array.name}.rf", placed(array.shape, extent, position), array.dtype)
    partial_array = new_array(program, partial)
    arrays = program.arrays + (partial_array,)
    names = _fresh_dims(program, stmt, axis_name, array.ndim)
    v = IterVar(names[0], ZERO, extent)
    elements = tuple(IterVar(n, ZERO, e) for n, e in zip(names[1:], array.shape))
    # partial sums, zeroed over every element the nest writes
    init_name = fresh_statement_name(program, f"{partial_array.name}_init")
    init_domain = prepend_range(stmt.writes[0].relation.range(), init_name, names, lo_expr,
                                extent, program)
    init = make_statement(program, arrays, init_name, (v,) + elements, names, init_domain,
                          TensorRead(partial, placed(elements, minus(v, lo_expr), position)),
                          Const(0, array.dtype), stmt.op)
    # the reduction into the partial sums: one more leading dimension, v = ki(s)
    update_name = fresh_statement_name(program, f"{partial_array.name}_update")
    update_dims = (names[0],) + stmt.dims
    update_domain = with_leading_dim(stmt.domain, axis.value, update_name, update_dims)
    into = TensorRead(partial, placed(target.indices, minus(v, lo_expr), position))
    update = make_statement(program, arrays, update_name, (v,) + stmt.iter_vars, update_dims,
                            update_domain, into, BinOp.make("+", into, addend), stmt.op)
    # the statement itself now adds the partial sums to what the array held
    combine_dims = names[1:] + (names[0],)
    combine_domain = append_range(stmt.writes[0].relation.range(), stmt.name, combine_dims,
                                  lo_expr, extent, program)
    out = TensorRead(array.tensor, elements)
    combine = make_statement(program, arrays, stmt.name, elements + (v,), combine_dims,
                             combine_domain, out,
                             BinOp.make("+", out, TensorRead(
                                 partial, placed(elements, minus(v, lo_expr), position))),
                             stmt.op)
    statements = []
    for other in program.statements:
        statements += [init, update, combine] if other.name == stmt.name else [other]
    update_axes = identity_axes(update_domain)[:1] + tuple(
        dataclasses.replace(a, value=lift(a.value, update_domain))
        for a in stage.axes if a is not axis)
    new_stages = [StageRecord(init_name, init_name, identity_axes(init_domain)),
                  StageRecord(partial_array.name, update_name, update_axes),
                  dataclasses.replace(stage, axes=identity_axes(combine_domain))]
    stages = expand_stage(program.stages, stage_name, new_stages)
    return program.with_stages(stages, statements=tuple(statements), arrays=arrays), partial


def _check_alone(program: Program, stage: StageRecord) -> None:
    if stage.init is not None or stage.attach.kind != "root" or any(
            s.attach.kind == "with" and s.attach.stage == stage.name for s in program.stages):
        raise InPlaceKernelError("rfactor", "not_alone", stage=stage.name)


def _reduction(program: Program, stmt) -> tuple[TensorRead, object]:
    """``(target, g)`` for ``target = target + g`` where ``g`` does not read the array."""
    value, (write,) = stmt.value, stmt.writes
    space = AffineSpace(stmt.name, stmt.iter_vars, stmt.dims, program.param_names)
    reads = dict((id(node), access) for node, access in read_accesses(stmt, space))
    if isinstance(value, BinOp) and value.op == "+":
        for mine, addend in ((value.a, value.b), (value.b, value.a)):
            access = reads.get(id(mine))
            if access is not None and access.relation.is_equal(write.relation) and not any(
                    isinstance(n, TensorRead) and n.tensor is stmt.target.tensor
                    for n in walk(addend)):
                return stmt.target, addend
    raise NotAReductionError("rfactor", stmt.name, update="addend", array=write.array)


def _fresh_dims(program: Program, stmt, axis_name: str, ndim: int) -> tuple[str, ...]:
    from ..names import NameGenerator

    names = NameGenerator(reserved=set(stmt.dims) | set(program.param_names))
    return (names.fresh(axis_name.replace(".", "_")),) + tuple(
        names.fresh(f"ax{d}") for d in range(ndim))
