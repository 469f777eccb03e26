"""The operator registry of the graph layer and what every operator module uses: an
operator is an :class:`OpDef` (its fusion kind, attributes and defaults, a shape function
and a lowering to tensor expressions) registered by name in ``OPS``; the modules that
define operators (``operators``, ``operators_nn``, ``operators_quant``,
``operators_int8``, ``layouts``, ``blocked``, ``lstm``) import this one, never each
other's registration.

>>> sorted(KINDS)
['complex', 'injective', 'opaque', 'reduction', 'view']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import InvalidArgumentError
from .graph_errors import (TooManyInputsError, UnknownOperatorError, UnsupportedAttributeError,
                           UnsupportedInputError, UnsupportedOperatorError)

KINDS = ("injective", "reduction", "complex", "view", "opaque")


@dataclass(frozen=True)
class OpDef:
    name: str
    kind: str
    infer: Callable      # (node, input infos, constants) -> [(shape, dtype)]
    lower: Callable      # (node, tensors, values, out_info, name) -> te.Tensor
    attrs: dict          # supported attribute -> default
    min_inputs: int = 1
    internal: bool = False  # made by the graph passes, not an ONNX operator
    max_inputs: int | None = None  # None: any number (variadic, or an internal operator)


OPS: dict[str, OpDef] = {}
INT8_OPS = ("QLinearMatMul", "ConvInteger", "DynamicQuantizeLinear")


AUTO_PADS = ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")  # ONNX's auto_pad values

VARIADIC = -1  # max_inputs of an operator taking any number of inputs (Sum, Concat)


def register(name: str, kind: str, attrs: dict | None = None, min_inputs: int = 1, *,
             max_inputs: int | None = None, internal: bool = False):
    """Registers an operator; ``max_inputs``: how many inputs it takes at most (default
    ``min_inputs``; ``VARIADIC``: any number); ``internal``: one the graph passes make
    (packed and blocked layouts, int8 kernels), which no model names and no refusal lists
    as supported."""
    if max_inputs is None:
        max_inputs = None if internal else min_inputs
    elif max_inputs == VARIADIC:
        max_inputs = None

    def wrap(pair):
        infer, lower = pair
        OPS[name] = OpDef(name, kind, infer, lower, dict(attrs or {}), min_inputs, internal,
                          max_inputs)
        return pair
    return wrap


def storage_dtype(dtype: str) -> str:
    """The dtype kernels see for a graph tensor of ``dtype``: a ``bool`` tensor (one byte
    holding 0 or 1, as NumPy stores it) is ``uint8``; any other its own.

    >>> storage_dtype("bool"), storage_dtype("float32")
    ('uint8', 'float32')
    """
    return "uint8" if dtype == "bool" else dtype


# ONNX operators the importer writes as others (see onnx_rewrites): no OpDef of their own
REWRITTEN = ("CastLike", "Split")


def onnx_operators() -> list[str]:
    """The ONNX operators polyopt.graph supports, sorted (not its internal ones)."""
    return sorted([name for name, spec in OPS.items() if not spec.internal] + list(REWRITTEN))


def attr(node, key: str):
    """An attribute of ``node``, or the operator's default: a float default as the
    float32 ONNX's FLOAT attributes are (LeakyRelu's 0.01 is 0.009999999776482582, which
    onnxruntime multiplies a float64 tensor by; an imported attribute is one already)."""
    if key in node.attrs:
        return node.attrs[key]
    default = OPS[node.op_type].attrs.get(key)
    return float(np.float32(default)) if type(default) is float else default


def check_node(node) -> OpDef:
    """The operator of ``node``, or :class:`UnsupportedOperatorError` naming what is not
    supported (operator or attribute) and the node."""
    if node.op_type in INT8_OPS:
        raise UnknownOperatorError(node.name, node.op_type, "int8")
    spec = OPS.get(node.op_type)
    if spec is None:
        raise UnknownOperatorError(node.name, node.op_type, "unknown",
                                   supported=tuple(onnx_operators()))
    for key in node.attrs:
        if key not in spec.attrs:
            raise UnsupportedAttributeError(node.name, node.op_type, key,
                                            tuple(sorted(spec.attrs)))
    present = [n for n in node.inputs if n]
    if len(present) < spec.min_inputs:
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}) needs at least {spec.min_inputs} input(s), "
            f"got {len(present)}")
    if spec.max_inputs is not None and len(node.inputs) > spec.max_inputs:
        raise TooManyInputsError(node.name, node.op_type, spec.max_inputs,
                                 tuple(node.inputs))
    return spec


def axis_in_range(node, axis, rank: int, what: str = "axis") -> int:
    """``axis`` of ``node`` (``what`` names it) in ``[-rank, rank)``, made non-negative;
    :class:`InvalidArgumentError` naming the node and the attribute otherwise."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)) or \
            not -rank <= axis < rank:
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}): {what}={axis!r} is out of range for "
            f"rank {rank} (from {-rank} to {rank - 1})")
    return int(axis) % rank


def constant_value(node, constants, index: int, what: str) -> np.ndarray | None:
    """The value of input ``index`` of ``node`` when it is a constant (None when absent);
    refuses a computed tensor where a constant is needed."""
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    name = node.inputs[index]
    if name not in constants:
        raise UnsupportedInputError(node.name, node.op_type, "constant", what, name)
    return constants[name]


def broadcast_read(T, axes, out_shape):
    """``T`` read at the output index ``axes`` under NumPy broadcasting."""
    offset = len(out_shape) - T.ndim
    index = []
    for d, extent in enumerate(T.shape):
        size = extent.value if hasattr(extent, "value") else extent
        index.append(0 if size == 1 and out_shape[offset + d] != 1 else axes[offset + d])
    return T[tuple(index)] if index else T[0]
