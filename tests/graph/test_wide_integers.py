"""int16, uint16, uint32 and uint64 tensors in polyopt.graph: stored in their dtype and
computed in it (wrapping as C and onnxruntime do), for the operators ONNX allows them,
against onnxruntime (and onnx.reference where onnxruntime has no kernel for the dtype);
operators that do not take them refuse them by name."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.graph.contracts import UnsupportedDTypeError  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402
from testlib.errors import refused  # noqa: E402

WIDE = ("int16", "uint16", "uint32", "uint64")


def one_node(op, dtype, inputs=2, out_dtype=None, **attrs):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    out = helper.np_dtype_to_tensor_dtype(np.dtype(out_dtype or dtype))
    names = ["a", "b", "c"][:inputs]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(n, elem, [4, 6]) for n in names],
        [helper.make_tensor_value_info("y", out, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def expected_of(m, feeds):
    """onnxruntime's outputs, or onnx.reference's where onnxruntime has no kernel of
    this dtype (its NOT_IMPLEMENTED)."""
    try:
        return ort_run(m, feeds)["y"]
    except Exception as err:  # onnxruntime's own exception types
        if "NOT_IMPLEMENTED" not in str(err) and "not implemented" not in str(err):
            raise
        return ReferenceEvaluator(m).run(None, feeds)[0]


def values(dtype, rng, extremes=True):
    info = np.iinfo(dtype)
    x = rng.integers(max(info.min, -1000), min(info.max, 1000), (4, 6), endpoint=True)
    x = x.astype(dtype)
    if extremes:  # wrapping at both ends of the dtype
        x[0, :3] = [info.max, info.min, info.max - 1]
    return x


@pytest.mark.parametrize("dtype", WIDE)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Mod", "Max", "Min", "Equal",
                                "Less", "GreaterOrEqual"])
def test_binary_operators_compute_in_the_dtype(op, dtype):
    rng = np.random.default_rng(0)
    compares = op in ("Equal", "Less", "GreaterOrEqual")
    m = one_node(op, dtype, out_dtype="bool" if compares else None)
    feeds = {"a": values(dtype, rng), "b": values(dtype, rng, extremes=op not in ("Div",
                                                                                   "Mod"))}
    feeds["b"][feeds["b"] == 0] = 3  # (no division by 0)
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False).run(feeds)["y"]
    expected = expected_of(m, feeds)
    assert got.dtype == expected.dtype == np.dtype("bool" if compares else dtype)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("dtype", WIDE)
@pytest.mark.parametrize("to", ["float32", "int64", "uint8", "int16", "uint64"])
def test_cast_between_wide_integers_and_others(dtype, to):
    m = one_node("Cast", dtype, inputs=1, out_dtype=to,
                 to=helper.np_dtype_to_tensor_dtype(np.dtype(to)))
    feeds = {"a": values(dtype, np.random.default_rng(1))}
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False).run(feeds)["y"]
    expected = expected_of(m, feeds)
    assert got.dtype == np.dtype(to)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op, dtype", [("Relu", "int16"), ("Neg", "int16"),
                                       ("Clip", "uint16"), ("Transpose", "uint64"),
                                       ("MatMul", "uint32"), ("MatMul", "uint64")])
def test_other_operators_of_wide_integers(op, dtype):
    rng = np.random.default_rng(2)
    if op == "MatMul":
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["a", "b"], ["y"])], "g",
            [helper.make_tensor_value_info("a", helper.np_dtype_to_tensor_dtype(
                np.dtype(dtype)), [4, 6]), helper.make_tensor_value_info(
                "b", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [6, 4])],
            [helper.make_tensor_value_info("y", helper.np_dtype_to_tensor_dtype(
                np.dtype(dtype)), None)])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        feeds = {"a": values(dtype, rng), "b": values(dtype, rng).T.copy()}
    else:
        m = one_node(op, dtype, inputs=1)
        feeds = {"a": values(dtype, rng)}
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False).run(feeds)["y"]
    expected = expected_of(m, feeds)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("op, dtype", [("Sigmoid", "int16"), ("Relu", "uint32"),
                                       ("MatMul", "int16"), ("Neg", "uint16")])
def test_operators_that_do_not_take_them_refuse_them(op, dtype):
    m = one_node(op, dtype, inputs=2 if op == "MatMul" else 1)
    err = refused(UnsupportedDTypeError, lambda: po.graph.from_onnx(m))
    assert (err.op_type, err.dtype) == (op, dtype) and dtype not in err.supported
