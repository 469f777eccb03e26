"""Recognize accumulations (a reduction's update), shared by the backends.

``C[i] = C[i] + x`` (also ``*``, ``maximum``, ``minimum``) combines the accumulator
with a new value ``x``: the LLVM backend lets that node be reassociated, the OpenCL
backend reduces ``x`` across work-items.

>>> import polyopt as po
>>> A = po.placeholder((4, 8), name="A"); k = po.reduce_axis((0, 8), name="k")
>>> C = po.compute((4,), lambda i: po.sum(A[i, k], axis=k), name="C")
>>> update = po.create_schedule(C).program.statement("C_update")
>>> str(accumulated_value(update))
'A[i, k]'
"""

from __future__ import annotations

from ..te.expr import BinOp, Call, Expr, TensorRead


def combination(stmt) -> Expr | None:
    """The node of ``C[i] = C[i] + x`` (or maximum/minimum) that combines the
    accumulator with a new value, or None when the statement is not an accumulation."""
    value = stmt.value
    for operand in _operands(value):
        if _is_accumulator(operand, stmt):
            return value
    return None


def reassociable(stmt) -> Expr | None:
    """The node LLVM may reassociate: ``combination``, or ``C[i] - x`` in
    ``C[i] = C[i] - x`` (a sum of negated values: ``x -= L[i][j] * x[j]``; the LLVM
    emitter takes it for a vector element summed along the innermost loop only, see
    ``llvm.row_streams.reduces_innermost``).  The OpenCL backend's trees combine
    partial results with ``combiner`` and keep to ``combination``."""
    value = stmt.value
    if isinstance(value, BinOp) and value.op == "-" and _is_accumulator(value.a, stmt):
        return value
    return combination(stmt)


def accumulated_value(stmt) -> Expr | None:
    """``x`` in ``C[i] = C[i] + x`` (None when ``stmt`` is not an accumulation)."""
    value = combination(stmt)
    if value is None:
        return None
    a, b = _operands(value)
    return b if _is_accumulator(a, stmt) else a


def combiner(stmt) -> str | None:
    """"+", "*", "maximum" or "minimum" for an accumulation, else None."""
    value = combination(stmt)
    if value is None:
        return None
    return value.op if isinstance(value, BinOp) else value.func


def _operands(value: Expr) -> tuple[Expr, ...]:
    if isinstance(value, BinOp) and value.op in "+*":
        return (value.a, value.b)
    if isinstance(value, Call) and value.func in ("maximum", "minimum"):
        return value.args
    return ()


def _is_accumulator(operand: Expr, stmt) -> bool:
    # the same index expressions, compared by their text: a buffer sized by its footprint
    # re-indexes the target and the read separately (``S[0] = S[0] + x``)
    return isinstance(operand, TensorRead) and operand.tensor is stmt.target.tensor and all(
        a is b or str(a) == str(b) for a, b in zip(operand.indices, stmt.target.indices))
