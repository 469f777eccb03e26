"""The "scan and recurrent kernel" tutorial, ported by changing the imports only."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm


def cumsum_scan():
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
    return X, s_init, s_update, s_scan


def test_cumulative_sum_with_the_tutorial_schedule():
    X, s_init, s_update, s_scan = cumsum_scan()
    s = te.create_schedule(s_scan.op)
    num_thread = 8
    block_x = te.thread_axis("blockIdx.x")
    thread_x = te.thread_axis("threadIdx.x")
    xo, xi = s[s_init].split(s_init.op.axis[1], factor=num_thread)
    s[s_init].bind(xo, block_x)
    s[s_init].bind(xi, thread_x)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=num_thread)
    s[s_update].bind(xo, block_x)
    s[s_update].bind(xi, thread_x)
    print(tvm.lower(s, [X, s_scan], simple_mode=True))
    fscan = tvm.build(s, [X, s_scan], "llvm", name="myscan")   # bound loops run as loops
    dev = tvm.cpu(0)
    m, n = 10, 20
    a_np = np.random.uniform(size=(m, n)).astype(s_scan.dtype)
    a = tvm.nd.array(a_np, dev)
    b = tvm.nd.array(np.zeros((m, n), dtype=s_scan.dtype), dev)
    fscan(a, b)
    tvm.testing.assert_allclose(b.numpy(), np.cumsum(a_np, axis=0), rtol=1e-5)


def test_scan_stages_are_addressed_by_the_tensors_the_program_made():
    X, s_init, s_update, s_scan = cumsum_scan()
    s = te.create_schedule(s_scan.op)
    assert s[s_update].name == s[s_scan].name
    assert s[s_init].name != s[s_update].name
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=4)
    s[s_update].vectorize(xi)


def test_two_states_reading_column_zero_need_a_size_of_at_least_one():
    def program(n):
        m, l = te.var("m"), te.var("l")
        X = te.placeholder((m, n), name="X")
        s_state1 = te.placeholder((m, n))
        s_state2 = te.placeholder((m, l))
        s_init1 = te.compute((1, n), lambda _, i: X[0, i])
        s_init2 = te.compute((1, l), lambda _, i: 0.0)
        s_update1 = te.compute((m, n), lambda t, i: s_state1[t - 1, i] + X[t, i])
        s_update2 = te.compute((m, l), lambda t, i: s_state2[t - 1, i] + s_state1[t - 1, 0])
        return X, tvm.te.scan([s_init1, s_init2], [s_update1, s_update2],
                              [s_state1, s_state2])

    with pytest.raises(te.OutOfBoundsError, match=r'when .*n=0.*po.var\("n", min=1\)'):
        te.create_schedule(program(te.var("n"))[1][0].op)
    X, (s_scan1, s_scan2) = program(te.var("n", min=1))
    s = te.create_schedule([s_scan1.op, s_scan2.op])
    f = tvm.build(s, [X, s_scan1, s_scan2], "llvm")
    x = np.random.rand(6, 3).astype("float32")
    out1, out2 = np.zeros((6, 3), "float32"), np.zeros((6, 4), "float32")
    f(x, out1, out2)
    expected1 = np.cumsum(x, axis=0)
    expected2 = np.zeros((6, 4), "float32")
    for t in range(1, 6):
        expected2[t] = expected2[t - 1] + expected1[t - 1, 0]
    np.testing.assert_allclose(out1, expected1, rtol=1e-5)
    np.testing.assert_allclose(out2, expected2, rtol=1e-5)
    with pytest.raises(te.PolyoptError, match=r"n >= 1 .*got n=0"):
        f(np.zeros((6, 0), "float32"), np.zeros((6, 0), "float32"), out2)


def test_a_step_of_two_stages():
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
    s_scan = tvm.te.scan(s_init, s_update_s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s_update_s2].split(s_update_s2.op.axis[1], factor=8)
    s[s_update_s2].vectorize(xi)
    xo1, xi1 = s[s_update_s1].split(s_update_s1.op.axis[1], factor=8)
    text = str(tvm.lower(s, [X, s_scan], simple_mode=True))
    assert "float32 s1[1][n]" in text      # one step of s1 at a time
    f = tvm.build(s, [X, s_scan], "llvm")
    x = np.random.rand(5, 20).astype("float32")
    y = np.zeros_like(x)
    f(x, y)
    expected = np.zeros_like(x)
    expected[0] = x[0]
    for t in range(1, 5):
        expected[t] = expected[t - 1] * 2 + x[t]
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_a_recurrent_cell_with_a_matrix_vector_product():
    m, n = te.var("m"), 6
    X = te.placeholder((m, n), name="X")
    W = te.placeholder((n, n), name="W")
    h = te.placeholder((m, n), name="h")
    init = te.compute((1, n), lambda _, i: X[0, i], name="init")
    k = te.reduce_axis((0, n), name="k")
    mv = te.compute((m, n), lambda t, i: te.sum(W[i, k] * h[t - 1, k], axis=k), name="mv")
    upd = te.compute((m, n), lambda t, i: te.tanh(mv[t, i]) + X[t, i], name="upd")
    H = te.scan(init, upd, h, name="H")
    f = tvm.build(te.create_schedule(H.op), [X, W, H], "llvm")
    x = np.random.rand(7, n).astype("float32")
    w = (np.random.rand(n, n) / n).astype("float32")
    y = np.zeros_like(x)
    f(x, w, y)
    expected = np.zeros_like(x)
    expected[0] = x[0]
    for t in range(1, 7):
        expected[t] = np.tanh(w @ expected[t - 1]) + x[t]
    np.testing.assert_allclose(y, expected, rtol=1e-5)


def test_a_step_stage_computed_at_a_loop_of_the_update():
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
    s_scan = tvm.te.scan(s_init, s_update_s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s_update_s2].split(s_update_s2.op.axis[1], factor=32)
    s[s_update_s1].compute_at(s[s_update_s2], xo)
    assert "float32 s1[1][32]" in str(tvm.lower(s, [X, s_scan], simple_mode=True))
    f = tvm.build(s, [X, s_scan], "llvm")
    x = np.random.rand(4, 70).astype("float32")
    y = np.zeros_like(x)
    f(x, y)
    expected = np.zeros_like(x)
    expected[0] = x[0]
    for t in range(1, 4):
        expected[t] = expected[t - 1] * 2 + x[t]
    np.testing.assert_allclose(y, expected, rtol=1e-6)
