"""s.expand_scalar: a C kernel's scalar temporary kept in the array elements its values
are stored to; exact dataflow check (accepted and refused), numbers against NumPy and
the default schedule, and auto_schedule applying it (ludcmp gets lu's schedule)."""

from pathlib import Path

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.deps.counterexample import ValueSource
from testlib.errors import read_change, refused

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"

ROWSUM = """
#define N 10
void rowsum(int n, double A[N][N], double y[N], double z[N]) {
  int i, j;
  double w;
#pragma scop
  for (i = 0; i < n; i++) {
    w = 0.0;
    for (j = 0; j < n; j++)
      w += A[i][j];
    y[i] = w;
    %s
  }
#pragma endscop
}"""


def _run(kernel, schedule, sizes, seed=3, dominant=False):
    values = arguments(kernel, sizes, seed=seed)
    if dominant:  # no pivot near 0
        values["A"] += values["A"].shape[0] * np.eye(values["A"].shape[0])
    call_polyopt(kernel, po.build(schedule), values)
    return values


def test_row_sums_live_in_the_output_and_match_numpy():
    kernel = po.from_c(ROWSUM % "")
    s = po.create_schedule(kernel)
    s.expand_scalar("w")
    assert s.script() == 's.expand_scalar("w")'
    (init, update) = s.program.statements
    assert init.writes[0].relation.is_equal(isl.Map(
        "[n] -> { S0[i] -> y[i] : 0 <= i < n }"))
    assert update.writes[0].relation.is_equal(isl.Map(
        "[n] -> { S1[i, j] -> y[i] : 0 <= i < n and 0 <= j < n }"))
    # the copy y[i] = w became y[i] = y[i] and is gone; no statement touches w
    assert [st.name for st in s.program.statements] == ["S0", "S1"]
    assert not any(a.array == "w" for st in s.program.statements for a in st.accesses)
    values = _run(kernel, s, {"n": 7})
    np.testing.assert_allclose(values["y"][:7], values["A"][:7, :7].sum(axis=1), rtol=1e-14)


def test_the_expanded_rows_are_independent():
    """Before, every row's sum goes through w: the outer loop carries a dependence;
    after, it carries none and may run in parallel (checked exactly)."""
    kernel = po.from_c(ROWSUM % "")
    before = po.create_schedule(kernel)
    with pytest.raises(po.IllegalScheduleError):
        before["S0"].parallel("i")
    s = po.create_schedule(kernel)
    s.expand_scalar("w")
    s["S0"].parallel("i")
    values = _run(kernel, s, {"n": 9})
    np.testing.assert_allclose(values["y"][:9], values["A"][:9, :9].sum(axis=1), rtol=1e-14)


def test_a_value_stored_twice_is_refused():
    """z[i] = w would become z[i] = z[i]: the check sees the read change."""
    kernel = po.from_c(ROWSUM % "z[i] = w;")
    s = po.create_schedule(kernel)
    err = refused(po.ChangedValuesError, lambda: s.expand_scalar("w"))
    assert (err.primitive, err.what) == ('s.expand_scalar("w")', "reads")
    assert read_change(err) == ("S3[i=0]", "w[]", ValueSource("entry", "z[0]"),
                                ValueSource("written", "S1[i=0, j=0]"))
    assert s.script() == ""


def test_an_accumulator_whose_store_reads_the_element_is_refused():
    """symm: C[i][j] = beta * C[i][j] + ... + alpha * acc; keeping acc in C[i][j] would
    make that read see the sum, not C's value."""
    kernel = po.from_c(str(POLYBENCH / "symm.c"), defines={"M": 7, "N": 9})
    s = po.create_schedule(kernel)
    err = refused(po.ChangedValuesError, lambda: s.expand_scalar("acc"))
    assert err.what == "reads" and read_change(err)[1:] == (
        "C[1, 0]", ValueSource("written", "S2[i=1, j=0, k=0]"), ValueSource("entry", "C[1, 0]"))


def test_refusals_say_what_to_do():
    kernel = po.from_c(ROWSUM % "")
    s = po.create_schedule(kernel)
    with pytest.raises(po.ScalarExpansionError) as refused:
        s.expand_scalar("A")
    assert (refused.value.scalar, refused.value.problem) == ("A", "not_a_scalar")
    with pytest.raises(po.InvalidArgumentError, match="no array named 'v'"):
        s.expand_scalar("v")
    s.cache_read("A", "local", ["S1"])
    with pytest.raises(po.PrimitiveOrderError) as refused:
        s.expand_scalar("w")
    assert (refused.value.primitive, refused.value.before) == (
        "expand_scalar", "compute_inline, compute_at, caches, rfactor")
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1, name="B")
    with pytest.raises(po.InPlaceKernelError) as refused:
        po.create_schedule(B).expand_scalar("B")
    assert refused.value.primitive == "expand_scalar"


def test_ludcmp_becomes_lu_and_two_substitutions():
    kernel = po.from_c(str(POLYBENCH / "ludcmp.c"), defines={"N": 13})
    s = po.create_schedule(kernel)
    s.expand_scalar("w")
    assert [f"{st.name}: {st.target} = {st.value}" for st in s.program.statements] == [
        "S1: A[i, j] = A[i, j] - A[i, k] * A[k, j]",
        "S2: A[i, j] = A[i, j] / A[j, j]",
        "S4: A[i, j] = A[i, j] - A[i, k] * A[k, j]",
        "S6: y[i] = b[i]",
        "S7: y[i] = y[i] - A[i, j] * y[j]",
        "S9: x[0 - i] = y[-i]",
        "S10: x[0 - i] = x[0 - i] - A[-i, j] * x[j]",
        "S11: x[-i] = x[0 - i] / A[-i, -i]"]
    expected = _run(kernel, po.create_schedule(kernel), {"n": 13}, dominant=True)
    for schedule in (s, po.auto_schedule(kernel, cache_bytes=4096)):
        actual = _run(kernel, schedule, {"n": 13}, dominant=True)
        for name in ("A", "x", "y"):  # the same operations per element; its `-=` may be
            # reassociated and contracted (the README's floating-point rule)
            np.testing.assert_allclose(actual[name], expected[name], rtol=1e-13, atol=1e-13)


def test_auto_schedule_expands_then_tiles_ludcmp_like_lu():
    kernel = po.from_c(str(POLYBENCH / "ludcmp.c"), defines={"N": 29})
    s = po.auto_schedule(kernel, cache_bytes=4096)
    report = str(s.auto_report)
    assert s.script().startswith('s.expand_scalar("w")\n')
    assert "scalar w expanded into the elements its values are stored to" in report
    assert "statements distributed inside the tile" in report
    assert s.is_legal() and not s.auto_report.fell_back
    off = po.auto_schedule(kernel, cache_bytes=4096, expand_scalars=False)
    assert "expand_scalar" not in off.script() and "tiled" not in str(off.auto_report)


TOTAL = """
#define N 10
void total(int n, double A[N][N], double y[N]) {
  int i, j;
  double w;
#pragma scop
  w = 0.0;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      w += A[i][j];
  y[0] = w;
#pragma endscop
}"""


def test_into_a_new_array_by_the_outer_loop():
    kernel = po.from_c(ROWSUM % "z[i] = w;")  # stored twice: no element to live in
    s = po.create_schedule(kernel)
    s.expand_scalar("w", dims=1)
    assert s.script() == 's.expand_scalar("w", dims=1)'
    new = s.program.array("w_x")
    assert new.role == "compute" and [str(e) for e in new.shape] == ["n"]
    update = s.program.statement("S1")
    assert update.writes[0].relation.is_equal(isl.Map(
        "[n] -> { S1[i, j] -> w_x[i] : 0 <= i < n and 0 <= j < n }"))
    s["S0"].parallel("i")  # each row has its own cell now
    values = _run(kernel, s, {"n": 8})
    sums = values["A"][:8, :8].sum(axis=1)
    np.testing.assert_allclose(values["y"][:8], sums, rtol=1e-14)
    np.testing.assert_allclose(values["z"][:8], sums, rtol=1e-14)


PREFIX = """
#define N 10
void prefix(int n, double A[N][N], double y[N]) {
  int i, j;
  double w;
#pragma scop
  for (i = 0; i < n; i++) {
    if (i == 0)
      w = 0.0;
    for (j = 0; j < n; j++)
      w += A[i][j];
    y[i] = w;
  }
#pragma endscop
}"""


def test_a_value_carried_across_the_outer_loop_is_not_split_by_it():
    """Running sums over the rows: w's live range spans the whole i loop."""
    kernel = po.from_c(PREFIX)
    s = po.create_schedule(kernel)
    err = refused(po.ChangedValuesError, lambda: s.expand_scalar("w", dims=1))
    assert err.what == "reads" and read_change(err) == (
        "S1[i=1, j=0]", "w[]", ValueSource("entry", "w_x[1]"),
        ValueSource("written", "S1[i=0, j=1]"))
    err = refused(po.ChangedValuesError, lambda: s.expand_scalar("w"))
    assert err.what == "reads" and read_change(err)[:3] == (
        "S1[i=1, j=0]", "w[]", ValueSource("entry", "y[1]"))
    with pytest.raises(po.InvalidArgumentError, match="dims must be a positive integer"):
        s.expand_scalar("w", dims=0)
    assert s.script() == ""
    values = _run(kernel, s, {"n": 6})
    np.testing.assert_allclose(values["y"][:6], np.cumsum(values["A"][:6, :6].sum(axis=1)),
                               rtol=1e-13)


def test_a_scalar_outside_every_loop_has_no_loop_to_expand_by():
    kernel = po.from_c(TOTAL)
    s = po.create_schedule(kernel)
    with pytest.raises(po.ScalarExpansionError) as refused:
        s.expand_scalar("w", dims=1)
    assert (refused.value.scalar, refused.value.problem, refused.value.dims) == (
        "w", "too_few_loops", 1)
    s.expand_scalar("w")  # its one live range ends in y[0]
    values = _run(kernel, s, {"n": 6})
    np.testing.assert_allclose(values["y"][0], values["A"][:6, :6].sum(), rtol=1e-14)


SWEEPS = """
#define W 8
#define H 8
void sweeps(int w, int h, double A[W][H], double B[W][H]) {
  int i, j;
  double y;
#pragma scop
  for (i = 0; i < w; i++) {
    y = 0.0;
    for (j = 0; j < h; j++) {
      y = 0.5 * y + A[i][j];
      B[i][j] = y;
    }
  }
  for (j = 0; j < h; j++) {
    %s
    for (i = 0; i < w; i++) {
      y = 0.25 * y + B[i][j];
      A[i][j] = y;
    }
  }
#pragma endscop
}"""


def _sweeps_expected(a, b, w, h, reset=True):
    a, b = a.copy(), b.copy()
    for i in range(w):
        y = 0.0
        for j in range(h):
            y = 0.5 * y + a[i, j]
            b[i, j] = y
    for j in range(h):
        y = 0.0 if reset else y
        for i in range(w):
            y = 0.25 * y + b[i, j]
            a[i, j] = y
    return a, b


def test_each_live_range_gets_an_array_of_its_own():
    """deriche's pattern: ``y`` serves a sweep along rows, then (reset) one along
    columns: no value flows between them, so each gets its array (``w`` then ``h``
    elements, not ``max(w, h)``), and the numbers stay the same at odd sizes."""
    kernel = po.from_c(SWEEPS % "y = 0.0;")
    s = po.create_schedule(kernel)
    s.expand_scalar("y", dims=1)
    shapes = {a.name: [str(e) for e in a.shape] for a in s.program.arrays
              if a.name.startswith("y_x")}
    assert shapes == {"y_x": ["w"], "y_x_1": ["h"]}
    for sizes in ({"w": 5, "h": 7}, {"w": 7, "h": 3}):
        values = _run(kernel, s, sizes)
        start = arguments(kernel, sizes, seed=3)
        a, b = _sweeps_expected(start["A"], start["B"], sizes["w"], sizes["h"])
        np.testing.assert_array_equal(values["A"], a)
        np.testing.assert_array_equal(values["B"], b)


def test_one_live_range_over_loops_of_different_ranges_is_refused_by_name():
    """Without the reset, the column sweep starts from the row sweep's last value: one
    live range over both outer loops would need ``max(w, h)`` elements: refused."""
    s = po.create_schedule(po.from_c(SWEEPS % ""))
    with pytest.raises(po.PiecewiseBoundError) as refused:
        s.expand_scalar("y", dims=1)
    assert refused.value.primitive == "expand_scalar"
    assert "(w)" in refused.value.bound and "(h)" in refused.value.bound  # its two pieces


def test_several_scalars_in_one_step_with_one_check():
    """deriche's ten scalars in one step: the script has one line, the numbers are the
    default schedule's, bit for bit (small odd sizes)."""
    kernel = po.from_c(str(POLYBENCH / "deriche.c"), defines={"W": 7, "H": 5})
    names = ["tm1", "tp1", "tp2", "xm1", "xp1", "xp2", "ym1", "ym2", "yp1", "yp2"]
    s = po.create_schedule(kernel)
    s.expand_scalar(names, dims=1)
    assert s.script() == f"s.expand_scalar({str(names).replace(chr(39), chr(34))}, dims=1)"
    expected = _run(kernel, po.create_schedule(kernel), {"w": 7, "h": 5})
    actual = _run(kernel, s, {"w": 7, "h": 5})
    for name in ("imgOut", "y1", "y2"):
        np.testing.assert_array_equal(actual[name], expected[name])


def test_a_list_is_refused_when_one_of_its_scalars_is():
    s = po.create_schedule(po.from_c(SWEEPS % "y = 0.0;"))
    with pytest.raises(po.ScalarExpansionError) as refused:
        s.expand_scalar(["y", "A"], dims=1)
    assert (refused.value.scalar, refused.value.problem) == ("A", "not_a_scalar")
    with pytest.raises(po.InvalidArgumentError, match="list of names"):
        s.expand_scalar([], dims=1)
    with pytest.raises(po.InvalidArgumentError, match="distinct names"):
        s.expand_scalar(["y", "y"], dims=1)
    assert s.script() == ""


def test_auto_schedule_expands_symms_accumulator_into_a_new_array():
    """symm's acc cannot live in C[i][j] (the store reads C's old value there): it gets a
    new array over (i, j), and the (i, j, k) nest of its sum is then tiled."""
    kernel = po.from_c(str(POLYBENCH / "symm.c"), defines={"M": 7, "N": 9})
    s = po.auto_schedule(kernel, cache_bytes=64)
    report = str(s.auto_report)
    assert s.script().startswith('s.expand_scalar("acc", dims=2)\n')
    assert "scalar acc expanded into a new array indexed by the 2 loops around each of its " \
           "statements" in report
    assert [str(e) for e in s.program.array("acc_x").shape] == ["m", "n"]
    assert s.is_legal() and not s.auto_report.fell_back
    expected = _run(kernel, po.create_schedule(kernel), {"m": 7, "n": 9})
    actual = _run(kernel, s, {"m": 7, "n": 9})
    np.testing.assert_allclose(actual["C"], expected["C"], rtol=1e-13)


def test_a_new_array_is_empty_where_its_loops_are():
    # the rows 2 <= i < n - 2: n - 4 of them, none (not -1) at n = 3, as the kernel runs
    kernel = po.from_c(ROWSUM.replace("for (i = 0; i < n; i++)", "for (i = 2; i < n - 2; i++)")
                       % "z[i] = w;")
    s = po.create_schedule(kernel)
    s.expand_scalar("w", dims=1)
    assert str(s.program.array("w_x").shape[0]) == "maximum(0, n - 4)"
    for n in (3, 4, 9):
        expected = arguments(kernel, {"n": n}, seed=3)
        sums = expected["A"][2:n - 2, :n].sum(axis=1)
        values = _run(kernel, s, {"n": n})
        np.testing.assert_allclose(values["z"][2:n - 2], sums, rtol=1e-14)
        np.testing.assert_array_equal(values["A"], expected["A"])
