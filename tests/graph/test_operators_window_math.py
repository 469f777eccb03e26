"""ConvTranspose, 1-D convolutions and pools (as 2-D on [N, C, 1, L]), ceil_mode,
GlobalMaxPool, LRN (operators_window, onnx_rewrites) and the elementwise math
(operators_math) against onnxruntime; their typed refusals."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph import UnsupportedCombinationError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run, random_inputs, single_op  # noqa: E402


def check(model, tol=1e-4, feeds=None):
    feeds = feeds or random_inputs(model)
    expected = ort_run(model, feeds)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert_numbers(compiled.run(feeds), expected, rtol=tol, atol=tol)


def conv_model(op, x_shape, w_shape, bias=None, **attrs):
    m = ModelBuilder()
    x = m.input("x", x_shape)
    inputs = [x, m.weight(*w_shape)] + ([m.const(bias)] if bias is not None else [])
    return m.model([m.add(op, inputs, **attrs)], opset=17)


@pytest.mark.parametrize("attrs", [
    {}, {"strides": [2, 2]}, {"strides": [2, 3], "pads": [1, 0, 0, 2]},
    {"strides": [2, 2], "output_padding": [1, 1]}, {"dilations": [2, 1]},
    {"strides": [2, 2], "output_shape": [9, 9]}, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"group": 2}])
def test_conv_transpose_2d(attrs):
    group = attrs.get("group", 1)
    check(conv_model("ConvTranspose", (1, 4, 4, 5), (4, 3, 3, 3),
                     np.arange(3 * group, dtype=np.float32), **attrs))


@pytest.mark.parametrize("attrs", [
    {}, {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]},
    {"strides": [2, 2, 2], "output_padding": [1, 0, 1]}, {"dilations": [1, 2, 1]},
    {"strides": [1, 2, 2], "output_shape": [4, 8, 9]},
    {"strides": [2, 2, 2], "auto_pad": "SAME_LOWER"}, {"group": 2}])
def test_conv_transpose_3d(attrs):
    group = attrs.get("group", 1)
    check(conv_model("ConvTranspose", (1, 4, 3, 4, 4), (4, 2, 2, 3, 3),
                     np.arange(2 * group, dtype=np.float32), **attrs))


@pytest.mark.parametrize("op, w_shape, attrs", [
    ("Conv", (5, 4, 3), {"pads": [1, 2], "strides": [2]}),
    ("Conv", (4, 2, 3), {"group": 2, "dilations": [2]}),
    ("ConvTranspose", (4, 3, 3), {"strides": [2]})])
def test_one_d_convolutions(op, w_shape, attrs):
    check(conv_model(op, (2, 4, 11), w_shape, **attrs))


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", {"kernel_shape": [3], "strides": [2]}),
    ("AveragePool", {"kernel_shape": [3], "pads": [1, 1]}),
    ("LpPool", {"kernel_shape": [3], "strides": [2], "p": 3})])
def test_one_d_pools(op, attrs):
    check(single_op(op, [(2, 3, 12)], **attrs))


@pytest.mark.parametrize("attrs", [{"kernel_shape": [2, 3]},
                                   {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "p": 1},
                                   {"kernel_shape": [2, 2], "strides": [2, 1], "p": 4}])
def test_lp_pool(attrs):
    check(single_op("LpPool", [(1, 3, 6, 5)], **attrs))


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("AveragePool", {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ("AveragePool", {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1],
                     "ceil_mode": 1, "count_include_pad": 1})])
def test_ceil_mode(op, attrs):
    check(single_op(op, [(1, 2, 8, 7)], **attrs))


def test_ceil_mode_with_a_partial_window_counting_pads_is_refused():
    model = single_op("AveragePool", [(1, 2, 8, 8)], kernel_shape=[3, 3], strides=[2, 2],
                      ceil_mode=1, count_include_pad=1)
    err = refused(UnsupportedCombinationError, lambda: po.graph.from_onnx(model))
    assert (err.op_type, err.problem, err.attributes) == \
        ("AveragePool", "partial_window", {"ceil_mode": 1, "count_include_pad": 1})


def test_global_max_pool_and_lrn():
    check(single_op("GlobalMaxPool", [(2, 3, 5, 4)]))
    check(single_op("LRN", [(2, 6, 4, 3)], size=3))
    check(single_op("LRN", [(1, 5, 3, 3)], size=5, alpha=0.01, beta=0.5, bias=2.0))


@pytest.mark.parametrize("op, attrs", [
    ("Floor", {}), ("Ceil", {}), ("Round", {}), ("Sin", {}), ("Cos", {}), ("Tan", {}),
    ("Sinh", {}), ("Cosh", {}), ("Softsign", {}), ("HardSwish", {}), ("Mish", {}),
    ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("Celu", {"alpha": 0.7}),
    ("ThresholdedRelu", {"alpha": 0.5}), ("Shrink", {"bias": 0.2, "lambd": 0.4})])
def test_elementwise_math(op, attrs):
    check(single_op(op, [(3, 17)], opset=18 if op == "Mish" else 17, **attrs), tol=1e-5)


@pytest.mark.parametrize("op", ["Asin", "Acos", "Atan"])
def test_inverse_trigonometry_calls_the_c_library(op):
    model = single_op(op, [(3, 17)])
    x = np.random.default_rng(2).uniform(-1, 1, (3, 17)).astype(np.float32)
    x[0, :3] = [-1.0, 0.0, 1.0]
    check(model, tol=1e-6, feeds={"x0": x})


def test_round_is_half_to_even_and_log_and_pow():
    model = single_op("Round", [(8,)])
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 2.4, -2.6], np.float32)
    check(model, feeds={"x0": x})
    model = single_op("Log", [(5,)])
    check(model, feeds={"x0": np.array([0.1, 1, 2, 10, 1e6], np.float32)})
    model = single_op("Pow", [(3, 4), (4,)])
    feeds = {"x0": np.abs(random_inputs(model)["x0"]) + np.float32(0.1),
             "x1": np.array([0.5, 2, -1, 3], np.float32)}
    check(model, feeds=feeds)


@pytest.mark.parametrize("op, w_shape, attrs", [
    ("Conv", (4, 3, 3, 3, 2), {"pads": [1, 0, 1, 1, 0, 0], "strides": [2, 1, 1]}),
    ("Conv", (4, 1, 2, 2, 2), {"dilations": [2, 1, 2]}),
    ("MaxPool", None, {"kernel_shape": [2, 3, 2], "strides": [2, 2, 1], "ceil_mode": 1}),
    ("AveragePool", None, {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
    ("AveragePool", None, {"kernel_shape": [2, 2, 2], "pads": [1, 0, 1, 0, 1, 1],
                           "count_include_pad": 1})])
def test_three_d_windows(op, w_shape, attrs):
    if w_shape is None:
        check(single_op(op, [(1, 3, 5, 6, 5)], **attrs))
    else:
        channels = w_shape[1] * attrs.get("group", 1)
        check(conv_model(op, (2, channels, 5, 6, 5), w_shape, np.ones(4, np.float32), **attrs))


def test_instance_normalization():
    m = ModelBuilder()
    x = m.input("x", (2, 3, 4, 5))
    scale, bias = m.const(np.float32([0.5, 1, 2])), m.const(np.float32([0, 1, -1]))
    check(m.model([m.add("InstanceNormalization", [x, scale, bias], epsilon=1e-3)]))
