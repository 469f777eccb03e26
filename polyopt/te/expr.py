"""Expression nodes of the tensor-expression language.

Expressions are immutable trees.  Arithmetic and comparison operators build new
nodes, so ``A[i, k] * B[k, j]`` is a :class:`BinOp` of two :class:`TensorRead`.
Equality (``==``) also builds a node; nodes hash by identity.

>>> n = Var("n")
>>> str(n * 2 + 1)
'n * 2 + 1'
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..errors import DTypeError, InvalidArgumentError


class Expr:
    """Base class of every expression node; supplies the operators."""

    __slots__ = ()
    dtype: str
    weak: bool  # a Python number or index arithmetic: adopts the other operand's dtype

    # an expression and a whole tensor make a tensor (Tensor's operators, TVM's topi)
    def __add__(self, other): return _tensor_op(other) or BinOp.make("+", self, other)
    def __radd__(self, other): return BinOp.make("+", other, self)
    def __sub__(self, other): return _tensor_op(other) or BinOp.make("-", self, other)
    def __rsub__(self, other): return BinOp.make("-", other, self)
    def __mul__(self, other): return _tensor_op(other) or BinOp.make("*", self, other)
    def __rmul__(self, other): return BinOp.make("*", other, self)
    def __truediv__(self, other): return _tensor_op(other) or BinOp.make("/", self, other)
    def __rtruediv__(self, other): return BinOp.make("/", other, self)
    def __floordiv__(self, other): return BinOp.make("//", self, other)
    def __rfloordiv__(self, other): return BinOp.make("//", other, self)
    def __mod__(self, other): return BinOp.make("%", self, other)
    def __rmod__(self, other): return BinOp.make("%", other, self)
    def __neg__(self): return Call.make("neg", self)
    def __abs__(self): return Call.make("abs", self)
    def __lt__(self, other): return Compare.make("<", self, other)
    def __le__(self, other): return Compare.make("<=", self, other)
    def __gt__(self, other): return Compare.make(">", self, other)
    def __ge__(self, other): return Compare.make(">=", self, other)
    def __eq__(self, other): return Compare.make("==", self, other)  # type: ignore[override]
    def __ne__(self, other): return Compare.make("!=", self, other)  # type: ignore[override]
    def __and__(self, other): return Logical.make("and", self, other)
    def __rand__(self, other): return Logical.make("and", other, self)
    def __or__(self, other): return Logical.make("or", self, other)
    def __ror__(self, other): return Logical.make("or", other, self)
    def __invert__(self): return Logical.make("not", self)
    __hash__ = object.__hash__

    def __bool__(self):
        raise InvalidArgumentError(
            f"the expression '{self}' has no truth value while the computation is being "
            "described; use po.if_then_else(cond, a, b) instead of 'if', and & | ~ or "
            "po.all/po.any instead of 'and', 'or', 'not'"
        )

    def astype(self, dtype) -> Expr:
        """Convert to ``dtype``: ``A[i].astype("int32")``."""
        return Cast(self, dtypes.normalize(dtype))

    def __str__(self) -> str:
        return RENDERER[0](self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self}>"


class TensorLike:
    """What a tensor is to an expression (``te.tensor.Tensor`` derives from it): a
    value that must be indexed before it is used."""

    __slots__ = ()


def _tensor_op(other):
    """NotImplemented when ``other`` is a whole tensor: Python then asks the tensor's
    reflected operator (``Tensor.__radd__``), which makes the elementwise tensor."""
    return NotImplemented if isinstance(other, TensorLike) else None


# how expressions print: te.printer installs its renderer when polyopt.te is imported
RENDERER = [lambda expr: f"<{type(expr).__name__}>"]


def as_expr(value) -> Expr:
    """Wrap a Python or NumPy number as a constant; pass expressions through.

    >>> as_expr(2).dtype, as_expr(2).weak, as_expr(np.float32(1)).dtype
    ('int64', True, 'float32')
    """
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, np.bool_)):
        raise DTypeError(
            f"a Python bool ({value}) cannot be used as a value; use 1 or 0, or a comparison"
        )
    if isinstance(value, np.generic):
        return Const(value.item(), dtypes.normalize(value.dtype), weak=False)
    if isinstance(value, numbers.Integral):
        return Const(int(value), "int64", weak=True)
    if isinstance(value, numbers.Real):
        return Const(float(value), "float64", weak=True)
    if isinstance(value, TensorLike):
        raise InvalidArgumentError(
            f"tensor '{value.name}' is used as a value; index it, e.g. {value.name}[i]"
        )
    if hasattr(value, "not_an_expression"):  # a partly indexed tensor (te.tensor.TensorSlice)
        raise InvalidArgumentError(value.not_an_expression())
    raise DTypeError(
        f"cannot use a {type(value).__name__} ({value!r}) in a polyopt expression; "
        "only polyopt expressions, tensors indexed with [] and numbers are allowed"
    )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Const(Expr):
    value: int | float
    dtype: str
    weak: bool = False

    def __int__(self) -> int:  # int(A.shape[0]) for a constant extent, as in TVM code
        return int(self.value)

    def __index__(self) -> int:
        if not isinstance(self.value, int):
            raise TypeError(f"the constant {self.value} is not an integer")
        return self.value


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Var(Expr):
    """A symbolic integer size, bound from array shapes at call time; at least ``least``
    (0 unless the program states more: ``po.var("n", min=1)``)."""

    name: str
    dtype: str = dtypes.INDEX
    weak: bool = True
    least: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class IterVar(Expr):
    """A loop axis ranging over ``lo <= axis < hi``; ``kind`` is "data_par" or "reduce".
    (TVM's iteration types, ``IterVar.Unrolled`` ..., are the values of
    ``s[C].iter_var_attrs[loop].iter_type``.)"""

    DataPar, ThreadIndex, CommReduce, Ordered, Opaque = 0, 1, 2, 3, 4
    Unrolled, Vectorized, Parallelized, Tensorized = 5, 6, 7, 8

    name: str
    lo: Expr
    hi: Expr
    kind: str = "data_par"
    dtype: str = dtypes.INDEX
    weak: bool = True

    @property
    def dom(self) -> tuple[Expr, Expr]:
        return (self.lo, self.hi)


def _binary_dtype(op: str, a: Expr, b: Expr) -> tuple[str, bool]:
    """The dtype (and weakness) of ``a op b`` by the rules of :mod:`polyopt.dtypes`."""
    if {a.dtype, b.dtype} & {dtypes.BOOL, *dtypes.STORAGE}:
        dtypes.promote(a.dtype, b.dtype)  # raises the explanatory error
    if a.weak and b.weak:
        dtype, weak = ("float64" if "float64" in (a.dtype, b.dtype) or dtypes.is_float(a.dtype)
                       or dtypes.is_float(b.dtype) else "int64"), True
    elif a.weak or b.weak:
        strong, other = (b, a) if a.weak else (a, b)
        if dtypes.is_float(other.dtype) and dtypes.is_int(strong.dtype):
            dtype, weak = "float64", False
        else:
            dtype, weak = strong.dtype, False
    else:
        dtype, weak = dtypes.promote(a.dtype, b.dtype), False
    if op == "/" and dtypes.is_int(dtype):
        dtype = "float64"
    if op in ("//", "%") and dtypes.is_float(dtype):
        raise DTypeError(f"'{op}' needs integer operands, got {a.dtype} and {b.dtype}")
    if dtypes.is_int(dtype) and not weak:
        _check_int_fits(a, dtype, b)
        _check_int_fits(b, dtype, a)
    return dtype, weak


def _check_int_fits(value: Expr, dtype: str, other: Expr) -> None:
    """A Python int adopts an integer operand's dtype; one that this dtype cannot hold
    would silently wrap around (``A_uint8 * -1``), so it is refused, as NumPy 2 does."""
    if not (isinstance(value, Const) and value.weak and isinstance(value.value, int)):
        return
    info = np.iinfo(dtype)
    if not info.min <= value.value <= info.max:
        raise DTypeError(
            f"the Python int {value.value} does not fit {dtype} ({info.min} to {info.max}), "
            f"the dtype of '{other}'; convert that operand first, e.g. "
            f"({other}).astype(\"int64\")"
        )


def _compare_dtype(a: Expr, b: Expr) -> str:
    """The dtype in which ``a`` and ``b`` are compared.  Integer data against a Python int
    or index arithmetic compares exactly, in int64 (``A_uint8[i] > -1`` always holds);
    otherwise the operands are promoted as in arithmetic."""
    if a.weak != b.weak and dtypes.is_int(a.dtype) and dtypes.is_int(b.dtype):
        strong = b if a.weak else a
        if strong.dtype == "uint64":  # beyond int64: compared as uint64 (an int must fit)
            return _binary_dtype("+", a, b)[0]
        return dtypes.INDEX
    return _binary_dtype("+", a, b)[0]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BinOp(Expr):
    op: str  # + - * / // %
    a: Expr
    b: Expr
    dtype: str
    weak: bool

    @staticmethod
    def make(op: str, a, b) -> BinOp:
        a, b = as_expr(a), as_expr(b)
        dtype, weak = _binary_dtype(op, a, b)
        return BinOp(op, a, b, dtype, weak)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Compare(Expr):
    op: str  # < <= > >= == !=
    a: Expr
    b: Expr
    dtype: str = dtypes.BOOL
    weak: bool = False

    @staticmethod
    def make(op: str, a, b) -> Compare:
        a, b = as_expr(a), as_expr(b)
        _compare_dtype(a, b)
        return Compare(op, a, b)

    @property
    def operand_dtype(self) -> str:
        return _compare_dtype(self.a, self.b)

    def __bool__(self):
        """``a == b`` / ``a != b`` in Python's ``if``: whether ``a`` and ``b`` are the same
        expression object (TVM's ``same_as``); an order comparison has no truth value."""
        if self.op in ("==", "!="):
            return (self.a is self.b) == (self.op == "==")
        return Expr.__bool__(self)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Logical(Expr):
    op: str  # and or not
    args: tuple[Expr, ...]
    dtype: str = dtypes.BOOL
    weak: bool = False

    @staticmethod
    def make(op: str, *args) -> Logical:
        args = tuple(as_expr(a) for a in args)
        for arg in args:
            if arg.dtype != dtypes.BOOL:
                raise DTypeError(
                    f"'{op}' combines conditions, but '{arg}' is a {arg.dtype} value; "
                    "compare it first, e.g. x > 0"
                )
        return Logical(op, args)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Select(Expr):
    """``if_then_else``: only the chosen branch is evaluated (so it may guard reads)."""

    cond: Expr
    then: Expr
    otherwise: Expr
    dtype: str
    weak: bool


MATH_FUNCS = {"exp": 1, "log": 1, "sqrt": 1, "tanh": 1, "abs": 1, "neg": 1,
              "maximum": 2, "minimum": 2, "pow": 2, "floor": 1, "ceil": 1, "trunc": 1,
              "round": 1, "sin": 1, "cos": 1, "exp2": 1, "log2": 1, "log10": 1,
              "tan": 1, "asin": 1, "acos": 1, "atan": 1, "sinh": 1, "cosh": 1, "cbrt": 1,
              "expm1": 1, "log1p": 1, "erf": 1, "atan2": 2, "fmod": 2, "hypot": 2,
              "fmax": 2, "fmin": 2, "popcount": 1}
# Those without an LLVM intrinsic: calls of the C library's function (atan, atanf).
LIBC_CALLS = frozenset({"tan", "asin", "acos", "atan", "sinh", "cosh", "cbrt", "expm1",
                        "log1p", "erf", "atan2", "fmod", "hypot"})
# Functions of floating point values only (C's math library; an integer argument is
# converted to float64 first, as C converts it to double).
FLOAT_FUNCS = frozenset({"exp", "log", "sqrt", "tanh", "pow", "floor", "ceil", "trunc",
                         "round", "sin", "cos", "exp2", "log2", "log10", "fmax",
                         "fmin"}) | LIBC_CALLS
# C's fmax/fmin: a NaN operand is ignored (maximum/minimum propagate it)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Call(Expr):
    func: str
    args: tuple[Expr, ...]
    dtype: str
    weak: bool

    @staticmethod
    def make(func: str, *args) -> Call:
        args = tuple(as_expr(a) for a in args)
        if len(args) == 2:
            dtype, weak = _binary_dtype("+", *args)
            if func in FLOAT_FUNCS and dtypes.is_int(dtype):
                dtype, weak = "float64", False
        else:
            (arg,) = args
            if arg.dtype == dtypes.BOOL:
                raise DTypeError(f"{func}() needs a number, got the condition '{arg}'")
            if arg.dtype in dtypes.STORAGE:
                dtypes.promote(arg.dtype, arg.dtype)  # raises: convert it first
            dtype, weak = arg.dtype, arg.weak
            if func in FLOAT_FUNCS and dtypes.is_int(dtype):
                dtype, weak = "float64", False
        return Call(func, args, dtype, weak)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Cast(Expr):
    value: Expr
    dtype: str
    weak: bool = False


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class TensorRead(Expr):
    tensor: "Tensor"  # noqa: F821
    indices: tuple[Expr, ...]
    weak: bool = False
    flat: bool = False  # one index: the offset in row-major order (code generation only)

    @property
    def dtype(self) -> str:  # type: ignore[override]
        return self.tensor.dtype


REDUCERS = ("sum", "max", "min")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Reduce(Expr):
    """A reduction over ``axes`` of ``source`` where ``where`` (if given) holds, starting
    from ``init`` (an expression of the compute's axes; None: the combiner's identity)."""

    combiner: str  # sum | max | min, or a po.comm_reducer (te/reducers.py)
    source: Expr
    axes: tuple[IterVar, ...]
    where: Expr | None
    dtype: str
    weak: bool = False
    init: Expr | None = None


def is_one_of(node: Expr, nodes) -> bool:
    """Identity membership (``in`` would build ``==`` expressions)."""
    return any(node is other for other in nodes)


def concrete_dtype(expr: Expr) -> str:
    """The dtype a value gets when it is stored: weak floats are float32, weak ints int64."""
    if expr.weak and dtypes.is_float(expr.dtype):
        return "float32"
    return expr.dtype
