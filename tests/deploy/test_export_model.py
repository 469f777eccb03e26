"""A compiled model exported as a C library (issue 36): a C program written as a user
writes it (tests/deploy/run_model.c: it includes the header, links the library with gcc,
reads its inputs from files and writes its outputs) runs it in a fresh process and
matches onnxruntime within the graph layer's tolerance; ``po.graph.load`` runs the same
files; tampered, truncated and foreign artefacts are refused; what the runtime cannot run
(the accelerator offload) is refused at export."""

import json
import os
import shutil

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.deploy import ExportError  # noqa: E402
from polyopt.deploy.loader import WrongCPUError  # noqa: E402
from polyopt.errors import DamagedFileError, InvalidArgumentError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.machine import HOST, WIDE, WIDE_CPU  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import (ModelBuilder, bert_layer, lstm, mobilenet_v2,  # noqa: E402
                                 ort_run, random_inputs, resnet18)

from cprogram import build_program, output_specs, run_program  # noqa: E402

SMALL = {"rtol": 2e-4, "atol": 2e-4}  # the graph layer's tolerances (tests/graph)
FULL = {"rtol": 1e-3, "atol": 1e-3}


def residual_cnn():
    """conv+bn+relu, a residual block, pooling, a flattened view given back as an output
    besides the classifier's, and a second input added to the logits."""
    m = ModelBuilder(3)
    x = m.input("x", (1, 4, 10, 10))
    bias = m.input("bias", (1, 6))
    y = m.add("Relu", [m.add("Conv", [x, m.weight(8, 4, 3, 3)], pads=[1] * 4)])
    z = m.add("Conv", [m.add("Relu", [m.add("Conv", [y, m.weight(8, 8, 3, 3)], pads=[1] * 4)]),
                       m.weight(8, 8, 3, 3)], pads=[1] * 4)
    y = m.add("Relu", [m.add("Add", [z, y])])
    flat = m.add("Flatten", [m.add("GlobalAveragePool", [y])], axis=1)
    logits = m.add("Add", [m.add("Gemm", [flat, m.weight(6, 8, scale=0.3)], transB=1), bias])
    return m.model([logits, flat])


def export(model, folder, name, *, threads=1, target="llvm", weights="file"):
    compiled = po.graph.compile(po.graph.from_onnx(model), target=target,
                                num_threads=threads)
    manifest = compiled.export_library(folder, name=name, source=model, weights=weights)
    return compiled, manifest


def check_c_program(model, folder, name, tolerance, *, threads=1, static=False,
                    weights="file"):
    compiled, manifest = export(model, folder, name, threads=threads, weights=weights)
    feeds = random_inputs(model)
    program = build_program(str(folder), name, static=static)
    done, got = run_program(program, str(folder),
                            [feeds[t["name"]] for t in manifest["plan"]["inputs"]],
                            output_specs(manifest))
    assert done.returncode == 0, done.stderr
    expected = ort_run(model, feeds)
    for k, spec in enumerate(manifest["plan"]["outputs"]):
        assert_numbers(got[k], expected[spec["name"]], name=spec["name"], **tolerance)
    python = compiled.run(feeds)
    loaded = po.graph.load(folder).run(feeds)
    for name_, value in python.items():
        assert_numbers(loaded[name_], value, name=name_)
    return manifest


@pytest.mark.parametrize("static, weights", [(False, "file"), (True, "file"),
                                             (True, "embedded")],
                         ids=["shared", "static", "static-embedded"])
def test_a_residual_cnn_runs_from_c_like_onnxruntime(tmp_path, static, weights):
    manifest = check_c_program(residual_cnn(), tmp_path, "cnn", SMALL, static=static,
                               weights=weights)
    copies = [s for s in manifest["plan"]["steps"] if s["kernel"] < 0]
    assert [c["args"][1] for c in copies] == [["output", 1]]  # the flattened view
    files = {"cnn.h", "libcnn.a", "libcnn.so", "manifest.json"}
    assert files <= set(os.listdir(tmp_path))
    assert ("cnn.weights" in os.listdir(tmp_path)) == (weights == "file")


def test_a_small_bert_layer_runs_from_c_on_two_threads(tmp_path):
    check_c_program(bert_layer(hidden=32, heads=2, seq=8, ffn=64), tmp_path, "bert", SMALL,
                    threads=2)


@pytest.mark.slow  # 52 distinct kernels
def test_a_small_mobilenet_v2_runs_from_c(tmp_path):
    check_c_program(mobilenet_v2(width=0.25, resolution=32, classes=7), tmp_path, "mnv2",
                    SMALL)


@pytest.mark.slow
@pytest.mark.parametrize("build", [resnet18, mobilenet_v2, bert_layer, lstm],
                         ids=["resnet18", "mobilenet_v2", "bert_layer", "lstm"])
def test_full_size_models_run_from_c_like_onnxruntime(tmp_path, build):
    check_c_program(build(), tmp_path, build.__name__, FULL, threads=2)


def int8_conv_model():
    rng = np.random.default_rng(6)
    m = ModelBuilder(4)
    x = m.add("QuantizeLinear", [m.input("x", (1, 3, 9, 9)), m.const(np.float32(0.05)),
                                 m.const(np.uint8(3))])
    w = m.const(rng.integers(-60, 60, (16, 3, 3, 3)).astype(np.int8))
    y = m.add("QLinearConv", [x, m.const(np.float32(0.05)), m.const(np.uint8(3)), w,
                              m.const((rng.random(16) * 0.05 + 0.01).astype(np.float32)),
                              m.const(np.zeros(16, np.int8)), m.const(np.float32(0.4)),
                              m.const(np.uint8(100)),
                              m.const(rng.integers(-500, 500, 16).astype(np.int32))],
              strides=[2, 2], pads=[1] * 4)
    return m.model([y], dtypes={y: "uint8"})


def test_an_int8_convolution_runs_from_c_bit_for_bit(tmp_path):
    check_c_program(int8_conv_model(), tmp_path, "qconv", {"exact": True})


# -- integrity -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """An exported model, to copy and damage."""
    folder = tmp_path_factory.mktemp("pristine")
    model = residual_cnn()
    export(model, folder, "cnn")
    return folder, model


def _copy(exported, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(exported[0], folder)
    build_program(str(folder), "cnn")  # (its run path: this folder's library)
    return folder


def _run(folder, model):
    feeds = random_inputs(model)
    manifest = json.loads((folder / "manifest.json").read_text())
    return run_program(str(folder / "run_cnn"), str(folder),
                       [feeds[t["name"]] for t in manifest["plan"]["inputs"]],
                       output_specs(manifest))[0]


@pytest.mark.parametrize("damage", ["edited", "truncated", "grown"])
def test_damaged_weights_are_refused_by_the_c_runtime_and_by_load(exported, tmp_path, damage):
    folder = _copy(exported, tmp_path)
    path = folder / "cnn.weights"
    data = bytearray(path.read_bytes())
    if damage == "edited":
        data[len(data) // 2] ^= 1
    elif damage == "truncated":
        data = data[:-4]
    else:
        data += b"\0" * 4
    path.write_bytes(bytes(data))
    done = _run(folder, exported[1])
    assert done.returncode == 1
    assert "create failed (3)" in done.stderr and "cnn.weights" in done.stderr
    with pytest.raises(DamagedFileError, match="weights"):
        po.graph.load(folder)


def test_missing_weights_are_an_io_error(exported, tmp_path):
    folder = _copy(exported, tmp_path)
    os.remove(folder / "cnn.weights")
    done = _run(folder, exported[1])
    assert done.returncode == 1 and "create failed (2)" in done.stderr


@pytest.mark.parametrize("damage", ["edited", "truncated"])
def test_a_damaged_library_is_refused_by_load(exported, tmp_path, damage):
    folder = _copy(exported, tmp_path)
    assert _run(folder, exported[1]).returncode == 0
    path = folder / "libcnn.so"
    data = bytearray(path.read_bytes())
    if damage == "edited":
        data[-100] ^= 0xFF
    else:
        data = data[:len(data) // 2]
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedFileError, match="libcnn.so"):
        po.graph.load(folder)
    if damage == "truncated":  # the dynamic loader refuses it before main
        assert _run(folder, exported[1]).returncode != 0


def test_a_manifest_of_another_export_is_refused(exported, tmp_path):
    folder = _copy(exported, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["build_id"] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DamagedFileError, match="another export"):
        po.graph.load(folder)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(DamagedFileError):
        po.graph.load(folder)
    with pytest.raises(InvalidArgumentError, match="no manifest.json"):
        po.graph.load(tmp_path)


def relu_matmul_exported(folder, cpu: str, name: str):
    """``(graph, manifest)`` of ``relu(x @ ones(32, 32))`` (x: 4 x 32) compiled for the
    CPU named ``cpu`` and exported to ``folder`` as ``name``."""
    b = po.graph.GraphBuilder()
    x = b.input("x", (4, 32))
    g = b.build([b.op("Relu", [b.op("MatMul", [x, b.constant(
        "w", np.ones((32, 32), "float32"))])])])
    compiled = po.graph.compile(g, target=f"llvm -mcpu={cpu}", num_threads=1)
    return g, compiled.export_library(folder, name=name)


def test_a_library_for_a_cpu_this_host_lacks_is_refused_at_load(tmp_path):
    _, manifest = relu_matmul_exported(tmp_path, WIDE_CPU, "wide")
    assert manifest["cpu"] == WIDE_CPU and set(WIDE.features) == set(manifest["features"])
    missing = sorted(set(WIDE.features) - set(HOST.features))
    program = build_program(str(tmp_path), "wide")
    done, got = run_program(program, str(tmp_path), [np.ones((4, 32), "float32")],
                            output_specs(manifest))
    if "avx512f" in missing:  # (a host with AVX-512 runs it)
        assert done.returncode == 1 and "create failed (4)" in done.stderr
        assert "avx512f" in done.stderr and WIDE_CPU in done.stderr
        with pytest.raises(WrongCPUError, match="avx512f"):
            po.graph.load(tmp_path)
    elif not missing:
        assert done.returncode == 0
        assert_numbers(got[0], np.full((4, 32), 32, "float32"))


def test_a_library_for_this_cpu_named_runs_here(tmp_path):
    g, manifest = relu_matmul_exported(tmp_path, HOST.name, "named")
    assert manifest["cpu"] == HOST.name
    done, got = run_program(build_program(str(tmp_path), "named", static=True), str(tmp_path),
                            [np.full((4, 32), -0.5, "float32")], output_specs(manifest))
    assert done.returncode == 0, done.stderr
    assert_numbers(got[0], np.zeros((4, 32), "float32"))
    assert_numbers(po.graph.load(tmp_path).run({"x": np.ones((4, 32), "float32")})[g.outputs[0]],
                   np.full((4, 32), 32, "float32"))


# -- what the runtime cannot run ---------------------------------------------------------------

@pytest.mark.parametrize("seq, width, hidden", [(5, 6, 8), (8, 64, 64)],
                         ids=["steps", "in-pairs"])
def test_an_lstm_runs_from_c_like_onnxruntime(tmp_path, seq, width, hidden):
    manifest = check_c_program(lstm(layers=2, seq=seq, width=width, hidden=hidden),
                               tmp_path, "lstm", SMALL, threads=2)
    assert sum(s["ops"] == "LSTM recurrence" for s in manifest["plan"]["steps"]) == 2


@pytest.mark.parametrize("seq", [5, 4], ids=["steps", "in-pairs"])
def test_an_lstm_with_peepholes_activations_and_clip_runs_from_c(tmp_path, seq):
    """The recurrence kernel takes the peephole weights as one more argument."""
    m = ModelBuilder(1)
    x = m.input("input", (seq, 2, 6))
    weights = [m.const((m.rng.standard_normal(shape) * 0.4).astype(np.float32))
               for shape in ((1, 32, 6), (1, 32, 8), (1, 64), (1, 24))]
    out = m.add("LSTM", [x, *weights[:3], "", "", "", weights[3]], hidden_size=8,
                activations=["HardSigmoid", "Tanh", "Softsign"], clip=2.0)
    manifest = check_c_program(m.model([out]), tmp_path, "peep", SMALL)
    assert sum(s["ops"] == "LSTM recurrence" for s in manifest["plan"]["steps"]) == 1


def test_a_model_built_before_for_another_cache_folder_exports(tmp_path):
    """The kernels found in memory (built for folder a) are stored in folder b too, where
    the export looks for their objects; the library computes what the model does."""
    model = lstm(layers=1, seq=3, width=4, hidden=8)
    po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=tmp_path / "a")
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1,
                                cache=tmp_path / "b")
    folder = tmp_path / "out"
    manifest = compiled.export_library(folder, name="lstm", source=model)
    feeds = random_inputs(model)
    done, got = run_program(build_program(str(folder), "lstm"), str(folder),
                            [feeds[t["name"]] for t in manifest["plan"]["inputs"]],
                            output_specs(manifest))
    assert done.returncode == 0, done.stderr
    python = compiled.run(feeds)
    for k, spec in enumerate(manifest["plan"]["outputs"]):
        assert_numbers(got[k], python[spec["name"]], name=spec["name"])


def test_bad_names_and_folders_are_refused(tmp_path):
    b = po.graph.GraphBuilder()
    x = b.input("x", (3,))
    compiled = po.graph.compile(b.build([b.op("Relu", [x])]), num_threads=1)
    with pytest.raises(InvalidArgumentError, match="C identifier"):
        compiled.export_library(tmp_path, name="not a name")
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidArgumentError, match="is a file"):
        compiled.export_library(tmp_path / "file", name="m")


def test_an_offloaded_model_is_refused_at_export_with_a_typed_error(tmp_path):
    compiled = po.graph.compile(po.graph.from_onnx(int8_conv_model()), num_threads=1,
                                offload={"conv_int8": "accel"})
    assert any(s.template == "accel" for s in compiled.steps)
    err = refused(ExportError, lambda: compiled.export_library(tmp_path, name="accel"))
    assert err.problem == "offload"
    assert err.groups == tuple(s.group.name for s in compiled.steps if s.template == "accel")


# -- threads, the command line, TVM's names ------------------------------------------------------

def test_threads_are_chosen_at_run_time_only_when_exported_without_a_count(tmp_path):
    model = residual_cnn()
    feeds = random_inputs(model)
    _, manifest = export(model, tmp_path / "any", "anyt", threads=0)
    loaded = po.graph.load(tmp_path / "any")
    loaded.set_threads(1)
    assert loaded.threads == 1
    one = loaded.run(feeds)
    loaded.set_threads(2)
    assert loaded.threads == 2
    for name, value in loaded.run(feeds).items():
        assert_numbers(value, one[name], name=name)
    export(model, tmp_path / "two", "two", threads=2)
    fixed = po.graph.load(tmp_path / "two")
    assert fixed.threads == 2
    with pytest.raises(InvalidArgumentError, match="compiled for 2 threads"):
        fixed.set_threads(1)
    with pytest.raises(InvalidArgumentError, match=">= 1"):
        fixed.set_threads(0)


def test_polyopt_compile_writes_a_library_that_tvm_names_load(tmp_path, capsys):
    from polyopt import tvm
    from polyopt.cli import main

    model = residual_cnn()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    path = tmp_path / "cnn.onnx"
    onnx.save(model, path)
    out = tmp_path / "deploy"
    assert main(["compile", str(path), "-o", str(out), "--name", "cnn", "--threads", "1",
                 "--shape", "x=1,4,10,10"]) == 0
    assert "libcnn.so" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source_sha256"] == po.private_folder.digest(path.read_bytes())
    assert manifest["opset"] == 17 and manifest["plan"]["inputs"][0]["shape"] == [1, 4, 10, 10]
    lib = tvm.runtime.load_module(str(out / "libcnn.so"))
    module = tvm.contrib.graph_executor.GraphModule(lib["default"](tvm.cpu(0)))
    feeds = random_inputs(residual_cnn())
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    expected = ort_run(residual_cnn(), feeds)
    assert module.get_num_outputs() == 2
    assert_numbers(module.get_output(0), expected[manifest["plan"]["outputs"][0]["name"]],
                   **SMALL)
    copy = tmp_path / "copy"
    lib.export_library(copy)
    assert po.graph.load(copy).run(feeds).keys() == expected.keys()
    assert main(["compile", str(path), "-o", str(out), "--shape", "x=1,a"]) == 2


def test_a_model_quantized_by_polyopt_exports_bit_for_bit(tmp_path):
    m = ModelBuilder(7)
    x = m.input("x", (1, 8, 8, 8))
    y = m.add("Relu", [m.add("Conv", [x, m.weight(64, 8, 3, 3)], pads=[1] * 4)])
    y = m.add("Relu", [m.add("Conv", [y, m.weight(64, 64, 1, 1)])])
    y = m.add("Flatten", [m.add("GlobalAveragePool", [y])], axis=1)
    model = m.model([m.add("MatMul", [y, m.const(
        (m.rng.standard_normal((64, 32)) * 0.2).astype(np.float32))])])
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)} for _ in range(4)]
    q = po.graph.quantize(po.graph.from_onnx(model), samples, num_threads=1)
    assert "Int8Conv" in [n.op_type for n in q.nodes]
    compiled = po.graph.compile(q, num_threads=1)
    compiled.export_library(tmp_path, name="q")
    loaded = po.graph.load(tmp_path)
    for feeds in samples:
        expected = compiled.run(feeds)
        for name, value in loaded.run(feeds).items():
            assert_numbers(value, expected[name], exact=True, name=name)


def test_load_checks_the_arrays_it_passes(exported):
    loaded = po.graph.load(exported[0])
    feeds = random_inputs(exported[1])
    with pytest.raises(InvalidArgumentError, match="must be float32"):
        loaded.run({**feeds, "x": feeds["x"].astype(np.float64)})
    with pytest.raises(InvalidArgumentError, match="must be float32"):
        loaded.run({**feeds, "x": feeds["x"][..., :5]})
    with pytest.raises(InvalidArgumentError, match="inputs"):
        loaded.run({"x": feeds["x"]})
    with pytest.raises(InvalidArgumentError, match="run\\(\\) first"):
        loaded.get_output(0)
    loaded.set_input("x", np.asfortranarray(feeds["x"]))  # (made C-contiguous)
    loaded.set_input(1, feeds["bias"])
    loaded.run()
    with pytest.raises(InvalidArgumentError, match="outputs are"):
        loaded.get_output(2)
    assert_numbers(loaded.get_output(0), loaded.run(feeds)[loaded.outputs[0]["name"]])
