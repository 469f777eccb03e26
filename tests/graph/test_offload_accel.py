"""A model's int8 convolutions on the simulated accelerator, the rest on the CPU
(``po.graph.compile(g, offload={"conv_int8": "accel"})``), bit-exact against onnxruntime."""

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.offload import AccelConv, device_reports  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def _qconv(m, x, rng, cin, cout, kernel, *, stride=1, pad=0, x_dtype="uint8",
           x_point=3, per_channel=False, w_point=0, y_scale=0.4):
    w_dtype = "int8" if w_point == 0 else "uint8"
    low, high = (-100, 100) if w_dtype == "int8" else (w_point - 100, w_point + 100)
    w = m.const(rng.integers(low, high, (cout, cin, kernel, kernel)).astype(w_dtype))
    scale = np.asarray(rng.uniform(0.005, 0.05, cout) if per_channel else 0.02, np.float32)
    bias = m.const(rng.integers(-3000, 3000, cout).astype(np.int32))
    return m.add("QLinearConv", [
        x, m.const(np.float32(0.05)), m.const(np.array(x_point, x_dtype)), w,
        m.const(np.array(scale, np.float32)), m.const(np.array(w_point, w_dtype)),
        m.const(np.float32(y_scale)), m.const(np.array(7 if x_dtype == "uint8" else -5,
                                                        x_dtype)), bias],
        strides=[stride, stride], pads=[pad] * 4)


def _model(x_dtype="uint8"):
    """x -> quantize -> conv 3x3 (3 -> 20 channels, padded) -> conv 1x1 stride 2 (20 ->
    32, per-channel scales) -> dequantize -> relu; the convs are non-dividing sizes."""
    rng = np.random.default_rng(7)
    m = ModelBuilder(7)
    x = m.input("x", (2, 3, 10, 10))
    point = 3 if x_dtype == "uint8" else -2
    q = m.add("QuantizeLinear", [x, m.const(np.float32(0.05)),
                                 m.const(np.array(point, x_dtype))])
    c1 = _qconv(m, q, rng, 3, 20, 3, pad=1, x_dtype=x_dtype, x_point=point)
    c2 = _qconv(m, c1, rng, 20, 32, 1, stride=2, x_dtype=x_dtype,
                x_point=7 if x_dtype == "uint8" else -5, per_channel=True, y_scale=0.3)
    d = m.add("DequantizeLinear", [c2, m.const(np.float32(0.3)),
                                   m.const(np.array(7 if x_dtype == "uint8" else -5,
                                                    x_dtype))])
    y = m.add("Relu", [d])
    return m.model([y, c1], dtypes={c1: x_dtype}), y, c1


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_int8_convs_on_the_accelerator_rest_on_the_cpu_equal_onnxruntime(x_dtype):
    model, y, c1 = _model(x_dtype)
    feeds = {"x": (np.random.default_rng(1).standard_normal((2, 3, 10, 10)) * 3).astype(
        np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                offload={"conv_int8": "accel"})
    kinds = [(s.template, s.group.op_types) for s in compiled.steps]
    assert [k for k in kinds if k[0] == "accel"] == [("accel", ["QLinearConv"])] * 2
    assert any("QuantizeLinear" in ops for _, ops in kinds if _ != "accel")
    got = compiled.run(feeds)
    expected = ort_run(model, feeds)
    np.testing.assert_array_equal(got[c1], expected[c1])
    np.testing.assert_array_equal(got[y], expected[y])
    reports = device_reports(compiled)
    assert len(reports) == 2
    # the GEMM work happened on the device: one op per (row, 16 filters, 16 inputs) block
    first, second = reports.values()
    assert first.gemm_ops == 2 * 10 * 10 * 2 * 2      # rows, ceil(20/16), ceil(27/16)
    assert second.gemm_ops == 2 * 5 * 5 * 2 * 2       # rows, 32/16, ceil(20/16)
    assert first.loaded["wgt"] > 0 and first.cycles > 0


@pytest.mark.parametrize("x_dtype", ["uint8", "int8"])
def test_the_same_model_on_the_cpu_alone_equals_onnxruntime_too(x_dtype):
    """The CPU lowering of QLinearConv scales in onnxruntime's order, (x_scale *
    w_scale) / y_scale in float32: ties round the same way (this model has some)."""
    model, y, c1 = _model(x_dtype)
    feeds = {"x": (np.random.default_rng(1).standard_normal((2, 3, 10, 10)) * 3).astype(
        np.float32)}
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1).run(feeds)
    expected = ort_run(model, feeds)
    np.testing.assert_array_equal(got[c1], expected[c1])
    np.testing.assert_array_equal(got[y], expected[y])


def test_tpu_like_device_and_an_unsigned_weight_zero_point():
    rng = np.random.default_rng(2)
    m = ModelBuilder(2)
    x = m.input("x", (1, 16, 6, 6))
    q = m.add("QuantizeLinear", [x, m.const(np.float32(0.05)), m.const(np.uint8(128))])
    c = _qconv(m, q, rng, 16, 16, 3, pad=1, x_point=128, w_point=128)
    model = m.model([c], dtypes={c: "uint8"})
    feeds = {"x": rng.standard_normal((1, 16, 6, 6)).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                offload={"QLinearConv": "accel -config=tpu-like"})
    np.testing.assert_array_equal(compiled.run(feeds)[c], ort_run(model, feeds)[c])
    report, = device_reports(compiled).values()
    assert report.gemm_ops == 5 * 1 * 3  # 36 rows in 5 batches of 8, 1 filter block, 144 / 64


def test_dilation_strides_and_uneven_padding_on_the_device():
    rng = np.random.default_rng(4)
    m = ModelBuilder(4)
    x = m.input("x", (1, 5, 9, 7))
    q = m.add("QuantizeLinear", [x, m.const(np.float32(0.05)), m.const(np.int8(-1))])
    w = m.const(rng.integers(-90, 90, (17, 5, 3, 3)).astype(np.int8))
    c = m.add("QLinearConv", [q, m.const(np.float32(0.05)), m.const(np.int8(-1)), w,
                              m.const(np.float32(0.01)), m.const(np.int8(0)),
                              m.const(np.float32(0.2)), m.const(np.int8(4))],
              dilations=[2, 1], strides=[1, 2], pads=[2, 0, 2, 1])
    model = m.model([c], dtypes={c: "int8"})
    feeds = {"x": (rng.standard_normal((1, 5, 9, 7)) * 4).astype(np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                offload={"conv_int8": "vta"})
    got = compiled.run(feeds)[c]
    np.testing.assert_array_equal(got, ort_run(model, feeds)[c])
    assert got.shape == (1, 17, 9, 3)
    # 27 rows, 17 filters in 2 blocks, 5 x 3 x 3 = 45 weights per filter in 3 blocks
    assert device_reports(compiled)[compiled.graph.producer(c).name].gemm_ops == 27 * 2 * 3


def _power_of_two_model(out_dtype):
    """Two convs whose scales (x_scale * w_scale / y_scale) are powers of two: 2**-6
    (3x3, stride 2, 5 -> 20 channels, per-channel w_scale all equal) and 2**-1 (1x1,
    every odd sum a tie)."""
    rng = np.random.default_rng(11)
    m = ModelBuilder(11)
    x = m.input("x", (2, 5, 9, 9))
    point = np.array(3 if out_dtype == "uint8" else -2, out_dtype)
    q = m.add("QuantizeLinear", [x, m.const(np.float32(2 ** -4)), m.const(point)])
    w1 = m.const(rng.integers(-100, 100, (20, 5, 3, 3)).astype(np.int8))
    c1 = m.add("QLinearConv", [
        q, m.const(np.float32(2 ** -4)), m.const(point), w1,
        m.const(np.full(20, 2 ** -5, np.float32)), m.const(np.zeros(20, np.int8)),
        m.const(np.float32(2 ** -3)), m.const(point),
        m.const(rng.integers(-3000, 3000, 20).astype(np.int32))],
        strides=[2, 2], pads=[1, 1, 1, 1])
    w2 = m.const(rng.integers(-3, 4, (17, 20, 1, 1)).astype(np.int8))
    c2 = m.add("QLinearConv", [
        c1, m.const(np.float32(2 ** -3)), m.const(point), w2,
        m.const(np.float32(2 ** -4)), m.const(np.int8(0)),
        m.const(np.float32(2 ** -6)), m.const(np.array(5 if out_dtype == "uint8" else 1,
                                                        out_dtype))])
    return m.model([c2, c1], dtypes={c1: out_dtype, c2: out_dtype}), c1, c2


@pytest.mark.parametrize("target, out_dtype", [("accel", "uint8"), ("accel", "int8"),
                                               ("accel -config=tpu-like", "uint8")])
def test_power_of_two_scales_requantize_on_the_device_like_onnxruntime(target, out_dtype):
    model, c1, c2 = _power_of_two_model(out_dtype)
    feeds = {"x": (np.random.default_rng(5).standard_normal((2, 5, 9, 9)) * 4).astype(
        np.float32)}
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                offload={"conv_int8": target})
    got, expected = compiled.run(feeds), ort_run(model, feeds)
    np.testing.assert_array_equal(got[c1], expected[c1])
    np.testing.assert_array_equal(got[c2], expected[c2])
    convs = [s.kernel for s in compiled.steps if isinstance(s.kernel, AccelConv)]
    assert [c.requantized for c in convs] == [True, True]
    assert [c.module.report.stored for c in convs] == [
        c.shapes[3][0] * c.shapes[3][1] * c.config.block_out * c.config.batch
        for c in convs]  # one int8 byte per output: no planes
    assert all(c.report.alu_ops > 0 for c in convs)


def test_other_scales_requantize_on_the_host_and_say_why():
    model, y, c1 = _model()
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                offload={"conv_int8": "accel"})
    convs = [s.kernel for s in compiled.steps if isinstance(s.kernel, AccelConv)]
    assert [c.requantized for c in convs] == [False, False]
    assert all("not one power of two" in c.why_host for c in convs)
    # the int32 sums leave in as many byte planes as their bound needs
    assert [c.shapes[3][0] for c in convs] == [3, 3]


def test_a_convolution_the_device_cannot_take_stays_on_the_cpu_with_a_warning():
    rng = np.random.default_rng(3)
    m = ModelBuilder(3)
    x = m.input("x", (1, 4, 5, 5))
    q = m.add("QuantizeLinear", [x, m.const(np.float32(0.05)), m.const(np.uint8(3))])
    w = m.const(rng.integers(0, 255, (4, 4, 3, 3)).astype(np.uint8))  # w - 0 > 127
    c = m.add("QLinearConv", [q, m.const(np.float32(0.05)), m.const(np.uint8(3)), w,
                              m.const(np.float32(0.01)), m.const(np.uint8(0)),
                              m.const(np.float32(0.5)), m.const(np.uint8(0))])
    model = m.model([c], dtypes={c: "uint8"})
    with pytest.warns(po.PolyoptWarning, match="runs on the CPU: the weights less"):
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                    offload={"conv_int8": "accel"})
    assert not any(isinstance(s.kernel, AccelConv) for s in compiled.steps)


def test_polyopt_run_offloads_and_prints_the_device_counters(tmp_path, capsys):
    from polyopt.cli import main

    model, y, c1 = _model()
    onnx.save(model, tmp_path / "m.onnx")
    x = (np.random.default_rng(1).standard_normal((2, 3, 10, 10)) * 3).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status = main(["run", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"),
                   "--threads", "1", "--offload", "conv_int8=accel",
                   "--output", str(tmp_path / "out.npz")])
    assert status == 0
    out = capsys.readouterr().out
    assert out.count("on the accelerator: ") == 2 and "800 GEMM ops" in out
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")[y],
                                  ort_run(model, {"x": x})[y])


@pytest.mark.parametrize("offload, match", [({"Conv": "accel"}, "cannot send 'Conv'"),
                                            ({"conv_int8": "llvm"}, "accelerator target"),
                                            (["accel"], "is a dict")])
def test_bad_offload_arguments_are_refused(offload, match):
    model, _, _ = _model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = po.graph.from_onnx(model)
    with pytest.raises(po.PolyoptError, match=match):
        po.graph.compile(g, num_threads=1, offload=offload)
