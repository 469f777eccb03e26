"""Elementwise math of ONNX: Pow, Log, Floor, Ceil, Round (half to even), the
functions Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh (the C library's where LLVM has
no intrinsic), and the activations HardSigmoid, HardSwish,
Softsign, Celu, Mish, Swish, ThresholdedRelu and Shrink; Mod (both signs, integers and
floats).

>>> from polyopt.graph.registry import OPS
>>> OPS["HardSigmoid"].attrs, OPS["Pow"].min_inputs
({'alpha': 0.2, 'beta': 0.5}, 2)
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError
from ..te.expr import Call, Const
from ..te.tensor import (all_of, any_of, compute, exp, if_then_else, maximum, minimum,
                         tanh)
from .registry import attr, broadcast_read, register


def _same_float(node, infos, constants):
    if not infos[0].dtype.startswith("float"):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}) computes floats; its "
                                   f"input is {infos[0].dtype} (Cast it to float32 first)")
    return [(infos[0].shape, infos[0].dtype)]


def _unary(function):
    def lower(node, args, values, out, name):
        X = args[0]
        return compute(out.shape, lambda *i: function(node, X[i]), name=name)
    return _same_float, lower


def call(name: str):
    return lambda node, x: Call.make(name, x)


def _abs(x):
    return if_then_else(x < 0.0, -x, x)


def _round(node, x):
    """Round half to even, as ONNX (C's round takes halves away from zero); a value of
    2**52 (float32: 2**23) or more is an integer already, and infinities and NaN are kept
    (``x - floor(x)`` of an infinity is NaN)."""
    low = Call.make("floor", x)
    rest = x - low
    even = low + _abs(Call.make("fmod", low, 2.0))
    rounded = if_then_else(rest > 0.5, low + 1.0, if_then_else(rest < 0.5, low, even))
    integral = 2.0 ** (23 if x.dtype == "float32" else 52)
    return if_then_else(_abs(x) < integral, rounded, x)


def softplus(x):
    """``log(1 + exp(x))`` as ``max(x, 0) + log1p(exp(-|x|))``: no overflow for a large
    ``x``, and no absorption of ``exp(x)`` into 1 for a negative one (``log(1 + 1e-15)``
    lost 4 to 100% of the value: the float64 Softplus of -34 was 1.78e-15, not 1.71e-15).

    >>> import polyopt as po
    >>> X = po.placeholder((2,), name="X", dtype="float64")
    >>> str(softplus(X[0]))
    'maximum(X[0], 0.0) + log1p(exp(-(X[0] < 0.0 ? -X[0] : X[0])))'
    """
    return maximum(x, 0.0) + Call.make("log1p", exp(-_abs(x)))


def _shrink(node, x):
    bias, lambd = float(attr(node, "bias")), float(attr(node, "lambd"))
    return if_then_else(x < -lambd, x + bias, if_then_else(x > lambd, x - bias, 0.0 * x))


def _celu(node, x):
    alpha = float(attr(node, "alpha"))  # expm1: exp(x) - 1 of a tiny x is 0 or inexact
    return maximum(x, 0.0) + minimum(0.0, alpha * Call.make("expm1", x * (1.0 / alpha)))


def _hard_sigmoid(node, x):
    alpha, beta = float(attr(node, "alpha")), float(attr(node, "beta"))
    return maximum(0.0, minimum(1.0, alpha * x + beta))


for _name, _function in {
        "Log": call("log"), "Floor": call("floor"), "Ceil": call("ceil"), "Sin": call("sin"),
        "Cos": call("cos"), "Tan": call("tan"), "Sinh": call("sinh"), "Cosh": call("cosh"),
        "Asin": call("asin"), "Acos": call("acos"), "Atan": call("atan"),
        "Round": _round,
        "Softsign": lambda node, x: x / (1.0 + _abs(x)),
        "HardSwish": lambda node, x: x * maximum(0.0, minimum(1.0, x * (1.0 / 6.0) + 0.5)),
        "Mish": lambda node, x: x * tanh(softplus(x)), "Shrink": _shrink}.items():
    register(_name, "injective", {"bias": 0.0, "lambd": 0.5} if _name == "Shrink" else {})(
        _unary(_function))
register("HardSigmoid", "injective", {"alpha": 0.2, "beta": 0.5})(_unary(_hard_sigmoid))
register("Celu", "injective", {"alpha": 1.0})(_unary(_celu))
register("Swish", "injective", {"alpha": 1.0})(_unary(
    lambda node, x: x / (1.0 + exp(-float(attr(node, "alpha")) * x))))
register("ThresholdedRelu", "injective", {"alpha": 1.0})(_unary(
    lambda node, x: if_then_else(x > float(attr(node, "alpha")), x, 0.0)))  # (0 * -inf: NaN)


def _pow_infer(node, infos, constants):
    x, y = infos[0], infos[1]
    return [(tuple(np.broadcast_shapes(x.shape, y.shape)), x.dtype)]


def _pow_lower(node, args, values, out, name):
    X, Y = args
    integer = dtypes.is_int(X.dtype)

    def body(*i):
        x, y = broadcast_read(X, i, out.shape), broadcast_read(Y, i, out.shape)
        if integer:  # in float64 (exact for the integers a power of an int32 reaches)
            return Call.make("pow", x.astype("float64"), y.astype("float64")).astype(X.dtype)
        return Call.make("pow", x, y.astype(X.dtype))
    return compute(out.shape, body, name=name)


register("Pow", "injective", min_inputs=2)((_pow_infer, _pow_lower))


def _mod_infer(node, infos, constants):
    a, b = infos
    if a.dtype != b.dtype:
        raise InvalidArgumentError(
            f"node '{node.name}' (Mod): A is {a.dtype}, B is {b.dtype}; they must have one "
            "dtype")
    if attr(node, "fmod") not in (0, 1):
        raise InvalidArgumentError(
            f"node '{node.name}' (Mod): fmod={attr(node, 'fmod')!r} must be 0 or 1")
    return [(tuple(np.broadcast_shapes(a.shape, b.shape)), a.dtype)]


def integer_mod(a, b, truncated: bool):
    """``a mod b`` of integers: the sign of ``b`` (NumPy's ``%``), or with ``truncated``
    the sign of ``a`` (C's ``%``, NumPy's ``fmod``).  A remainder by 0 is 0 (NumPy's;
    ONNX leaves it undefined), and nothing is divided by 0 or -1 natively (``MIN % -1``
    would trap)."""
    safe = if_then_else(b == 0, 1, if_then_else(b == -1, 1, b)) if dtypes.is_signed(
        b.dtype) else if_then_else(b == 0, 1, b)
    floor = a % safe
    if truncated and dtypes.is_signed(a.dtype):
        differ = any_of(all_of(a < 0, safe > 0), all_of(a > 0, safe < 0))
        floor = if_then_else(all_of(floor != 0, differ), floor - safe, floor)
    if dtypes.is_signed(b.dtype):
        return if_then_else(any_of(b == 0, b == -1), 0 * a, floor)
    return if_then_else(b == 0, 0 * a, floor)


def float_mod(a, b):
    """``a mod b`` of floats with the sign of ``b``, as NumPy's ``%``: C's ``fmod``,
    plus ``b`` when a remainder's sign differs from ``b``'s; a zero remainder takes
    ``b``'s sign; NaN where ``b`` is 0 or either is NaN."""
    r = Call.make("fmod", a, b)
    signed_zero = if_then_else(b < 0.0, Const(-0.0, a.dtype), Const(0.0, a.dtype))
    differ = any_of(all_of(r < 0.0, b > 0.0), all_of(r > 0.0, b < 0.0))
    return if_then_else(r == 0.0, signed_zero, if_then_else(differ, r + b, r))


def _mod_lower(node, args, values, out, name):
    A, B = args
    truncated = attr(node, "fmod") == 1

    def body(*i):
        a, b = broadcast_read(A, i, out.shape), broadcast_read(B, i, out.shape)
        if dtypes.is_float(A.dtype):
            return Call.make("fmod", a, b) if truncated else float_mod(a, b)
        return integer_mod(a, b, truncated)
    return compute(out.shape, body, name=name)


register("Mod", "injective", {"fmod": 0}, min_inputs=2)((_mod_infer, _mod_lower))
