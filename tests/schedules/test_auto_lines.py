"""auto_schedule's line sweeps (schedules/auto_lines.py): a recurrence along the
innermost loop next to an outer loop that carries nothing (ADI) runs blocks of lines
side by side (the free loop strip-mined, its points innermost); the
numbers are the original's, bit for bit, at odd sizes (partial blocks)."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_lines import LINES

ADI = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "adi.c"


def _run(kernel, schedule, sizes):
    values = arguments(kernel, sizes, seed=3)
    call_polyopt(kernel, po.build(schedule), values)
    return values


@pytest.mark.parametrize("n, steps", [(9, 3), (7, 1)])
def test_adi_lines_side_by_side_compute_the_original_numbers(n, steps):
    kernel = po.from_c(str(ADI), defines={"N": n, "TSTEPS": steps})
    s = po.auto_schedule(kernel)
    report = str(s.auto_report)
    assert f"{LINES} independent chains side by side" in report, report
    assert ('s["S3"].transform("[n, tsteps] -> { [t, i, j] -> [t, 0, o2, j, 3, 0, i] : '
            '-3 + i <= 4o2 <= i }")') in s.script()
    assert s.is_legal()
    assert "vectorize" not in s.script() and "parallel" not in s.script()
    sizes = {"n": n, "tsteps": steps}
    expected = _run(kernel, po.create_schedule(kernel), sizes)
    actual = _run(kernel, s, sizes)
    for name in ("u", "v", "p", "q"):
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    replayed = po.create_schedule(kernel).replay(s.script())
    for name, values in _run(kernel, replayed, sizes).items():
        if isinstance(values, np.ndarray):
            np.testing.assert_array_equal(values, expected[name], err_msg=name)


def test_lines_can_be_turned_off():
    kernel = po.from_c(str(ADI), defines={"N": 9, "TSTEPS": 2})
    s = po.auto_schedule(kernel, lines=False)
    assert "o2" not in s.script()
    assert "independent chains side by side in" not in str(s.auto_report)


def test_a_loop_that_carries_a_dependence_is_not_interleaved():
    """Gauss-Seidel along rows: row ``i`` reads row ``i - 1``, so ``i`` is not free
    and no lines run side by side; the schedule still computes the same numbers."""
    kernel = po.from_c("""
#define N 10
void rows(int n, double A[N][N]) {
  int i, j;
#pragma scop
  for (i = 1; i < n; i++)
    for (j = 1; j < n; j++)
      A[i][j] = (A[i][j - 1] + A[i - 1][j]) / 2.0;
#pragma endscop
}""")
    s = po.auto_schedule(kernel)
    assert "independent chains side by side in" not in str(s.auto_report)
    expected = _run(kernel, po.create_schedule(kernel), {"n": 9})
    np.testing.assert_array_equal(_run(kernel, s, {"n": 9})["A"], expected["A"])
