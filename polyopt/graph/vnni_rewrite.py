"""ONNX's quantized operators on the VNNI kernels: ``QLinearConv`` and ``MatMulInteger``
with constant int8 weights become ``Int8Conv`` / ``Int8MatMul`` (a graph pass of
``po.graph.compile``, run where the machine has AVX-512 VNNI).
"""

from __future__ import annotations

import numpy as np

from .ir import Graph, OpNode, TensorInfo
from .operators_int8 import conv_is_vnni, int8_conv_node, int8_matmul_node, matmul_columns
from .registry import attr


def rebuilt_graph(g: Graph, nodes, constants: dict, tensors: dict) -> Graph:
    """``g`` with ``nodes``, ``constants`` and ``tensors``: the constants' tensors added,
    the constants nothing reads dropped."""
    for name, value in constants.items():
        tensors.setdefault(name, TensorInfo(name, value.shape, value.dtype.name))
    rebuilt = Graph(nodes, tensors, constants, g.inputs, g.outputs, name=g.name)
    return rebuilt.replace()  # drops the float weights nothing reads any more


def vnni_rewrite(g: Graph) -> Graph:
    """``QLinearConv`` and ``MatMulInteger`` with constant int8 weights (zero point 0)
    and a uint8 input with a constant zero point, on the VNNI kernels: ``Int8Conv`` then
    ``QuantizeLinear`` by 1 with the output zero point, or ``Int8MatMul`` to int32."""
    constants = dict(g.constants)
    tensors = dict(g.tensors)
    nodes: list[OpNode] = []
    changed = False
    for node in g.nodes:
        replaced = _qlinear_conv(g, node, constants, tensors) if node.op_type == \
            "QLinearConv" else _matmul_integer(g, node, constants) \
            if node.op_type == "MatMulInteger" else None
        nodes.extend(replaced or [node])
        changed = changed or replaced is not None
    return rebuilt_graph(g, nodes, constants, tensors) if changed else g


def _scalar(g, name):
    if not name:
        return 0
    value = g.constants.get(name)
    return None if value is None or value.size != 1 else value.reshape(-1)[0]


def _zero_weights_point(g, name) -> bool:
    return not name or (name in g.constants and not np.any(g.constants[name]))


def _qlinear_conv(g, node, constants, tensors):
    inputs = (list(node.inputs) + [""] * 9)[:9]
    x, xs, xz, w, ws, wz, ys, yz, bias = inputs
    if w not in g.constants or not _zero_weights_point(g, wz) or (bias and bias not in
                                                                  g.constants):
        return None
    x_zero, x_scale, y_scale = _scalar(g, xz), _scalar(g, xs), _scalar(g, ys)
    if x_zero is None or x_scale is None or y_scale is None or ws not in g.constants \
            or not conv_is_vnni(node, g.tensors[x].shape, g.constants[w].shape,
                                g.tensors[x].dtype, g.constants[w].dtype.name):
        return None
    # onnxruntime's order, in float32: (x_scale * w_scale) / y_scale
    scale = (g.constants[ws].astype(np.float32) * np.float32(x_scale)) / np.float32(y_scale)
    acc = f"{node.outputs[0]}_int8"
    conv = int8_conv_node(f"{node.name}_int8", x, g.constants[w], int(x_zero), scale, None,
                          acc, node, constants,
                          correction=g.constants[bias] if bias else None)
    tensors[acc] = TensorInfo(acc, g.tensors[node.outputs[0]].shape, "float32")
    one = f"{node.name}_unit_scale"
    constants[one] = np.float32(1.0)
    point = [yz] if yz else []
    return [conv, OpNode(f"{node.name}_requantize", "QuantizeLinear", (acc, one, *point),
                         node.outputs, {})]


def _matmul_integer(g, node, constants):
    inputs = (list(node.inputs) + ["", ""])[:4]
    a, b, az, bz = inputs
    if b not in g.constants or g.tensors[a].dtype != "uint8" or \
            g.constants[b].dtype != np.int8 or not _zero_weights_point(g, bz):
        return None
    a_zero = _scalar(g, az)
    if a_zero is None or matmul_columns(*g.constants[b].shape) is None:
        return None
    return [int8_matmul_node(f"{node.name}_int8", a, g.constants[b], int(a_zero), None,
                             None, node.outputs[0], constants, dtype="int32")]


def amx_conv_layout(g: Graph) -> Graph:
    """``Int8Conv`` nodes whose shapes AMX tiles take (input channels a multiple of 64;
    stride 1, or a 1x1 conv without padding) computed in the ``"wide"`` layout
    (:mod:`polyopt.te.quantized_amx`, scheduled on AMX tiles); a pass of
    ``po.graph.compile`` where the machine model chooses AMX for int8."""
    nodes, changed = [], False
    for node in g.nodes:
        if node.op_type == "Int8Conv" and _fits_amx(g, node):
            node = OpNode(node.name, node.op_type, node.inputs, node.outputs,
                          {**node.attrs, "layout": "wide"})
            changed = True
        nodes.append(node)
    if not changed:
        return g
    return Graph(nodes, dict(g.tensors), dict(g.constants), g.inputs, g.outputs,
                 name=g.name)


def _fits_amx(g, node) -> bool:
    channels = g.tensors[node.inputs[0]].shape[1]
    weights = g.constants.get(node.inputs[1])
    if weights is None or channels % 64 or weights.shape[4] % 16:
        return False
    _, _, r, s, _, _ = weights.shape
    pads, strides = set(attr(node, "pads") or (0,)), set(attr(node, "strides") or (1,))
    auto = attr(node, "auto_pad") in (None, "NOTSET", "VALID")
    return auto and (strides == {1} or (r == s == 1 and pads == {0}))
