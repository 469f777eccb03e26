"""The command line on non-terminals and inline input (issue 37): no progress bar drawn
with carriage returns into a file or pipe; ``check --schedule`` takes the isl text
itself."""

import os
import pathlib
import subprocess
import sys

import numpy as np

from polyopt.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def test_check_takes_the_schedule_inline(capsys):
    seidel = str(EXAMPLES / "seidel.py")
    assert main(["check", seidel, "--schedule", "{ S0[t, i, j] -> [2t + i, t, i, j] }"]) == 0
    assert capsys.readouterr().out.startswith("legal")
    assert main(["check", seidel, "--schedule", "{ S0[t, i, j] -> [i, t, j] }"]) == 1
    assert capsys.readouterr().out.startswith("illegal: 2 dependences violated")
    assert main(["check", seidel, "--schedule", str(EXAMPLES / "wavefront.isl")]) == 0
    capsys.readouterr()


def test_check_names_a_missing_schedule_file(capsys):
    assert main(["check", str(EXAMPLES / "seidel.py"), "--schedule", "nowhere.isl"]) == 2
    assert "schedule file 'nowhere.isl' does not exist" in capsys.readouterr().err


def test_no_progress_bar_into_a_pipe(tmp_path):
    """``lib build`` and ``run`` with standard error a pipe: no bar, no carriage return."""
    env = dict(os.environ, POLYOPT_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, str(EXAMPLES / "tiny_model.py"), "tiny.onnx"],
                   cwd=tmp_path, check=True, capture_output=True)
    np.save(tmp_path / "x.npy", np.ones((1, 3, 16, 16), np.float32))
    for argv in (["lib", "build", str(EXAMPLES / "ops_spec.py"), "-o", "ops", "-j", "1"],
                 ["run", "tiny.onnx", "--input", "x.npy", "--threads", "1"]):
        done = subprocess.run([sys.executable, "-m", "polyopt.cli", *argv], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        assert "\r" not in done.stdout + done.stderr
        assert "built (" not in done.stdout and "compiling [" not in done.stderr
    assert (tmp_path / "ops" / "libops_spec.so").exists()
