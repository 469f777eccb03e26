"""What an accelerator stage computes: a copy, a zero, a choice of copies, an ALU chain.

Instruction selection (:mod:`.select`) reads a stage's expression through these: a
LOAD copies one read (or pads with 0), a STORE narrows one accumulator read (or one of
several by an index condition), and an ``acc`` stage is a chain of ALU operations
applied in place of the accumulator it reads first.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A", dtype="int32")
>>> alu_ops(po.maximum(po.minimum((A[0] + 3) // 4, 7), -8))  # add, shift right, clip
[('add', 3), ('shr', 2), ('clip', (-8, 7))]
"""

from __future__ import annotations

import numpy as np

from ...te.expr import BinOp, Call, Cast, Const, Select, TensorRead


def reads_of(expr) -> list[TensorRead]:
    out = []

    def visit(e):
        if isinstance(e, TensorRead):
            out.append(e)
            return
        for child in _children(e):
            visit(child)
    visit(expr)
    return out


def _children(e):
    if isinstance(e, BinOp):
        return (e.a, e.b)
    if isinstance(e, Cast):
        return (e.value,)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Select):
        return (e.cond, e.then, e.otherwise)
    return tuple(getattr(e, "args", ())) + tuple(
        x for x in (getattr(e, "a", None), getattr(e, "b", None)) if x is not None)


def is_zero(e) -> bool:
    while isinstance(e, Cast):
        e = e.value
    return isinstance(e, Const) and e.value == 0


def store_branches(e, conditions=()):
    """``[(conditions, read)]`` of a store's value: a plain copy, or copies chosen by
    index conditions (``if_then_else(p == 0, A[...], B[...])``: byte planes); each
    condition is ``(expr, True/False)``.  None when it computes anything else."""
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, TensorRead):
        return [(conditions, e)]
    if isinstance(e, Select) and not reads_of(e.cond):
        then = store_branches(e.then, conditions + ((e.cond, True),))
        other = store_branches(e.otherwise, conditions + ((e.cond, False),))
        return None if then is None or other is None else then + other
    return None


def _const(e):
    while isinstance(e, Cast):
        e = e.value
    return int(e.value) if isinstance(e, Const) and isinstance(e.value, (int, np.integer)) \
        else None


def alu_source(expr):
    """The accumulator read an elementwise expression is computed in place of (its
    innermost first operand), or None when it is not an ALU chain."""
    ops = alu_ops(expr, source_only=True)
    return ops


def alu_ops(expr, source_only: bool = False):
    """``[(op, imm or TensorRead)]`` applying ``expr`` in place of its first operand
    (or, with ``source_only``, that operand), or None when the ALU cannot compute it."""
    while isinstance(expr, Cast):
        expr = expr.value
    if isinstance(expr, TensorRead):
        return expr if source_only else []
    head, op, operand = None, None, None
    if isinstance(expr, BinOp) and expr.op in ("+", "*", "//"):
        head, other = expr.a, expr.b
        value = _const(other)
        if expr.op == "//":
            if value is None or value <= 0 or value & (value - 1):
                return None
            op, operand = "shr", value.bit_length() - 1
        elif value is not None:
            op, operand = {"+": "add", "*": "mul"}[expr.op], value
        elif expr.op == "+" and isinstance(other, TensorRead):
            op, operand = "add", other
        else:
            return None
    elif isinstance(expr, Call) and expr.func in ("maximum", "minimum"):
        a, b = expr.args
        if _const(b) is None:
            a, b = b, a
        if _const(b) is None:
            return None
        head, op, operand = a, {"maximum": "max", "minimum": "min"}[expr.func], _const(b)
    else:
        return None
    inner = alu_ops(head, source_only)
    if inner is None or source_only:
        return inner
    if op == "max" and inner and inner[-1][0] == "min" and operand <= inner[-1][1]:
        return inner[:-1] + [("clip", (operand, inner[-1][1]))]
    return inner + [(op, operand)]
