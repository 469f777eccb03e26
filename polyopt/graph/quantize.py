"""int8 quantization: static calibration of a float32 model, and the VNNI lowering of
ONNX's quantized operators.

``po.graph.quantize(g, calibration_inputs)`` runs the float model on the sample inputs,
records the range of every tensor a convolution or matrix product reads, and returns a
graph where those operators run in int8: the input quantized to uint8 (per tensor,
asymmetric: the observed ``[min, max]``, widened to contain 0, on 0..255), the weights
to int8 (per output channel, symmetric), the product accumulated in int32 by
``vpdpbusd`` and dequantized in the kernel's epilogue, which also computes the bias,
activation, residual add and the next layer's quantization when they fuse.  Operators
the VNNI kernels do not take (channels not a multiple of 4 or 64, grouped convolutions,
odd widths) stay in float32.

:func:`~.vnni_rewrite.vnni_rewrite` (part of ``po.graph.compile``'s passes) lowers ONNX
``QLinearConv`` and ``MatMulInteger`` with constant weights to the same kernels.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 4, 6, 6))
>>> w = b.constant("w", np.random.default_rng(0).standard_normal((64, 4, 3, 3), "float32"))
>>> y = b.op("Relu", [b.op("Conv", [x, w], pads=[1, 1, 1, 1])])
>>> g = b.build([y])
>>> q = po.graph.quantize(g, [{"x": np.ones((1, 4, 6, 6), "float32")}], num_threads=1)
>>> [n.op_type for n in q.nodes]
['QuantizeLinear', 'Int8Conv', 'Relu']
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, public
from .ir import Graph, OpNode, TensorInfo
from .registry import attr
from .operators_int8 import (conv_is_vnni, int8_conv_node, int8_matmul_node,
                             matmul_columns)
from .vnni_rewrite import rebuilt_graph

QUANTIZED = ("Conv", "MatMul", "Gemm")


@public
def quantize(g: Graph, calibration_inputs, *, num_threads: int = 0,
             skip: tuple = ()) -> Graph:
    """``g`` with its convolutions and matrix products in int8 (see the module), the
    activation ranges calibrated on ``calibration_inputs`` (a list of ``{input name:
    array}``, like ``m.run``'s argument).  ``skip``: names of nodes to keep in float32.
    Compile the result with ``po.graph.compile``."""
    from .executor import compile as compile_graph
    from .passes import optimize

    if not isinstance(g, Graph):
        raise InvalidArgumentError(f"quantize needs a po.graph.Graph, got {type(g).__name__}")
    feeds = [calibration_inputs] if isinstance(calibration_inputs, dict) else \
        list(calibration_inputs) if isinstance(calibration_inputs, (list, tuple)) else []
    if not feeds or not all(isinstance(f, dict) for f in feeds):
        raise InvalidArgumentError(
            "quantize needs a list of calibration inputs, each a dict {input name: array} "
            f"(e.g. [{{'{g.inputs[0] if g.inputs else 'input'}': x}}]), got "
            f"{type(calibration_inputs).__name__}")
    if isinstance(skip, str) or not all(isinstance(n, str) for n in skip):
        raise InvalidArgumentError(f"skip is a tuple of node names, got {skip!r}")
    graph = optimize(g, layouts=False)  # (float convolutions: laid out at compile time)
    targets = {n.name: n for n in graph.nodes if n.name not in skip and _weights(graph, n)
               is not None}
    if not targets:
        return graph
    watched = {n.inputs[0] for n in targets.values()}
    model = compile_graph(graph, num_threads=num_threads, plan=False, passes=False)
    ranges: dict[str, list[float]] = {}
    for sample in feeds:
        values = model._run(sample, None)
        for name in watched:
            value = values[name]
            low, high = ranges.setdefault(name, [0.0, 0.0])
            ranges[name] = [min(low, float(value.min())), max(high, float(value.max()))]
    return _rewrite(graph, targets, ranges)


def _weights(g: Graph, node) -> np.ndarray | None:
    """The ``[F, C, R, S]`` or ``[K, N]`` float weights of a Conv, MatMul or Gemm the
    int8 kernels take (None otherwise)."""
    if node.op_type not in QUANTIZED or len(node.inputs) < 2 or node.inputs[1] not in \
            g.constants or g.tensors[node.inputs[0]].dtype != "float32":
        return None
    weight = g.constants[node.inputs[1]]
    x = g.tensors[node.inputs[0]]
    if node.op_type == "Conv":
        return weight if conv_is_vnni(node, x.shape, weight.shape, "uint8", "int8") \
            else None
    if node.op_type == "Gemm" and (attr(node, "transA") or attr(node, "transB")
                                   or attr(node, "alpha") != 1.0 or attr(node, "beta") != 1.0
                                   or (len(node.inputs) > 2 and node.inputs[2]
                                       and g.tensors[node.inputs[2]].shape
                                       != (weight.shape[-1],))):
        return None
    if len(x.shape) != 2 or weight.ndim != 2 or matmul_columns(*weight.shape) is None:
        return None
    return weight


def activation_parameters(low: float, high: float) -> tuple[np.float32, np.uint8]:
    """Scale and zero point mapping ``[low, high]`` (widened to contain 0) onto 0..255."""
    low, high = min(low, 0.0), max(high, 0.0)
    scale = np.float32((high - low) / 255.0) if high > low else np.float32(1.0)
    point = int(np.clip(np.round(-low / float(scale)), 0, 255))
    return scale, np.uint8(point)


def weight_parameters(weight: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-channel int8 weights (``axis``: the output channels) and their
    scales."""
    moved = np.moveaxis(weight.astype(np.float64), axis, 0)
    peak = np.abs(moved.reshape(moved.shape[0], -1)).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    shape = [1] * weight.ndim
    shape[axis] = -1
    q = np.clip(np.round(weight / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, scale


def _rewrite(g: Graph, targets: dict, ranges: dict) -> Graph:
    constants = dict(g.constants)
    tensors = dict(g.tensors)
    nodes: list[OpNode] = []
    quantized: dict[str, tuple] = {}  # float tensor -> (uint8 tensor, scale, zero point)
    for node in g.nodes:
        if node.name not in targets:
            nodes.append(node)
            continue
        x = node.inputs[0]
        bias = constants.get(node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] \
            else None
        if bias is None and len(node.inputs) > 2 and node.inputs[2]:
            nodes.append(node)  # a computed bias: keep the float operator
            continue
        if x not in quantized:
            scale, point = activation_parameters(*ranges[x])
            name = f"{x}_quantized"
            constants[f"{name}_scale"], constants[f"{name}_zero"] = scale, point
            nodes.append(OpNode(f"{name}_node", "QuantizeLinear",
                                (x, f"{name}_scale", f"{name}_zero"), (name,), {}))
            tensors[name] = TensorInfo(name, g.tensors[x].shape, "uint8")
            quantized[x] = (name, scale, point)
        name, x_scale, x_zero = quantized[x]
        weight = constants[node.inputs[1]]
        if node.op_type == "Conv":
            q, w_scale = weight_parameters(weight, 0)
            nodes.append(int8_conv_node(f"{node.name}_int8", name, q, int(x_zero),
                                        w_scale * x_scale, bias, node.outputs[0], node,
                                        constants))
        else:
            q, w_scale = weight_parameters(weight, 1)
            nodes.append(int8_matmul_node(f"{node.name}_int8", name, q, int(x_zero),
                                          w_scale * x_scale, bias, node.outputs[0],
                                          constants))
    return rebuilt_graph(g, nodes, constants, tensors)
