"""Legality of schedule primitives: refusals with concrete counterexamples and repairs,
the repaired schedules' numbers, ``check=False`` with ``s.check()``, and ``can_*``.

Counterexamples are the smallest parameter values, then the lexicographically first
pair of instances, so the messages below are exact.
"""

import numpy as np
import pytest

import polyopt as po
from testlib.errors import pair, refused
from testlib.numeric import assert_numbers
from testlib.schedules import assert_loops, axis_names, lowered, rand, run

N, M, T = po.var("N"), po.var("M"), po.var("T")


@po.kernel
def recurrence(A: po.f64[N]):
    for t in range(T):
        for i in range(1, N - 1):
            A[i] = A[i - 1] + A[i + 1]


def recurrence_reference(a, steps):
    a = a.copy()
    for _ in range(steps):
        for i in range(1, len(a) - 1):
            a[i] = a[i - 1] + a[i + 1]
    return a


RECURRENCE_SIZES = [(0, 2), (1, 3), (2, 2), (3, 0), (4, 1), (7, 3), (12, 5)]


def check_recurrence(s):
    """Same numbers as the Python loops (each element is the same sum, in the same order
    of its operands, so equality is exact)."""
    for n, steps in RECURRENCE_SIZES:
        a = np.random.default_rng(n).random(n) - 0.5
        expected = recurrence_reference(a, steps)
        po.build(s)(a, T=steps)
        assert_numbers(a, expected, exact=True)


def test_recurrence_default_schedule():
    s = po.create_schedule(recurrence)
    assert "A[i] = A[i - 1] + A[i + 1];" in lowered(s)
    check_recurrence(s)


def test_interchange_with_distance_one_minus_one_is_refused_with_skew_repair():
    s = po.create_schedule(recurrence)
    assert not s["S0"].can_reorder("i", "t")
    with pytest.raises(po.IllegalScheduleError) as info:
        s["S0"].reorder("i", "t")
    message = str(info.value)
    assert message == (
        's["S0"].reorder("i", "t") is illegal: S0[t=0, i=2] writes A[2] that S0[t=1, i=1] '
        "reads, but the new schedule runs the reader first (when N=4, T=2) [flow dependence "
        "S0 -> S0 through A; dependence distance (1, -1)]. Repair: skew i by t with factor 1 "
        "first (s['S0'].skew('t', 'i', 1)), so that the distance becomes non-negative")
    violation = info.value.violation
    assert (violation.dependence.kind, violation.dependence.array) == ("flow", "A")
    assert violation.source == "S0[t=0, i=2]" and violation.sink == "S0[t=1, i=1]"
    assert violation.distance == (1, -1) and violation.params == {"N": 4, "T": 2}
    assert s.steps == [] and axis_names(s["S0"]) == ["t", "i"]


def test_interchange_accepted_after_the_suggested_skew():
    s = po.create_schedule(recurrence)
    s["S0"].skew("t", "i", 1)
    assert_loops(s, "S0", "{ S0[t, i] -> [t, t + i] }")
    s["S0"].reorder("i", "t")
    assert_loops(s, "S0", "{ S0[t, i] -> [t + i, t] }")
    text = lowered(s)
    assert text.index("for (i = ") < text.index("for (t = ")
    check_recurrence(s)


def test_tile_of_the_recurrence_needs_the_skew_too():
    s = po.create_schedule(recurrence)
    err = refused(po.DependenceViolationError, lambda: s["S0"].tile("t", "i", 2, 3))
    assert err.repair.startswith("skew i by t with factor 1 ")
    s["S0"].skew("t", "i", 1)
    s["S0"].tile("t", "i", 2, 3)
    assert axis_names(s["S0"]) == ["t.outer", "i.outer", "t.inner", "i.inner"]
    check_recurrence(s)


def test_wavefront_map_is_legal():
    s = po.create_schedule(recurrence)
    s["S0"].transform("{ [t, i] -> [w = t + i, u = t] }")
    assert axis_names(s["S0"]) == ["w", "u"]
    check_recurrence(s)
    err = refused(po.DependenceViolationError,
                  lambda: po.create_schedule(recurrence)["S0"].transform("{ [t, i] -> [i, t] }"))
    assert err.violation.distance == (1, -1)


@po.kernel
def anti_only(A: po.f64[N, N]):
    for i in range(N - 1):
        for j in range(1, N):
            A[i, j] = A[i + 1, j - 1] * 0.5


def test_interchange_breaking_an_anti_dependence():
    s = po.create_schedule(anti_only)
    with pytest.raises(po.IllegalScheduleError) as info:
        s["S0"].reorder("j", "i")
    message = str(info.value)
    assert ("S0[i=0, j=2] reads A[1, 1] before S0[i=1, j=1] overwrites it, but the new "
            "schedule runs the write first (when N=3)") in message
    assert "[anti dependence S0 -> S0 through A; dependence distance (1, -1)]" in message
    assert "Repair: skew j by i with factor 1 first (s['S0'].skew('i', 'j', 1))" in message
    s["S0"].skew("i", "j", 1)
    s["S0"].reorder("j", "i")
    for n in (0, 1, 2, 5):
        a = np.random.default_rng(n).random((n, n))
        expected = a.copy()
        for i in range(n - 1):
            for j in range(1, n):
                expected[i, j] = expected[i + 1, j - 1] * 0.5
        po.build(s)(a)
        np.testing.assert_array_equal(a, expected)


@po.kernel
def last_write(A: po.f64[N, M], x: po.f64[N]):
    for i in range(N):
        for j in range(M):
            x[i] = A[i, j]


def test_reversing_the_order_of_writes_is_refused():
    s = po.create_schedule(last_write)
    with pytest.raises(po.IllegalScheduleError) as info:
        s["S0"].reverse("j")
    assert str(info.value) == (
        's["S0"].reverse("j") is illegal: S0[i=0, j=0] and then S0[i=0, j=1] write x[0], but '
        "the new schedule runs them in the other order (when N=1, M=2) [output dependence "
        "S0 -> S0 through x; dependence distance (0, 1)]")
    err = refused(po.LoopCarriesDependenceError, lambda: s["S0"].parallel("j"))
    assert (err.loop, err.what, err.violation.dependence.kind) == ("j", "parallel loop", "output")
    s["S0"].reverse("i")
    s["S0"].parallel("i")
    a, x = np.random.default_rng(0).random((5, 4)), np.zeros(5)
    po.build(s)(a, x)
    np.testing.assert_array_equal(x, a[:, -1])


# -- parallel on reductions --------------------------------------------------------------------

def row_sum(n, k_extent, dtype="float32"):
    A = po.placeholder((n, k_extent), name="A", dtype=dtype)
    k = po.reduce_axis((0, k_extent), name="k")
    C = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="C")
    return A, C


def test_parallel_on_a_reduction_axis_is_refused_with_rfactor_repair():
    A, C = row_sum(po.var("M"), po.var("K"))
    s = po.create_schedule(C)
    assert not s[C].can_parallel(C.op.reduce_axis[0])
    assert not s[C].can_vectorize(C.op.reduce_axis[0])
    with pytest.raises(po.IllegalScheduleError) as info:
        s[C].parallel(C.op.reduce_axis[0])
    assert str(info.value) == (
        's["C"].parallel("k") is illegal: parallel loop \'k\' carries a dependence between its '
        "iterations: C_update[i=0, k=0] writes C[0] that C_update[i=0, k=1] reads, in another "
        "iteration of that loop (when M=1, K=2) [flow dependence C_update -> C_update through "
        "C; dependence distance (0, 1)]. Repair: 'k' is a reduction loop: split the reduction "
        "with s.rfactor(C, 'k') to get independent partial results")
    assert [a.kind for a in s[C].axes] == ["serial", "serial"]
    assert s[C].can_parallel(C.op.axis[0])


@pytest.mark.parametrize("m, k", [(5, 11), (3, 8), (1, 1), (4, 0), (0, 3)])
def test_parallel_partial_reduction_after_rfactor(m, k):
    A, C = row_sum(po.var("M"), po.var("K"), dtype="int32")
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    CF = s.rfactor(C, ki)
    partial = s[CF]
    assert axis_names(partial) == ["k_inner", "i", "k.outer"]
    assert partial.can_parallel("k_inner")
    assert not partial.can_parallel("k.outer")
    partial.parallel("k_inner")
    assert "#pragma parallel\n  for (k_inner = 0; k_inner < 4; k_inner += 1)" in lowered(s, [A, C])
    a = rand(m, k, dtype="int32")
    np.testing.assert_array_equal(run(s, [A, C], [a], M=m, K=k), a.sum(axis=1))


# -- check=False, s.check(), can_* -------------------------------------------------------------

def test_check_false_then_check_raises():
    s = po.create_schedule(recurrence)
    s["S0"].reorder("i", "t", check=False)
    assert s.script() == 's["S0"].reorder("i", "t")'
    assert not s.is_legal()
    with pytest.raises(po.IllegalScheduleError) as info:
        s.check()
    assert str(info.value).startswith(
        "the schedule is illegal: S0[t=0, i=2] writes A[2] that S0[t=1, i=1] reads")
    # repaired in place: skew first would have been right; undoing the reorder is legal too
    s["S0"].reorder("t", "i", check=False)
    s.check()
    assert s.is_legal()
    check_recurrence(s)


def test_check_false_parallel_then_check_raises():
    A, C = row_sum(po.var("M"), po.var("K"))
    s = po.create_schedule(C)
    s[C].parallel(C.op.reduce_axis[0], check=False)
    assert s[C].axes[1].kind == "parallel"
    err = refused(po.LoopCarriesDependenceError, s.check)
    assert (err.transform, err.loop, err.what) == ("the schedule", "k", "parallel loop")
    assert err.repair.startswith("'k' is a reduction loop")
    assert not s.is_legal()


def test_check_false_reverse_of_reduction_then_check():
    A, C = row_sum(po.var("M"), po.var("K"))
    s = po.create_schedule(C, strict_fp=True)
    s[C].reverse(C.op.reduce_axis[0], check=False)
    err = refused(po.DependenceViolationError, s.check)
    assert pair(err) == ("C_update[i=0, k=0]", "C_update[i=0, k=1]", "C[0]")
    assert err.violation.dependence.kind == "flow"


@pytest.mark.parametrize("call, expected", [
    (lambda st: st.can_reorder("i", "t"), False),
    (lambda st: st.can_reverse("i"), False),
    (lambda st: st.can_reverse("t"), False),
    (lambda st: st.can_parallel("i"), False),
    (lambda st: st.can_parallel("t"), False),
    (lambda st: st.can_vectorize("i"), False),
    (lambda st: st.can_unroll("i"), True),
    (lambda st: st.can_split("i", factor=3), True),
    (lambda st: st.can_split("i", nparts=3), True),    # parametric extent: one piece per part
    (lambda st: st.can_skew("t", "i", 1), True),
    (lambda st: st.can_skew("i", "t", 1), False),      # ScheduleError: wrong order
    (lambda st: st.can_shift("i", 2), True),
    (lambda st: st.can_tile("t", "i", 2, 2), False),
    (lambda st: st.can_fuse("t", "i"), True),          # two parametric extents: as one
    (lambda st: st.can_fuse("i", "t"), False),         # ScheduleError: wrong order
    (lambda st: st.can_transform("{ [t, i] -> [t, t + i] }"), True),
    (lambda st: st.can_transform("{ [t, i] -> [i, t] }"), False),
])
def test_can_answers_without_changing_the_schedule(call, expected):
    s = po.create_schedule(recurrence)
    program, text = s.program, lowered(s)
    assert call(s["S0"]) is expected
    assert s.program is program and s.steps == [] and lowered(s) == text


def test_can_does_not_swallow_invalid_arguments():
    s = po.create_schedule(recurrence)
    with pytest.raises(po.InvalidArgumentError, match="factor must be a positive integer"):
        s["S0"].can_split("i", factor=0)


def test_refused_primitive_changes_nothing():
    A, C = row_sum(po.var("M"), po.var("K"))
    s = po.create_schedule(C, strict_fp=True)
    s[C].split(C.op.axis[0], factor=2)
    before_program, before_script = s.program, s.script()
    for attempt in (lambda: s[C].reverse("k"), lambda: s[C].parallel("k"),
                    lambda: s[C].vectorize("k"), lambda: s[C].transform(
                        "{ [a, b, k] -> [a, b, -k] }")):
        with pytest.raises(po.IllegalScheduleError):
            attempt()
        assert s.program is before_program and s.script() == before_script
