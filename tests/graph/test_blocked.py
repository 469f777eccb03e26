"""Activations kept blocked between blocked convolutions (``polyopt/graph/blocked.py``):
which tensors are blocked on graphs with branches and residuals, and the results against
the unblocked graph and onnxruntime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.blocked import block_activations  # noqa: E402
from polyopt.graph.layouts import pack_conv_weights  # noqa: E402
from polyopt.graph.lowering import lower_group  # noqa: E402
from polyopt.schedules.nn_templates import producers  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def _residual_model():
    """conv -> relu -> max pool -> [3x3 conv -> relu -> 3x3 conv] + pool -> relu, then
    a strided 1x1 and a strided 3x3 branch added, global average pool, a classifier;
    and a side output read by a sigmoid (not blocked) and one with a broadcast add."""
    m = ModelBuilder(11)
    x = m.input("x", (1, 3, 30, 30))

    def conv(t, f, c, k, stride=1, pad=0):
        return m.add("Conv", [t, m.weight(f, c, k, k), m.const(
            np.linspace(-0.5, 0.5, f).astype(np.float32))], pads=[pad] * 4,
            strides=[stride] * 2)
    stem = m.add("Relu", [conv(x, 32, 3, 5, stride=2, pad=2)])              # 15 x 15
    pool = m.add("MaxPool", [stem], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    body = conv(m.add("Relu", [conv(pool, 32, 32, 3, pad=1)]), 32, 32, 3, pad=1)
    block = m.add("Relu", [m.add("Add", [body, pool])])                     # 8 x 8
    down = conv(block, 64, 32, 1, stride=2)
    main = m.add("Clip", [conv(block, 64, 32, 3, stride=2, pad=1), m.const(
        np.array(0, np.float32)), m.const(np.array(6, np.float32))])
    joined = m.add("Relu", [m.add("Add", [main, down])])                    # 4 x 4
    gap = m.add("GlobalAveragePool", [joined])
    logits = m.add("Gemm", [m.add("Flatten", [gap]), m.weight(10, 64)], transB=1)
    side = m.add("Sigmoid", [conv(pool, 32, 32, 1)])                        # not blocked
    shifted = m.add("Add", [conv(pool, 32, 32, 1), m.const(               # broadcast add
        np.linspace(0, 1, 32).astype(np.float32).reshape(1, 32, 1, 1))])
    return m.model([logits, side, shifted])


def test_tensors_between_blocked_operators_are_blocked_and_results_equal():
    model = _residual_model()
    g = po.graph.optimize(po.graph.from_onnx(model))
    blocked = {name for name, info in g.tensors.items()
               if len(info.shape) == 5 and name not in g.constants}
    by_output = {n.outputs[0]: n for n in g.nodes}
    kinds = sorted(by_output[name].op_type for name in blocked)
    # the stem (conv, relu, pool), the block (conv, relu, conv, add, relu), both branches
    # (conv, clip; 1x1 conv) with their add and relu; not the side convolutions' outputs
    # (read by a sigmoid; by an add that broadcasts)
    assert kinds == ["Add", "Add", "Clip", *["ConvPacked"] * 5, "MaxPoolBlocked",
                     *["Relu"] * 4], kinds
    assert {n.op_type for n in g.nodes} >= {"GlobalAveragePoolBlocked", "MaxPoolBlocked"}
    feeds = {"x": np.random.default_rng(4).standard_normal((1, 3, 30, 30)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    plain = po.graph.compile(po.graph.optimize(po.graph.from_onnx(model), layouts=False),
                             num_threads=2, passes=False)
    got, reference, expected = compiled.run(feeds), plain.run(feeds), ort_run(model, feeds)
    assert {s.template for s in compiled.steps} >= {"pool_blocked", "global_pool_blocked"}
    for name, value in expected.items():
        assert got[name].shape == value.shape
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(got[name], value, rtol=1e-4, atol=1e-4)


def test_a_residual_read_by_an_unblocked_operator_keeps_its_whole_chain_in_nchw():
    """Blocked tensors must agree at every elementwise operator: a residual tensor read
    by a plain (grouped) convolution unblocks the add that makes it, so the conv and
    relu feeding that add are unblocked too."""
    b = po.graph.GraphBuilder()
    x = b.input("x", (1, 32, 9, 9))
    w = b.constant("w", np.ones((32, 32, 3, 3), np.float32) / 100)
    y = b.op("Relu", [b.op("Conv", [x, w], pads=[1] * 4)])
    z = b.op("Add", [b.op("Conv", [y, w], pads=[1] * 4), y])
    depthwise = b.op("Conv", [z, b.constant("d", np.ones((32, 1, 3, 3), np.float32))],
                     pads=[1] * 4, group=32)
    g = block_activations(pack_conv_weights(b.build([depthwise]), lanes=16))
    assert all(len(g.tensors[n.outputs[0]].shape) == 4 for n in g.nodes)
    assert block_activations(g) is g


@pytest.mark.parametrize("channels, stride, dilation, pads", [
    (64, 1, 1, [1] * 4), (64, 2, 1, [1] * 4), (64, 1, 2, [2, 1, 2, 3]),
    (128, 1, 2, [2, 1, 2, 3]), (128, 2, 1, [0, 1, 1, 0])])
def test_depthwise_convolutions_between_blocked_ones_are_blocked(channels, stride, dilation,
                                                                 pads):
    """An inverted residual (1x1 expand, clip, 3x3 depthwise, clip, 1x1 project, add) on
    13 x 13: the depthwise convolution reads and writes blocked tensors (its weights
    packed per block of channels), with strides, dilations and uneven padding; with
    four blocks or more and stride 1 it reads a zero-padded copy of its input (no
    guards in its sums; with fewer than four blocks, the rows of a block in parallel),
    with stride 2 guards every tap."""
    m = ModelBuilder(13)
    x = m.input("x", (1, 16, 13, 13))
    zero, six = m.const(np.array(0, np.float32)), m.const(np.array(6, np.float32))
    wide = m.add("Clip", [m.add("Conv", [x, m.weight(channels, 16, 1, 1)]), zero, six])
    depthwise = m.add("Conv", [wide, m.weight(channels, 1, 3, 3), m.const(
        np.linspace(-1, 1, channels).astype(np.float32))], group=channels,
        strides=[stride] * 2, dilations=[dilation] * 2, pads=pads)
    narrow = m.add("Conv", [m.add("Clip", [depthwise, zero, six]),
                            m.weight(16, channels, 1, 1)])
    out = m.add("Relu", [m.add("Add", [narrow, x]) if stride == 1 else narrow])
    model = m.model([out])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    [step] = [s for s in compiled.steps if s.template == "depthwise_blocked"]
    lowered = lower_group(compiled.graph, step.group.nodes, step.group.output)
    padded = any(t.name.endswith("_pad") for t in producers(lowered.output))
    assert padded == (stride == 1)
    feeds = {"x": np.random.default_rng(5).standard_normal((1, 16, 13, 13)).astype(np.float32)}
    np.testing.assert_allclose(compiled.run(feeds)[out], ort_run(model, feeds)[out],
                               rtol=1e-4, atol=1e-4)


def test_blocked_convolutions_with_epilogues_equal_onnxruntime_on_odd_rows():
    """Blocked convolutions whose epilogue (bias, ReLU, clip, residual add) takes each
    register tile of sums as it is computed: rows of 21 columns, 11 and 6 (after
    strides) and 4 (after a pool), 1x1 and 3x3 kernels, blocked input and output
    (narrow enough to be blocked with 8 lanes (AVX2) as with 16; the 3x3 layers, flat
    sums, in blocks of two vectors)."""
    m = ModelBuilder(17)
    x = m.input("x", (1, 16, 21, 21))

    def conv(t, f, c, k, stride=1):
        return m.add("Conv", [t, m.weight(f, c, k, k), m.const(
            np.linspace(-0.5, 0.5, f).astype(np.float32))], pads=[k // 2] * 4,
            strides=[stride] * 2)
    zero, six = m.const(np.array(0, np.float32)), m.const(np.array(6, np.float32))
    wide = m.add("Relu", [conv(x, 64, 16, 3)])
    block = m.add("Relu", [m.add("Add", [conv(wide, 64, 64, 3), wide])])          # 21 x 21
    odd = m.add("Clip", [conv(block, 64, 64, 3, stride=2), zero, six])  # 11 x 11
    small = m.add("Relu", [conv(odd, 32, 64, 3, stride=2)])                # 6 x 6
    narrow = m.add("Clip", [conv(m.add("MaxPool", [small], kernel_shape=[3, 3],
                                       strides=[1, 1]), 64, 32, 1), zero, six])  # 4 x 4
    out = m.add("GlobalAveragePool", [narrow])
    model = m.model([out])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    blocked = [s for s in compiled.steps if s.template == "conv2d_blocked"]
    assert len(blocked) == 5
    assert all(len(compiled.graph.tensors[s.group.output].shape) == 5 for s in blocked)
    feeds = {"x": np.random.default_rng(8).standard_normal((1, 16, 21, 21)).astype(np.float32)}
    np.testing.assert_allclose(compiled.run(feeds)[out], ort_run(model, feeds)[out],
                               rtol=1e-4, atol=1e-4)
