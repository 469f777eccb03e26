"""Helpers for primitives that add statements and arrays (caches, rfactor).

>>> import polyopt as po
>>> T = new_tensor("C.local", (po.var("n"),), "float32")
>>> T.name, T.dtype
('C.local', 'float32')
"""

from __future__ import annotations

import dataclasses

import islpy as isl

from ..domain.accesses import check_reads_in_bounds, statement_accesses
from ..domain.affine import AffineSpace
from ..domain.program import Array, Program, Statement
from ..domain.schedule import init_hoisted
from ..schedule_errors import PrimitiveOrderError, SharedLoopsError, TupleReductionError
from ..names import NameGenerator
from ..te.expr import Const, Expr, IterVar, TensorRead
from ..te.tensor import ComputeOp, Tensor

ZERO = Const(0, "int64", True)


def new_tensor(name: str, shape: tuple[Expr, ...], dtype: str, axis=(), reduce_axis=()
               ) -> Tensor:
    """A tensor that only a primitive defines (its statements are made separately);
    ``axis`` are the axes its statements use, so that ``T.op.axis`` works as usual."""
    return Tensor(ComputeOp(name, tuple(shape), dtype, tuple(axis), tuple(reduce_axis),
                            Const(0, dtype)))


def new_array(program: Program, tensor: Tensor, scope: str = "global") -> Array:
    names = NameGenerator(reserved={a.name for a in program.arrays}
                          | set(program.param_names))
    return Array(names.fresh(tensor.name), tensor.shape, tensor.dtype, tensor, "compute",
                 scope)


def fresh_statement_name(program: Program, base: str) -> str:
    return NameGenerator(reserved={s.name for s in program.statements}).fresh(base)


def make_statement(program: Program, arrays: tuple[Array, ...], name: str,
                   iter_vars: tuple[IterVar, ...], dims: tuple[str, ...], domain: isl.Set,
                   target: TensorRead, value: Expr, op: str) -> Statement:
    """A statement with exact accesses, checked to read in bounds."""
    array_of = {id(a.tensor): a for a in arrays}
    space = AffineSpace(name, iter_vars, dims, program.param_names)
    space.context = f"statement {name}"
    accesses = statement_accesses(name, domain, target, value, array_of, space)
    stmt = Statement(name, domain, iter_vars, target, value, accesses, op)
    check_reads_in_bounds(stmt, array_of, program.param_names, program.context)
    return stmt


def box(name: str, iter_vars, dims, bounds, params) -> isl.Set:
    """``{ name[dims] : lo <= dim < hi }``."""
    return AffineSpace(name, tuple(iter_vars), tuple(dims), params).box(list(bounds))


def retarget(stmt: Statement, old: Tensor, new: Tensor, program: Program,
             arrays: tuple[Array, ...], *, reads_only: bool = False) -> Statement:
    """``stmt`` with every access (or every read) to tensor ``old`` going to ``new``
    (same indices)."""
    from ..te.substitute import transform

    def swap(node):
        if isinstance(node, TensorRead) and node.tensor is old:
            return TensorRead(new, node.indices)
        return None

    swapped = None if reads_only else swap(stmt.target)
    target = stmt.target if swapped is None else swapped
    value = transform(stmt.value, swap)
    rebuilt = make_statement(program, arrays, stmt.name, stmt.iter_vars, stmt.dims, stmt.domain,
                             target, value, stmt.op)
    return rebuilt


def refuse_tuple_reduction(program: Program, stage_name: str, primitive: str) -> None:
    """``primitive`` does not apply to a reduction over a tuple (several outputs updated
    by each instance) yet: say so, and what works."""
    outputs = [s.name for s in program.stages if init_hoisted(s) and s.attach.stage == stage_name]
    if outputs:
        raise TupleReductionError(primitive, stage_name, tuple(outputs))


def require_default_schedule(program: Program, stage_name: str, primitive: str) -> None:
    """Primitives that rewrite a stage's statements must come before its loops change."""
    stage = program.stage(stage_name)
    default = tuple(program.statement(stage.main).dims)
    if tuple(a.name for a in stage.axes) != default or stage.attach.kind != "root":
        raise PrimitiveOrderError(primitive, "loop changes and compute_at", stage=stage_name)
    refuse_tuple_reduction(program, stage_name, primitive)
    for other in program.stages:
        if other.attach.kind == "with" and other.attach.stage == stage_name:
            raise SharedLoopsError(primitive, stage_name, other.name)


def insert_stage(stages: tuple, new_stage, before: str) -> tuple:
    """``stages`` with ``new_stage`` placed right before the stage named ``before``."""
    result = []
    for stage in stages:
        if stage.name == before:
            result.append(new_stage)
        result.append(stage)
    return tuple(result)


def expand_stage(stages: tuple, name: str, replacements: list) -> tuple:
    """``stages`` with the stage named ``name`` replaced by ``replacements`` (in order)."""
    result = []
    for stage in stages:
        result += replacements if stage.name == name else [stage]
    return tuple(result)


def replace_stage(stages: tuple, name: str, **changes) -> tuple:
    return tuple(dataclasses.replace(s, **changes) if s.name == name else s for s in stages)


def axis_vars(names, extents) -> tuple[IterVar, ...]:
    return tuple(IterVar(n, ZERO, e) for n, e in zip(names, extents))
