"""``po.comm_reducer``: new commutative, associative reductions, as TVM declares them.

>>> import polyopt as po
>>> product = comm_reducer(lambda x, y: x * y, lambda t: po.const(1, dtype=t), name="product")
>>> A = po.placeholder((4, 3), name="A"); k = po.reduce_axis((0, 3), name="k")
>>> str(po.compute((4,), lambda i: product(A[i, k], axis=k), name="P").op.body)
'product(A[i, k], axis=[k])'

A reducer over tuples (argmax: ``fcombine`` takes and returns ``(index, value)`` pairs)
gives one reduction per element of the tuple; ``po.compute`` returns one tensor each,
and every instance of the reduction updates all of them together:

>>> def fcombine(x, y):
...     keep = x[1] >= y[1]
...     return po.if_then_else(keep, x[0], y[0]), po.if_then_else(keep, x[1], y[1])
>>> argmax = comm_reducer(fcombine, lambda t0, t1: (po.const(-1, t0), po.min_value(t1)))
>>> I, V = po.compute((4,), lambda i: argmax((k, A[i, k]), axis=k), name="T")
>>> I.name, V.name, str(V.op.body)
('T.v0', 'T.v1', 'reduce[1]((k, A[i, k]), axis=[k])')
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from ..errors import InvalidArgumentError, PolyoptError, call_user, public
from .expr import Cast, Expr, IterVar, Reduce, as_expr
from .tensor import make_reduce, with_init


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

    def __call__(self, expr, axis, where=None, init=None):
        if not isinstance(axis, (tuple, list, IterVar)) and where is None and init is None:
            return self.combine(as_expr(expr), as_expr(axis))  # TVM: reducer(x, y) combines
        if isinstance(expr, (tuple, list)):
            if init is not None:
                raise InvalidArgumentError(
                    f"reducer '{self.name}' over a tuple with init=: not supported; start "
                    "from the identity and combine the start values in a compute after it")
            return self._tuple_reduce(tuple(expr), axis, where)
        reduce = make_reduce(self, expr, axis, where)
        self.identity(reduce.dtype), self.combine(reduce.source, reduce.source)  # checked now
        return reduce if init is None else with_init(reduce, init)

    def _tuple_reduce(self, sources: tuple, axis, where) -> tuple[Reduce, ...]:
        """One :class:`Reduce` per element of the tuple (TVM's ``value_index``)."""
        if not sources:
            raise InvalidArgumentError(f"reducer '{self.name}' over an empty tuple")
        parts = [make_reduce(self, s, axis, where) for s in sources]
        sources = tuple(p.source for p in parts)
        dtypes_ = tuple(p.dtype for p in parts)
        combiners = [TupleCombiner(self, sources, dtypes_, j) for j in range(len(parts))]
        combiners[0].identities(), combiners[0].combined(sources)  # checked now
        return tuple(dataclasses.replace(p, combiner=c) for p, c in zip(parts, combiners))

    def combine(self, accumulated: Expr, value: Expr) -> Expr:
        """The update's value: ``fcombine(accumulated, value)`` in the result's dtype."""
        result = self._expr(self.call("fcombine", accumulated, value), "fcombine")
        return result if result.dtype == accumulated.dtype else Cast(result, accumulated.dtype)

    def identity(self, dtype: str) -> Expr:
        result = self._expr(self.call("fidentity", dtype), "fidentity")
        return result if result.dtype == dtype else Cast(result, dtype)

    def call(self, what: str, *args):
        """``fcombine(*args)`` or ``fidentity(*args)``; what they raise is reported."""
        return call_user(getattr(self, what), *args, role=f"the {what} of reducer '{self.name}'",
                         hint="applied to one value a reducer calls fcombine(x, y) and "
                              "fidentity(dtype), applied to a tuple fcombine(xs, ys) and "
                              "fidentity(dtype0, dtype1, ...) (a reducer over tuples is "
                              "applied to a tuple: argmax((k, A[i, k]), axis=k))")

    def _expr(self, value, what: str) -> Expr:
        if isinstance(value, (tuple, list)):
            raise InvalidArgumentError(
                f"reducer '{self.name}': {what} returns a tuple but is applied to one value; "
                "apply it to a tuple of values, e.g. argmax((k, A[i, k]), axis=k)")
        return as_expr(value)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class TupleCombiner:
    """Element ``index`` of a tuple reduction by ``reducer`` over ``sources``: the
    combiner of one of its outputs (each output's :class:`Reduce` carries one)."""

    reducer: CommReducer
    sources: tuple[Expr, ...]
    dtypes: tuple[str, ...]
    index: int

    def __str__(self) -> str:
        return f"{self.reducer.name}[{self.index}]"

    def identities(self) -> tuple[Expr, ...]:
        """``fidentity(dtype0, dtype1, ...)``, each in its output's dtype."""
        return self._tuple(self.reducer.call("fidentity", *self.dtypes), "fidentity")

    def combined(self, accumulators: tuple[Expr, ...]) -> tuple[Expr, ...]:
        """``fcombine(accumulators, sources)``, each in its output's dtype."""
        return self._tuple(self.reducer.call("fcombine", tuple(accumulators), self.sources),
                           "fcombine")

    def _tuple(self, values, what: str) -> tuple[Expr, ...]:
        name = self.reducer.name
        if not isinstance(values, (tuple, list)) or len(values) != len(self.dtypes):
            raise InvalidArgumentError(
                f"reducer '{name}' is applied to a tuple of {len(self.dtypes)} values, so "
                f"{what} must return a tuple of {len(self.dtypes)}; it returned {values!r}")
        exprs = []
        for value, dtype in zip(values, self.dtypes):
            try:
                value = as_expr(value)
            except PolyoptError as err:
                raise InvalidArgumentError(f"reducer '{name}': {what}: {err}") from err
            exprs.append(value if value.dtype == dtype else Cast(value, dtype))
        return tuple(exprs)


def tuple_combiner(expr) -> TupleCombiner | None:
    """The :class:`TupleCombiner` of a reduction over a tuple, else None."""
    combiner = getattr(expr, "combiner", None) if isinstance(expr, Reduce) else None
    return combiner if isinstance(combiner, TupleCombiner) else None


@public
def comm_reducer(fcombine: Callable, fidentity: Callable, name: str = "reduce") -> CommReducer:
    """``product = po.comm_reducer(lambda x, y: x * y, lambda t: po.const(1, t))``."""
    return CommReducer(fcombine, fidentity, name)
