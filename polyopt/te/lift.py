"""Reductions inside larger expressions become computes of their own.

``po.compute((n,), lambda i: po.sum(A[i, k], axis=k) / n)`` (or an attention score
``po.sum(Q[i, d] * K[j, d], axis=d) / 8.0``) is two computes: the reduction, over the
axes it uses, and the expression reading it.  TVM refuses such bodies; polyopt splits
them when the compute is made.

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n, n), name="A")
>>> k = po.reduce_axis((0, n), name="k")
>>> M = po.compute((n,), lambda i: po.sum(A[i, k], axis=k) / n, name="mean")
>>> str(M.op.body), [t.name for t in M.op.inputs]
('mean_sum[i] / n', ['mean_sum'])
"""

from __future__ import annotations

from .expr import Const, Expr, IterVar, Reduce, TensorRead
from .substitute import _rebuild_children, substitute, transform
from .tensor import ComputeOp, Tensor, walk

_ZERO = Const(0, "int64", True)


def lift_nested_reductions(body: Expr, name: str) -> Expr:
    """``body`` with every reduction that is not the whole body read from a new compute
    named ``<name>_<reducer>`` (innermost first)."""
    if not any(isinstance(node, Reduce) and node is not body for node in walk(body)):
        return body

    def lift(node):
        return _lifted_read(node, name) if isinstance(node, Reduce) else None

    if isinstance(body, Reduce):  # the whole body stays; reductions inside it are lifted
        return _rebuild_children(body, lambda child: transform(child, lift))
    return transform(body, lift)


def _lifted_read(reduce: Reduce, name: str) -> TensorRead:
    free: list[IterVar] = []
    for node in walk(reduce):
        if isinstance(node, IterVar) and not any(node is a for a in reduce.axes) \
                and not any(node is f for f in free):
            free.append(node)
    if not free:  # a reduction of constants and sizes only: one element
        axis = IterVar("i0", _ZERO, Const(1, "int64", True))
        op = ComputeOp(f"{name}_{reduce.combiner}", (axis.hi,), reduce.dtype, (axis,),
                       reduce.axes, reduce)
        return TensorRead(Tensor(op), (_ZERO,))
    axes = tuple(IterVar(v.name, _ZERO, _extent(v)) for v in free)
    source = substitute(reduce, {v: (a if _starts_at_zero(v) else a + v.lo)
                                 for v, a in zip(free, axes)})
    op = ComputeOp(f"{name}_{reduce.combiner}", tuple(a.hi for a in axes), reduce.dtype,
                   axes, reduce.axes, source)
    return TensorRead(Tensor(op), tuple(v if _starts_at_zero(v) else v - v.lo for v in free))


def _starts_at_zero(axis: IterVar) -> bool:
    return isinstance(axis.lo, Const) and axis.lo.value == 0


def _extent(axis: IterVar) -> Expr:
    if _starts_at_zero(axis):
        return axis.hi
    if isinstance(axis.lo, Const) and isinstance(axis.hi, Const):
        return Const(axis.hi.value - axis.lo.value, "int64", True)
    return axis.hi - axis.lo
