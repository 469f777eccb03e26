"""``strict_fp=True`` on an in-place kernel: its accumulations keep their written order
in the generated code too (no reassociation flags), so the automatic schedule computes
the sequential evaluation's bits (trisolv's ``x[i] -= L[i][j] * x[j]``)."""

from pathlib import Path

import numpy as np

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt

TRISOLV = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "trisolv.c"


def _sequential(L, b):
    x = np.zeros_like(b)
    for i in range(len(b)):
        x[i] = b[i]
        for j in range(i):
            x[i] -= L[i][j] * x[j]
        x[i] = x[i] / L[i][i]
    return x


def _solve(kernel, schedule, n):
    values = arguments(kernel, {"n": n}, seed=11)
    values["L"][...] = np.random.default_rng(n).uniform(-1, 1, values["L"].shape)
    values["L"][np.diag_indices(values["L"].shape[0])] += 4.0
    call_polyopt(kernel, po.build(schedule), values)
    return values["x"][:n], values["L"][:n, :n], values["b"][:n]


def test_strict_fp_kernels_keep_the_written_order_in_code():
    kernel = po.from_c(str(TRISOLV), defines={"N": 203})
    strict = po.create_schedule(kernel, strict_fp=True)
    assert strict.strict_fp and not po.create_schedule(kernel).strict_fp
    auto = po.auto_schedule(strict)
    assert auto.strict_fp
    assert "strict_fp" in str(po.lower(auto))
    x, L, b = _solve(kernel, auto, 203)
    np.testing.assert_array_equal(x, _sequential(L, b))


def test_without_strict_fp_the_row_sums_are_reassociated_within_rounding():
    kernel = po.from_c(str(TRISOLV), defines={"N": 203})
    x, L, b = _solve(kernel, po.auto_schedule(kernel), 203)
    np.testing.assert_allclose(x, _sequential(L, b), rtol=1e-12, atol=1e-12)
