"""Rewrites of a scan's steps are checked against the scan's own order (its steps share
the time loop): TVM's test_scan_inline1 is accepted and computes the right numbers."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm


def _two_state_scan():
    m, n = te.var("m"), te.var("n")
    x = te.compute((m, n), lambda i, j: tvm.tir.const(1, "float32"), name="x")
    state1, state2 = te.placeholder((m, n)), te.placeholder((m, n))
    init1 = te.compute((1, n), lambda _, i: x[0, i])
    init2 = te.compute((1, n), lambda _, i: x[0, i])
    x1 = te.compute((m, n), lambda t, i: state1[t - 1, i] + x[t, i], name="x1")
    x2 = te.compute((m, n), lambda t, i: state2[t - 1, i] + 1, name="x2")
    update1 = te.compute((m, n), lambda t, i: x1[t, i], "u1")
    update2 = te.compute((m, n), lambda t, i: x2[t, i], "u2")
    res1, res2 = tvm.te.scan([init1, init2], [update1, update2], [state1, state2])
    return x, x1, x2, res1, res2


@pytest.mark.parametrize("inlined", ["x1", "x2"])
def test_inlining_one_state_of_a_two_state_scan_is_legal_and_right(inlined):
    x, x1, x2, res1, res2 = _two_state_scan()
    s = te.create_schedule(res1.op)
    s[x1 if inlined == "x1" else x2].compute_inline()
    s.check()
    f = tvm.build(s, [x, res1, res2])
    rows, cols = 5, 3
    xa, r1, r2 = (np.zeros((rows, cols), "float32") for _ in range(3))
    f(xa, r1, r2)
    steps = np.repeat(np.arange(1, rows + 1, dtype="float32")[:, None], cols, axis=1)
    np.testing.assert_array_equal(xa, np.ones((rows, cols), "float32"))
    np.testing.assert_array_equal(r1, steps)
    np.testing.assert_array_equal(r2, steps)


def test_a_step_still_cannot_run_before_the_state_it_reads():
    x, x1, x2, res1, res2 = _two_state_scan()
    s = te.create_schedule(res1.op)
    s[x1].compute_inline()
    loops = s.program.stage("scan_1").axes
    with pytest.raises(te.IllegalScheduleError):
        s["scan_1"].reverse(loops[0].name)  # the time loop runs backwards
