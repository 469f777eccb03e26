"""int8 on the VNNI kernels: ONNX's QLinearConv and MatMulInteger lowered to the
tensorize templates (equal to onnxruntime), and ``po.graph.quantize`` (static
calibration) agreeing with the float model run by onnxruntime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def _templates(m):
    return {s.template for s in m.steps if s.kernel is not None}


# the machine model decides: the VNNI kernels where the host has AVX-512 VNNI, else the
# int8 computation scheduled without tensorize (the same exact integer results)
VNNI = po.TargetInfo.host().has_vnni


def _uses_vnni(compiled, template: str) -> bool:
    """Whether the tensorized template ran (where the host has VNNI); on a host with AMX
    the machine model may choose its tiles for a matmul (``int8_matmul_amx``)."""
    used = {t.replace("_amx", "_vnni") for t in _templates(compiled)}
    return (template in used) == VNNI


def _quantized_input(m, name, shape, point):
    x = m.input(name, shape)
    return m.add("QuantizeLinear", [x, m.const(np.float32(0.05)), m.const(np.uint8(point))])


@pytest.mark.parametrize("channels, stride, pads, kernel", [(3, 2, 1, 3), (8, 1, 0, 1),
                                                             (6, 2, 0, 1)])
def test_qlinear_conv_runs_on_the_vnni_kernel_equal_to_onnxruntime(channels, stride, pads,
                                                                   kernel):
    rng = np.random.default_rng(6)  # 3 and 6 channels: padded to 4 and 8 with zeros
    m = ModelBuilder(4)
    x = _quantized_input(m, "x", (1, channels, 9, 9), 3)
    w = m.const(rng.integers(-60, 60, (64, channels, kernel, kernel)).astype(np.int8))
    w_scale = (rng.random(64) * 0.05 + 0.01).astype(np.float32)
    bias = m.const(rng.integers(-500, 500, 64).astype(np.int32))
    y = m.add("QLinearConv", [x, m.const(np.float32(0.05)), m.const(np.uint8(3)), w,
                              m.const(w_scale), m.const(np.zeros(64, np.int8)),
                              m.const(np.float32(0.4)), m.const(np.uint8(100)), bias],
              strides=[stride, stride], pads=[pads] * 4)
    model = m.model([y], dtypes={y: "uint8"})
    feeds = {"x": rng.standard_normal((1, channels, 9, 9)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert _uses_vnni(compiled, "int8_conv_vnni")
    got, expected = compiled.run(feeds), ort_run(model, feeds)
    assert got[y].dtype == np.uint8 and got[y].shape == expected[y].shape
    np.testing.assert_array_equal(got[y], expected[y])  # onnxruntime's float order


def test_matmul_integer_runs_on_the_vnni_kernel_exactly():
    rng = np.random.default_rng(5)
    m = ModelBuilder(3)
    a = _quantized_input(m, "a", (5, 36), 7)
    y = m.add("MatMulInteger", [a, m.const(rng.integers(-128, 128, (36, 48)).astype(np.int8)),
                                m.const(np.uint8(7))])
    model = m.model([y], dtypes={y: "int32"})
    feeds = {"a": (rng.standard_normal((5, 36)) * 3).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert _uses_vnni(compiled, "int8_matmul_vnni")
    np.testing.assert_array_equal(compiled.run(feeds)[y], ort_run(model, feeds)[y])


def test_nonzero_weight_zero_point_keeps_the_exact_reduction():
    rng = np.random.default_rng(5)
    m = ModelBuilder(3)
    a = _quantized_input(m, "a", (4, 32), 7)
    y = m.add("MatMulInteger", [a, m.const(rng.integers(-100, 100, (32, 16)).astype(np.int8)),
                                m.const(np.uint8(7)), m.const(np.int8(3))])
    model = m.model([y], dtypes={y: "int32"})
    feeds = {"a": rng.standard_normal((4, 32)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert "int8_matmul_vnni" not in _templates(compiled)
    np.testing.assert_array_equal(compiled.run(feeds)[y], ort_run(model, feeds)[y])


def _small_cnn(classes=10):
    """conv 8->64, a residual block of two 64-channel 3x3 convs, a strided 1x1 conv,
    global pooling and a linear classifier (64 -> 32 in int8, then -> classes)."""
    m = ModelBuilder(7)
    x = m.input("x", (1, 8, 12, 12))
    y = m.add("Relu", [m.add("Conv", [x, m.weight(64, 8, 3, 3), m.const(
        (m.rng.standard_normal(64) * 0.1).astype(np.float32))], pads=[1] * 4)])
    z = m.add("Relu", [m.add("Conv", [y, m.weight(64, 64, 3, 3)], pads=[1] * 4)])
    z = m.add("Conv", [z, m.weight(64, 64, 3, 3)], pads=[1] * 4)
    y = m.add("Relu", [m.add("Add", [z, y])])
    y = m.add("Relu", [m.add("Conv", [y, m.weight(128, 64, 1, 1)], strides=[2, 2])])
    y = m.add("Flatten", [m.add("GlobalAveragePool", [y])], axis=1)
    y = m.add("Relu", [m.add("MatMul", [y, m.const(
        (m.rng.standard_normal((128, 32)) * 0.2).astype(np.float32))])])
    y = m.add("Gemm", [y, m.weight(classes, 32, scale=0.3)], transB=1)
    return m.model([y])


def test_quantized_model_agrees_with_the_float_model_and_uses_int8_kernels():
    model = _small_cnn()
    g = po.graph.from_onnx(model)
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal((1, 8, 12, 12)).astype(np.float32)}
               for _ in range(24)]
    q = po.graph.quantize(g, samples[:8], num_threads=1)
    op_types = [n.op_type for n in q.nodes]
    assert op_types.count("Int8Conv") == 4 and op_types.count("Int8MatMul") == 1
    assert "Gemm" in op_types  # 10 classes: not a multiple of 16 columns, stays float
    compiled = po.graph.compile(q, num_threads=1)
    assert _uses_vnni(compiled, "int8_conv_vnni") and _uses_vnni(compiled, "int8_matmul_vnni")
    out = g.outputs[0]
    agree, errors = 0, []
    for feeds in samples[8:]:  # not seen by the calibration
        got, expected = compiled.run(feeds)[out], ort_run(model, feeds)[out]
        agree += int(got.argmax() == expected.argmax())
        errors.append(np.abs(got - expected).max() / np.abs(expected).max())
    assert agree >= 15, agree  # of 16
    assert max(errors) < 0.08, errors


def test_quantize_refuses_no_calibration_input_and_keeps_skipped_nodes():
    g = po.graph.from_onnx(_small_cnn())
    for bad in ([], None, [3], "x"):
        with pytest.raises(po.PolyoptError, match="calibration inputs"):
            po.graph.quantize(g, bad)
    with pytest.raises(po.PolyoptError, match="Graph"):
        po.graph.quantize("model.onnx", [{"x": np.ones((1, 8, 12, 12), np.float32)}])
    with pytest.raises(po.PolyoptError, match="skip"):
        po.graph.quantize(g, [{"x": np.ones((1, 8, 12, 12), np.float32)}], skip="conv")
    first = next(n.name for n in po.graph.optimize(g, layouts=False).nodes
                 if n.op_type == "Conv")
    q = po.graph.quantize(g, {"x": np.ones((1, 8, 12, 12), np.float32)}, num_threads=1,
                          skip=(first,))
    assert first in {n.name for n in q.nodes}
    with pytest.raises(po.PolyoptError, match="missing"):
        po.graph.quantize(g, [{"y": np.ones(3, np.float32)}], num_threads=1)
