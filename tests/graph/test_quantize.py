"""QuantizeLinear and DequantizeLinear against onnxruntime: per tensor and per channel,
uint8 and int8, ties rounded to even, saturation, and fused after a convolution."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def _run_both(model, feeds):
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run(feeds)
    expected = ort_run(model, feeds)
    return got, expected


@pytest.mark.parametrize("dtype, point", [("uint8", 128), ("int8", -3), ("uint8", None)])
def test_quantize_per_tensor_rounds_halves_to_even_and_saturates(dtype, point):
    m = ModelBuilder(0)
    x = m.input("x", (3, 17))
    args = [x, m.const(np.float32(0.5))]
    if point is not None:
        args.append(m.const(np.array(point, dtype)))
    q = m.add("QuantizeLinear", args)
    model = m.model([q], dtypes={q: dtype if point is not None else "uint8"})
    values = np.linspace(-200, 200, 51, dtype=np.float32)  # far beyond the range too
    ties = np.array([0.25, 0.75, -0.25, -0.75, 1.25, -1.25], np.float32)  # v = k + 0.5
    feeds = {"x": np.concatenate([values, ties])[:51].reshape(3, 17).astype(np.float32)}
    feeds["x"].flat[:6] = ties
    got, expected = _run_both(model, feeds)
    assert got[q].dtype == np.dtype(dtype if point is not None else "uint8")
    np.testing.assert_array_equal(got[q], expected[q])


def test_per_channel_dequantize_and_quantize_round_trip():
    rng = np.random.default_rng(3)
    m = ModelBuilder(1)
    x = m.input("x", (2, 4, 5, 3))
    scale = m.const(np.array([0.1, 0.02, 0.5, 0.07], np.float32))
    point = m.const(np.array([0, 5, 250, 128], np.uint8))
    q = m.add("QuantizeLinear", [x, scale, point], axis=1)
    d = m.add("DequantizeLinear", [q, scale, point], axis=1)
    y = m.add("Relu", [d])
    model = m.model([q, y], dtypes={q: "uint8"})
    feeds = {"x": (rng.standard_normal((2, 4, 5, 3)) * 10).astype(np.float32)}
    got, expected = _run_both(model, feeds)
    np.testing.assert_array_equal(got[q], expected[q])
    np.testing.assert_allclose(got[y], expected[y], rtol=1e-6, atol=1e-6)


def test_quantize_fuses_into_a_convolution_epilogue():
    rng = np.random.default_rng(4)
    m = ModelBuilder(2)
    x = m.input("x", (1, 3, 8, 8))
    c = m.add("Conv", [x, m.weight(4, 3, 3, 3)], pads=[1, 1, 1, 1])
    q = m.add("QuantizeLinear", [m.add("Relu", [c]), m.const(np.float32(0.05)),
                                 m.const(np.uint8(0))])
    model = m.model([q], dtypes={q: "uint8"})
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    assert [g.op_types for g in compiled.groups if g.kind == "complex"] == [
        ["Conv", "Relu", "QuantizeLinear"]]
    feeds = {"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}
    got = compiled.run(feeds)[q]
    expected = ort_run(model, feeds)[q]
    # the convolution sums in another order than onnxruntime: a value next to a
    # rounding boundary may land one step away
    assert np.abs(got.astype(int) - expected.astype(int)).max() <= 1
    assert (got == expected).mean() > 0.97


def test_unsupported_quantization_is_refused():
    m = ModelBuilder(0)
    x = m.input("x", (2, 3))
    q = m.add("QuantizeLinear", [x, m.const(np.array([0.1, 0.2], np.float32))], axis=1)
    with pytest.raises(po.PolyoptError, match="scale has shape"):
        po.graph.from_onnx(m.model([q]))


def _quantized_input(m, name, shape, dtype):
    """A float input quantized in the model (onnx.helper inputs are float here)."""
    x = m.input(name, shape)
    return m.add("QuantizeLinear", [x, m.const(np.float32(0.05)),
                                    m.const(np.array(3 if dtype == "uint8" else -2, dtype))])


@pytest.mark.parametrize("b_dtype, per_column", [("int8", False), ("uint8", True)])
def test_matmul_integer_against_onnxruntime(b_dtype, per_column):
    rng = np.random.default_rng(5)
    m = ModelBuilder(3)
    a = _quantized_input(m, "a", (5, 7), "uint8")
    b = m.const(rng.integers(0, 120, (7, 9)).astype(b_dtype))
    b_point = np.arange(9).astype(b_dtype) if per_column else np.array(4, b_dtype)
    y = m.add("MatMulInteger", [a, b, m.const(np.uint8(3)), m.const(b_point)])
    model = m.model([y], dtypes={y: "int32"})
    feeds = {"a": rng.standard_normal((5, 7)).astype(np.float32)}
    got, expected = _run_both(model, feeds)
    assert got[y].dtype == np.int32
    np.testing.assert_array_equal(got[y], expected[y])


@pytest.mark.parametrize("per_channel, stride, pads", [(False, 1, 1), (True, 2, 0)])
def test_qlinear_conv_against_onnxruntime(per_channel, stride, pads):
    rng = np.random.default_rng(6)
    m = ModelBuilder(4)
    x = _quantized_input(m, "x", (1, 3, 9, 9), "uint8")
    w = m.const(rng.integers(-60, 60, (4, 3, 3, 3)).astype(np.int8))
    w_scale = np.array([0.02, 0.03, 0.01, 0.05] if per_channel else 0.02, np.float32)
    w_point = np.zeros(4 if per_channel else (), np.int8)
    bias = m.const(rng.integers(-500, 500, 4).astype(np.int32))
    y = m.add("QLinearConv", [x, m.const(np.float32(0.05)), m.const(np.uint8(3)), w,
                              m.const(w_scale), m.const(w_point), m.const(np.float32(0.4)),
                              m.const(np.uint8(100)), bias],
              strides=[stride, stride], pads=[pads] * 4)
    model = m.model([y], dtypes={y: "uint8"})
    feeds = {"x": rng.standard_normal((1, 3, 9, 9)).astype(np.float32)}
    got, expected = _run_both(model, feeds)
    assert got[y].dtype == np.uint8 and got[y].shape == expected[y].shape
    # integer sums are exact; the float requantization may round a tie differently
    assert np.abs(got[y].astype(int) - expected[y].astype(int)).max() <= 1
    assert (got[y] == expected[y]).mean() > 0.95
