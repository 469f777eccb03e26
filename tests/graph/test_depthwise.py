"""Depthwise convolutions (MobileNetV2's layers, scaled down): written out tap by tap
with their batch norm and ReLU6, the zero padding per channel in one vectorized loop
per row.  They compute what onnxruntime computes, and the padding copy is contiguous
vector code (it was gathers and scatters, 3x the time of the convolution)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.lowering import lower_group, schedule_group  # noqa: E402
from polyopt.graph.passes import fuse, optimize  # noqa: E402
from testlib.onnx_models import ModelBuilder, _conv_bn, ort_run  # noqa: E402
from testlib.machine import vector_of  # noqa: E402


def _depthwise_model(channels, size, stride):
    m = ModelBuilder(channels + size)
    x = m.input("x", (1, channels, size, size))
    return m.model([_conv_bn(m, x, channels, channels, 3, stride, 1, group=channels,
                             relu6=True)])


@pytest.mark.parametrize("channels, size, stride", [
    (16, 40, 1),   # rows of 40: two vectors and a masked one
    (12, 33, 2),   # stride 2, odd size: even and odd columns apart
    (24, 14, 1),   # 14 columns: one masked vector per row
    (20, 7, 1),    # 7 columns
])
def test_depthwise_layers_equal_onnxruntime(channels, size, stride):
    model = _depthwise_model(channels, size, stride)
    feeds = {"x": np.random.default_rng(size).standard_normal(
        (1, channels, size, size)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2, cache=False)
    assert [s.template for s in compiled.steps] == ["grouped_conv_unrolled"]
    (got,), (expected,) = compiled.run(feeds).values(), ort_run(model, feeds).values()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size, stride", [(40, 1), (33, 2), (14, 1)])
def test_depthwise_padding_is_contiguous_vector_code(size, stride):
    g = optimize(po.graph.from_onnx(_depthwise_model(8, size, stride)))
    (group,) = [grp for grp in fuse(g) if grp.kind != "view"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes)
    f = po.build(schedule, [*lowered.placeholders, lowered.output], num_threads=1)
    optimized = str(f.optimized_ir)
    assert "masked.gather" not in optimized and "masked.scatter" not in optimized
    assert vector_of("float32") in optimized  # the host's vectors (lanes: the machine's)
