"""onnx's own conformance runner against polyopt.graph, the fast part: the shipped
``simple`` model tests (the PyTorch-exported and node tests: test_onnx_backend_slow.py).
A test polyopt cannot run is skipped by an exclude pattern whose reason
``testlib.onnx_conformance`` gives."""

import pytest

pytest.importorskip("onnx")

from testlib.onnx_conformance import backend_test_cases  # noqa: E402

globals().update(backend_test_cases(["simple"], __name__))


def test_backend_api_runs_nodes_and_models_of_any_batch_size():
    import numpy as np
    from onnx import TensorProto, helper

    import polyopt as po
    from polyopt.graph.backend import PolyoptBackend

    node = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.25)
    x = np.array([[-4.0, 0.0, 2.0]], np.float32)
    (y,) = PolyoptBackend.run_node(node, [x])
    np.testing.assert_array_equal(y, [[-1.0, 0.0, 2.0]])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    rep = PolyoptBackend.prepare(model)
    for rows in (1, 4):
        data = np.linspace(-1, 1, rows * 3, dtype=np.float32).reshape(rows, 3)
        np.testing.assert_array_equal(rep.run([data])[0], np.maximum(data, 0))
        np.testing.assert_array_equal(rep.run({"x": data})[0], np.maximum(data, 0))
    assert PolyoptBackend.supports_device("CPU") and not PolyoptBackend.supports_device("CUDA")
    with pytest.raises(po.InvalidArgumentError, match="devices CPU, not 'CUDA'"):
        PolyoptBackend.prepare(model, "CUDA")
    with pytest.raises(po.InvalidArgumentError, match="needs an onnx.ModelProto"):
        PolyoptBackend.prepare("model.onnx")
    with pytest.raises(po.InvalidArgumentError, match=r"1 input\(s\) \(x\), got 2"):
        rep.run([x, x])
