"""auto_schedule on matrix-vector kernels (auto_distribute.streams_matrices): when the
affine schedule fuses no two passes over a matrix, each statement streams its matrix
along rows in a nest of its own (mvt's column walk ``A[j][i]`` interchanged); fused
passes (gemver) are kept.  Numbers against the original at odd sizes; a cache of 64
bytes (``cache_bytes``) makes these small matrices count as large ones."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_distribute import distributed_rows

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"


def _run(kernel, schedule, n):
    values = arguments(kernel, {"n": n}, seed=6)
    call_polyopt(kernel, po.build(schedule), values)
    return values


def test_a_statement_alone_in_its_nest_may_be_interchanged():
    program = po.create_schedule(po.from_c(str(POLYBENCH / "mvt.c"))).program
    assert distributed_rows(program) is None  # below the outermost loop: nothing moves
    assert distributed_rows(program, alone_moves=True) == [
        ("S0", "[n] -> { [i, j] -> [0, i, 0, j] }"),
        ("S1", "[n] -> { [i, j] -> [1, j, 1, i] }")]


@pytest.mark.parametrize("n", [9, 13, 1])
def test_mvt_streams_rows_and_computes_the_original_numbers(n):
    kernel = po.from_c(str(POLYBENCH / "mvt.c"), defines={"N": 13})
    s = po.auto_schedule(kernel, cache_bytes=64, jam_rows=0)  # (auto_jam: rows jammed)
    assert "matrix-vector work: rows streamed rather than tiled" in str(s.auto_report)
    assert 's["S1"].transform("[n] -> { [i, j] -> [1, j, 1, i] }")' in s.script()
    assert "split" not in s.script()
    assert s.is_legal()
    expected = _run(kernel, po.create_schedule(kernel), n)
    actual = _run(kernel, s, n)
    for name in ("x1", "x2"):  # the sums may be reassociated (contract, vector lanes)
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-13, err_msg=name)
    replayed = po.create_schedule(kernel).replay(s.script())
    np.testing.assert_array_equal(_run(kernel, replayed, n)["x2"], actual["x2"])


def test_fused_passes_over_a_matrix_are_kept():
    kernel = po.from_c(str(POLYBENCH / "gemver.c"), defines={"N": 11})
    s = po.auto_schedule(kernel, cache_bytes=64, jam_rows=0)
    assert "matrix-vector work" not in str(s.auto_report)
    assert "share all loops" in str(s.auto_report)
    expected = _run(kernel, po.create_schedule(kernel), 11)
    actual = _run(kernel, s, 11)
    for name in ("A", "x", "w"):
        np.testing.assert_allclose(actual[name], expected[name], rtol=1e-12, err_msg=name)


def test_streaming_can_be_turned_off_with_distribute():
    kernel = po.from_c(str(POLYBENCH / "mvt.c"), defines={"N": 13})
    s = po.auto_schedule(kernel, distribute=False, cache_bytes=64)
    assert "matrix-vector" not in str(s.auto_report)
