"""``auto_schedule`` orders a nest's statements so that they can run in loops of their
own inside a tile (``distributable_order``): lu's division ``A[i][k] /= A[k][k]`` goes
before the row updates that read ``A[i][k]``, and the updates' stride-1 loop over ``j``
is vectorized.  Checked against the source order, bit for bit."""

from pathlib import Path

import islpy as isl
import numpy as np

import polyopt as po
from polyopt.schedules.auto_affine import Rows
from polyopt.schedules.auto_levels import distributable_order

from testlib.numeric import assert_c_same_as_default

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"


def _dominant(values):
    """A diagonally dominant matrix: no pivot near 0."""
    n = values["A"].shape[0]
    values["A"] += n * np.eye(n)


def test_lu_updates_vectorize_after_the_division_they_read():
    kernel = po.from_c(str(POLYBENCH / "lu.c"), defines={"N": 29})
    s = po.auto_schedule(kernel, cache_bytes=4096)
    report = str(s.auto_report)
    assert "statements ordered S1, S0, S2 at their last level" in report
    assert "statements distributed inside the tile (c3 above j.inner); innermost loop " \
           "j.inner vectorized" in report
    assert 's["S1"].transform("[n] -> { [i, j] -> [c0 = j, i, j, c3 = 0] }")' in s.script()
    assert s.is_legal() and not s.auto_report.fell_back
    assert_c_same_as_default(kernel, s, {"n": 29}, seed=11, prepare=_dominant, arrays=["A"],
                             exact=True)


def test_without_distribution_the_order_is_isls():
    kernel = po.from_c(str(POLYBENCH / "lu.c"), defines={"N": 13})
    s = po.auto_schedule(kernel, cache_bytes=4096, distribute=False)
    assert "statements ordered" not in str(s.auto_report)
    assert 's["S1"].transform("[n] -> { [i, j] -> [c0 = j, i, j, c3 = 1] }")' in s.script()
    assert_c_same_as_default(kernel, s, {"n": 13}, seed=11, prepare=_dominant, arrays=["A"],
                             exact=True)


def _rows(program, values: dict) -> Rows:
    """Rows from text: ``{"S0": ["i", "j", 0]}`` (a loop level by its expression)."""
    rows = {}
    for name, row in values.items():
        space = program.statement(name).domain.get_space()
        dims = ", ".join(space.get_var_names(isl.dim_type.set))
        params = ", ".join(space.get_var_names(isl.dim_type.param))
        rows[name] = [v if isinstance(v, int) else
                      isl.PwAff(f"[{params}] -> {{ {name}[{dims}] -> [({v})] }}") for v in row]
    depth = len(next(iter(rows.values())))
    return Rows(rows, [True] * (depth - 1) + [False], [1] * (depth - 1) + [None])


def test_the_order_puts_a_statement_before_its_readers_in_one_outer_iteration():
    @po.kernel
    def rows_of_two(A: po.f64[10, 10], B: po.f64[10, 10]):
        for i in range(1, 10):
            for j in range(10):
                A[i, j] = B[i - 1, j] + 1.0
                B[i, j] = A[i, j] * 2.0
    s = po.create_schedule(rows_of_two)
    program, deps = s.program, s.deps
    serves = _rows(program, {"S0": ["i", "j", 0], "S1": ["i", "j", 1]})
    assert distributable_order(program, deps, serves) is serves
    swapped = _rows(program, {"S0": ["i", "j", 1], "S1": ["i", "j", 0]})
    ordered = distributable_order(program, deps, swapped)
    assert (ordered.rows["S0"][2], ordered.rows["S1"][2]) == (0, 1)  # A[i, j] first


def test_needs_in_a_cycle_keep_the_rows():
    @po.kernel
    def chain(A: po.f64[10], B: po.f64[10]):
        for i in range(1, 10):
            A[i] = B[i - 1] + 1.0
            B[i] = A[i] * 2.0
    s = po.create_schedule(chain)
    # one loop: S0 feeds S1 (A[i]) and S1 feeds S0 one i later (B[i - 1])
    swapped = _rows(s.program, {"S0": ["i", 1], "S1": ["i", 0]})
    assert distributable_order(s.program, s.deps, swapped) is swapped
