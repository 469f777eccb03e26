"""Import an ONNX model (any opset onnx's version converter reads) into a
:class:`~polyopt.graph.ir.Graph`.

Models older than opset 13 are converted with onnx's version converter; constant
subgraphs are folded and unread optional outputs dropped (see :mod:`.onnx_fold`).

>>> import onnx, polyopt as po
>>> from onnx import helper, TensorProto
>>> node = helper.make_node("Relu", ["x"], ["y"])
>>> model = helper.make_model(helper.make_graph(
...     [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])]),
...     opset_imports=[helper.make_opsetid("", 17)])
>>> print(po.graph.from_onnx(model))
graph(x: float32[2, 3]) -> (y: float32[2, 3])
  y = Relu(x) -> float32[2, 3]
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import InvalidArgumentError, MissingBackendError, public
from .ir import Graph, GraphBuilder
from .onnx_rewrites import rewrite
from .onnx_fold import FOLDABLE, TARGET_OPSET, convert_opset, fold_node, unread_outputs_dropped
from .graph_errors import UnknownOperatorError, UnsupportedAttributeError, UnsupportedDTypeError
from .registry import OPS, onnx_operators

GRAPH_DTYPES = ("float32", "float64", "float16", "int8", "uint8", "int16", "uint16", "int32",
                "uint32", "int64", "uint64", "bool")


def _onnx():
    try:
        import onnx
    except ImportError as err:
        raise MissingBackendError(
            "po.graph.from_onnx needs the 'onnx' package: pip install onnx "
            "(or pip install 'polyopt[graph]')") from err
    return onnx


@public
def from_onnx(model, *, shapes: dict | None = None) -> Graph:
    """The graph of an ONNX model (a path or a ``ModelProto``).  ``shapes`` gives the
    static shape of inputs whose shape has symbolic dimensions (``{"input": (1, 3, 224,
    224)}``).  An operator, attribute or domain polyopt does not support is refused with
    :class:`UnsupportedOperatorError` naming it and the node."""
    onnx = _onnx()
    if isinstance(model, (str, os.PathLike)):
        try:
            model = onnx.load(os.fspath(model))
        except Exception as err:  # noqa: BLE001  (onnx raises many kinds: say which file)
            raise InvalidArgumentError(f"cannot read the ONNX model {model!r}: {err}") from err
    if not isinstance(model, onnx.ModelProto):
        raise InvalidArgumentError(
            f"from_onnx needs a path or an onnx.ModelProto, got {type(model).__name__}")
    opset = {o.domain or "ai.onnx": o.version for o in model.opset_import}
    version = opset.get("ai.onnx")
    converted = convert_opset(onnx, model, version)
    legacy = converted is not model and version < 7  # PRelu-6's slope is per channel
    model, version = converted, max(version, TARGET_OPSET)
    if shapes is not None and not isinstance(shapes, dict):
        raise InvalidArgumentError(f"shapes must be a dict {{input name: shape}}, got "
                                   f"{type(shapes).__name__}")
    unknown = sorted(set(shapes or {}) - {v.name for v in model.graph.input})
    if unknown:
        raise InvalidArgumentError(f"shapes names {unknown}, which are not inputs of the model "
                                   f"({', '.join(v.name for v in model.graph.input)})")
    return _convert(onnx, model.graph, shapes or {}, version, legacy)


def _convert(onnx, graph, shapes: dict, opset: int = TARGET_OPSET,
             legacy: bool = False) -> Graph:
    b = GraphBuilder(graph.name or "onnx")
    initializers = {t.name: _initializer(onnx, t) for t in graph.initializer}
    for name, value in initializers.items():
        b.constant(name, value)
    for value_info in graph.input:
        if value_info.name in initializers:
            continue
        b.input(value_info.name, _static_shape(value_info, shapes),
                _dtype(onnx, value_info.type.tensor_type.elem_type, value_info.name))
    for index, (node, outputs) in enumerate(zip(graph.node, unread_outputs_dropped(graph))):
        name = node.name or f"{node.op_type}_{index}"
        if node.domain not in ("", "ai.onnx"):
            raise UnknownOperatorError(name, node.op_type, "domain", domain=node.domain)
        if node.op_type in OPS and OPS[node.op_type].internal:
            raise UnknownOperatorError(name, node.op_type, "internal",
                                       supported=tuple(onnx_operators()))
        attrs = {a.name: _attribute(onnx, a) for a in node.attribute}
        if node.op_type == "Constant":
            b.constant(node.output[0], _constant_node(name, attrs))
            continue
        if node.op_type in ("Shape", "Size") and node.input[0] in b._tensors:
            shape = np.array(b._tensors[node.input[0]].shape, np.int64)
            value = shape[slice(attrs.get("start", 0), attrs.get("end"))] \
                if node.op_type == "Shape" else np.array(shape.prod(), np.int64)
            b.constant(node.output[0], value)
            continue
        if node.op_type in FOLDABLE and all(not i or i in b._constants for i in node.input):
            values = fold_node(node, [b._constants[i] if i else None for i in node.input],
                               opset)
            for out, value in zip(node.output, values):
                if out:
                    b.constant(out, value)
            continue
        inputs = list(node.input)
        if legacy and node.op_type == "PRelu":
            inputs[1] = _channel_slope(b, inputs)
        if rewrite(b, node.op_type, name, inputs, outputs, attrs):
            continue
        b.op(node.op_type, inputs, outputs, name=name, **attrs)
    return b.build([o.name for o in graph.output])


def _channel_slope(b, inputs: list) -> str:
    """PRelu of opset 6 and before takes a 1-D slope per channel (axis 1), which the
    version converter leaves as it is: the slope as a constant of shape (C, 1, ...)."""
    x, slope = b._tensors[inputs[0]], b._constants.get(inputs[1])
    if slope is None or slope.ndim != 1 or len(x.shape) < 3 or slope.shape[0] == 1 or \
            slope.shape[0] != x.shape[1]:
        return inputs[1]
    return b.constant(f"{inputs[1]}__per_channel",
                      slope.reshape((-1,) + (1,) * (len(x.shape) - 2)))


def _initializer(onnx, tensor) -> np.ndarray:
    """The value of an initializer; refused by name when onnx cannot decode it or when
    it lives in an external file (only ``onnx.load(path)`` reads those, checking that
    the file is inside the model's folder)."""
    from onnx import numpy_helper

    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise InvalidArgumentError(
            f"the initializer '{tensor.name}' keeps its data in an external file, which a "
            "ModelProto does not carry; pass the model's path to from_onnx (onnx.load reads "
            "the data from the model's folder)")
    try:
        return numpy_helper.to_array(tensor)
    except Exception as err:  # noqa: BLE001  (onnx raises many kinds: name the tensor)
        raise InvalidArgumentError(
            f"the initializer '{tensor.name}' cannot be read ({type(err).__name__}: {err}); "
            "its data does not match its dims and data type") from err


def _given_shape(name: str, given, declared) -> tuple[int, ...]:
    """``shapes[name]``, checked: integers >= 0, the declared rank, the declared sizes."""
    try:
        shape = tuple(given)
    except TypeError:
        shape = None
    if shape is None or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                and d >= 0 for d in shape):
        raise InvalidArgumentError(
            f"shapes['{name}'] must be a tuple of sizes (integers >= 0), got {given!r}")
    shape = tuple(int(d) for d in shape)
    if declared is not None:
        if len(declared) != len(shape):
            raise InvalidArgumentError(
                f"shapes['{name}'] = {shape} has rank {len(shape)}; the model declares the "
                f"input '{name}' with rank {len(declared)} ({_dims_text(declared)})")
        for k, (size, dim) in enumerate(zip(shape, declared)):
            if isinstance(dim, int) and dim != size:
                raise InvalidArgumentError(
                    f"shapes['{name}'] = {shape}: dimension {k} is {size}, the model declares "
                    f"{dim} ({_dims_text(declared)})")
    return shape


def _dims_text(declared) -> str:
    return "[" + ", ".join(str(d) for d in declared) + "]"


def _static_shape(value_info, shapes: dict) -> tuple[int, ...]:
    tensor_type = value_info.type.tensor_type
    declared = None
    if tensor_type.HasField("shape"):
        declared = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                    for d in tensor_type.shape.dim]
    if value_info.name in shapes:
        return _given_shape(value_info.name, shapes[value_info.name], declared)
    if declared is None:
        raise InvalidArgumentError(
            f"input '{value_info.name}' has no declared shape; polyopt.graph needs static "
            f"shapes: pass shapes={{'{value_info.name}': (...)}} to from_onnx")
    dims = []
    for dim in value_info.type.tensor_type.shape.dim:
        if not dim.HasField("dim_value"):
            raise InvalidArgumentError(
                f"input '{value_info.name}' has the symbolic dimension "
                f"'{dim.dim_param or '?'}'; polyopt.graph needs static shapes: pass "
                f"shapes={{'{value_info.name}': (...)}} to from_onnx")
        dims.append(dim.dim_value)
    return tuple(dims)


def _dtype(onnx, elem_type: int, name: str) -> str:
    try:
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type)).name
    except (KeyError, TypeError, ValueError) as err:
        raise UnsupportedDTypeError(None, None, name, int(elem_type), GRAPH_DTYPES) from err
    if dtype not in GRAPH_DTYPES:
        raise UnsupportedDTypeError(None, None, name, dtype, GRAPH_DTYPES)
    return dtype


def _attribute(onnx, proto):
    from onnx import numpy_helper

    value = onnx.helper.get_attribute_value(proto)
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    if isinstance(value, (int, float, str)):
        return value
    raise UnsupportedAttributeError(None, None, proto.name, kind=type(value).__name__)


def _constant_node(name: str, attrs: dict) -> np.ndarray:
    if "value" in attrs:
        return np.asarray(attrs["value"])
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return np.asarray(attrs[key], dtype)
    raise UnsupportedAttributeError(name, "Constant", next(iter(attrs), ""),
                                    ("value", "value_float", "value_floats", "value_int",
                                     "value_ints"))
