"""Write a small ONNX model: ``python examples/tiny_model.py tiny.onnx``.

A 3x3 convolution with bias and ReLU, a global average pool and a fully connected layer
(1x3x16x16 input named ``input``, 10 outputs named ``logits``), random weights from a
fixed seed.  Needs ``pip install onnx`` (``polyopt[graph]``).
"""

import sys

import numpy as np


def tiny_model():
    """The model as an ``onnx.ModelProto``."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    weights = {
        "w": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
        "b": rng.standard_normal(8).astype(np.float32) * 0.1,
        "fc_w": rng.standard_normal((10, 8)).astype(np.float32) * 0.3,
        "fc_b": np.zeros(10, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"]),
        helper.make_node("GlobalAveragePool", ["relu"], ["pool"]),
        helper.make_node("Flatten", ["pool"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(value, name) for name, value in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


if __name__ == "__main__":
    import onnx

    path = sys.argv[1] if len(sys.argv) > 1 else "tiny.onnx"
    onnx.save(tiny_model(), path)
    print(f"wrote {path}")
