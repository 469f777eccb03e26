"""TVM's spellings of what the tensor-expression language has under other names.

``import polyopt as te`` runs classic TVM tensor-expression code; these are the names
it uses that polyopt's own API spells differently: ``te.thread_axis("threadIdx.x")``,
``tvm.tir.const(1, "float32")``, ``indexdiv``/``indexmod``, ``tvm.tir.Select``,
``min_value``/``max_value``.

>>> import polyopt as po
>>> str(const(2, "float32") + indexdiv(po.var("n"), 4))
'2.0f + n // 4'
>>> thread_axis("threadIdx.x").thread_tag
'threadIdx.x'
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError, public
from .expr import BinOp, Call, Const, Expr, as_expr
from .tensor import if_then_else


class ThreadAxis:
    """A GPU thread index to ``bind`` a loop to: ``s[C].bind(bx, te.thread_axis("blockIdx.x"))``
    (``bind`` also takes the tag itself, ``"blockIdx.x"``)."""

    __slots__ = ("thread_tag", "dom")

    def __init__(self, thread_tag: str, dom=None):
        self.thread_tag = thread_tag
        self.dom = dom

    @property
    def var(self) -> "ThreadAxis":
        return self

    def equal(self, value) -> "ThreadPredicate":
        """``tx.var.equal(0)``: the condition of ``set_store_predicate``."""
        return ThreadPredicate(self.thread_tag, value)

    def __repr__(self) -> str:
        return f"thread_axis({self.thread_tag!r})"


class ThreadPredicate:
    """``thread index == value``, as ``set_store_predicate`` takes it."""

    __slots__ = ("thread_tag", "value")

    def __init__(self, thread_tag: str, value):
        self.thread_tag, self.value = thread_tag, value


@public
def thread_axis(dom=None, tag: str = "", name: str = "") -> ThreadAxis:
    """``te.thread_axis("threadIdx.x")`` or ``te.thread_axis((0, 8), "vthread")``."""
    if isinstance(dom, str) and not tag:
        dom, tag = None, dom
    if not isinstance(tag, str) or not tag:
        raise InvalidArgumentError(
            f"thread_axis needs a tag such as 'blockIdx.x' or 'threadIdx.x', got {tag!r}")
    return ThreadAxis(tag, dom)


@public
def const(value, dtype: str | None = None) -> Const:
    """A constant of a given dtype: ``tvm.tir.const(0, "float32")``."""
    if dtype is None:
        return as_expr(value)
    dtype = dtypes.normalize(dtype)
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    value = float(value) if dtypes.is_float(dtype) else int(value)
    return Const(value, dtype, weak=False)


@public
def indexdiv(a, b) -> Expr:
    """Floor division of indices (``a // b``)."""
    return BinOp.make("//", a, b)


@public
def indexmod(a, b) -> Expr:
    """Remainder of indices (``a % b``)."""
    return BinOp.make("%", a, b)


def Select(cond, then, otherwise) -> Expr:  # noqa: N802 (TVM's name)
    """``tvm.tir.Select(cond, a, b)``: ``po.if_then_else`` (only the chosen side runs)."""
    return if_then_else(cond, then, otherwise)


@public
def min_value(dtype: str) -> Const:
    """The smallest finite value of ``dtype`` (``te.min_value("float32")``)."""
    dtype = dtypes.normalize(dtype)
    info = np.finfo(dtype) if dtypes.is_float(dtype) else np.iinfo(dtype)
    return const(info.min, dtype)


@public
def max_value(dtype: str) -> Const:
    """The largest finite value of ``dtype``."""
    dtype = dtypes.normalize(dtype)
    info = np.finfo(dtype) if dtypes.is_float(dtype) else np.iinfo(dtype)
    return const(info.max, dtype)


@public
def floordiv(a, b) -> Expr:
    """TVM's ``te.floordiv``: division rounding down (:func:`indexdiv`)."""
    return indexdiv(a, b)


@public
def floormod(a, b) -> Expr:
    """TVM's ``te.floormod``: the remainder of :func:`floordiv`, of the divisor's sign."""
    return indexmod(a, b)


@public
def power(base, exponent) -> Expr:
    """TVM's ``te.power``: ``base ** exponent`` for a small non-negative integer exponent
    (repeated products, exact); other exponents are refused with the polyopt way."""
    import numbers
    if isinstance(exponent, numbers.Real) and float(exponent).is_integer():
        exponent = int(exponent)
    if isinstance(exponent, numbers.Integral) and 0 <= exponent <= 64:
        result = const(1, as_expr(base).dtype) if exponent == 0 else as_expr(base)
        for _ in range(max(int(exponent) - 1, 0)):
            result = result * base
        return result
    raise InvalidArgumentError(
        f"te.power: polyopt computes powers with integer exponents 0..64 only, got "
        f"{exponent!r}; write exp(y * log(x)) with po.exp and po.log for others")


@public
def popcount(value) -> Expr:
    """TVM's ``tvm.tir.popcount(x)``: the number of bits set in an integer, of the
    integer's dtype (a negative signed value counts its two's complement bits).

    >>> import polyopt as po
    >>> A = po.placeholder((4,), name="A", dtype="uint32")
    >>> popcount(A[0]).dtype
    'uint32'
    """
    value = as_expr(value)
    if not dtypes.is_int(value.dtype):
        raise DTypeError(f"popcount counts the bits of an integer, got '{value}' "
                                   f"of dtype {value.dtype}; cast it first, e.g. "
                                   "x.astype('uint32')")
    if value.weak:  # a Python int or index arithmetic: its bits as int64
        value = value.astype("int64")
    return Call.make("popcount", value)
