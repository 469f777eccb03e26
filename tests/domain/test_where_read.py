"""A compute that is not an output and whose range would read outside an array is
computed only where its consumers read it (TVM's bound inference; domain/from_te.py)."""

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from testlib.numeric import assert_numbers
from testlib.schedules import rand, run


def _shifted(n):
    X = po.placeholder((n, 3), name="X")
    S = po.compute((n, 3), lambda t, i: X[t - 1, i] * 2.0, name="S")  # t = 0 reads X[-1]
    return X, S


def test_an_intermediate_is_computed_only_where_it_is_read():
    n = po.var("n")
    X, S = _shifted(n)
    Y = po.compute((n - 1, 3), lambda t, i: S[t + 1, i] + 1.0, name="Y")  # reads S[1..]
    s = po.create_schedule(Y)
    (stmt,) = [st for st in s.program.statements if st.op == "S"]
    expected = isl.Set("[n] -> { S[t, i] : 1 <= t < n and 0 <= i < 3 }")
    assert stmt.domain.gist_params(s.program.context) == expected.gist_params(s.program.context)
    x = rand(5, 3)
    assert_numbers(run(s, [X, Y], [x], n=5), x[:4] * 2.0 + 1.0)
    # scheduled like any stage: split and computed at its reader
    s2 = po.create_schedule(Y)
    yo, yi = s2[Y].split(Y.op.axis[0], factor=2)
    s2[S].compute_at(s2[Y], yo)
    assert_numbers(run(s2, [X, Y], [x], n=5), x[:4] * 2.0 + 1.0)


def test_a_read_outside_that_a_consumer_needs_is_still_refused():
    n = po.var("n")
    X, S = _shifted(n)
    Y = po.compute((n, 3), lambda t, i: S[t, i] + 1.0, name="Y")  # needs S[0]: X[-1]
    with pytest.raises(po.OutOfBoundsError, match=r"compute 'S' reads X\[-1, 0\] at S\[t=0"):
        po.create_schedule(Y)
    with pytest.raises(po.OutOfBoundsError, match=r"compute 'S' reads X\[-1, 0\]"):
        po.create_schedule(S)  # an output is computed over its whole range
    Z = po.compute((n - 1, 3), lambda t, i: S[t + 1, i], name="Z")
    with pytest.raises(po.OutOfBoundsError, match=r"compute 'S' reads X\[-1, 0\]"):
        po.create_schedule([S, Z])


def test_an_input_of_a_scan_step_is_computed_for_the_steps_only():
    # TVM's LSTM test: the i2h product reads X[t - 1]; the scan's steps read it at t >= 1
    m, n = po.var("m"), po.var("n")
    X = po.placeholder((m, n), name="X")
    state = po.placeholder((m, n), name="state")
    P = po.compute((m, n), lambda t, i: X[t - 1, i] * 3.0, name="P")
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: state[t - 1, i] + P[t, i], name="update")
    Y = po.scan(init, update, state, inputs=[X])
    s = po.create_schedule(Y)
    x = rand(6, 4)
    expected = np.empty_like(x)
    expected[0] = x[0]
    for t in range(1, 6):
        expected[t] = expected[t - 1] + 3.0 * x[t - 1]
    got = np.full_like(x, np.nan)
    po.build(s, [X, Y])(x, got)
    assert_numbers(got, expected, rtol=1e-5)
