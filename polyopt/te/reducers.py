"""``po.comm_reducer``: new commutative, associative reductions, as TVM declares them.

>>> import polyopt as po
>>> product = comm_reducer(lambda x, y: x * y, lambda t: po.const(1, dtype=t), name="product")
>>> A = po.placeholder((4, 3), name="A"); k = po.reduce_axis((0, 3), name="k")
>>> str(po.compute((4,), lambda i: product(A[i, k], axis=k), name="P").op.body)
'product(A[i, k], axis=[k])'
"""

from __future__ import annotations

from typing import Callable

from ..errors import InvalidArgumentError, PolyoptError
from .expr import Cast, Expr, as_expr
from .tensor import make_reduce


class CommReducer:
    """A reduction ``fcombine(accumulated, new)`` starting from ``fidentity(dtype)``; call
    it like ``po.sum``: ``product(A[i, k], axis=k)``.  polyopt takes the declaration's
    word that ``fcombine`` is commutative and associative (so reduce loops may be
    reordered, as for sums; ``strict_fp=True`` keeps the written order)."""

    def __init__(self, fcombine: Callable, fidentity: Callable, name: str = "reduce"):
        if not (callable(fcombine) and callable(fidentity)):
            raise InvalidArgumentError("comm_reducer needs two functions: fcombine(x, y) and "
                                       "fidentity(dtype)")
        self.fcombine, self.fidentity, self.name = fcombine, fidentity, name

    def __call__(self, expr, axis, where=None):
        if isinstance(expr, (tuple, list)):
            raise PolyoptError(
                f"reducer '{self.name}' over a tuple (argmax-style, several accumulators) is "
                "not supported yet; meanwhile reduce in two computes: the value with "
                "po.max, then its index with po.min(po.if_then_else(A[i, k] == M[i], k, n), "
                "axis=k)")
        return make_reduce(self, expr, axis, where)

    def combine(self, accumulated: Expr, value: Expr) -> Expr:
        """The update's value: ``fcombine(accumulated, value)`` in the result's dtype."""
        result = self._expr(self.fcombine(accumulated, value), "fcombine")
        return result if result.dtype == accumulated.dtype else Cast(result, accumulated.dtype)

    def identity(self, dtype: str) -> Expr:
        result = self._expr(self.fidentity(dtype), "fidentity")
        return result if result.dtype == dtype else Cast(result, dtype)

    def _expr(self, value, what: str) -> Expr:
        if isinstance(value, (tuple, list)):
            raise PolyoptError(f"reducer '{self.name}': {what} returns a tuple; tuple "
                               "reductions are not supported yet")
        return as_expr(value)

    def __str__(self) -> str:
        return self.name


def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce") -> CommReducer:
    """``product = po.comm_reducer(lambda x, y: x * y, lambda t: po.const(1, t))``."""
    return CommReducer(fcombine, fidentity, name)
