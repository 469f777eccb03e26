"""A compiled kernel saved with f.export_library and loaded in a fresh process with
po.load_module: same numbers, nothing compiled there."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError

LOADER = r"""
import sys, numpy as np
import polyopt as po
f = po.load_module(sys.argv[1])
n = int(sys.argv[2])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, 24), dtype=np.float32)
b = rng.standard_normal((24, n + 3), dtype=np.float32)
c = np.empty((n, n + 3), np.float32)
f(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
try:
    f(a, b, np.empty((n, n), np.float32))
except po.InvalidArgumentError as err:
    print("refused:", err)
compiler = [m for m in sys.modules if m.startswith(("polyopt.target.llvm", "llvmlite"))]
print("ok", f.signature.name, "compiler loaded:", compiler)
"""


def _matmul(parallel=False):
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n, 24), name="A")
    B = po.placeholder((24, m), name="B")
    k = po.reduce_axis((0, 24), name="k")
    C = po.compute((n, m), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = po.create_schedule(C)
    if parallel:
        s[C].parallel(C.op.axis[0])
    return s, [A, B, C]


@pytest.mark.parametrize("parallel", [False, True], ids=["serial", "openmp"])
def test_saved_kernel_runs_in_a_new_process(tmp_path, parallel):
    s, args = _matmul(parallel)
    f = po.build(s, args, num_threads=2)
    if parallel:
        assert "polyopt_parallel" in f.llvm_ir
    path = tmp_path / "matmul.so"
    f.export_library(path)
    signature = json.loads((tmp_path / "matmul.so.json").read_text())
    assert signature["prototype"].startswith("int32_t C_kernel(const float *A /* [n][24] */")
    env = dict(os.environ, PYTHONPATH=os.getcwd(), OMP_NUM_THREADS="2")
    done = subprocess.run([sys.executable, "-c", LOADER, str(path), "37"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ok C_kernel compiler loaded: []" in done.stdout  # nothing was compiled
    assert "refused: dimension 1 of 'C' has size 37, but its shape says m = 40" in done.stdout


def test_loaded_kernel_in_this_process_matches_the_jit(tmp_path):
    s, args = _matmul()
    f = po.build(s, args)
    f.export_library(tmp_path / "k.so")
    g = po.load_module(tmp_path / "k.so")
    a = np.arange(5 * 24, dtype=np.float32).reshape(5, 24) / 100
    b = np.ones((24, 7), np.float32)
    c1, c2 = np.empty((5, 7), np.float32), np.empty((5, 7), np.float32)
    f(a, b, c1)
    g(a, b, c2)
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_allclose(c2, a @ b, rtol=1e-5)
    assert g.signature == f.signature
    g.release()
    with pytest.raises(po.ReleasedKernelError):
        g(a, b, c2)


def test_an_object_file_can_be_written(tmp_path):
    s, args = _matmul()
    po.build(s, args).export_library(tmp_path / "k.o")
    assert (tmp_path / "k.o").read_bytes()[:4] == b"\x7fELF"
    assert (tmp_path / "k.o.json").exists()


def test_loading_what_is_not_there_says_so(tmp_path):
    with pytest.raises(InvalidArgumentError, match="no kernel signature"):
        po.load_module(tmp_path / "missing.so")
    (tmp_path / "bad.so.json").write_text("[1, 2]")
    with pytest.raises(InvalidArgumentError, match="not a polyopt kernel signature"):
        po.load_module(tmp_path / "bad.so")
    s, args = _matmul()
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        po.build(s, args).export_library(tmp_path / "nowhere" / "k.so")
