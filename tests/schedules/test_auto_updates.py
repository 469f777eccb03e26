"""auto_schedule on a table of exact updates (nussinov): its reduction loop swept above
the cell loop, vectorized; the same table bit for bit at small odd sizes; the pattern's
limits (other kernels keep their schedule; ``exact_updates=False``)."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_updates import update_sweep_rows

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"


def _table(kernel, schedule, n):
    values = arguments(kernel, {"n": n}, seed=7)
    values["seq"][...] = np.random.default_rng(5).integers(0, 4, values["seq"].shape)
    values["table"][...] = np.random.default_rng(6).integers(0, 3, values["table"].shape)
    call_polyopt(kernel, po.build(schedule), values)
    return values["table"]


@pytest.mark.parametrize("n", [13, 6, 1])
def test_nussinov_is_swept_and_computes_the_same_table(n):
    kernel = po.from_c(str(POLYBENCH / "nussinov.c"), defines={"N": 13})
    s = po.auto_schedule(kernel)
    script = s.script()
    assert 's["S4"].transform("[n] -> { [i, j, k] -> [c0 = i, c1 = k, c2 = 1, c3 = j] }")' \
        in script
    assert 's["S4"].vectorize("c3")' in script
    assert "any order gives the same bits" in str(s.auto_report)
    np.testing.assert_array_equal(_table(kernel, s, n),
                                  _table(kernel, po.create_schedule(kernel), n))


def test_the_sweep_can_be_turned_off():
    kernel = po.from_c(str(POLYBENCH / "nussinov.c"), defines={"N": 13})
    s = po.auto_schedule(kernel, exact_updates=False)
    assert "vectorize" not in s.script()


@pytest.mark.parametrize("name", ["floyd-warshall", "cholesky", "gemm"])
def test_other_kernels_are_not_that_pattern(name):
    kernel = po.from_c(str(POLYBENCH / f"{name}.c"), defines={"N": 8, "NI": 8, "NJ": 8,
                                                                "NK": 8})
    assert update_sweep_rows(po.create_schedule(kernel).program) is None
