"""Convolution epilogues (bias, ReLU6, residual add) computed without a second pass
over the output: a 1x1 layer's from its register tiles (``conv2d_pointwise_template(
epilogue=...)``), a blocked-weight layer's along rows after a transposed copy of its
sums.  Each equals onnxruntime and NumPy."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.lowering import lower_group, schedule_group  # noqa: E402
from polyopt.graph.passes import fuse, optimize  # noqa: E402
from polyopt.schedules.conv_templates import conv2d_pointwise_template  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ModelBuilder, _conv_bn, ort_run  # noqa: E402


def _run_against_onnxruntime(model, shape, threads=2):
    feeds = {"x": np.random.default_rng(7).standard_normal(shape).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=threads, cache=False)
    got, expected = compiled.run(feeds), ort_run(model, feeds)
    assert_numbers(got, expected, rtol=1e-4, atol=1e-4)
    return [s.template for s in compiled.steps if s.kernel is not None]


@pytest.mark.parametrize("c_in, c_out, size, residual", [
    (16, 48, 28, False),   # 784 points: 16 tiles of 48 and a partial one
    (24, 24, 20, True),    # residual add, 400 points
    (8, 20, 16, False),    # 20 channels: tiles of 4
])
def test_pointwise_epilogue_from_register_tiles_equals_onnxruntime(c_in, c_out, size,
                                                                   residual):
    m = ModelBuilder(c_out)
    x = m.input("x", (1, c_in, size, size))
    y = _conv_bn(m, x, c_in, c_out, 1, 1, 0, relu=False, relu6=not residual)
    if residual:
        y = m.add("Relu", [m.add("Add", [y, x])])
    templates = _run_against_onnxruntime(m.model([y]), (1, c_in, size, size))
    assert templates == ["conv2d+epilogue_in_tiles"]


def test_pointwise_template_epilogue_equals_numpy():
    X = po.placeholder((1, 8, 9, 10), name="X")
    W = po.placeholder((16, 8, 1, 1), name="W")
    conv = po.ops.conv2d_nchw(X, W, padding=1, name="conv")  # (a zero border)
    out = po.compute(conv.shape, lambda n, f, y, x: po.maximum(conv[n, f, y, x], 0.5)
                     + 1.0, name="out")
    s = po.create_schedule(out)
    loops = conv2d_pointwise_template(s, conv, epilogue=out)
    assert loops["epilogue"] == "fused"
    kernel = po.build(s, [X, W, out])
    rng = np.random.default_rng(3)
    x, w = (rng.standard_normal(tuple(d.value for d in t.shape)).astype(np.float32)
            for t in (X, W))
    got = np.empty((1, 16, 11, 12), np.float32)
    kernel(x, w, got)
    sums = np.einsum("fc,ncyx->nfyx", w[:, :, 0, 0], np.pad(x, [(0, 0)] * 2 + [(1, 1)] * 2))
    expected = np.maximum(sums, 0.5) + 1
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("c_in, c_out, size, stride, epilogue", [
    (32, 64, 7, 1, "clip"),        # 1x1 on 7 columns (narrow for 8 and 16 lanes), 2 x 32
    (16, 32, 7, 1, "none"),        # no bias, no activation: the copy is the output
    (3, 32, 30, 2, "clip"),        # a first layer: 3x3 stride 2, 15 columns, one block
])
def test_blocked_conv_reads_its_sums_back_through_registers(c_in, c_out, size, stride,
                                                             epilogue):
    m = ModelBuilder(size)
    x = m.input("x", (1, c_in, size, size))
    k = 1 if c_in > 3 else 3
    if epilogue == "clip":
        y = _conv_bn(m, x, c_in, c_out, k, stride, k // 2, relu6=True)
    else:
        y = m.add("Conv", [x, m.weight(c_out, c_in, k, k)], pads=[k // 2] * 4,
                  strides=[stride] * 2)
    model = m.model([y])
    templates = _run_against_onnxruntime(model, (1, c_in, size, size))
    assert templates == ["conv2d_blocked"]
    g = optimize(po.graph.from_onnx(model))
    (group,) = [grp for grp in fuse(g) if grp.kind != "view"]
    lowered = lower_group(g, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes)
    f = po.build(schedule, [*lowered.placeholders, lowered.output], num_threads=1)
    assert "shufflevector" in str(f.llvm_ir)       # the transposed copy
    assert "gather" not in str(f.optimized_ir)     # no division per lane, no gathers
