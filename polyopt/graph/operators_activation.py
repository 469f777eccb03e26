"""Elementwise and activation operators of ONNX: LeakyRelu, PRelu, Elu, Selu, Softplus,
Abs, Sign, Reciprocal, Cast, and the n-ary Max, Min, Sum, Mean (NumPy broadcasting).

>>> from polyopt.graph.registry import OPS
>>> OPS["LeakyRelu"].attrs, OPS["Sum"].kind
({'alpha': 0.01}, 'injective')
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..errors import InvalidArgumentError
from ..te.expr import Call, Const
from ..te.tensor import compute, if_then_else, maximum, minimum
from .graph_errors import UnsupportedAttributeValueError
from .operators_math import softplus
from .registry import VARIADIC, attr, broadcast_read, register

SELU_ALPHA = 1.67326319217681884765625  # ONNX's defaults (float32 values)
SELU_GAMMA = 1.05070102214813232421875


def _same(node, infos, constants):
    return [(infos[0].shape, infos[0].dtype)]


def _broadcast(node, infos, constants):
    present = [i for i in infos if i]
    kinds = {i.dtype for i in present}
    if len(kinds) != 1:
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): operands of "
                                   f"different dtypes {sorted(kinds)}")
    return [(tuple(np.broadcast_shapes(*(i.shape for i in present))), present[0].dtype)]


def _number(x, value):
    """``value`` as a constant of the dtype of ``x`` (an int keeps an integer's dtype)."""
    return int(value) if dtypes.is_int(x.dtype) else float(value)


def _unary(function):
    def lower(node, args, values, out, name):
        X = args[0]
        return compute(out.shape, lambda *i: function(node, X[i]), name=name)
    return _same, lower


def _nary(combine, mean: bool = False):
    def lower(node, args, values, out, name):
        tensors = [A for A in args if A is not None]

        def body(*i):
            value = broadcast_read(tensors[0], i, out.shape)
            for T in tensors[1:]:
                value = combine(value, broadcast_read(T, i, out.shape))
            return value * (1.0 / len(tensors)) if mean else value
        return compute(out.shape, body, name=name)
    return _broadcast, lower


def _prelu_infer(node, infos, constants):
    x, slope = infos[0], infos[1]
    if tuple(np.broadcast_shapes(x.shape, slope.shape)) != tuple(x.shape):
        raise InvalidArgumentError(
            f"node '{node.name}' (PRelu): the slope of shape {slope.shape} does not "
            f"broadcast to the input's shape {x.shape}")
    return _broadcast(node, infos, constants)


def _prelu_lower(node, args, values, out, name):
    X, slope = args
    return compute(out.shape, lambda *i: if_then_else(
        X[i] < _number(X[i], 0), broadcast_read(slope, i, out.shape) * X[i], X[i]), name=name)


def _selu(node, x):
    alpha, gamma = float(attr(node, "alpha")), float(attr(node, "gamma"))
    return if_then_else(x > 0.0, gamma * x, (gamma * alpha) * Call.make("expm1", x))


def _sign(node, x):
    """1, -1, else ``x * 0 + 0``: +0 for zeros and NaN for NaN (NumPy's and onnxruntime's
    sign of NaN; a plain 0 there hid the NaN)."""
    one, zero = _number(x, 1), _number(x, 0)
    return if_then_else(x > zero, one,
                        if_then_else(x < zero, -one, x * zero + zero)).astype(x.dtype)


register("LeakyRelu", "injective", {"alpha": 0.01})(_unary(
    lambda node, x: if_then_else(x < 0.0, float(attr(node, "alpha")) * x, x)))
register("Elu", "injective", {"alpha": 1.0})(_unary(
    lambda node, x: if_then_else(x < 0.0, float(attr(node, "alpha")) * Call.make("expm1", x),
                                 x)))
register("Selu", "injective", {"alpha": SELU_ALPHA, "gamma": SELU_GAMMA})(_unary(_selu))
register("Softplus", "injective")(_unary(lambda node, x: softplus(x)))
register("Abs", "injective")(_unary(
    lambda node, x: if_then_else(x < _number(x, 0), -x, x)))
register("Sign", "injective")(_unary(_sign))
register("Reciprocal", "injective")(_unary(lambda node, x: 1.0 / x))
register("PRelu", "injective", min_inputs=2)((_prelu_infer, _prelu_lower))
register("Max", "injective", max_inputs=VARIADIC)(_nary(maximum))
register("Min", "injective", max_inputs=VARIADIC)(_nary(minimum))
register("Sum", "injective", max_inputs=VARIADIC)(_nary(lambda a, b: a + b))
register("Mean", "injective", max_inputs=VARIADIC)(_nary(lambda a, b: a + b, mean=True))


# ONNX's TensorProto element types polyopt.graph computes (onnx.TensorProto.FLOAT, ...)
CAST_TARGETS = {1: "float32", 11: "float64", 10: "float16", 3: "int8", 2: "uint8", 5: "int16", 4: "uint16",
                6: "int32", 12: "uint32", 7: "int64", 13: "uint64", 9: "bool"}


def _cast_infer(node, infos, constants):
    to = attr(node, "to")
    if to not in CAST_TARGETS:
        raise UnsupportedAttributeValueError(node.name, node.op_type, "to", to,
                                             tuple(CAST_TARGETS))
    return [(infos[0].shape, CAST_TARGETS[to])]


def _cast_lower(node, args, values, out, name):
    X = args[0]  # float to integer truncates toward zero, as C and onnxruntime do
    if out.dtype == "bool":  # any value but 0 (NaN too) is true; kept as uint8 0 or 1
        zero = 0.0 if X.dtype.startswith("float") else Const(0, X.dtype)
        return compute(out.shape, lambda *i: if_then_else(
            X[i] != zero, Const(1, "uint8"), Const(0, "uint8")), name=name)
    return compute(out.shape, lambda *i: X[i].astype(out.dtype), name=name)


register("Cast", "injective", {"to": None, "saturate": 1})((_cast_infer, _cast_lower))
