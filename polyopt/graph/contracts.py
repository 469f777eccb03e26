"""What the graph layer checks before native code runs: dtypes, kernel signatures, sizes.

* :func:`check_input_dtypes`: each operator accepts the dtypes it computes exactly (as
  onnxruntime does); any other is refused at import, naming the node
  (``Sigmoid`` of an ``int32`` tensor: :class:`UnsupportedDTypeError`).
* :func:`check_kernel`: a compiled group's kernel takes arrays of exactly the dtypes and
  shapes the graph says its inputs and output have; the executor calls kernels with
  raw addresses, so this is checked once, at compile time, for every kernel.
* :func:`check_sizes`: no tensor (and no arena) is larger than this machine's memory,
  checked before anything is allocated (:class:`TensorTooLargeError` names the tensor).

>>> from polyopt.graph.ir import OpNode, TensorInfo
>>> node = OpNode("s", "Sigmoid", ("x",), ("y",))
>>> check_input_dtypes(node, [TensorInfo("x", (4,), "int32")])
Traceback (most recent call last):
polyopt.graph.graph_errors.UnsupportedDTypeError: node 's' (Sigmoid): int32 tensors are not supported (input 'x'); Sigmoid takes float32, float64
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import InvalidArgumentError, PolyoptError
from .graph_errors import (KernelSignatureError, OptionalOutputsError, TensorTooLargeError,
                           UnsupportedDTypeError)
from .registry import check_node, storage_dtype

FLOATS = ("float32", "float64")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
NUMBERS = FLOATS + SIGNED + UNSIGNED

# the dtypes of the data inputs each operator computes exactly (operators absent here
# check their own dtypes: the quantization operators, LSTM and the compiler's own)
INPUT_DTYPES = {
    **{op: NUMBERS for op in ("Add", "Sub", "Mul", "Div", "Clip", "Mod")},
    **{op: NUMBERS + ("bool",) for op in ("Identity", "Reshape", "Flatten", "Squeeze",
                                          "Unsqueeze", "Transpose", "Concat", "Slice",
                                          "Cast")},
    **{op: FLOATS + SIGNED for op in ("Relu", "Neg", "Abs", "Sign")},
    **{op: NUMBERS for op in ("Max", "Min")},
    **{op: FLOATS for op in ("Sigmoid", "Tanh", "Erf", "Gelu", "Sqrt", "Exp", "LeakyRelu",
                             "PRelu", "Elu", "Selu", "Softplus", "Reciprocal", "Mean", "Sum",
                             "Dropout",
                             "BatchNormalization", "AveragePool", "GlobalAveragePool",
                             "Softmax", "LayerNormalization", "Conv", "Gemm")},
    **{op: FLOATS + ("int32", "int64", "uint32", "uint64") for op in ("MatMul", "Einsum")},
    **{op: FLOATS + ("int8", "uint8") for op in ("MaxPool", "MaxPoolNd")},
    "GlobalMaxPool": FLOATS,  # (ONNX's schemas: Sum, Dropout and GlobalMaxPool are float only)
    **{op: FLOATS for op in ("ConvTranspose", "ConvNd", "AveragePoolNd", "LogSoftmax")},
}

# the operators that take float16 tensors (stored as float16, computed in float32 and
# rounded to float16 per operator, as onnxruntime's CPU kernels): any other refuses them
FLOAT16_INPUTS = ("Cast", "Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
                  "Transpose", "Concat", "Slice", "Add", "Sub", "Mul", "Div", "Neg", "Abs",
                  "Relu", "Max", "Min", "Equal", "Less", "LessOrEqual", "Greater",
                  "GreaterOrEqual", "Where", "Expand", "Tile")
for _op in FLOAT16_INPUTS:
    if _op in INPUT_DTYPES:
        INPUT_DTYPES[_op] = INPUT_DTYPES[_op] + ("float16",)

# inputs read at compile time as values (shapes, bounds), not as data
_VALUE_INPUTS = {"Reshape": (1,), "Slice": (1, 2, 3, 4), "Squeeze": (1,),
                 "Unsqueeze": (1,), "Dropout": (1, 2)}  # Dropout's ratio, training_mode


# the operators that take bool tensors (ONNX's type constraints): any other refuses them
BOOL_INPUTS = ("Equal", "Not", "And", "Or", "Xor", "Where", "Cast", "Identity", "Dropout",
               "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Concat", "Slice",
               "Expand", "Tile", "Gather", "ReduceMax", "ReduceMin")


def check_input_dtypes(node, infos) -> None:
    """Refuse ``node`` when a data input has a dtype its operator does not compute."""
    for info in infos:
        if info is not None and info.dtype == "bool" and node.op_type not in BOOL_INPUTS:
            raise UnsupportedDTypeError(node.name, node.op_type, info.name, "bool",
                                        INPUT_DTYPES.get(node.op_type, NUMBERS))
        if info is not None and info.dtype == "float16" and \
                node.op_type not in FLOAT16_INPUTS:
            raise UnsupportedDTypeError(node.name, node.op_type, info.name, "float16",
                                        INPUT_DTYPES.get(node.op_type, NUMBERS))
    allowed = INPUT_DTYPES.get(node.op_type)
    if allowed is None:
        return
    skip = _VALUE_INPUTS.get(node.op_type, ())
    if node.op_type == "Clip":  # min and max: the data's dtype
        skip = ()
    for k, info in enumerate(infos):
        if info is None or k in skip:
            continue
        if info.dtype not in allowed:
            raise UnsupportedDTypeError(node.name, node.op_type, info.name, info.dtype,
                                        allowed)
        if node.op_type == "Clip" and k > 0 and info.dtype != infos[0].dtype:
            raise InvalidArgumentError(
                f"node '{node.name}' (Clip): min/max '{info.name}' is {info.dtype}, the "
                f"data is {infos[0].dtype}; they must have one dtype")


def check_kernel(graph, group, kernel, inputs, kernel_shapes) -> None:
    """Refuse a kernel whose signature does not take the graph's tensors: ``inputs``
    (graph tensor names, then the group's output) with ``kernel_shapes``."""
    signature = getattr(kernel, "signature", None)
    if signature is None:
        return
    names = [*inputs, group.output]
    arrays = signature.arrays
    ops = "+".join(group.op_types)
    if len(arrays) != len(names) or len(arrays) != len(signature.args):
        raise KernelSignatureError(group.name, ops, "count", expected=len(names),
                                   got=len(signature.args))
    for name, shape, spec in zip(names, kernel_shapes, arrays):
        info = graph.tensors[name]
        extents = tuple(getattr(e, "value", None) for e in spec.shape)
        if spec.dtype != storage_dtype(info.dtype):
            raise KernelSignatureError(group.name, ops, "dtype", tensor=name,
                                       expected=info.dtype, got=spec.dtype)
        if extents != tuple(shape) or int(np.prod(shape, dtype=object)) != \
                int(np.prod(info.shape, dtype=object)):
            raise KernelSignatureError(group.name, ops, "shape", tensor=name,
                                       expected=list(info.shape), got=list(extents))


def memory_limit() -> int:
    """The bytes one tensor (or the arena) may take: this machine's physical memory
    (``$POLYOPT_MEMORY_LIMIT`` bytes when set)."""
    configured = os.environ.get("POLYOPT_MEMORY_LIMIT")
    if configured:
        try:
            return int(configured)
        except ValueError as err:
            raise InvalidArgumentError(
                f"POLYOPT_MEMORY_LIMIT must be a number of bytes, got {configured!r}") from err
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 1 << 40


def tensor_bytes(info) -> int:
    """A tensor's size in bytes, exactly (Python integers: no overflow)."""
    count = 1
    for extent in info.shape:
        count *= int(extent)
    return count * np.dtype(info.dtype).itemsize


def check_sizes(graph, limit: int | None = None) -> None:
    """Refuse a graph with a tensor larger than ``limit`` bytes (the machine's memory)."""
    limit = memory_limit() if limit is None else limit
    for info in graph.tensors.values():
        size = tensor_bytes(info)
        if size > limit:
            raise TensorTooLargeError(info.name, size, limit, info=str(info))


def check_arena(nbytes: int, largest: list, limit: int | None = None) -> None:
    """Refuse a memory plan of ``nbytes`` above ``limit``; ``largest`` names the
    biggest tensors in it."""
    limit = memory_limit() if limit is None else limit
    if nbytes > limit:
        raise TensorTooLargeError(None, nbytes, limit, largest=tuple(largest))


def infer_node(node, infos, constants) -> list[tuple[tuple[int, ...], str]]:
    """The shapes and dtypes of ``node``'s outputs from its inputs'."""
    spec = check_node(node)
    check_input_dtypes(node, infos)
    try:
        result = spec.infer(node, infos, constants)
    except PolyoptError:
        raise
    except (ValueError, IndexError, TypeError, KeyError, ZeroDivisionError,
            OverflowError) as err:
        shapes = ", ".join(str(i) if i else "_" for i in infos)
        raise InvalidArgumentError(
            f"node '{node.name}' ({node.op_type}) does not accept inputs {shapes}: {err}"
        ) from err
    if len(node.outputs) != len(result):
        raise OptionalOutputsError(node.name, node.op_type, len(node.outputs), len(result))
    return result
