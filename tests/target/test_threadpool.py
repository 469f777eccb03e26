"""polyopt's thread pool (polyopt.target.llvm.threadpool): parallel loops compute the
serial numbers on any thread count, from several Python threads at once, after a fork,
and as one self-contained object file; idle workers sleep under OMP_WAIT_POLICY=PASSIVE."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import polyopt as po

from testlib.numeric import mismatch

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"),
                                reason="the pool sleeps on Linux futexes")


def _scaled():
    n = po.var("n")
    A = po.placeholder((n, 33), name="A")
    B = po.compute((n, 33), lambda i, j: A[i, j] * 3.0 + 1.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(B.op.axis[0])
    return s, [A, B]


@pytest.mark.parametrize("threads", [1, 2, 3, 5])
@pytest.mark.parametrize("rows", [0, 1, 2, 7, 100])
def test_parallel_loop_computes_every_row_once(threads, rows):
    s, args = _scaled()
    f = po.build(s, args, num_threads=threads, parallel_min_work=0)
    assert f.llvm_ir.count('call void @"polyopt_parallel"') == 1
    a = np.random.default_rng(rows).standard_normal((rows, 33)).astype(np.float32)
    b = np.full_like(a, np.nan)
    f(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)


def test_kernels_called_from_several_python_threads_at_once():
    s, args = _scaled()
    f = po.build(s, args, num_threads=2, parallel_min_work=0)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((301, 33)).astype(np.float32) for _ in range(4)]
    failures = []

    def run(a):
        b = np.empty_like(a)
        for _ in range(200):
            b[:] = np.nan
            f(a, b)
            if mismatch(b, a * 3 + 1, rtol=1e-6, atol=1e-8) is not None:
                failures.append(a)
                return

    workers = [threading.Thread(target=run, args=(a,)) for a in inputs]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=120)
    assert not any(w.is_alive() for w in workers), "a caller never returned"
    assert not failures


PROBE = textwrap.dedent("""
    import os, sys, time
    import numpy as np, polyopt as po
    A = po.placeholder((500, 64), name="A")
    B = po.compute((500, 64), lambda i, j: A[i, j] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(s[B].axes[0])
    f = po.build(s, [A, B], num_threads=2, parallel_min_work=0)
    a = np.arange(500 * 64, dtype=np.float32).reshape(500, 64)
    b = np.zeros_like(a)
    f(a, b)
    assert (b == 2 * a).all()
    if sys.argv[1] == "fork":  # the child makes its own workers
        pid = os.fork()
        if pid == 0:
            b[:] = 0
            for _ in range(50):
                f(a, b)
            os._exit(0 if (b == 2 * a).all() else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    else:  # idle workers: CPU ticks of the other threads over half a second
        from polyopt.target.llvm.threadpool import parallel_session

        def ticks():
            found = {}
            for tid in os.listdir("/proc/self/task"):
                fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
                found[tid] = int(fields[11]) + int(fields[12])
            return found
        def spun():  # the most CPU ticks of another thread over half a second
            before = ticks()
            time.sleep(0.5)
            after = ticks()
            me = str(os.getpid())
            return max(after[t] - before.get(t, 0) for t in after if t != me)

        for _ in range(100):
            f(a, b)
        time.sleep(0.05)
        if sys.argv[1] == "session":  # awake (spinning) in a session, asleep after it
            with parallel_session(2):
                f(a, b)  # the region wakes the worker, which then waits spinning
                inside = spun()
            time.sleep(0.05)
            print(f"{inside} {spun()}")
        elif sys.argv[1] == "lazy":  # a session without a region wakes nobody
            with parallel_session(2):
                print(spun())
        else:
            print(spun())
""")


def _probe(mode, **env):
    done = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1", **env})
    assert done.returncode == 0, done.stderr
    return tuple(int(word) for word in done.stdout.split())


def test_a_forked_child_runs_parallel_loops():
    assert _probe("fork") == (0,)


def test_idle_workers_sleep_when_the_wait_policy_is_passive():
    assert _probe("idle", OMP_WAIT_POLICY="PASSIVE")[0] <= 1  # ticks of 10 ms: none spun


def test_workers_stay_awake_in_a_session_and_sleep_after_it():
    # (a session's spin made longer than the half second measured)
    inside, after = _probe("session", OMP_WAIT_POLICY="PASSIVE",
                           POLYOPT_SESSION_SPIN="2000000000")
    assert inside >= 10 and after <= 1  # ticks of 10 ms over half a second each


def test_workers_in_a_session_sleep_after_their_spin():
    inside, after = _probe("session", OMP_WAIT_POLICY="PASSIVE", POLYOPT_SESSION_SPIN="0")
    assert inside <= 1 and after <= 1


def test_a_session_without_a_parallel_loop_wakes_no_worker():
    assert _probe("lazy", OMP_WAIT_POLICY="PASSIVE")[0] <= 1


def _two_loops(threads):
    n = po.var("n")
    A = po.placeholder((n, 17), name="A")
    B = po.compute((n, 17), lambda i, j: A[i, j] * 2.0, name="B")
    C = po.compute((n, 17), lambda i, j: B[n - 1 - i, j] + A[i, j], name="C")
    s = po.create_schedule(C)
    s[B].parallel(B.op.axis[0])
    s[C].parallel(C.op.axis[0])
    return po.build(s, [A, C], num_threads=threads, parallel_min_work=0)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_kernel_running_two_parallel_loops_keeps_the_workers_in_one_session(threads):
    f = _two_loops(threads)
    ir = f.llvm_ir
    sessions = 0 if threads == 1 else 1
    assert ir.count('call void @"polyopt_session_begin"') == sessions
    assert ir.count('call void @"polyopt_session_end"') == sessions
    rng = np.random.default_rng(threads)
    for rows in (1, 5, 300):
        a = rng.standard_normal((rows, 17)).astype(np.float32)
        c = np.full_like(a, np.nan)
        f(a, c)
        np.testing.assert_allclose(c, 2 * a[::-1] + a, rtol=1e-6)


def test_one_parallel_loop_needs_no_session():
    s, args = _scaled()
    assert "polyopt_session" not in po.build(s, args, num_threads=2, parallel_min_work=0).llvm_ir


def test_a_parallel_loop_inside_a_serial_loop_runs_several_regions():
    from polyopt.ast.nodes import Block, For, Int, Name, Op, Outlined, Run
    from polyopt.target.llvm.parallel import runs_several_regions

    def loop(var, body, kind="serial"):
        return For(var, Int(0), Op("<", (Name(var), Int(8))), 1, body, kind)

    region = Outlined(loop("i", Run("S", (Name("i"),)), "parallel"))
    assert not runs_several_regions(region)
    assert runs_several_regions(Block((region, region)))
    assert runs_several_regions(loop("t", region))
    assert not runs_several_regions(loop("t", Run("S", (Name("t"),))))


@pytest.mark.skipif(shutil.which("cc") is None, reason="links the object with cc")
def test_an_object_file_carries_the_pool(tmp_path):
    from polyopt.target.native import LoadedKernel, read_signature

    s, args = _scaled()
    po.build(s, args, num_threads=2, parallel_min_work=0).export_library(tmp_path / "k.o")
    subprocess.run(["cc", "-shared", "-o", str(tmp_path / "k.so"), str(tmp_path / "k.o"),
                    "-lpthread"], check=True)  # nothing else: the pool is in the object
    library = ctypes.CDLL(str(tmp_path / "k.so"))
    assert library.polyopt_threads(3) == 3
    f = LoadedKernel(library, read_signature(str(tmp_path / "k.o.json"))[0])
    a = np.random.default_rng(2).standard_normal((41, 33)).astype(np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)


def test_a_strided_parallel_loop_with_no_trip_runs_none():
    # range(2, N - 2, 2) at N = 3 or 4: the last trip is below the first by less than a
    # step (a trip count rounded from -1/2 up to 1 wrote A[2]: property case 101967)
    N = po.var("N")

    @po.kernel
    def bump(A: po.f64[N]):
        for i in range(2, N - 2, 2):
            A[i] = A[i] + 1.0

    s = po.create_schedule(bump)
    s["S0"].parallel("i")
    f = po.build(s, num_threads=2, parallel_min_work=0)
    for n in range(0, 12):
        a = np.arange(n, dtype=np.float64)
        expected = a.copy()
        expected[2:n - 2:2] += 1.0
        f(a)  # N from the array's shape
        np.testing.assert_array_equal(a, expected)
