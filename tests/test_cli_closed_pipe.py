"""A reader that closes the pipe ends the command quietly; ``polyopt check`` keeps its
verdict as exit status."""

import subprocess
import sys

MATMUL = """import polyopt as po
M, N, K = po.var("M"), po.var("N"), po.var("K")
A = po.placeholder((M, K), name="A"); B = po.placeholder((K, N), name="B")
k = po.reduce_axis((0, K), name="k")
C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
s = po.create_schedule(C)
"""


def _closed_reader(*argv, cwd):
    """Run polyopt with its standard output a pipe whose reader is already gone."""
    process = subprocess.Popen([sys.executable, "-m", "polyopt.cli", *argv], cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    stderr = process.stderr.read().decode()
    return process.wait(timeout=300), stderr


def test_check_keeps_its_verdict_on_a_closed_pipe(tmp_path):
    (tmp_path / "matmul.py").write_text(MATMUL)
    (tmp_path / "good.isl").write_text(
        "{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }")
    (tmp_path / "bad.isl").write_text(
        "{ C_init[i, j] -> [i, j, 1, 0]; C_update[i, j, k] -> [i, j, 0, k] }")
    status, stderr = _closed_reader("check", "matmul.py", "--schedule", "good.isl",
                                    cwd=tmp_path)
    assert (status, stderr) == (0, "")
    status, stderr = _closed_reader("check", "matmul.py", "--schedule", "bad.isl",
                                    cwd=tmp_path)
    assert (status, stderr) == (1, "")


def test_other_commands_end_quietly_on_a_closed_pipe(tmp_path):
    status, stderr = _closed_reader("cache", "info", cwd=tmp_path)
    assert (status, stderr) == (0, "")
    status, stderr = _closed_reader("--help", cwd=tmp_path)
    assert (status, stderr) == (0, "")
