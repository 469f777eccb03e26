"""rfactor: split a reduction into independent partial reductions.

``CF = s.rfactor(C, ki)`` for ``C[i] = sum_k A[i, k]`` with ``k`` split into
``(ko, ki)`` adds ``CF[ki, i] = sum_ko A[i, ko*f + ki]`` and makes ``C[i]`` the sum
of ``CF[:, i]``.  The loop ``ki`` of CF carries no dependence, so it may be made
parallel or vectorized.  (Floating-point sums are reassociated, as rfactor means.)

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((4, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> C = po.compute((4,), lambda i: po.sum(A[i, k], axis=k), name="C")
>>> s = po.create_schedule(C)
>>> ko, ki = s[C].split(k, factor=8)
>>> CF = s.rfactor(C, ki)
>>> CF.shape[0].value, [st.name for st in s.program.stages]
(8, ['C_rf', 'C'])
"""

from __future__ import annotations

import dataclasses
import numbers

import islpy as isl

from ..domain.affine import aff_expression
from ..domain.from_te import identity
from ..domain.program import Program
from ..domain.schedule import Axis, StageRecord, identity_axes
from ..errors import InvalidArgumentError
from ..schedule_errors import NotAReductionError, PiecewiseBoundError, PrimitiveOrderError
from ..te.expr import BinOp, Call, Const, Expr, IterVar, TensorRead
from ..te.tensor import Reduce
from .loops import axis_range
from .rewrite import (ZERO, expand_stage, fresh_statement_name, make_statement, new_array,
                      new_tensor, refuse_tuple_reduction)


def aff_to_expr(aff: isl.Aff, dims: list[Expr], params: list[Expr]) -> Expr:
    """A quasi-affine isl expression as a tensor-expression index (``i + 1``); a rational
    one is divided (``(n + 2) // 3``).  See :func:`polyopt.domain.affine.aff_expression`."""
    den = aff.get_denominator_val().to_python()
    if den != 1:
        return BinOp.make("//", aff_to_expr(aff.scale_val(isl.Val(den)), dims, params), den)
    return aff_expression(aff, dims, params)


def single_aff(value: isl.PwAff, primitive: str = "rfactor") -> isl.Aff:
    """``value``'s one affine piece; ``primitive`` names the caller in the refusal."""
    pieces = []
    value.foreach_piece(lambda _set, aff: pieces.append(aff))
    if len(pieces) != 1:
        raise PiecewiseBoundError(primitive, str(value.coalesce()))
    return pieces[0]


def bound(value: isl.PwAff, program: Program, lowest: bool, primitive: str = "rfactor"
          ) -> Expr:
    """The loop's bound over all sizes as an index expression (a constant when bounded)."""
    extreme = value.min_val() if lowest else value.max_val()
    if not (extreme.is_infty() or extreme.is_neginfty() or extreme.is_nan()):
        return Const(extreme.to_python(), "int64", True)
    return aff_to_expr(single_aff(value, primitive), [], list(program.params))


def _extent_and_size(program: Program, lo: isl.PwAff, hi: isl.PwAff) -> tuple[Expr, Expr]:
    """The factored loop's number of iterations between its bounds as :func:`bound`
    gives them, ``hi - lo + 1``, as one index expression simplified by isl (``n``, not
    ``n - 1 + 1``), and the partial result's extent: the same where the sizes' context
    keeps it non-negative, else ``max(0, ...)`` (no partial sums where it is empty)."""
    def used(value: isl.PwAff, lowest: bool) -> isl.PwAff:
        extreme = value.min_val() if lowest else value.max_val()
        if extreme.is_infty() or extreme.is_neginfty() or extreme.is_nan():
            return isl.PwAff.from_aff(single_aff(value))
        space = isl.LocalSpace.from_space(value.get_domain_space())
        return isl.PwAff.from_aff(isl.Aff.zero_on_domain(space).set_constant_val(extreme))

    count = used(hi, False).sub(used(lo, True)).add_constant_val(isl.Val(1))
    aff = single_aff(count)
    if aff.is_cst():
        constant = Const(aff.get_constant_val().to_python(), "int64", True)
        return constant, constant
    extent = aff_to_expr(aff, [], list(program.params))
    negative = isl.PwAff.from_aff(aff).neg().pos_set()  # the sizes where it is below 0
    if negative.intersect(program.context).is_empty():
        return extent, extent
    return extent, nonnegative(extent)


def nonnegative(extent: Expr) -> Expr:
    """A new array's extent, 0 at the sizes where the range it covers is empty."""
    return extent if isinstance(extent, Const) else Call.make("maximum", ZERO, extent)


def factor_position(factor_axis, ndim: int) -> int:
    """Where the factored axis goes among ``ndim + 1`` axes: TVM's ``factor_axis``
    (``0`` first, ``-1`` last).

    >>> factor_position(0, 2), factor_position(-1, 2), factor_position(1, 2)
    (0, 2, 1)
    """
    if isinstance(factor_axis, bool) or not isinstance(factor_axis, numbers.Integral):
        raise InvalidArgumentError(f"rfactor's factor_axis must be an integer, got "
                                   f"{factor_axis!r}")
    position = int(factor_axis) if factor_axis >= 0 else ndim + 1 + int(factor_axis)
    if not 0 <= position <= ndim:
        raise InvalidArgumentError(f"rfactor's factor_axis must be in [{-ndim - 1}, {ndim}] "
                                   f"(the partial result has {ndim + 1} axes), got "
                                   f"{factor_axis}")
    return position


def placed(items: tuple, factor, position: int) -> tuple:
    """``items`` with ``factor`` inserted at ``position``."""
    return tuple(items[:position]) + (factor,) + tuple(items[position:])


def rfactor(program: Program, stage_name: str, axis_name: str, factor_axis: int = 0
            ) -> tuple[Program, object]:
    """``stage_name``'s reduction split over loop ``axis_name`` into partial results (the
    new tensor: the factored axis at ``factor_axis``, then the array's axes)."""
    stage = program.stage(stage_name)
    if stage.init is None:
        raise NotAReductionError("rfactor", stage_name)
    refuse_tuple_reduction(program, stage_name, "rfactor")
    if stage.attach.kind != "root":
        raise PrimitiveOrderError("rfactor", "compute_at", stage=stage_name)
    axis = stage.axes[stage.axis(axis_name)]
    if not stage.involves_reduce(axis):
        raise NotAReductionError("rfactor", stage_name, axis_name)
    init, update = program.statement(stage.init), program.statement(stage.main)
    array = program.array(stage_name)
    position = factor_position(factor_axis, array.ndim)
    combiner = _combiner(update, array.tensor)
    lo, hi = axis_range(program, stage_name, axis)
    lo_expr, hi_expr = bound(lo, program, True), bound(hi, program, False)
    extent, size = _extent_and_size(program, lo, hi)
    partial = new_tensor(f"{array.name}.rf", placed(array.shape, size, position), array.dtype)
    partial_array = new_array(program, partial)
    arrays = program.arrays + (partial_array,)
    v_name = _fresh_dim(axis_name, update.dims, program)
    v_var = IterVar(v_name, ZERO, extent)
    # partial update: same instances as the update, one more dimension equal to the loop
    rf_update_name = fresh_statement_name(program, f"{partial_array.name}_update")
    rf_dims = (v_name,) + update.dims
    rf_domain = with_leading_dim(update.domain, axis.value, rf_update_name, rf_dims)
    # the partial results are indexed like the array (its storage order: a cache may
    # have a layout), with the factored loop in front
    target = TensorRead(partial, placed(update.target.indices, minus(v_var, lo_expr), position))
    source = _reduce_source(update, array.tensor)
    rf_update = make_statement(program, arrays, rf_update_name, (v_var,) + update.iter_vars,
                               rf_dims, rf_domain, target, _combine(combiner, target, source),
                               partial_array.name)
    # partial init over (v, spatial)
    rf_init_name = fresh_statement_name(program, f"{partial_array.name}_init")
    init_dims = (v_name,) + init.dims
    init_domain = prepend_range(init.domain, rf_init_name, init_dims, lo_expr, extent, program)
    init_target = TensorRead(partial, placed(init.target.indices, minus(v_var, lo_expr),
                                             position))
    # the partial results start from the combiner's identity (the stage's own start
    # value, te.sum(init=), stays with the stage that combines them)
    start = Const(identity(combiner, array.dtype), array.dtype)
    rf_init = make_statement(program, arrays, rf_init_name, (v_var,) + init.iter_vars,
                             init_dims, init_domain, init_target, start, partial_array.name)
    # the original reduction now combines the partial results
    w_var = IterVar(v_name, ZERO, extent)
    new_update_dims = init.dims + (v_name,)
    new_update_domain = append_range(init.domain, update.name, new_update_dims, lo_expr,
                                      extent, program)
    read = TensorRead(partial, placed(init.target.indices, minus(w_var, lo_expr), position))
    out = init.target
    new_update = make_statement(program, arrays, update.name, init.iter_vars + (w_var,),
                                new_update_dims, new_update_domain, out,
                                _combine(combiner, out, read), update.op)
    statements = []
    for stmt in program.statements:
        if stmt.name == update.name:
            statements += [rf_init, rf_update, new_update]
        else:
            statements.append(stmt)
    # the partial result's loops in the order of its axes (TVM's BF.op.axis), then the
    # other reduce loops
    factored, *spatial = identity_axes(rf_domain)[:1 + len(init.dims)]
    rf_axes = placed(spatial, factored, min(position, len(spatial))) + tuple(
        dataclasses.replace(a, value=lift(a.value, rf_domain)) for a in stage.axes
        if stage.involves_reduce(a) and a is not axis)
    rf_stage = StageRecord(partial_array.name, rf_update_name, rf_axes,
                     frozenset(update.dims[len(init.dims):]), rf_init_name)
    new_stage = dataclasses.replace(stage, axes=identity_axes(new_update_domain),
                                    reduce_dims=frozenset({v_name}))
    stages = expand_stage(program.stages, stage_name, [rf_stage, new_stage])
    return program.with_stages(stages, statements=tuple(statements), arrays=arrays), partial


def minus(value: Expr, lo: Expr) -> Expr:
    """``value - lo``, folded when both are constants or ``lo`` is 0."""
    if isinstance(lo, Const) and lo.value == 0:
        return value
    if isinstance(value, BinOp) and value.op == "+" and isinstance(value.a, Const) \
            and isinstance(value.b, Const) and isinstance(lo, Const):
        return Const(value.a.value + value.b.value - lo.value, "int64", True)
    return value - lo


def _combiner(update, tensor) -> str:
    value = update.value
    if isinstance(value, BinOp) and value.op == "+":
        return "sum"
    if isinstance(value, Call) and value.func in ("maximum", "minimum"):
        return "max" if value.func == "maximum" else "min"
    raise NotAReductionError("rfactor", tensor.name, update="combiner")


def _reduce_source(update, tensor) -> Expr:
    value = update.value
    a, b = (value.a, value.b) if isinstance(value, BinOp) else value.args
    if isinstance(a, TensorRead) and a.tensor is tensor:
        return b
    raise NotAReductionError("rfactor", tensor.name, update="reduced")


def _combine(combiner: str, target: Expr, source: Expr) -> Expr:
    if combiner == "sum":
        return BinOp.make("+", target, source)
    return Call.make("maximum" if combiner == "max" else "minimum", target, source)


def _fresh_dim(base: str, taken, program: Program) -> str:
    from ..names import NameGenerator

    return NameGenerator(reserved=set(taken) | set(program.param_names)).fresh(base)


def with_leading_dim(domain: isl.Set, value: isl.PwAff, name: str, dims) -> isl.Set:
    """``{ name[v, x] : x in domain and v = value(x) }``."""
    graph = isl.Map.from_pw_aff(value).intersect_domain(domain)
    result = graph.reverse().wrap().flatten().set_tuple_name(name)
    for pos, dim in enumerate(dims):
        result = result.set_dim_name(isl.dim_type.set, pos, dim)
    return result.coalesce()


def _range_set(name, dims, lo, extent, program, position: int, base: isl.Set) -> isl.Set:
    """``base`` with ``lo <= dims[position] < lo + extent``."""
    from ..domain.affine import AffineSpace

    space = AffineSpace(name, (), tuple(dims), program.param_names)
    dim = space.dim(position)
    bounded = dim.ge_set(space.pw_aff(lo)).intersect(dim.lt_set(space.pw_aff(lo + extent)))
    return base.intersect(bounded)


def prepend_range(domain: isl.Set, name, dims, lo, extent, program) -> isl.Set:
    base = domain.insert_dims(isl.dim_type.set, 0, 1).set_tuple_name(name)
    for pos, dim in enumerate(dims):
        base = base.set_dim_name(isl.dim_type.set, pos, dim)
    return _range_set(name, dims, lo, extent, program, 0, base).coalesce()


def append_range(domain: isl.Set, name, dims, lo, extent, program) -> isl.Set:
    n = domain.dim(isl.dim_type.set)
    base = domain.insert_dims(isl.dim_type.set, n, 1).set_tuple_name(name)
    for pos, dim in enumerate(dims):
        base = base.set_dim_name(isl.dim_type.set, pos, dim)
    return _range_set(name, dims, lo, extent, program, n, base).coalesce()


def lift(value: isl.PwAff, rf_domain: isl.Set) -> isl.PwAff:
    """A loop of the update as a function of the partial update (one more leading dim)."""
    space = rf_domain.get_space()
    n = space.dim(isl.dim_type.set)
    local = isl.LocalSpace.from_space(space)
    target = value.get_domain_space()
    affs = isl.AffList.alloc(isl.DEFAULT_CONTEXT, n - 1)
    for pos in range(1, n):
        affs = affs.add(isl.Aff.var_on_domain(local, isl.dim_type.set, pos))
    embed = isl.MultiAff.from_aff_list(isl.Space.map_from_domain_and_range(space, target), affs)
    return value.pullback_multi_aff(embed)


__all__ = ["rfactor", "aff_to_expr", "Axis", "Reduce"]
