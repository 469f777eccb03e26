"""Every C library function a kernel can call (``te.expr.LIBC_CALLS``: no LLVM
intrinsic, a call of libm's ``acosf`` / ``acos``) builds, links as object code (the graph
layer's path) and gives NumPy's numbers, in float32 and float64; also as the first kernel
of a fresh process, where LLVM's symbol search did not yet know the process's symbols."""

import math
import subprocess
import sys

import numpy as np
import pytest

import polyopt as po
from polyopt.kernels.builder import build_kernel
from polyopt.kernels.memory import BuildCache
from polyopt.te.expr import LIBC_CALLS, Call
from tests.testlib.numeric import assert_numbers

NUMPY = {"tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
         "sinh": np.sinh, "cosh": np.cosh, "cbrt": np.cbrt, "expm1": np.expm1,
         "log1p": np.log1p, "erf": np.vectorize(math.erf), "atan2": np.arctan2,
         "fmod": np.fmod, "hypot": np.hypot}
BINARY = {"atan2", "fmod", "hypot"}


def _program(name: str, dtype: str):
    A = po.placeholder((16,), name="A", dtype=dtype)
    B = po.placeholder((16,), name="B", dtype=dtype)
    args = (A, B) if name in BINARY else (A,)
    C = po.compute((16,), lambda i: Call.make(name, *(x[i] for x in args)), name="C")
    return po.lower(po.create_schedule(C), [*args, C], target="llvm")


def test_every_libc_call_has_a_reference():
    assert set(NUMPY) == set(LIBC_CALLS)


@pytest.mark.parametrize("form", ["kernel", "linked"])  # JIT-compiled; object code linked
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(LIBC_CALLS))
def test_libc_call_links_and_matches_numpy(name, dtype, form):
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.9, 0.9, 16).astype(dtype)
    b = rng.uniform(0.2, 0.9, 16).astype(dtype)
    expected = NUMPY[name](a, b) if name in BINARY else NUMPY[name](a)
    built = build_kernel(_program(name, dtype), "llvm", {"num_threads": 1}, form=form,
                         cache=BuildCache(4))
    if form == "linked":
        assert built.meta["imports"] == [name + ("f" if dtype == "float32" else "")]
    c = np.zeros(16, dtype)
    built.kernel(*((a, b) if name in BINARY else (a,)), c)
    assert_numbers(c, expected.astype(dtype), dtype=dtype)


FRESH = """
import numpy as np, polyopt as po
from polyopt.kernels.builder import build_kernel
A = po.placeholder((4,), name="A", dtype="float32")
B = po.compute((4,), lambda i: po.te.expr.Call.make("acos", A[i]), name="B")
func = po.lower(po.create_schedule(B), [A, B], target="llvm")
kernel = build_kernel(func, "llvm", {"num_threads": 1}, form="linked").kernel
a = np.array([-1, -0.5, 0.25, 1], "float32"); b = np.zeros(4, "float32")
kernel(a, b)
print(np.abs(b - np.arccos(a)).max() < 1e-6)
"""


def test_libc_call_as_the_first_kernel_of_a_process():
    done = subprocess.run([sys.executable, "-c", FRESH], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True"
