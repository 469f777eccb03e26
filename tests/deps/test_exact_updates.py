"""Exact updates (max/min of integers): which statements form a group, which schedules
the kernel checker then accepts (computing the same bits) and which it still refuses."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.deps.exact_updates import exact_update_groups, relaxed_updates
from polyopt.frontend.c_native import arguments, call_polyopt
from testlib.errors import refused

NUSSINOV = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "nussinov.c"

ROWMAX = """
#define N 10
void rowmax(int n, %(t)s A[N][N], %(t)s m[N]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      m[i] = %(value)s;
#pragma endscop
}"""


def _rowmax(value="m[i] >= A[i][j] ? m[i] : A[i][j]", t="int"):
    return po.from_c(ROWMAX % {"t": t, "value": value})


def test_groups_of_exact_updates():
    assert exact_update_groups(po.create_schedule(_rowmax()).program) == {
        ("m", "maximum"): ("S0",)}
    minimum = _rowmax("m[i] <= A[i][j] ? m[i] : A[i][j]")
    assert exact_update_groups(po.create_schedule(minimum).program) == {
        ("m", "minimum"): ("S0",)}
    nussinov = po.from_c(str(NUSSINOV), defines={"N": 9})
    assert exact_update_groups(po.create_schedule(nussinov).program) == {
        ("table", "maximum"): ("S0", "S1", "S2", "S3", "S4")}


@pytest.mark.parametrize("value, t", [
    ("m[i] >= A[i][j] ? m[i] : A[i][j]", "double"),    # a NaN makes the order matter
    ("m[i] >= m[i] + A[i][j] ? m[i] : m[i] + A[i][j]", "int"),  # reads what it updates
    ("m[i] + A[i][j]", "int"),                          # a sum of integers: not max/min
])
def test_not_exact_updates(value, t):
    s = po.create_schedule(_rowmax(value, t))
    assert exact_update_groups(s.program) == {}
    assert relaxed_updates(s.program, s.deps) is s.deps


def _nussinov_numbers(kernel, schedule, n):
    values = arguments(kernel, {"n": n}, seed=3)
    values["seq"][...] = np.random.default_rng(2).integers(0, 4, values["seq"].shape)
    values["table"][...] = 0
    call_polyopt(kernel, po.build(schedule), values)
    return values["table"]


def _nussinov_script(s0_step="j", vector=True):
    rows = {"S0": f"[i, j] -> [c0 = i, c1 = {s0_step}, c2 = 0, c3 = 0]",
            "S1": "[i, j] -> [c0 = i, c1 = j, c2 = 0, c3 = 1]",
            "S2": "[i, j] -> [c0 = i, c1 = j, c2 = 0, c3 = 2]",
            "S3": "[i, j] -> [c0 = i, c1 = j, c2 = 0, c3 = 3]",
            "S4": "[i, j, k] -> [c0 = i, c1 = k, c2 = 1, c3 = j]"}
    lines = [f's["{x}"].compute_root()' for x in ("S1", "S2", "S3", "S4")]
    lines += [f's["{x}"].transform("[n] -> {{ {m} }}")' for x, m in rows.items()]
    lines += [f's["{x}"].compute_with("S4", "c1")' for x in ("S0", "S1", "S2", "S3")]
    return "\n".join(lines + (['s["S4"].vectorize("c3")'] if vector else []))


@pytest.mark.parametrize("n", [9, 14, 2])
def test_reordered_updates_are_accepted_and_give_the_same_bits(n):
    """nussinov's updates of a cell reordered (its reduction's k above j, the other
    updates at step j): accepted, vectorized, the same table bit for bit."""
    kernel = po.from_c(str(NUSSINOV), defines={"N": 14})
    s = po.create_schedule(kernel).replay(_nussinov_script())
    assert s.is_legal()
    np.testing.assert_array_equal(_nussinov_numbers(kernel, s, n),
                                  _nussinov_numbers(kernel, po.create_schedule(kernel), n))


def test_an_update_that_reads_a_cell_before_it_is_complete_is_refused():
    """S0 reads ``table[i][j - 1]``: at step ``i + 1`` that cell still awaits updates."""
    kernel = po.from_c(str(NUSSINOV), defines={"N": 9})
    err = refused(po.DependenceViolationError, lambda: po.create_schedule(kernel).replay(
        _nussinov_script(s0_step="-i + 1", vector=False)))
    assert err.violation.source.startswith("S0[") or err.violation.sink.startswith("S0[")


def test_reordering_floating_point_max_is_refused():
    kernel = _rowmax(t="double")
    s = po.create_schedule(kernel)
    with pytest.raises(po.IllegalScheduleError):
        s["S0"].transform("[n] -> { [i, j] -> [i, -j] }")


def test_reordering_integer_max_is_accepted_but_not_a_vectorized_cell():
    """The updates of ``m[i]`` may run backwards; a vector of them at once would race
    (marked loops are checked against the exact dependences)."""
    kernel = _rowmax()
    s = po.create_schedule(kernel)
    s["S0"].transform("[n] -> { [i, j] -> [i, -j] }")
    values = arguments(kernel, {"n": 7}, seed=4)
    expected = values["m"][:7].copy()
    expected = np.maximum(expected, values["A"][:7, :7].max(axis=1))
    call_polyopt(kernel, po.build(s), values)
    np.testing.assert_array_equal(values["m"][:7], expected)
    err = refused(po.LoopCarriesDependenceError, lambda: s["S0"].vectorize(s["S0"].axes[-1]))
    assert (err.transform.startswith('s["S0"].vectorize('), err.what) == (True,
                                                                        "vectorized loop")


RUNNING = """
#define N 10
void running(int n, int A[N][N], int m[N], int out[N][N]) {
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++) {
      m[i] = m[i] >= A[i][j] ? m[i] : A[i][j];
      %s
    }
#pragma endscop
}"""


@pytest.mark.parametrize("between, group", [
    ("out[i][j] = m[i];", {("m", "maximum"): ("S0",)}),   # a partial maximum is read
    ("m[i] = m[i] - 1;", {}),                             # a plain write in between
])
def test_updates_whose_order_is_observed_are_not_relaxed(between, group):
    """Reading a partial maximum, or writing the element between two updates, fixes
    the order of the updates: the dependences stay exact and reversing ``j`` is
    refused."""
    kernel = po.from_c(RUNNING % between)
    s = po.create_schedule(kernel)
    assert exact_update_groups(s.program) == group
    assert relaxed_updates(s.program, s.deps) is s.deps
    with pytest.raises(po.IllegalScheduleError):
        s["S0"].transform("[n] -> { [i, j] -> [i, -j, 0] }")
        s["S1"].transform("[n] -> { [i, j] -> [i, -j, 1] }")
