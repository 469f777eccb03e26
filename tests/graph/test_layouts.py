"""Conv weights laid out at compile time (``polyopt/graph/layouts.py``): the
convolutions that vectorize across output channels read ``[C, R, S, F]`` weights
transposed once (no copy per call), and compute what the plain layout and onnxruntime
compute."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def test_packed_convolutions_equal_plain_ones_and_onnxruntime():
    m = ModelBuilder(3)
    x = m.input("x", (1, 12, 14, 14))
    bias = m.const(np.arange(48, dtype=np.float32) / 10)
    a = m.add("Relu", [m.add("Conv", [x, m.weight(48, 12, 3, 3), bias], pads=[1] * 4,
                             strides=[2, 2])])                    # strided 3x3, 3 blocks of 16
    b = m.add("Conv", [a, m.weight(32, 48, 1, 1)])                # 1x1 on 7 columns
    c = m.add("Add", [m.add("Conv", [b, m.weight(32, 32, 3, 3)], pads=[1] * 4), b])
    odd = m.add("Conv", [c, m.weight(24, 32, 3, 3)], pads=[1] * 4)  # 24: no block divides
    wide = m.add("Conv", [x, m.weight(16, 12, 3, 3)], pads=[1] * 4)  # 14 columns, stride 1
    model = m.model([odd, wide])
    feeds = {"x": np.random.default_rng(0).standard_normal((1, 12, 14, 14)).astype(np.float32)}
    g = po.graph.from_onnx(model)
    packed = po.graph.compile(g, num_threads=2)
    assert [n.op_type for n in packed.graph.nodes].count("ConvPacked") == 4
    templates = [s.template for s in packed.steps if s.kernel is not None]
    assert templates.count("conv2d_blocked") == 4, templates
    plain = po.graph.compile(po.graph.optimize(g, layouts=False), num_threads=2, passes=False)
    assert not any("blocked" in s.template for s in plain.steps)
    got, reference, expected = packed.run(feeds), plain.run(feeds), ort_run(model, feeds)
    for name in (odd, wide):
        np.testing.assert_allclose(got[name], reference[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-4)
