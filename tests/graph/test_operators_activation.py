"""The activation and n-ary elementwise operators (operators_activation) against
onnxruntime: attributes at their defaults and set, large magnitudes (Softplus must not
overflow), broadcasting of PRelu's slope and of Max/Min/Sum/Mean's operands."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run, random_inputs, single_op  # noqa: E402


def check(model, scale=3.0, tol=1e-5):
    feeds = {k: v * np.float32(scale) for k, v in random_inputs(model).items()}
    expected = ort_run(model, feeds)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert_numbers(compiled.run(feeds), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("op, attrs", [
    ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3}), ("Elu", {}), ("Elu", {"alpha": 0.5}),
    ("Selu", {}), ("Selu", {"alpha": 1.5, "gamma": 2.0}), ("Softplus", {}), ("Abs", {}),
    ("Sign", {}), ("Neg", {}), ("Reciprocal", {})])
def test_unary_activation(op, attrs):
    check(single_op(op, [(3, 37)], opset=17, **attrs))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sign_of_nan_is_nan_and_of_zeros_zero(dtype):
    """As onnxruntime and NumPy: the onnx property family found Sign(NaN) = 0."""
    from onnx import helper

    kind = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Sign", ["x0"], ["s"])], "g",
        [helper.make_tensor_value_info("x0", kind, [6])],
        [helper.make_tensor_value_info("s", kind, [6])]),
        opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([np.nan, -1.5, -0.0, 0.0, 2.0, -np.inf], dtype)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run({"x0": x})
    assert_numbers(got, ort_run(model, {"x0": x}), exact=True)
    assert not np.signbit(next(iter(got.values()))[2])  # Sign(-0.0) is +0.0


def test_softplus_of_large_magnitudes_does_not_overflow():
    model = single_op("Softplus", [(2, 4)], opset=17)
    x = np.array([[-200, -30, 0, 1e-3], [5, 30, 100, 200]], np.float32)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run({"x0": x})
    assert_numbers(got, ort_run(model, {"x0": x}), rtol=1e-6, atol=1e-6)
    assert np.isfinite(next(iter(got.values()))).all()


@pytest.mark.parametrize("slope", [(1,), (5, 1, 1), (5, 4, 3)])
def test_prelu_slope_broadcasts(slope):
    check(single_op("PRelu", [(2, 5, 4, 3), slope], opset=17))


@pytest.mark.parametrize("op", ["Max", "Min", "Sum", "Mean"])
@pytest.mark.parametrize("shapes", [[(3, 5)], [(3, 5), (3, 5)], [(2, 3, 5), (5,), (3, 1)]],
                         ids=lambda s: str(len(s)))
def test_nary(op, shapes):
    check(single_op(op, shapes, opset=17))


def test_abs_and_sign_of_integers():
    from onnx import TensorProto, helper

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Abs", ["x"], ["a"]), helper.make_node("Sign", ["x"], ["s"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.INT32, [7])],
        [helper.make_tensor_value_info("a", TensorProto.INT32, [7]),
         helper.make_tensor_value_info("s", TensorProto.INT32, [7])]),
        opset_imports=[helper.make_opsetid("", 17)])
    x = np.array([-5, -1, 0, 1, 7, -2**31 + 1, 2**31 - 1], np.int32)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run({"x": x})
    np.testing.assert_array_equal(got["a"], np.abs(x))
    np.testing.assert_array_equal(got["s"], np.sign(x))


@pytest.mark.parametrize("source, target", [("float32", "int32"), ("float32", "float64"),
                                            ("float32", "uint8"), ("int64", "float32"),
                                            ("int32", "int8"), ("float64", "int64")])
def test_cast_as_onnxruntime(source, target):
    from onnx import TensorProto, helper

    types = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
             "int32": TensorProto.INT32, "int64": TensorProto.INT64,
             "int8": TensorProto.INT8, "uint8": TensorProto.UINT8}
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=types[target])], "g",
        [helper.make_tensor_value_info("x", types[source], [9])],
        [helper.make_tensor_value_info("y", types[target], [9])]),
        opset_imports=[helper.make_opsetid("", 17)])
    # in range of every target: ONNX leaves out-of-range casts undefined
    x = np.array([-100.75, -2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.7, 100.25]).astype(source)
    if target == "uint8":
        x = np.abs(x).astype(source)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run({"x": x})
    np.testing.assert_array_equal(got["y"], ort_run(model, {"x": x})["y"])
    assert got["y"].dtype == np.dtype(target)


def test_cast_to_an_unsupported_type_is_refused_by_name():
    from onnx import TensorProto, helper

    model = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.BFLOAT16)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [3])]),
        opset_imports=[helper.make_opsetid("", 17)])
    err = refused(po.graph.UnsupportedAttributeValueError, lambda: po.graph.from_onnx(model))
    assert (err.op_type, err.attribute, err.value) == ("Cast", "to", TensorProto.BFLOAT16)
    assert TensorProto.BFLOAT16 not in err.supported and TensorProto.FLOAT in err.supported
