"""Parallel loops: uneven pieces, the caller's sleep while it waits for the last piece,
and the minimum of work below which a parallel loop runs on its caller alone
(``parallel_min_work``)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError
from polyopt.target.llvm.parallel import PARALLEL_MIN_WORK, region_work, runs_on_threads


def _scaled(rows, cols, **options):
    A = po.placeholder((rows, cols), name="A")
    B = po.compute((rows, cols), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(s[B].axes[0])
    return po.build(s, [A, B], num_threads=2, **options)


def test_a_small_loop_runs_on_its_caller_with_the_same_numbers():
    a = np.arange(6 * 40, dtype=np.float32).reshape(6, 40)
    small = _scaled(6, 40)  # 240 instances, far below the default minimum
    forced = _scaled(6, 40, parallel_min_work=0)
    assert "polyopt_parallel" not in small.llvm_ir
    assert "polyopt_parallel" in forced.llvm_ir
    for f in (small, forced):
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_array_equal(b, a * 2 + 1)


def test_the_minimum_counts_statement_instances():
    A = po.placeholder((300, 200), name="A")
    B = po.compute((300, 200), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(s[B].axes[0])
    region = po.lower(s, [A, B], target="llvm").body
    assert region_work(region.loop) == 300 * 200
    assert runs_on_threads(region, 300 * 200) and not runs_on_threads(region, 300 * 200 + 1)
    assert runs_on_threads(region) == (300 * 200 >= PARALLEL_MIN_WORK)
    at_limit = po.build(s, [A, B], num_threads=2, parallel_min_work=300 * 200)
    above = po.build(s, [A, B], num_threads=2, parallel_min_work=300 * 200 + 1)
    assert "polyopt_parallel" in at_limit.llvm_ir and "polyopt_parallel" not in above.llvm_ir
    a = np.random.default_rng(1).standard_normal((300, 200)).astype(np.float32)
    for f in (at_limit, above):
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_array_equal(b, a + 1)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_a_bad_minimum_is_refused(bad):
    with pytest.raises(InvalidArgumentError, match="parallel_min_work"):
        _scaled(6, 40, parallel_min_work=bad)


def test_a_kernel_with_small_loops_opens_no_session():
    A = po.placeholder((8, 16), name="A")
    B = po.compute((8, 16), lambda i, j: A[i, j] * 3.0, name="B")
    C = po.compute((8, 16), lambda i, j: B[i, j] + A[i, j], name="C")
    s = po.create_schedule(C)
    for t in (B, C):
        s[t].parallel(s[t].axes[0])
    assert "polyopt_session" not in po.build(s, [A, C], num_threads=2).llvm_ir
    forced = po.build(s, [A, C], num_threads=2, parallel_min_work=0)
    assert "polyopt_session_begin" in forced.llvm_ir
    a = np.arange(128, dtype=np.float32).reshape(8, 16)
    c = np.zeros_like(a)
    forced(a, c)
    np.testing.assert_array_equal(c, a * 4)


UNEVEN = textwrap.dedent("""
    import numpy as np, polyopt as po
    # row i sums i + 1 products: pieces of equal trip counts take unequal times, and
    # 397 rows are no multiple of the pieces
    from polyopt.target.llvm.threadpool import parallel_session
    n = 397
    A = po.placeholder((n, n), name="A")
    x = po.placeholder((n,), name="x")
    k = po.reduce_axis((0, n), name="k")
    L = po.compute((n, n), lambda i, j: po.if_then_else(j <= i, A[i, j], 0.0), name="L")
    y = po.compute((n,), lambda i: po.sum(L[i, k] * x[k], axis=k), name="y")
    s = po.create_schedule(y)
    s[L].compute_inline()
    s[y].parallel(s[y].axes[0])
    f = po.build(s, [A, x, y], num_threads=2, parallel_min_work=0)
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (n, n)).astype(np.float32)
    v = rng.integers(-3, 4, n).astype(np.float32)
    want = np.tril(a) @ v  # small integers: every order of the sums is exact
    def check():
        out = np.full(n, np.nan, np.float32)
        f(a, v, out)
        assert np.array_equal(out, want), np.abs(out - want).max()
    for _ in range(100):  # workers asleep between calls
        check()
    with parallel_session(2):  # workers awake: they take pieces
        for _ in range(200):
            check()
    print("ok")
""")


@pytest.mark.parametrize("drain_spin, backoff", [("0", "0"), ("4000", "16"),
                                                  ("0", "100000")])
def test_uneven_pieces_with_the_caller_sleeping_or_spinning(drain_spin, backoff):
    """``POLYOPT_DRAIN_SPIN=0``: the caller sleeps at once whenever a worker is still
    running a piece, and the last worker out wakes it; with a large back-off, a stall
    sends the following regions to the caller alone.  Every call's numbers are right."""
    env = {**os.environ, "POLYOPT_DRAIN_SPIN": drain_spin, "OMP_WAIT_POLICY": "PASSIVE",
           "POLYOPT_STALL_BACKOFF": backoff, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", UNEVEN], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
