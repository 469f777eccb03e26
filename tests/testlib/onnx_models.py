"""ONNX models built in code with onnx.helper and random weights (nothing downloaded),
and a runner comparing polyopt.graph with onnxruntime on them.

``single_op(...)`` wraps one operator; ``resnet18``, ``mobilenet_v2``, ``bert_layer``
build the models of issue 16 (``width``/``resolution`` shrink them for the tests).
"""

from __future__ import annotations

import numpy as np

from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class ModelBuilder:
    """A tiny wrapper over onnx.helper: ``m.add(op, inputs, **attrs) -> output name``."""

    def __init__(self, seed: int = 0):
        self.nodes, self.inits, self.inputs = [], [], []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape)))
        return name

    def const(self, value, name=None):
        name = name or f"c{self.count}"
        self.count += 1
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        scale = scale if scale is not None else np.sqrt(2.0 / max(fan_in, 1))
        return self.const((self.rng.standard_normal(shape) * scale).astype(np.float32))

    def add(self, op, inputs, outputs=1, **attrs):
        names = [f"t{self.count}_{k}" for k in range(outputs)]
        self.count += 1
        self.nodes.append(helper.make_node(op, list(inputs), names, name=f"n{self.count}_{op}",
                                           **attrs))
        return names[0] if outputs == 1 else names

    def model(self, outputs, opset=OPSET, dtypes=None):
        """``dtypes``: {output: numpy dtype} for outputs that are not float32."""
        dtypes = dtypes or {}
        outs = [helper.make_tensor_value_info(o, helper.np_dtype_to_tensor_dtype(
            np.dtype(dtypes.get(o, "float32"))), None) for o in outputs]
        graph = helper.make_graph(self.nodes, "model", self.inputs, outs, self.inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def single_op(op, input_shapes, *, consts=(), opset=OPSET, outputs=1, seed=0, **attrs):
    """A model of one operator: float inputs ``x0, x1, ...`` then constant inputs
    (``consts``: arrays, or None for an absent optional input)."""
    m = ModelBuilder(seed)
    names = [m.input(f"x{k}", s) for k, s in enumerate(input_shapes)]
    names += ["" if c is None else m.const(c) for c in consts]
    out = m.add(op, names, outputs=outputs, **attrs)
    return m.model([out] if isinstance(out, str) else out, opset)


def random_inputs(model, seed=1):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def ort_session(model, threads=1):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def ort_run(model, feeds, threads=1):
    session = ort_session(model, threads)
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


# -- models -------------------------------------------------------------------------------------

def _conv_bn(m, x, c_in, c_out, k, stride, pad, group=1, relu=True, relu6=False):
    w = m.weight(c_out, c_in // group, k, k)
    y = m.add("Conv", [x, w], kernel_shape=[k, k], strides=[stride, stride],
              pads=[pad] * 4, group=group)
    scale = m.const(m.rng.uniform(0.5, 1.5, c_out).astype(np.float32))
    bias = m.const((m.rng.standard_normal(c_out) * 0.1).astype(np.float32))
    mean = m.const((m.rng.standard_normal(c_out) * 0.1).astype(np.float32))
    var = m.const(m.rng.uniform(0.5, 1.5, c_out).astype(np.float32))
    y = m.add("BatchNormalization", [y, scale, bias, mean, var], epsilon=1e-5)
    if relu6:
        return m.add("Clip", [y, m.const(np.float32(0)), m.const(np.float32(6))])
    return m.add("Relu", [y]) if relu else y


def resnet18(width=64, resolution=224, classes=1000, batch=1):
    """ResNet-18 (basic blocks, batch norms, residual adds); ``width`` is the first
    stage's channels (64 in the real model)."""
    m = ModelBuilder(0)
    x = m.input("input", (batch, 3, resolution, resolution))
    y = _conv_bn(m, x, 3, width, 7, 2, 3)
    y = m.add("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c = width
    for stage, out_c in enumerate([width, width * 2, width * 4, width * 8]):
        for block in range(2):
            stride = 2 if stage > 0 and block == 0 else 1
            z = _conv_bn(m, y, c, out_c, 3, stride, 1)
            z = _conv_bn(m, z, out_c, out_c, 3, 1, 1, relu=False)
            short = _conv_bn(m, y, c, out_c, 1, stride, 0, relu=False) \
                if stride != 1 or c != out_c else y
            y = m.add("Relu", [m.add("Add", [z, short])])
            c = out_c
    y = m.add("GlobalAveragePool", [y])
    y = m.add("Flatten", [y], axis=1)
    w = m.weight(classes, c, scale=0.05)
    b = m.const(np.zeros(classes, np.float32))
    y = m.add("Gemm", [y, w, b], transB=1)
    return m.model([y])


def mobilenet_v2(width=1.0, resolution=224, classes=1000, batch=1):
    """MobileNetV2 (inverted residuals: 1x1 expand, 3x3 depthwise, 1x1 project, ReLU6)."""
    m = ModelBuilder(0)
    x = m.input("input", (batch, 3, resolution, resolution))

    def ch(c):
        return max(8, int(c * width + 4) // 8 * 8)

    y = _conv_bn(m, x, 3, ch(32), 3, 2, 1, relu6=True)
    c = ch(32)
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1)]
    for t, out, n, s in settings:
        for k in range(n):
            stride = s if k == 0 else 1
            hidden = c * t
            z = _conv_bn(m, y, c, hidden, 1, 1, 0, relu6=True) if t != 1 else y
            z = _conv_bn(m, z, hidden, hidden, 3, stride, 1, group=hidden, relu6=True)
            z = _conv_bn(m, z, hidden, ch(out), 1, 1, 0, relu=False)
            y = m.add("Add", [y, z]) if stride == 1 and c == ch(out) else z
            c = ch(out)
    y = _conv_bn(m, y, c, 1280 if width >= 1 else ch(1280), 1, 1, 0, relu6=True)
    y = m.add("GlobalAveragePool", [y])
    y = m.add("Flatten", [y], axis=1)
    c = 1280 if width >= 1 else ch(1280)
    y = m.add("Gemm", [y, m.weight(classes, c, scale=0.05), m.const(np.zeros(classes, np.float32))],
              transB=1)
    return m.model([y])


def bert_layer(hidden=768, heads=12, seq=128, ffn=3072, batch=1):
    """One BERT-base encoder layer: self-attention (Q, K, V projections, scaled dot
    products, softmax), residual and layer norm, GELU (from Erf) feed-forward, residual
    and layer norm."""
    m = ModelBuilder(0)
    x = m.input("input", (batch, seq, hidden))
    head = hidden // heads

    def dense(v, n_in, n_out):
        return m.add("Add", [m.add("MatMul", [v, m.weight(n_in, n_out, scale=0.02)]),
                             m.const((m.rng.standard_normal(n_out) * 0.02).astype(np.float32))])

    def split_heads(v, perm):
        v = m.add("Reshape", [v, m.const(np.array([batch, seq, heads, head], np.int64))])
        return m.add("Transpose", [v], perm=perm)

    q = split_heads(dense(x, hidden, hidden), [0, 2, 1, 3])
    k = split_heads(dense(x, hidden, hidden), [0, 2, 3, 1])
    v = split_heads(dense(x, hidden, hidden), [0, 2, 1, 3])
    scores = m.add("Div", [m.add("MatMul", [q, k]), m.const(np.float32(np.sqrt(head)))])
    probs = m.add("Softmax", [scores], axis=-1)
    ctx = m.add("Transpose", [m.add("MatMul", [probs, v])], perm=[0, 2, 1, 3])
    ctx = m.add("Reshape", [ctx, m.const(np.array([batch, seq, hidden], np.int64))])
    attn = dense(ctx, hidden, hidden)

    def layer_norm(v):
        return m.add("LayerNormalization", [v, m.const(np.ones(hidden, np.float32)),
                                            m.const(np.zeros(hidden, np.float32))],
                     axis=-1, epsilon=1e-12)

    y = layer_norm(m.add("Add", [attn, x]))
    h = dense(y, hidden, ffn)
    gelu = m.add("Mul", [m.add("Mul", [h, m.add("Add", [m.add("Erf", [
        m.add("Div", [h, m.const(np.float32(np.sqrt(2.0)))])]), m.const(np.float32(1.0))])]),
        m.const(np.float32(0.5))])
    out = layer_norm(m.add("Add", [dense(gelu, ffn, hidden), y]))
    return m.model([out])


def lstm(layers=2, seq=32, batch=1, width=128, hidden=256):
    """A stack of forward LSTM layers (ONNX LSTM, gates i, o, f, c), output Y of the last."""
    m = ModelBuilder(0)
    x = m.input("input", (seq, batch, width))
    y, size = x, width
    for _ in range(layers):
        scale = 1.0 / np.sqrt(hidden)
        w = m.const((m.rng.uniform(-scale, scale, (1, 4 * hidden, size))).astype(np.float32))
        r = m.const((m.rng.uniform(-scale, scale, (1, 4 * hidden, hidden))).astype(np.float32))
        b = m.const((m.rng.uniform(-scale, scale, (1, 8 * hidden))).astype(np.float32))
        out = m.add("LSTM", [y, w, r, b], hidden_size=hidden)
        y = m.add("Squeeze", [out, m.const(np.array([1], np.int64))])
        size = hidden
    return m.model([y])
