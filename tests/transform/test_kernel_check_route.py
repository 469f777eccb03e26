"""A rewritten in-place kernel whose exact dependences are beyond the effort bound (issue
32's hang_m2: a cache_write under a symbolic nparts split) is still checked exactly: a
loop primitive is checked by the values every read gets and every element ends with
(the check its rewrites already pass), accepted or refused with a verdict; a loop that
runs in parallel needs the dependences, so it is refused with the CheckEffortError."""

import numpy as np
import pytest

import polyopt as po
from polyopt.transform import state as state_module
from testlib.numeric import assert_numbers

N = po.var("N")


@po.kernel
def running_sum(A: po.f64[N], B: po.f64[N]):
    for i in range(1, N):
        B[i] = B[i - 1] + A[i]


@pytest.fixture
def dependences_beyond_the_bound(monkeypatch):
    def stopped(program, seconds=None):
        raise po.CheckEffortError("stopped by the test", what="the dependences", limit=0.0)
    monkeypatch.setattr(state_module, "limited_dependences", stopped)


def rewritten():
    s = po.create_schedule(running_sum)
    s.cache_write(s["S0"], "global")  # a rewrite: later steps need its dependences
    return s


def test_a_legal_loop_step_is_accepted_by_the_values_it_computes(dependences_beyond_the_bound):
    s = rewritten()
    with pytest.raises(po.CheckEffortError):
        s.state.reference.dependences()
    s["S0"].split("i", factor=4)
    a, b = np.arange(1.0, 11.0), np.zeros(10)
    expected = b.copy()
    for i in range(1, 10):
        expected[i] = expected[i - 1] + a[i]
    po.build(s)(a, b, N=10)
    assert_numbers(b, expected)


def test_an_illegal_loop_step_is_refused_with_a_verdict(dependences_beyond_the_bound):
    s = rewritten()
    with pytest.raises(po.ChangedValuesError) as refused:
        s["S0"].reverse("i")
    assert refused.value.what == "reads" and refused.value.primitive == 's["S0"].reverse("i")'
    assert [st.primitive for st in s.steps] == ["cache_write"]


def test_a_parallel_loop_still_needs_the_dependences(dependences_beyond_the_bound):
    s = rewritten()
    with pytest.raises(po.CheckEffortError):
        s["S0"].parallel("i")
