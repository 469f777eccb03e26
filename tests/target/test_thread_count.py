"""The thread count of parallel loops: ``OMP_NUM_THREADS`` unless the build option
``num_threads`` says otherwise.  Each case runs in a fresh process, which counts its OS
threads (polyopt's thread pool keeps its workers alive after a parallel loop; OpenBLAS
is held to one thread so that it starts none)."""

import os
import subprocess
import sys
import textwrap

import pytest

PROBE = textwrap.dedent("""
    import os, sys
    import numpy as np, polyopt as po
    A = po.placeholder((64, 64), name="A")
    B = po.compute((64, 64), lambda i, j: A[i, j] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(s[B].axes[0])
    f = po.build(s, [A, B], num_threads=int(sys.argv[1]), parallel_min_work=0)
    before = len(os.listdir("/proc/self/task"))
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    b = np.zeros_like(a)
    f(a, b)
    assert (b == 2 * a).all()
    print(len(os.listdir("/proc/self/task")) - before + 1)
""")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                    reason="counts the threads in Linux's /proc, which this system lacks")
@pytest.mark.parametrize("environment, option, expected", [
    ("3", 0, 3),   # the environment decides
    ("3", 2, 2),   # the build option wins
    ("1", 0, 1),
])
def test_parallel_loop_runs_on_the_requested_threads(environment, option, expected):
    env = {**os.environ, "OMP_NUM_THREADS": environment, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(option)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == expected


def test_nested_parallel_loop_runs_serially_inside_the_outer_one():
    import numpy as np

    import polyopt as po
    A = po.placeholder((37, 45), name="A")
    B = po.compute((37, 45), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = po.create_schedule(B)
    i, j = s[B].axes
    s[B].parallel(i)
    s[B].parallel(j)
    f = po.build(s, [A, B], num_threads=2, parallel_min_work=0)
    assert f.llvm_ir.count("call void @\"polyopt_parallel\"") == 1  # one team: the outer loop
    a = np.random.default_rng(0).standard_normal((37, 45), dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)
