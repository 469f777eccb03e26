"""The C program of docs/deploy.md, as printed there, built with gcc against an export of
examples/tiny_model.py (static and shared), run in a fresh process: its output is
onnxruntime's."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402

from cprogram import GCC  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]


def docs_program() -> str:
    text = (ROOT / "docs" / "deploy.md").read_text()
    found = re.findall(r"^```c\n(.*?)^```", text, re.M | re.S)
    assert len(found) == 1, "docs/deploy.md shows one C program"
    return found[0]


@pytest.mark.parametrize("static", [True, False], ids=["static", "shared"])
def test_the_documented_c_program_runs_the_tiny_model(tmp_path, static):
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from tiny_model import tiny_model
    finally:
        sys.path.pop(0)
    model = tiny_model()
    deploy = tmp_path / "deploy"
    po.graph.compile(po.graph.from_onnx(model), num_threads=1).export_library(
        deploy, name="tiny", source=model)
    source = tmp_path / "classify.c"
    source.write_text(docs_program())
    library = [str(deploy / "libtiny.a")] if static else \
        ["-L", str(deploy), "-ltiny", f"-Wl,-rpath,{deploy}"]
    build = subprocess.run([GCC, "-Wall", "-Werror", str(source), "-I", str(deploy), *library,
                            "-lm", "-lpthread", "-o", str(tmp_path / "classify")],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    x = np.random.default_rng(2).standard_normal((1, 3, 16, 16)).astype(np.float32)
    x.tofile(tmp_path / "input.bin")
    done = subprocess.run([str(tmp_path / "classify"), str(deploy), str(tmp_path / "input.bin"),
                           str(tmp_path / "output.bin")], capture_output=True, text=True,
                          env={})
    assert done.returncode == 0, done.stderr
    got = np.fromfile(tmp_path / "output.bin", np.float32).reshape(1, 10)
    assert_numbers(got, ort_run(model, {"input": x})["logits"], rtol=2e-4, atol=2e-4)
    wrong = subprocess.run([str(tmp_path / "classify"), str(tmp_path), "x", "y"],
                           capture_output=True, text=True, env={})
    assert wrong.returncode == 1 and "tiny.weights" in wrong.stderr
