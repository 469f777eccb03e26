"""Index arithmetic of the emitted function: isl AST expressions as ``i64`` values.

The mixin :class:`IndexEmitter` of :class:`.codegen.FunctionEmitter` computes an
expression once per basic block for the same values of its variables, and writes
``var - start + c`` in a loop counting from 0 as ``count + c`` (the offset into a tile's
buffer stays visibly constant after unrolling).

>>> from llvmlite import ir
>>> value_id(ir.Constant(ir.IntType(64), 3)) == value_id(ir.Constant(ir.IntType(64), 3))
True
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import IndexExpr, Int, Name, Op, linear_form, names_in, offset_in_loop
from ...errors import InternalError
from .values import I64


class IndexEmitter:
    """Index values of a :class:`.codegen.FunctionEmitter`."""

    def _plus(self, start: ir.Value, offset: int) -> ir.Value:
        """``start + offset``: a constant when ``start`` is one, else computed once per
        block (unrolled copies then share their index values)."""
        if isinstance(start, ir.Constant):
            return ir.Constant(I64, start.constant + offset)
        key = ("plus", id(self.builder.block), value_id(start), offset)
        if key not in self._indices:
            self._indices[key] = self.builder.add(start, ir.Constant(I64, offset),
                                                  flags=("nsw",))
        return self._indices[key]

    def _from_counter(self, expr: IndexExpr) -> ir.Value | None:
        """``var - start + c`` in a loop that counts from 0 (a full tile) as ``count + c``:
        the offset into a tile's buffer stays visibly constant after unrolling."""
        form = linear_form(expr) if self.counters else None  # once, for every loop
        if form is None:
            return None
        for var, (counter, start, step) in self.counters.items():
            offset = offset_in_loop(expr, var, start, form=form) if step == 1 else None
            if offset == 0:
                return counter
            if offset is not None:
                return self.builder.add(counter, ir.Constant(I64, offset), flags=("nsw",))
        return None

    def _index(self, expr: IndexExpr) -> ir.Value:
        """An isl AST expression as an i64 (or i1 for conditions); computed once per
        basic block for the same values of its variables (see :meth:`_address`)."""
        if isinstance(expr, Int):
            return ir.Constant(I64, expr.value)
        if isinstance(expr, Name):
            return self.scalars[expr.name]
        key = (id(self.builder.block), expr,
               tuple(value_id(self.scalars.get(name)) for name in names_in(expr)))
        if key not in self._indices:
            self._indices[key] = self._new_index(expr)
        return self._indices[key]

    def _new_index(self, expr: Op) -> ir.Value:
        b = self.builder
        relative = self._from_counter(expr)
        if relative is not None:
            return relative
        args = [self._index(a) for a in expr.args]
        op = expr.op
        if op in ("add", "sub", "mul"):
            return getattr(b, op)(args[0], args[1], flags=("nsw",))
        if op == "neg":
            return b.sub(ir.Constant(I64, 0), args[0], flags=("nsw",))
        if op in ("min", "max"):
            result = args[0]
            for arg in args[1:]:
                pick = b.icmp_signed("<" if op == "min" else ">", result, arg)
                result = b.select(pick, result, arg)
            return result
        if op in ("div", "pdiv_q"):
            return b.sdiv(args[0], args[1])
        if op in ("pdiv_r", "zdiv_r"):
            return b.srem(args[0], args[1])
        if op == "fdiv_q":
            return self.values.floor_divmod("//", args[0], args[1], signed=True)
        if op in ("eq", "le", "lt", "ge", "gt"):
            symbol = {"eq": "==", "le": "<=", "lt": "<", "ge": ">=", "gt": ">"}[op]
            return b.icmp_signed(symbol, args[0], args[1])
        if op in ("and", "or", "select"):  # isl may give a constant as a condition: "|| 1"
            args[:2 if op != "select" else 1] = [
                a if a.type == ir.IntType(1) else b.icmp_signed("!=", a, ir.Constant(a.type, 0))
                for a in args[:2 if op != "select" else 1]]
        if op in ("and", "or"):
            return (b.and_ if op == "and" else b.or_)(args[0], args[1])
        if op == "select":
            return b.select(args[0], args[1], args[2])
        raise InternalError(f"unsupported AST operation '{op}'")


def value_id(value) -> object:
    """What identifies a value in generated code: a constant by its number."""
    return ("constant", value.constant) if isinstance(value, ir.Constant) else id(value)
