"""Calls out of the tensor-expression language: ``call_pure_extern`` (a C math function
by name) and packed functions (``register_func``, ``call_packed``) for ``po.extern``.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> str(po.compute((4,), lambda i: call_pure_extern("float32", "expf", A[i])).op.body)
'exp(A[i])'
"""

from __future__ import annotations

from typing import Callable

from .. import dtypes
from ..errors import InvalidArgumentError, PolyoptError
from .expr import Call, Cast, Expr, as_expr

# C math library names (and CUDA's fast variants) -> polyopt's functions
_MATH = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "fabs": "abs",
         "abs": "abs", "fmax": "maximum", "fmin": "minimum"}


def call_pure_extern(dtype: str, func_name: str, *args) -> Expr:
    """``tvm.tir.call_pure_extern("float32", "expf", x)``: a C math function by name
    (``exp``, ``expf``, ``__expf``, ``log``, ``sqrt``, ``tanh``, ``fabs``, ``fmax``,
    ``fmin`` and their float variants), computed by polyopt's own intrinsic."""
    base = func_name.lstrip("_")
    base = base[:-1] if base.endswith("f") and base[:-1] in _MATH else base
    if base.startswith("tir."):
        base = base[4:]
    if base not in _MATH:
        raise PolyoptError(
            f"call_pure_extern: polyopt cannot call the external function '{func_name}' "
            f"yet; the functions it knows are {', '.join(sorted(_MATH))} (and their 'f' and "
            "'__' variants); write other functions as expressions (e.g. 1 / (1 + exp(-x)))")
    value = Call.make(_MATH[base], *(as_expr(a) for a in args))
    dtype = dtypes.normalize(dtype)
    return value if value.dtype == dtype else Cast(value, dtype)


_PACKED: dict[str, Callable] = {}


def register_func(name, func: Callable | None = None, override: bool = False):
    """``@tvm.register_func("tvm.contrib.my_func")``: a Python function that
    ``call_packed`` in a ``po.extern`` calls with NumPy arrays."""
    if callable(name) and func is None:  # @register_func without a name
        return register_func(name.__name__, name, override)
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"register_func needs a name, got {name!r}")

    def register(function: Callable) -> Callable:
        if name in _PACKED and not override:
            raise InvalidArgumentError(f"a function named '{name}' is already registered; "
                                       "pass override=True to replace it")
        _PACKED[name] = function
        return function

    return register if func is None else register(func)


def get_global_func(name: str, allow_missing: bool = False):
    if name not in _PACKED:
        if allow_missing:
            return None
        raise InvalidArgumentError(f"no function registered as '{name}' (tvm.register_func)")
    return _PACKED[name]


class PackedCall:
    """``call_packed(name, *args)`` as an extern's body: run at call time with the
    extern's inputs and outputs (NumPy arrays) in place of the buffers."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple):
        self.name, self.args = name, args

    def __repr__(self) -> str:
        return f"call_packed({self.name!r}, ...)"


def call_packed(name: str, *args) -> PackedCall:
    return PackedCall(name, args)
