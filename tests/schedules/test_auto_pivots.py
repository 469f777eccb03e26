"""auto_schedule's index-set splitting at pivots (Floyd-Warshall): the pivots found
from the accesses, the split schedule vectorized and parallel, the same numbers bit
for bit at odd sizes and on 2 threads, and the cases it leaves alone."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_pivots import pivots, split_map

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
N = po.var("N")


def _floyd():
    return po.from_c(str(POLYBENCH / "floyd-warshall.c"), defines={"N": 41})


def _paths(kernel, schedule, n, threads=1):
    values = arguments(kernel, {"n": n}, seed=3)
    rng = np.random.default_rng(n)
    path = rng.integers(1, 60, values["path"].shape).astype(np.float64)
    path[rng.random(path.shape) < 0.3] = 999.0  # no direct edge
    values["path"][...] = path
    call_polyopt(kernel, po.build(schedule, num_threads=threads), values)
    return values["path"]


def test_the_pivots_of_floyd_warshall_are_row_and_column_k():
    stmt = po.create_schedule(_floyd()).program.statements[0]
    assert pivots(stmt) == {1: "k", 2: "k"}
    assert split_map(stmt, ["n"], {2: "k"}) == (
        "[n] -> { [k, i, j] -> [k, i, j_part, j] : "
        "(j < k and j_part = 0 or j = k and j_part = 1 or j > k and j_part = 2) }")


@pytest.mark.parametrize("n,threads", [(41, 1), (17, 2), (2, 1), (1, 2)])
def test_floyd_warshall_is_split_vectorized_and_computes_the_same_paths(n, threads):
    kernel = _floyd()
    s = po.auto_schedule(kernel)
    script = s.script()
    assert "i_part" in script and "j_part" in script
    assert 's["S0"].vectorize("j")' in script and 's["S0"].parallel("i")' in script
    assert "index-set splitting (i at i = k, j at j = k)" in str(s.auto_report)
    expected = _paths(kernel, po.create_schedule(kernel), n)
    assert (expected < 999).sum() > (n * n) // 2 or n < 3  # paths were really shortened
    np.testing.assert_array_equal(_paths(kernel, s, n, threads), expected)


def test_the_split_can_be_turned_off():
    s = po.auto_schedule(_floyd(), split_pivots=False)
    assert "_part" not in s.script() and "vectorize" not in s.script()


def test_a_split_that_frees_no_vector_loop_is_not_taken():
    @po.kernel
    def running(A: po.f64[N, N]):
        for k in range(N):
            for i in range(N):
                for j in range(1, N):
                    A[i, j] = A[i, j - 1] + A[i, k]

    assert pivots(po.create_schedule(running).program.statements[0]) == {2: "k"}
    s = po.auto_schedule(running)
    assert "_part" not in s.script()
    assert "index-set splitting" not in str(s.auto_report)


def test_kernels_with_several_statements_are_left_alone():
    kernel = po.from_c(str(POLYBENCH / "lu.c"), defines={"N": 12})
    assert "_part" not in po.auto_schedule(kernel).script()


def test_parallel_false_leaves_the_split_serial():
    script = po.auto_schedule(_floyd(), parallel=False).script()
    assert 's["S0"].vectorize("j")' in script and "parallel" not in script
