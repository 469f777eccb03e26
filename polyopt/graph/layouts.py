"""Blocked weight layouts, packed once at compile time.

The convolutions that :func:`~polyopt.transform.nn_templates.conv2d_channel_template`
schedules (narrow rows: 7 or 14 columns; strided 3x3 layers) vectorize across blocks of
output channels and read the weights as ``[F / block, C, R, S, block]``.  Given the
plain ``[F, C, R, S]`` weights, the template copies each block on every call (a
512-channel 3x3 layer: 9.4 MB per call, about a quarter of its time).
:func:`block_conv_weights` stores the constant weights of those convolutions in the
blocked layout once (zeros past ``F``), as a ``ConvBlocked`` operator whose lowering
reads them so; the template then reads them in place.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 8, 7, 7))
>>> y = b.op("Conv", [x, b.constant("w", np.ones((40, 8, 3, 3), "float32"))], pads=[1] * 4)
>>> g = block_conv_weights(b.build([y]))
>>> [(n.op_type, g.constants[n.inputs[1]].shape) for n in g.nodes]
[('ConvBlocked', (2, 8, 3, 3, 32))]
"""

from __future__ import annotations

import numpy as np

from ..te.ops import pad_nchw
from ..te.tensor import compute, reduce_axis, reduce_sum
from ..target.info import TargetInfo
from .ir import Graph, OpNode
from .operators import attr, register
from .operators_nn import _CONV_ATTRS, window


def channel_block(channels: int, lanes: int) -> int:
    """The output channels per block: two vectors, fewer for a narrower layer (as
    ``conv2d_channel_template`` picks them)."""
    return min(2 * lanes, -(-channels // lanes) * lanes)


def vectorizes_across_channels(node, x_shape, w_shape, out_shape, lanes: int) -> bool:
    """Whether the graph's conv schedule takes the channel template for this plain
    convolution: a 1x1 kernel on rows narrower than a vector, or a larger kernel on
    narrow rows or with a stride."""
    _, _, r, s = w_shape
    pads, strides, dilations, _ = window(node, list(x_shape[2:]), (r, s))
    plain = (attr(node, "group") == 1 and list(dilations) == [1, 1] and len(set(pads)) == 1
             and strides[0] == strides[1] and r == s and len(x_shape) == 4)
    if not plain:
        return False
    width = out_shape[-1]
    return width < lanes if r == 1 else (width < lanes or strides[0] > 1)


def block_conv_weights(g: Graph, *, lanes: int | None = None) -> Graph:
    """Convolutions with constant weights that vectorize across output channels become
    ``ConvBlocked`` reading their weights packed ``[F / block, C, R, S, block]``."""
    lanes = lanes or TargetInfo.host().lanes("float32")
    constants = dict(g.constants)
    nodes = []
    changed = False
    for node in g.nodes:
        weight = g.constants.get(node.inputs[1]) if node.op_type == "Conv" else None
        if weight is None or weight.ndim != 4 or not vectorizes_across_channels(
                node, g.tensors[node.inputs[0]].shape, weight.shape,
                g.tensors[node.outputs[0]].shape, lanes):
            nodes.append(node)
            continue
        block = channel_block(weight.shape[0], lanes)
        name = f"{node.inputs[1]}_blocked{block}"
        if name not in constants:
            constants[name] = pack_blocked(weight, block)
        nodes.append(OpNode(node.name, "ConvBlocked", (node.inputs[0], name,
                                                      *node.inputs[2:]),
                            node.outputs, dict(node.attrs, channels=int(weight.shape[0]))))
        changed = True
    return g.replace(nodes=nodes, constants=constants) if changed else g


def pack_blocked(weight: np.ndarray, block: int) -> np.ndarray:
    """``W[F, C, R, S]`` -> ``Wb[ceil(F / block), C, R, S, block]`` (zeros past F)."""
    f = weight.shape[0]
    padded = np.zeros((-(-f // block) * block, *weight.shape[1:]), weight.dtype)
    padded[:f] = weight
    blocks = padded.reshape(-1, block, *weight.shape[1:])
    return np.ascontiguousarray(blocks.transpose(0, 2, 3, 4, 1))


def _infer(node, infos, constants):
    x, wb = infos[0], infos[1]
    blocks, _, r, s, block = wb.shape
    _, _, _, size = window(node, list(x.shape[2:]), (r, s))
    return [((x.shape[0], node.attrs.get("channels", blocks * block), *size), x.dtype)]


def _lower(node, args, values, out, name):
    X, Wb, bias = (list(args) + [None])[:3]
    block, r = Wb.shape[4].value, Wb.shape[2].value
    pads, strides, _, _ = window(node, [X.shape[2].value, X.shape[3].value], (r, r))
    padded = pad_nchw(X, pads[0], name=f"{name}_pad") if pads[0] else X
    rc = reduce_axis((0, X.shape[1].value), name="rc")
    ry, rx = reduce_axis((0, r), name="ry"), reduce_axis((0, r), name="rx")
    stride = strides[0]

    def scaled(v):
        return v * stride if stride > 1 else v
    conv = compute(out.shape, lambda n, f, y, x: reduce_sum(
        padded[n, rc, scaled(y) + ry, scaled(x) + rx] * Wb[f // block, rc, ry, rx, f % block],
        axis=[rc, ry, rx]), name=f"{name}_conv" if bias is not None else name)
    if bias is None:
        return conv
    return compute(out.shape, lambda n, f, y, x: conv[n, f, y, x] + bias[f], name=name)


register("ConvBlocked", "complex", {**_CONV_ATTRS, "channels": None}, min_inputs=2)(
    (_infer, _lower))
