"""Blocked conv weights packed at compile time (``polyopt/graph/layouts.py``): the
convolutions that vectorize across output channels read ``[F/b, C, R, S, b]`` weights
packed once, and compute what the plain layout and onnxruntime compute."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.layouts import pack_blocked  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def test_pack_blocked_pads_the_last_block_with_zeros():
    w = np.arange(5 * 2 * 1 * 1, dtype=np.float32).reshape(5, 2, 1, 1)
    packed = pack_blocked(w, 4)
    assert packed.shape == (2, 2, 1, 1, 4)
    for f in range(8):
        expected = w[f, :, 0, 0] if f < 5 else np.zeros(2)
        np.testing.assert_array_equal(packed[f // 4, :, 0, 0, f % 4], expected)


def test_blocked_convolutions_equal_plain_ones_and_onnxruntime():
    m = ModelBuilder(3)
    x = m.input("x", (1, 12, 14, 14))
    bias = m.const(np.arange(40, dtype=np.float32) / 10)
    a = m.add("Relu", [m.add("Conv", [x, m.weight(40, 12, 3, 3), bias], pads=[1] * 4,
                             strides=[2, 2])])                    # strided 3x3, 40 channels
    b = m.add("Conv", [a, m.weight(24, 40, 1, 1)])                # 1x1 on 7 columns
    c = m.add("Add", [m.add("Conv", [b, m.weight(24, 24, 3, 3)], pads=[1] * 4), b])
    wide = m.add("Conv", [x, m.weight(16, 12, 3, 3)], pads=[1] * 4)  # 14 columns, stride 1
    model = m.model([c, wide])
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 12, 14, 14)).astype(np.float32)}
    g = po.graph.from_onnx(model)
    blocked = po.graph.compile(g, num_threads=2)
    templates = [s.template for s in blocked.steps if s.kernel is not None]
    assert templates.count("conv2d_channel_prepacked") + templates.count(
        "conv2d_channel_prepacked+epilogue") == 4, templates
    plain = po.graph.compile(po.graph.optimize(g, layouts=False), num_threads=2, passes=False)
    assert not any("prepacked" in s.template for s in plain.steps)
    got, reference, expected = blocked.run(feeds), plain.run(feeds), ort_run(model, feeds)
    for name in (c, wide):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-4)
