"""``polyopt run`` on an ONNX file and ``g.draw`` pictures of fused groups and memory."""

import shutil
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.cli import main  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run  # noqa: E402


def small_model():
    m = ModelBuilder(1)
    x = m.input("x", (1, 3, 6, 6))
    y = m.add("Conv", [x, m.weight(4, 3, 3, 3)], pads=[1, 1, 1, 1])
    y = m.add("Relu", [m.add("Add", [y, m.const(np.ones((4, 1, 1), np.float32))])])
    y = m.add("Flatten", [m.add("GlobalAveragePool", [y])])
    return m.model([y])


def test_polyopt_run_prints_and_saves_outputs(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the bar is for terminals
    model = small_model()
    onnx.save(model, tmp_path / "m.onnx")
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    status = main(["run", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy"),
                   "--threads", "1", "--profile", "--output", str(tmp_path / "out.npz")])
    assert status == 0
    out = capsys.readouterr()
    assert "compiled 5 operators into 2 kernels" in out.out
    assert "conv2d+epilogue" in out.out and "Conv+Add+Relu" in out.out   # the profile
    assert "compiling [" in out.err                       # the progress bar, on a terminal
    saved = np.load(tmp_path / "out.npz")
    (name, expected), = ort_run(model, {"x": x}).items()
    np.testing.assert_allclose(saved[name], expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("content", [b"", b"PK\x03\x04 not a zip", b"\x93NUMPY\x01"])
def test_polyopt_run_refuses_an_unreadable_input_file(tmp_path, capsys, content):
    """An empty, damaged .npz or truncated .npy input: status 2 naming the file (an empty
    file raised EOFError inside polyopt, found by the ``cli`` property family)."""
    onnx.save(small_model(), tmp_path / "m.onnx")
    (tmp_path / "x.npy").write_bytes(content)
    assert main(["run", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy")]) == 2
    assert f"cannot read the input array '{tmp_path / 'x.npy'}'" in capsys.readouterr().err


def test_polyopt_run_refuses_a_bad_input(tmp_path, capsys):
    onnx.save(small_model(), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.zeros((2, 2), np.float32))
    assert main(["run", str(tmp_path / "m.onnx"), "--input", str(tmp_path / "x.npy")]) == 2
    assert "input 'x' must be float32[1, 3, 6, 6]" in capsys.readouterr().err


def test_draw_shows_groups_and_memory(tmp_path):
    g = po.graph.from_onnx(small_model())
    m = po.graph.compile(g, num_threads=1)
    dot = m.graph.draw(tmp_path / "m.dot")
    text = open(dot).read()
    assert "cluster_0" in text and "conv2d+epilogue" in text and "arena" in text
    if shutil.which("dot"):
        svg = m.graph.draw(tmp_path / "m.svg")
        assert "<svg" in open(svg).read()
    with pytest.raises(po.InvalidArgumentError, match=".svg, .png or .dot"):
        g.draw(tmp_path / "m.jpg")


def symbolic_model():
    from onnx import TensorProto, helper

    return helper.make_model(helper.make_graph(
        [helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch"])],
        [helper.make_tensor("axes", TensorProto.INT64, [1], [1])]),
        opset_imports=[helper.make_opsetid("", 18)])


def test_polyopt_run_gives_symbolic_dimensions_their_sizes(tmp_path, capsys):
    onnx.save(symbolic_model(), tmp_path / "m.onnx")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "x.npy", x)
    model = str(tmp_path / "m.onnx")
    assert main(["run", model, "--shape", "x=4,3", "--input", str(tmp_path / "x.npy"),
                 "--threads", "1", "--output", str(tmp_path / "out.npz")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["y"], [3.0, 12.0, 21.0, 30.0])
    assert main(["run", model, "--input", str(tmp_path / "x.npy"), "--threads", "1"]) == 0
    assert "y: float32[4]" in capsys.readouterr().out   # the array's shape by default
    assert main(["run", model, "--shape", "x=4,3,2", "--input", str(tmp_path / "x.npy")]) == 2
    assert "has rank 3; the model declares the input 'x' with rank 2" in capsys.readouterr().err
    assert main(["run", model, "--shape", "x=5,3", "--input", str(tmp_path / "x.npy")]) == 2
    assert "input 'x' must be float32[5, 3], got float32[4, 3] (checked before compiling)" in \
        capsys.readouterr().err
    assert main(["run", model, "--shape", "x=four"]) == 2
    assert "--shape takes NAME=D,D,..." in capsys.readouterr().err
    assert main(["run", model]) == 2
    assert "symbolic dimension 'batch'" in capsys.readouterr().err
