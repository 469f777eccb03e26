"""TVM features the ported v0.12 tests need (issue 35), checked on numbers: a reduction
that starts from a tensor (``te.sum(..., init=)``) as one stage, also after rfactor."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers

N = 37


def matmul_from(init_of):
    A = te.placeholder((N, N), name="A")
    C = te.placeholder((N, N), name="C")
    I = te.placeholder((N, N), name="I")
    k = te.reduce_axis((0, N), name="k")
    B = te.compute((N, N), lambda i, j: te.sum(A[i, k] * C[k, j], axis=k,
                                                 init=init_of(I, i, j)), name="B")
    return A, C, I, B, k


def run(s, args, shape_out):
    rng = np.random.default_rng(35)
    arrays = [rng.random((N, N), dtype=np.float32) for _ in args[:-1]]
    out = tvm.nd.array(np.zeros(shape_out, "float32"))
    tvm.build(s, args)(*[tvm.nd.array(a) for a in arrays], out)
    return arrays, out.numpy()


@pytest.mark.parametrize("rfactor", [False, True], ids=["plain", "rfactor"])
def test_sum_starts_from_init_in_one_stage(rfactor):
    A, C, I, B, k = matmul_from(lambda I, i, j: I[i, j])
    assert "init=I[i, j]" in str(B.op.body)
    s = te.create_schedule(B.op)
    assert [st.op.name for st in s.stages] == ["B"]  # one stage, as in TVM
    if rfactor:  # the partial sums start from 0; only B adds I (once)
        kf, _ = s[B].split(k, nparts=4)
        BF = s.rfactor(B, kf, 1)
        s[BF].parallel(BF.op.axis[0])
    (a, c, i), got = run(s, [A, C, I, B], (N, N))
    assert_numbers(got, a @ c + i)


def test_max_starts_from_init():
    A = te.placeholder((N, N), name="A")
    I = te.placeholder((N, N), name="I")
    k = te.reduce_axis((0, N), name="k")
    M = te.compute((N,), lambda i: te.max(A[i, k] - 2, axis=k, init=I[i, 0]), name="M")
    (a, i), got = run(te.create_schedule(M.op), [A, I, M], (N,))
    assert_numbers(got, np.maximum((a - 2).max(axis=1), i[:, 0]))


def test_init_reading_a_reduce_axis_is_refused():
    A = te.placeholder((N, N), name="A")
    k = te.reduce_axis((0, N), name="k")
    with pytest.raises(te.InvalidArgumentError, match="init= of po.sum reads a reduce axis"):
        te.compute((N,), lambda i: te.sum(A[i, k], axis=k, init=A[i, k]), name="B")


def test_double_buffer_is_recorded_and_changes_no_number():
    A = te.placeholder((N, N), name="A")
    B = te.compute((N, N), lambda i, j: A[i, j] * 2, name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "local", [B])
    s[AA].compute_at(s[B], B.op.axis[0])
    s[AA].double_buffer()
    assert 's["A_local"].double_buffer()' in s.script().splitlines()
    (a,), got = run(s, [A, B], (N, N))
    assert_numbers(got, 2 * a, exact=True)


def test_double_buffer_of_an_input_is_refused():
    A = te.placeholder((N,), name="A")
    B = te.compute((N,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(te.InvalidArgumentError, match="takes a computed tensor"):
        s[A].double_buffer()


def three_step_scan():
    m, n = te.size_var("m"), te.size_var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    up1 = te.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i])
    up2 = te.compute((m, n), lambda t, i: up1[t, i] * 2)
    up3 = te.compute((m, n), lambda t, i: up2[t, i] + 1)
    return X, state, init, (up1, up2, up3), tvm.te.scan(init, up3, state, inputs=X)


def scan_numbers(s, X, res):
    x = np.random.default_rng(35).random((9, 7), dtype=np.float32)
    out = tvm.nd.array(np.zeros((9, 7), "float32"))
    tvm.build(s, [X, res])(tvm.nd.array(x), out)
    expected = x.copy()
    for t in range(1, 9):
        expected[t] = (expected[t - 1] + x[t]) * 2 + 1
    assert_numbers(out.numpy(), expected)


def test_scan_steps_form_a_group_and_move_inside_the_scan():
    X, state, init, (up1, up2, up3), res = three_step_scan()
    s = te.create_schedule(res.op)
    assert s[up1].group == s[up2].group == s[up3].group != s[init].group
    s[up1].compute_at(s[up2], up2.op.axis[1])  # inside the group: shares up2's loops
    group = s.create_group(outputs=up2, inputs=[state, X])
    assert group.group == s[up3].group and s[up1].group == group
    assert group.stage_names == (s[up1].name, s[up2].name)
    group.compute_at(s[up3], up3.op.axis[1])
    assert group.attach_stage == s[up3]
    assert s.program.stage(s[up2].name).attach.depth == 2
    assert s.program.stage(s[up1].name).attach.stage == s[up2].name
    scan_numbers(s, X, res)


def test_a_step_computed_outside_its_scan_is_refused():
    X, state, init, (up1, up2, up3), res = three_step_scan()
    s = te.create_schedule(res.op)
    with pytest.raises(tvm.TVMError, match="already attached"):
        s[up2].compute_at(s[init], init.op.axis[0])


def test_extern_functions_receive_buffers_whose_data_is_the_array():
    m = te.size_var("m")
    A = te.placeholder((m,), name="A")
    seen = {}

    def extern_func(ins, outs):
        seen["ins"], seen["outs"] = ins, outs
        return tvm.tir.call_packed("h35.add_one", ins[0].data, outs[0].data)

    tvm.register_func("h35.add_one", lambda a, b: np.add(a, 1, out=b), override=True)
    B = te.extern((m,), [A], extern_func, name="B")
    assert isinstance(seen["ins"][0], tvm.te.schedule.Buffer)
    assert seen["ins"][0].shape == A.shape and seen["outs"][0].name == "B"
    a = np.arange(6, dtype="float32")
    b = tvm.nd.array(np.zeros(6, "float32"))
    tvm.build(te.create_schedule(B.op), [A, B])(tvm.nd.array(a), b)
    assert_numbers(b.numpy(), a + 1, exact=True)


@pytest.mark.parametrize("make_var", [te.size_var, te.var], ids=["size_var", "var"])
def test_rfactor_shape_is_the_simplified_extent(make_var):
    n = make_var("n")
    k1, k2 = te.reduce_axis((0, n), name="k1"), te.reduce_axis((0, n), name="k2")
    A = te.placeholder((n, n, n), name="A")
    B = te.compute((n,), lambda i: te.sum(A[i, k1, k2], axis=[k1, k2]), name="B")
    s = te.create_schedule(B.op)
    BF = s.rfactor(B, k1)
    if make_var is te.size_var:  # never negative: TVM's shape (n, n)
        assert BF.shape[0] is n and BF.shape[1] is n
    else:  # a var may be negative: no partial sums then
        assert str(BF.shape[0]) == "max(0, n)"
    rng = np.random.default_rng(35)
    a = rng.random((6, 6, 6), dtype=np.float32)
    out = tvm.nd.array(np.zeros(6, "float32"))
    tvm.build(s, [A, B])(tvm.nd.array(a), out)
    assert_numbers(out.numpy(), a.sum(axis=(1, 2)))


def test_lower_shows_polyopts_loops_as_tvm_statements():
    A = te.compute((10, 10), lambda i, j: 1.0, name="A")
    B = te.compute((10, 10), lambda i, j: A[i, j] * 3, name="B")
    s = te.create_schedule(B.op)
    s[A].compute_at(s[B], B.op.axis[1])
    s[B].split(B.op.axis[1], 2)
    mod = tvm.lower(s, [B])
    body = mod["main"].body
    loops = [body, body.body, body.body.body]
    assert all(isinstance(x, tvm.tir.stmt.For) for x in loops)
    assert [(x.loop_var.name, x.min, x.extent) for x in loops] == \
        [("i", 0, 10), ("j_outer", 0, 5), ("j_inner", 0, 2)]
    stores = []
    tvm.tir.stmt_functor.post_order_visit(
        body, lambda n: stores.append(n.buffer) if isinstance(n, tvm.tir.BufferStore) else None)
    assert stores == ["A", "B"]  # A's value computed in each iteration, then B's
    out = tvm.nd.array(np.zeros((10, 10), "float32"))
    tvm.build(mod, target="llvm")(out)
    assert_numbers(out.numpy(), np.full((10, 10), 3, "float32"), exact=True)
    with pytest.raises(te.InvalidArgumentError, match="one function, 'main'"):
        mod["other"]


def test_scalar_params_are_refused_naming_the_polyopt_way():
    x = te.placeholder((16,), name="x")
    v = te.size_var("v")
    z = te.compute((16,), lambda i: x[i] * v, name="z")
    with pytest.raises(te.InvalidArgumentError, match="s\\[C\\].tensorize"):
        te.decl_tensor_intrin(z.op, lambda ins, outs, sp: None, scalar_params=[v])


def test_comm_reducer_starts_from_init():
    product = te.comm_reducer(lambda x, y: x * y, lambda t: tvm.tir.const(1, t), name="prod")
    A = te.placeholder((N, 4), name="A")
    I = te.placeholder((N, N), name="I")
    k = te.reduce_axis((0, 4), name="k")
    P = te.compute((N,), lambda i: product(A[i, k], axis=k, init=I[i, 1]), name="P")
    rng = np.random.default_rng(35)
    a, i = rng.random((N, 4), dtype=np.float32), rng.random((N, N), dtype=np.float32)
    out = tvm.nd.array(np.zeros(N, "float32"))
    tvm.build(te.create_schedule(P.op), [A, I, P])(tvm.nd.array(a), tvm.nd.array(i), out)
    assert_numbers(out.numpy(), a.prod(axis=1) * i[:, 1])


def test_the_outputs_of_one_compute_share_their_op_as_tvm_does():
    m = te.size_var("m")
    A0 = te.placeholder((m,), name="A0")
    A1 = te.placeholder((m,), name="A1")
    T0, T1 = te.compute((m,), lambda i: (A0[i] * 2.0, A1[i] * 3.0), name="T")
    U = te.compute((m,), lambda i: A0[i] * 2.0, name="U")
    assert T0.op == T1.op and not T0.op != T1.op and hash(T0.op) == hash(T1.op)
    assert len({T0.op, T1.op}) == 1 and T0.op.outputs == (T0, T1)
    assert T0.op != U.op and U.op == U.op and T0.op != A0.op
    assert (T0.value_index, T1.value_index) == (0, 1)
    s = te.create_schedule(T0.op)
    f = tvm.build(s, [A0, A1, T0, T1])
    a0, a1 = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    t0, t1 = np.zeros(5, np.float32), np.zeros(5, np.float32)
    f(a0, a1, t0, t1)
    assert_numbers(t0, a0 * 2.0)
    assert_numbers(t1, a1 * 3.0)
