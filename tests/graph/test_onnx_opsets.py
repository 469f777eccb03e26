"""Models of older opsets (7, 9, 11, 12), as exporters wrote them, import and compute what
onnxruntime computes: the version converter, constant folding at import (Constant,
ConstantOfShape, Shape, Range, arithmetic on initializers), unread optional outputs
dropped and a read one refused by name, Sum/Mean of n inputs."""

import os

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx.defs  # noqa: E402
ort = pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import onnx.version_converter  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from polyopt.graph import OpsetError, OptionalOutputsError, UnknownOperatorError  # noqa: E402
from polyopt.graph.onnx_fold import TARGET_OPSET  # noqa: E402
from testlib.errors import refused  # noqa: E402

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, opset, initializers=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7  # readable by every onnxruntime of these opsets
    return model


def _same_as_onnxruntime(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    got = compiled.run(feeds)
    names = [o.name for o in model.graph.output]
    for name, want in zip(names, expected):
        assert_numbers(got[name], want, rtol=1e-5, atol=1e-6)
    return got


def test_opset7_dropout_mask_unread_and_sum_of_three():
    nodes = [helper.make_node("Dropout", ["x"], ["d", "mask"], ratio=0.3),
             helper.make_node("Sum", ["d", "x", "c"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    c = numpy_helper.from_array(np.linspace(-1, 1, 12, dtype="float32").reshape(3, 4), "c")
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [3, 4])],
                   [helper.make_tensor_value_info("y", F, [3, 4])], 7, [c])
    x = np.random.default_rng(0).standard_normal((3, 4)).astype("float32")
    got = _same_as_onnxruntime(model, {"x": x})
    want = np.maximum(2 * x + numpy_helper.to_array(c), 0)  # Dropout is the identity
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)


def test_opset9_constant_of_shape_and_mean():
    shape = helper.make_node("Constant", [], ["shape"],
                             value=numpy_helper.from_array(np.array([2, 5], np.int64)))
    fill = helper.make_node("ConstantOfShape", ["shape"], ["ones"],
                            value=helper.make_tensor("v", F, [1], [0.5]))
    nodes = [shape, fill, helper.make_node("Mean", ["x", "ones", "x"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 5])],
                   [helper.make_tensor_value_info("y", F, [2, 5])], 9)
    x = np.arange(10, dtype="float32").reshape(2, 5)
    got = _same_as_onnxruntime(model, {"x": x})
    np.testing.assert_allclose(got["y"], (2 * x + 0.5) / 3, rtol=1e-6)


def test_opset11_shape_gather_concat_reshape_as_pytorch_exports_flatten():
    """PyTorch's ``x.view(x.size(0), -1)``: Shape, Gather, Unsqueeze, Concat, Reshape."""
    index = numpy_helper.from_array(np.array(0, np.int64), "zero")
    minus = numpy_helper.from_array(np.array([-1], np.int64), "minus")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n"], ["n1"], axes=[0]),
             helper.make_node("Concat", ["n1", "minus"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"]),
             helper.make_node("Relu", ["flat"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [2, 3, 4])],
                   [helper.make_tensor_value_info("y", F, [2, 12])], 11, [index, minus])
    graph = po.graph.from_onnx(model)
    assert [n.op_type for n in graph.nodes] == ["Reshape", "Relu"]
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype("float32")
    _same_as_onnxruntime(model, {"x": x})


def test_opset12_range_and_arithmetic_on_initializers():
    start = numpy_helper.from_array(np.array(1.0, np.float32), "start")
    limit = numpy_helper.from_array(np.array(7.0, np.float32), "limit")
    delta = numpy_helper.from_array(np.array(1.5, np.float32), "delta")
    two = numpy_helper.from_array(np.array(2.0, np.float32), "two")
    nodes = [helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
             helper.make_node("Mul", ["r", "two"], ["r2"]),
             helper.make_node("Cast", ["r2"], ["r3"], to=F),
             helper.make_node("Add", ["x", "r3"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [3, 4])],
                   [helper.make_tensor_value_info("y", F, [3, 4])], 12,
                   [start, limit, delta, two])
    graph = po.graph.from_onnx(model)
    assert [n.op_type for n in graph.nodes] == ["Add"]
    x = np.ones((3, 4), "float32")
    got = _same_as_onnxruntime(model, {"x": x})
    np.testing.assert_allclose(got["y"][0], [3.0, 6.0, 9.0, 12.0])


def test_a_read_optional_output_is_refused_by_name():
    nodes = [helper.make_node("Dropout", ["x"], ["d", "mask"]),
             helper.make_node("Cast", ["mask"], ["y"], to=F)]
    model = _model(nodes, [helper.make_tensor_value_info("x", F, [3, 4])],
                   [helper.make_tensor_value_info("y", F, [3, 4])], 12)
    err = refused(OptionalOutputsError, lambda: po.graph.from_onnx(model))
    assert (err.node, err.op_type, err.asked, err.computed) == ("Dropout_0", "Dropout", 2, 1)


def test_a_model_the_converter_cannot_convert_is_refused_by_name():
    # opset 1 Dropout/BatchNormalization attributes are gone: the converter refuses
    node = helper.make_node("Upsample", ["x"], ["y"], scales=[1.0, 2.0], mode="nearest")
    model = _model([node], [helper.make_tensor_value_info("x", F, [3, 4])],
                   [helper.make_tensor_value_info("y", F, [3, 8])], 7)
    model.opset_import[0].version = 1
    err = refused(OpsetError, lambda: po.graph.from_onnx(model))
    assert (err.version, err.target) == (1, TARGET_OPSET) and err.cause is not None


DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def shipped_case(folder):
    """The model of a shipped test folder, its feeds and its expected outputs."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    data = os.path.join(folder, "test_data_set_0")

    def tensors(prefix):
        files = sorted((f for f in os.listdir(data) if f.startswith(prefix)),
                       key=lambda f: int(f.split("_")[1].split(".")[0]))
        return [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f))) for f in files]
    initialized = {t.name for t in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initialized]
    return model, dict(zip(names, tensors("input_"))), tensors("output_")


@pytest.mark.parametrize("case", ["pytorch-converted/test_ReLU", "pytorch-converted/test_Linear",
                                  "pytorch-operator/test_operator_add_broadcast",
                                  "pytorch-operator/test_operator_view"])
def test_shipped_opset6_models_match_onnxruntime(case):
    """onnxruntime no longer runs opset 6 (Gemm-6): it runs the converted model; both
    match the outputs onnx ships."""
    model, feeds, expected = shipped_case(os.path.join(DATA, case))
    assert model.opset_import[0].version < 13
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run(feeds)
    converted = onnx.version_converter.convert_version(model, 13)
    session = ort.InferenceSession(converted.SerializeToString(),
                                   providers=["CPUExecutionProvider"])
    for output, want, reference in zip(model.graph.output, expected, session.run(None, feeds)):
        np.testing.assert_allclose(got[output.name], reference, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got[output.name], want, rtol=1e-4, atol=1e-5)


def test_the_refusal_lists_onnx_operators_only():
    node = helper.make_node("Trilu", ["x"], ["y"])
    model = _model([node], [helper.make_tensor_value_info("x", F, [3, 4])],
                   [helper.make_tensor_value_info("y", F, [3, 4])], 13)
    err = refused(UnknownOperatorError, lambda: po.graph.from_onnx(model))
    assert (err.op_type, err.problem) == ("Trilu", "unknown")
    supported = list(err.supported)
    assert "Conv" in supported and "MatMul" in supported
    assert [name for name in supported if not onnx.defs.has(name)] == []
    assert "Split" in supported and "CastLike" in supported   # (written as others at import)
    for internal in ("ConvPacked", "MatMulPacked", "Int8Conv", "MaxPoolBlocked", "ConvNd",
                     "SoftmaxAxis"):
        assert po.graph.OPS[internal].internal
        model = _model([helper.make_node(internal, ["x"], ["y"])],
                       [helper.make_tensor_value_info("x", F, [3, 4])],
                       [helper.make_tensor_value_info("y", F, [3, 4])], 13)
        err = refused(UnknownOperatorError, lambda: po.graph.from_onnx(model))
        assert (err.op_type, err.problem, err.supported) == (internal, "internal",
                                                             tuple(supported))


def test_opset6_prelu_slope_is_per_channel():
    """PRelu-6 takes a 1-D slope per channel, which the converter leaves as it is (and
    onnxruntime then refuses); the outputs are the ones onnx ships."""
    model, feeds, expected = shipped_case(os.path.join(DATA, "pytorch-converted",
                                                       "test_PReLU_2d_multiparam"))
    assert model.opset_import[0].version < 7
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run(feeds)
    np.testing.assert_allclose(got[model.graph.output[0].name], expected[0], rtol=1e-5,
                               atol=1e-6)


def test_a_scalar_input_is_taken_as_the_model_declares_it():
    """A 0-d input (shape []) stays 0-d: it was made 1-D and refused as float32[1]."""
    nodes = [helper.make_node("Mul", ["x", "s"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])], 13)
    got = _same_as_onnxruntime(model, {"x": np.array([1.0, 2.0, 3.0], "float32"),
                                       "s": np.array(2.5, "float32")})
    assert_numbers(got["y"], np.array([2.5, 5.0, 7.5], "float32"), exact=True)
