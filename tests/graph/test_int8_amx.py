"""The graph layer's int8 path on AMX (issue 31): ``MatMulInteger`` (and the matmul of a
quantized model) compiled for a CPU with AMX runs on AMX tiles, chosen by the machine
model; ``-mattr=-amx-int8`` keeps the VNNI kernel.  Built for ``sapphirerapids`` and
inspected here; its numbers are checked against onnxruntime by running the same IR with
the tiles emulated (``testlib.amx_emulator``) and, on a host with AMX, natively."""

import re

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.amx import matmul_integer_model  # noqa: E402
from testlib.amx_emulator import emulated_kernel  # noqa: E402
from testlib.machine import HOST  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402

SPR = "llvm -mcpu=sapphirerapids"


def int8_steps(compiled):
    return [s for s in compiled.steps if s.template.startswith("int8_matmul")]


def test_matmul_integer_compiled_for_amx_uses_tiles_and_equals_onnxruntime(tmp_path):
    model, y, feeds, numpy_result = matmul_integer_model(20, 128, 64)
    compiled = po.graph.compile(po.graph.from_onnx(model), SPR, num_threads=1, cache=False)
    (step,) = int8_steps(compiled)
    assert step.template == "int8_matmul_amx"
    assembly = step.kernel.assembly
    assert {"ldtilecfg", "tileloadd", "tdpbusd"} <= set(
        re.findall(r"\b(ldtilecfg|tileloadd|tdpbusd)\b", assembly))
    assert assembly.count("ldtilecfg") == 1
    expected = ort_run(model, feeds)[y]
    np.testing.assert_array_equal(expected, numpy_result)  # (the references agree)
    # every kernel of the model again for this CPU, the tiles emulated
    for s in compiled.steps:
        if s.kernel is not None:
            s.kernel = emulated_kernel(s.kernel, str(tmp_path))
    compiled._foreign = None
    compiled._calls = compiled._bind()
    np.testing.assert_array_equal(compiled.run(feeds)[y], expected)
    if not HOST.has_amx_int8:
        pytest.skip("this CPU has no AMX: the model was built for sapphirerapids, "
                    "inspected and run with emulated tiles, not run natively")
    native = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    assert int8_steps(native)[0].template == "int8_matmul_amx"
    np.testing.assert_array_equal(native.run(feeds)[y], expected)


def test_without_amx_the_graph_keeps_the_vnni_kernel():
    model, *_ = matmul_integer_model(20, 128, 64)
    g = po.graph.from_onnx(model)
    forced = po.graph.compile(g, SPR + " -mattr=-amx-int8", num_threads=1, cache=False)
    assert [s.template for s in int8_steps(forced)] == ["int8_matmul_vnni"]
    assert "tdpbusd" not in int8_steps(forced)[0].kernel.assembly
    zen4 = po.graph.compile(g, "llvm -mcpu=znver4", num_threads=1, cache=False)
    assert [s.template for s in int8_steps(zen4)] == ["int8_matmul_vnni"]
    ragged, *_ = matmul_integer_model(20, 96, 64)  # K = 96: not whole tiles
    spr = po.graph.compile(po.graph.from_onnx(ragged), SPR, num_threads=1, cache=False)
    assert [s.template for s in int8_steps(spr)] == ["int8_matmul_vnni"]


def qlinear_conv_model(channels, size, kernel, stride, pads, seed=6):
    rng = np.random.default_rng(seed)
    m = ModelBuilder(4)
    x = m.input("x", (1, channels, size, size))
    xq = m.add("QuantizeLinear", [x, m.const(np.float32(0.05)), m.const(np.uint8(3))])
    w = m.const(rng.integers(-60, 60, (64, channels, kernel, kernel)).astype(np.int8))
    w_scale = (rng.random(64) * 0.05 + 0.01).astype(np.float32)
    bias = m.const(rng.integers(-500, 500, 64).astype(np.int32))
    y = m.add("QLinearConv", [xq, m.const(np.float32(0.05)), m.const(np.uint8(3)), w,
                              m.const(w_scale), m.const(np.zeros(64, np.int8)),
                              m.const(np.float32(0.4)), m.const(np.uint8(100)), bias],
              strides=[stride, stride], pads=[pads] * 4)
    model = m.model([y], dtypes={y: "uint8"})
    feeds = {"x": rng.standard_normal((1, channels, size, size)).astype(np.float32)}
    return model, y, feeds


@pytest.mark.slow
@pytest.mark.parametrize("channels, size, kernel, stride, pads", [(64, 7, 3, 1, 1),
                                                                   (64, 8, 1, 2, 0)])
def test_qlinear_conv_compiled_for_amx_uses_tiles_and_equals_onnxruntime(
        tmp_path, channels, size, kernel, stride, pads):
    model, y, feeds = qlinear_conv_model(channels, size, kernel, stride, pads)
    compiled = po.graph.compile(po.graph.from_onnx(model), SPR, num_threads=1, cache=False)
    (step,) = [s for s in compiled.steps if s.template.startswith("int8_conv")]
    assert step.template == "int8_conv_amx"
    assembly = step.kernel.assembly
    assert {"ldtilecfg", "tileloadd", "tdpbusd"} <= set(
        re.findall(r"\b(ldtilecfg|tileloadd|tdpbusd)\b", assembly))
    expected = ort_run(model, feeds)[y]
    for s in compiled.steps:
        if s.kernel is not None:
            s.kernel = emulated_kernel(s.kernel, str(tmp_path))
    compiled._foreign = None
    compiled._calls = compiled._bind()
    got = compiled.run(feeds)[y]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, expected)
    vnni = po.graph.compile(po.graph.from_onnx(model), SPR + " -mattr=-amx-int8",
                            num_threads=1, cache=False)
    assert "int8_conv_vnni" in [s.template for s in vnni.steps]


def test_the_amx_conv_pass_runs_where_the_machine_model_chooses_amx():
    from polyopt.graph.passes import graph_passes

    def names(cpu):
        return graph_passes(target_info=po.TargetInfo.for_cpu(cpu)).names

    assert names("sapphirerapids").index("amx_conv_layout") == \
        names("sapphirerapids").index("vnni_rewrite") + 1
    assert "amx_conv_layout" not in names("znver4")  # VNNI, no AMX
    no_amx = graph_passes(target_info=po.TargetInfo.for_cpu("sapphirerapids",
                                                             "-amx-int8")).names
    assert "vnni_rewrite" in no_amx and "amx_conv_layout" not in no_amx
