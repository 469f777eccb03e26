"""ONNX's comparisons and boolean operators: Equal, Less, LessOrEqual, Greater,
GreaterOrEqual (numbers of one dtype in, ``bool`` out), Not, And, Or, Xor and Where.

A ``bool`` tensor of the graph is stored as NumPy stores it, one byte holding 0 or 1;
its kernels see it as ``uint8`` (:func:`~.registry.storage_dtype`), so the tensor
expressions below write 1 or 0 and read ``!= 0``.

>>> from polyopt.graph.registry import OPS, storage_dtype
>>> OPS["Where"].min_inputs, OPS["Not"].max_inputs, storage_dtype("bool")
(3, 1, 'uint8')
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..te.expr import Const
from ..te.tensor import all_of, any_of, compute, if_then_else
from .graph_errors import UnsupportedDTypeError
from .registry import broadcast_read, register

BOOL = "bool"
_COMPARED = ("float32", "float64", "float16", "int8", "uint8", "int16", "uint16", "int32",
             "uint32", "int64", "uint64", BOOL)


def as_bool(condition):
    """A condition (a comparison) as a stored ``bool`` value: 1 or 0 (uint8)."""
    return if_then_else(condition, Const(1, "uint8"), Const(0, "uint8"))


def holds(value):
    """A stored ``bool`` value (uint8 0 or 1) as a condition."""
    return value != Const(0, "uint8")


def _broadcast_shape(node, infos) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(*(i.shape for i in infos)))


def _check_dtypes(node, infos, allowed) -> str:
    kinds = sorted({i.dtype for i in infos})
    if len(kinds) != 1:
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}): its inputs have different dtypes "
            f"{kinds}; Cast them to one dtype first")
    if kinds[0] not in allowed:
        raise UnsupportedDTypeError(node.name, node.op_type, infos[0].name, kinds[0],
                                    tuple(allowed))
    return kinds[0]


def _compare_infer(node, infos, constants):
    _check_dtypes(node, infos, _COMPARED if node.op_type == "Equal" else _COMPARED[:-1])
    return [(_broadcast_shape(node, infos), BOOL)]


def _logic_infer(node, infos, constants):
    _check_dtypes(node, infos, (BOOL,))
    return [(_broadcast_shape(node, infos), BOOL)]


def _elementwise(function):
    def lower(node, args, values, out, name):
        def body(*i):
            return function(*(broadcast_read(A, i, out.shape) for A in args))
        return compute(out.shape, body, name=name)
    return lower


_COMPARISONS = {"Equal": lambda a, b: a == b, "Less": lambda a, b: a < b,
                "LessOrEqual": lambda a, b: a <= b, "Greater": lambda a, b: a > b,
                "GreaterOrEqual": lambda a, b: a >= b}
for _name, _compare in _COMPARISONS.items():
    register(_name, "injective", min_inputs=2, max_inputs=2)(
        (_compare_infer, _elementwise(lambda a, b, compare=_compare: as_bool(compare(a, b)))))

register("Not", "injective")((_logic_infer, _elementwise(lambda a: as_bool(a == Const(
    0, "uint8")))))
register("And", "injective", min_inputs=2)((_logic_infer, _elementwise(
    lambda a, b: as_bool(all_of(holds(a), holds(b))))))
register("Or", "injective", min_inputs=2)((_logic_infer, _elementwise(
    lambda a, b: as_bool(any_of(holds(a), holds(b))))))
register("Xor", "injective", min_inputs=2)((_logic_infer, _elementwise(
    lambda a, b: as_bool(a != b))))


def _where_infer(node, infos, constants):
    condition, x, y = infos
    if condition.dtype != BOOL:
        raise InvalidArgumentError(
            f"node '{node.name}' (Where): the condition '{condition.name}' is "
            f"{condition.dtype}; it must be bool (Cast it to bool first)")
    if x.dtype != y.dtype:
        raise InvalidArgumentError(
            f"node '{node.name}' (Where): X is {x.dtype}, Y is {y.dtype}; they must have "
            "one dtype")
    return [(_broadcast_shape(node, infos), x.dtype)]


register("Where", "injective", min_inputs=3, max_inputs=3)((_where_infer, _elementwise(
    lambda c, x, y: if_then_else(holds(c), x, y))))
