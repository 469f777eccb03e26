"""Each operator of polyopt.graph against onnxruntime on small shapes (broadcasting
corner cases, odd sizes, strides, padding, groups, dilation)."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run, random_inputs, single_op  # noqa: E402

RNG = np.random.default_rng(5)


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def check(model, tol=1e-4):
    feeds = random_inputs(model)
    expected = ort_run(model, feeds)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert_numbers(compiled.run(feeds), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", [
    [(3, 5), (3, 5)], [(2, 3, 5), (5,)], [(2, 1, 5), (1, 4, 1)], [(1,), (4, 3)],
    [(2, 3, 1, 7), (3, 6, 1)],
], ids=lambda s: "x".join("-".join(map(str, d)) for d in s))
def test_broadcasting_binary(op, shapes):
    check(single_op(op, shapes))


def test_broadcast_with_constant_scalar():
    check(single_op("Mul", [(2, 7)], consts=[np.float32(3.0)]))


@pytest.mark.parametrize("op, attrs", [("Relu", {}), ("Sigmoid", {}), ("Tanh", {}),
                                       ("Erf", {}), ("Gelu", {}),
                                       ("Gelu", {"approximate": "tanh"})])
def test_unary(op, attrs):
    check(single_op(op, [(3, 37)], opset=20 if op == "Gelu" else 17, **attrs))


def test_clip_with_and_without_bounds():
    check(single_op("Clip", [(4, 9)], consts=[np.float32(-0.5), np.float32(0.7)]))
    check(single_op("Clip", [(4, 9)], consts=[None, np.float32(0.2)]))


@pytest.mark.parametrize("c_in, c_out, size, k, stride, pad, group, dilation", [
    (3, 8, 9, 3, 1, 1, 1, 1),      # plain, odd size
    (4, 6, 11, 3, 2, 1, 1, 1),     # strided
    (8, 8, 7, 3, 1, 1, 8, 1),      # depthwise
    (6, 6, 11, 3, 2, 1, 6, 1),     # depthwise, stride 2 (even and odd columns apart)
    (4, 8, 10, 3, 2, 2, 4, 2),     # grouped, stride 2, dilation 2
    (4, 6, 9, 3, 1, 2, 2, 2),      # groups and dilation
    (8, 4, 9, 3, 1, 1, 2, 1),      # groups of 4 channels: 36 terms, a reduction
    (6, 6, 8, 3, 1, 0, 6, 1),      # depthwise without padding
    (5, 7, 6, 1, 1, 0, 1, 1),      # pointwise
    (3, 4, 10, 5, 3, 0, 1, 1),     # no padding, stride 3
])
def test_conv(c_in, c_out, size, k, stride, pad, group, dilation):
    w = f32(c_out, c_in // group, k, k)
    check(single_op("Conv", [(1, c_in, size, size)], consts=[w, f32(c_out)],
                    kernel_shape=[k, k], strides=[stride, stride], pads=[pad] * 4,
                    group=group, dilations=[dilation, dilation]))


def test_conv_uneven_padding_without_bias():
    check(single_op("Conv", [(2, 3, 8, 7)], consts=[f32(4, 3, 3, 2)], pads=[0, 1, 2, 0],
                    strides=[1, 2]))


def test_conv_auto_pad_same_upper():
    check(single_op("Conv", [(1, 2, 7, 7)], consts=[f32(3, 2, 3, 3)], auto_pad="SAME_UPPER",
                    strides=[2, 2]))


@pytest.mark.parametrize("a, b", [((5, 7), (7, 3)), ((2, 5, 7), (7, 9)),
                                  ((2, 3, 4, 5), (2, 3, 5, 6)), ((1, 4, 5), (3, 5, 2))])
def test_matmul(a, b):
    check(single_op("MatMul", [a, b]))


@pytest.mark.parametrize("trans_a, trans_b, alpha, beta, c", [
    (0, 0, 1.0, 1.0, (6,)), (1, 0, 0.5, 2.0, (5, 6)), (0, 1, 1.0, 1.0, (1, 1)),
    (1, 1, 1.0, 1.0, None)])
def test_gemm(trans_a, trans_b, alpha, beta, c):
    a = (7, 5) if trans_a else (5, 7)
    b = (6, 7) if trans_b else (7, 6)
    consts = [f32(*b)] + ([f32(*c)] if c else [])
    check(single_op("Gemm", [a], consts=consts, transA=trans_a, transB=trans_b,
                    alpha=alpha, beta=beta))


def test_batch_normalization_alone():
    c = 5
    check(single_op("BatchNormalization", [(2, c, 3, 4)], consts=[
        f32(c), f32(c), f32(c), np.abs(f32(c)) + 0.5], epsilon=1e-3))


@pytest.mark.parametrize("op, attrs", [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                         count_include_pad=1)),
    ("AveragePool", dict(kernel_shape=[2, 3], strides=[1, 2])),
])
def test_pooling(op, attrs):
    check(single_op(op, [(1, 3, 9, 11)], **attrs))


@pytest.mark.parametrize("attrs", [
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),   # stride 2: even/odd
    dict(kernel_shape=[3, 2], strides=[1, 1], pads=[1, 0, 1, 1]),   # uneven padding
    dict(kernel_shape=[2, 3], strides=[3, 2], pads=[0, 2, 1, 0]),   # row stride 3
    dict(kernel_shape=[3, 3], strides=[2, 2], pads=[0, 0, 2, 2]),   # padding at the end
    dict(kernel_shape=[1, 4], strides=[1, 3]),                      # stride 3, no padding
])
def test_small_max_pool_is_separable_and_exact(attrs):
    """The row maxima, then the column maxima, equal onnxruntime's pooling exactly."""
    model = single_op("MaxPool", [(1, 5, 12, 17)], **attrs)
    feeds = random_inputs(model)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    assert [s.template for s in compiled.steps] == ["pool_unrolled"]
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_array_equal(compiled.run(feeds)[name], value)


def test_global_average_pool():
    check(single_op("GlobalAveragePool", [(2, 5, 7, 3)]))


@pytest.mark.parametrize("op, shape, consts, attrs", [
    ("Flatten", (2, 3, 4), [], {"axis": 1}),
    ("Flatten", (2, 3, 4), [], {"axis": 0}),
    ("Reshape", (2, 4, 3), [np.array([4, -1, 0], np.int64)], {}),
    ("Transpose", (2, 3, 5), [], {"perm": [2, 0, 1]}),
    ("Transpose", (2, 3), [], {}),
    ("Squeeze", (1, 3, 1, 5), [np.array([0, 2], np.int64)], {}),
    ("Unsqueeze", (3, 5), [np.array([0, -1], np.int64)], {}),
    ("Slice", (6, 9), [np.array([1, -7]), np.array([5, 100]), np.array([0, 1]),
                       np.array([2, 3])], {}),
    ("Slice", (6, 9), [np.array([-1]), np.array([-100]), np.array([1]), np.array([-2])], {}),
])
def test_layout_operators(op, shape, consts, attrs):
    check(single_op(op, [shape], consts=consts, **attrs))


def test_concat_three_inputs():
    check(single_op("Concat", [(2, 3, 4), (2, 1, 4), (2, 5, 4)], axis=1))


@pytest.mark.parametrize("shape", [(3, 10), (2, 3, 17)])
def test_softmax(shape):
    check(single_op("Softmax", [shape], axis=-1))


def test_layer_normalization():
    check(single_op("LayerNormalization", [(2, 3, 20)], consts=[f32(20), f32(20)],
                    axis=-1, epsilon=1e-5))
