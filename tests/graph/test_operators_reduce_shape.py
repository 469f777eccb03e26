"""The reductions (operators_reduce) and data-movement operators (operators_shape,
onnx_rewrites: Split, CastLike) against onnxruntime: axes as attribute and as input,
keepdims, every Pad mode, Expand/Tile broadcasting, Gather of constant indices; and
their typed refusals."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph import (UnsupportedAttributeValueError,  # noqa: E402
                           UnsupportedCombinationError, UnsupportedInputError)
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run, random_inputs, single_op  # noqa: E402


def check(model, tol=1e-5, feeds=None):
    feeds = feeds or {k: v * np.float32(2.0) + np.float32(0.5)
                      for k, v in random_inputs(model).items()}
    expected = ort_run(model, feeds)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert_numbers(compiled.run(feeds), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                "ReduceProd", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                "ReduceLogSumExp"])
@pytest.mark.parametrize("axes, keepdims", [([1], 1), ([0, 2], 0), ([-1], 0), (None, 1)])
def test_reductions_with_axes_as_input(op, axes, keepdims):
    consts = [] if axes is None else [np.array(axes, np.int64)]
    check(single_op(op, [(3, 4, 5)], consts=consts, opset=18, keepdims=keepdims))


def test_reduce_log_sum_and_axes_as_attribute():
    check(single_op("ReduceMean", [(2, 3, 4)], opset=13, axes=[1, 2], keepdims=0))
    model = single_op("ReduceLogSum", [(2, 3, 4)], consts=[np.array([1], np.int64)], opset=18)
    feeds = {"x0": np.abs(random_inputs(model)["x0"]) + np.float32(0.1)}
    check(model, feeds=feeds)


def test_reduce_noop_with_empty_axes_is_the_identity():
    check(single_op("ReduceSum", [(3, 4)], consts=[np.zeros(0, np.int64)], opset=18,
                    noop_with_empty_axes=1))


@pytest.mark.parametrize("op", ["LogSoftmax", "Softmax"])
@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_log_softmax_and_softmax_over_any_axis(op, axis):
    check(single_op(op, [(3, 4, 6)], opset=13, axis=axis))


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad_modes(mode):
    pads = np.array([0, 1, 2, 0, 2, 1], np.int64)
    consts = [pads, np.array(1.5, np.float32)] if mode == "constant" else [pads]
    check(single_op("Pad", [(2, 4, 5)], consts=consts, opset=18, mode=mode))


def test_pad_with_axes_and_negative_pads():
    check(single_op("Pad", [(3, 6)], consts=[np.array([1, -2], np.int64), None,
                                             np.array([1], np.int64)], opset=18))
    check(single_op("Pad", [(3, 6)], consts=[np.array([-1, 2, 0, -1], np.int64)], opset=18))


def test_expand_tile_gather():
    check(single_op("Expand", [(3, 1)], consts=[np.array([2, 3, 4], np.int64)], opset=13))
    check(single_op("Tile", [(2, 3)], consts=[np.array([3, 2], np.int64)], opset=13))
    check(single_op("Gather", [(5, 4)], consts=[np.array([[4, 0], [2, 2]], np.int64)],
                    opset=13, axis=0))
    check(single_op("Gather", [(3, 6)], consts=[np.array([1, 3, 5], np.int64)],
                    opset=13, axis=1))     # an arithmetic progression: one affine read
    check(single_op("Gather", [(3, 6)], consts=[np.array(-1, np.int64)], opset=13, axis=1))


@pytest.mark.parametrize("attrs, consts, outputs", [
    ({"axis": 1}, [], 2), ({"axis": 0}, [np.array([1, 3], np.int64)], 2),
    ({"axis": -1, "num_outputs": 3}, [], 3)])
def test_split(attrs, consts, outputs):
    opset = 18 if "num_outputs" in attrs else 13
    check(single_op("Split", [(4, 6, 7 if "num_outputs" in attrs else 6)], consts=consts,
                    opset=opset, outputs=outputs, **attrs))


def test_cast_like():
    m = ModelBuilder()
    x = m.input("x", (2, 3))
    y = m.add("CastLike", [x, m.const(np.zeros(1, np.float64))])
    model = m.model([y], opset=15, dtypes={y: "float64"})
    check(model)


def test_refusals_are_typed_and_named():
    err = refused(UnsupportedAttributeValueError, lambda: po.graph.from_onnx(
        single_op("Pad", [(2, 3)], consts=[np.zeros(4, np.int64)], opset=18, mode="median")))
    assert (err.op_type, err.attribute, err.value) == ("Pad", "mode", "median")
    assert "median" not in err.supported and "reflect" in err.supported
    err = refused(UnsupportedCombinationError, lambda: po.graph.from_onnx(
        single_op("Pad", [(2, 3)], consts=[np.array([0, 3, 0, 0])], opset=18, mode="reflect")))
    assert (err.op_type, err.problem) == ("Pad", "wide_pads")
    assert (err.attributes["mode"], err.attributes["most"]) == ("reflect", 2)
    with pytest.raises(po.InvalidArgumentError, match=r"axes \[1, 1\] name an axis twice"):
        po.graph.from_onnx(single_op("ReduceSum", [(2, 3)], consts=[np.array([1, 1])],
                                     opset=18))
    err = refused(UnsupportedInputError, lambda: po.graph.from_onnx(_gather_of_input()))
    assert (err.op_type, err.problem, err.input, err.tensor) == \
        ("Gather", "constant", "indices", "x1")
    scattered = np.random.default_rng(0).integers(0, 100, 65)
    err = refused(UnsupportedCombinationError, lambda: po.graph.from_onnx(
        single_op("Gather", [(100,)], consts=[scattered], opset=13)))
    assert (err.op_type, err.problem, err.attributes["count"]) == \
        ("Gather", "gather_indices", 65)
    with pytest.raises(po.InvalidArgumentError, match=r"does not split into 4 equal parts"):
        po.graph.from_onnx(single_op("Split", [(2, 6)], opset=13, outputs=4, axis=1))


def _gather_of_input():
    from onnx import TensorProto, helper

    return helper.make_model(helper.make_graph(
        [helper.make_node("Gather", ["x0", "x1"], ["y"])], "g",
        [helper.make_tensor_value_info("x0", TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info("x1", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 13)])


def test_backend_compiles_in_an_input_needed_as_a_constant():
    from polyopt.graph.backend import PolyoptBackend

    rep = PolyoptBackend.prepare(_gather_of_input())
    x = np.arange(4, dtype=np.float32) * 10
    for indices in ([3, 0], [1, 1], [3, 0]):
        (y,) = rep.run([x, np.array(indices, np.int64)])
        np.testing.assert_array_equal(y, x[indices])
    assert len(rep._compiled) == 2   # one compiled model per value of the indices


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("attrs", [{}, {"axis": 1, "keepdims": 0},
                                   {"axis": -1, "select_last_index": 1}])
def test_arg_max_min_with_ties(op, attrs):
    m = ModelBuilder()
    y = m.add(op, [m.input("x", (3, 4, 5))], **attrs)
    model = m.model([y], opset=13, dtypes={y: "int64"})
    x = np.random.default_rng(3).integers(-2, 3, (3, 4, 5)).astype(np.float32)  # many ties
    check(model, feeds={"x": x})


@pytest.mark.parametrize("axis", [1, -2])
def test_layer_normalization_over_several_axes(axis):
    m = ModelBuilder()
    x = m.input("x", (2, 3, 4))
    scale, bias = m.weight(3, 4), m.const(np.linspace(-1, 1, 4, dtype=np.float32))
    check(m.model([m.add("LayerNormalization", [x, scale, bias], axis=axis)]))


@pytest.mark.parametrize("axis", [0, -1])
def test_hardmax_marks_the_first_maximum(axis):
    model = single_op("Hardmax", [(3, 4, 5)], opset=13, axis=axis)
    x = np.random.default_rng(4).integers(-2, 3, (3, 4, 5)).astype(np.float32)  # ties
    check(model, feeds={"x0": x})
