"""Checks after rewriting an in-place kernel under tiled, nparts-split schedules end in
seconds: a marked loop whose iterations touch no common element needs no dataflow
analysis, and the rewritten kernel's dependences are computed under a CPU limit."""

import pytest

import polyopt as po
from testlib.kernels import triangles

N, M, T = po.var("N"), po.var("M"), po.var("T")


@po.kernel
def diagonal(A: po.i32[M, M], B: po.i32[M, N]):
    for i in range(0, M - 1):
        for j in range(1, N - 1):
            for k in range(max(0, i - 1), min(M, i + 2)):
                A[k, k] = (-1 * B[k, j] + 2 * A[k, i]) % 97


def test_cache_write_under_a_diamond_with_a_parallel_wavefront_is_accepted():
    s = po.create_schedule(diagonal)
    s["S0"].split("j", nparts=3)
    s["S0"].diamond_tile("j.inner", "k", 4)
    s.cache_write(s["S0"], "local")
    kinds = {a.name: a.kind for st in s.program.stages for a in st.axes}
    assert kinds["k.diamond"] == "parallel"


@pytest.mark.slow
def test_reverse_after_cache_write_on_an_nparts_split_ends_in_a_refusal():
    s = po.create_schedule(triangles)
    s["S2"].split("t", nparts=4)
    s.cache_write(s["S2"], "global")
    with pytest.raises((po.IllegalScheduleError, po.CheckEffortError)):
        s["S1"].reverse("k")


def test_the_rewrite_check_of_a_kernel_is_bounded_by_check_effort():
    """The dataflow comparison after cache_write (here about 20 s of isl under the
    symbolic nparts split) stops at po.check_effort's bound with a refusal naming it;
    the schedule is unchanged and isl works afterwards."""
    s = po.create_schedule(triangles)
    s["S2"].split("t", nparts=4)
    before = s.script()
    with po.check_effort.set_to(1_000_000):
        with pytest.raises(po.CheckEffortError) as caught:
            s.cache_write(s["S2"], "global")
    message = str(caught.value)
    assert "the rewritten kernel reads and leaves the same values" in message
    assert "1000000 isl operations" in message and "nparts" in message
    assert s.script() == before
    assert [st.name for st in s.program.stages] == ["S0", "S1", "S2", "S3"]
    with pytest.raises(po.IllegalScheduleError):  # isl answers again after the refusal
        s["S1"].reverse("k")
