"""The TVM names TVM's own tests use (issue 35), written as TVM code, checked against NumPy."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm


def _run(s, args, *arrays):
    f = tvm.build(s, args, "llvm")
    dev = tvm.cpu(0)
    nd = [tvm.nd.array(a, dev) for a in arrays]
    f(*nd)
    return nd[-1].numpy()


def test_tvm_error_is_runtime_error():
    A = te.placeholder((4,), name="A")
    with pytest.raises(tvm.TVMError):
        te.compute((4,), lambda i: A[i, i])
    with pytest.raises(RuntimeError):
        te.compute((4,), lambda i: A[i, i])
    assert tvm.error.TVMError is tvm.TVMError


def test_call_syntax_slices_and_value_index():
    A = te.placeholder((3, 4), name="A")
    B = te.compute((3, 4), lambda i, j: A(i, j) + A[i][j] * 2, name="B")
    assert B.value_index == 0
    a = np.arange(12, dtype="float32").reshape(3, 4)
    s = te.create_schedule(B.op)
    np.testing.assert_allclose(_run(s, [A, B], a, np.zeros_like(a)), 3 * a)
    with pytest.raises(te.InvalidArgumentError, match="indexed with 1 index"):
        te.compute((3,), lambda i: A[i], name="C")


def test_multi_output_value_index():
    A = te.placeholder((4,), name="A")
    B0, B1 = te.compute((4,), lambda i: (A[i] + 1, A[i] * 2), name="B")
    assert (B0.value_index, B1.value_index) == (0, 1)


def test_tag_scope_with_and_decorator():
    A = te.placeholder((4,), name="A")
    with te.tag_scope(tag="ewise"):
        B = te.compute((4,), lambda i: A[i] + 1, name="B")

    @tvm.te.tag_scope(tag="conv")
    def make():
        return te.compute((4,), lambda i: A[i] * 2, name="C")

    C = make()
    D = te.compute((4,), lambda i: A[i], name="D", tag="own", attrs={"k": 1})
    assert (B.op.tag, C.op.tag, D.op.tag, D.op.attrs["k"].value) == ("ewise", "conv", "own", 1)
    with pytest.raises(ValueError, match="do not nest"):
        with te.tag_scope(tag="a"):
            with te.tag_scope(tag="b"):
                pass
    s = te.create_schedule(C.op)
    a = np.arange(4, dtype="float32")
    np.testing.assert_allclose(_run(s, [A, C], a, np.zeros_like(a)), 2 * a)


def test_reducer_of_two_values_and_init():
    n = 5
    A = te.placeholder((n, n), name="A")
    k = te.reduce_axis((0, n), name="k")
    B = te.compute((n,), lambda i: te.max(A[i, 0], A[i, 1]) + te.min(A[i, 2], 0.0), name="B")
    C = te.compute((n,), lambda i: te.sum(A[i, k], axis=k, init=10.0), name="C")
    mysum = te.comm_reducer(lambda x, y: x + y, lambda t: tvm.tir.const(0, dtype=t))
    D = te.compute((n,), lambda i: mysum(A[i, 3], A[i, 4]), name="D")
    a = np.random.default_rng(0).standard_normal((n, n)).astype("float32")
    for T, want in ((B, np.maximum(a[:, 0], a[:, 1]) + np.minimum(a[:, 2], 0)),
                    (C, a.sum(axis=1) + 10), (D, a[:, 3] + a[:, 4])):
        s = te.create_schedule(T.op)
        np.testing.assert_allclose(_run(s, [A, T], a, np.zeros(n, "float32")), want,
                                   rtol=1e-5)


def test_expression_equality_is_same_as():
    x, y = te.var("x"), te.var("y")
    assert bool(x == x) and not bool(x == y) and bool(x != y)
    with pytest.raises(te.InvalidArgumentError, match="no truth value"):
        bool(x < y)


def test_floormod_floordiv_power_convert_intimm():
    A = te.placeholder((8,), name="A", dtype="int32")
    B = te.compute((8,), lambda i: te.floormod(A[i], 3) + te.floordiv(A[i], 3) * 10
                   + te.power(A[i], 2) * 100, name="B")
    a = np.arange(-4, 4, dtype="int32")
    got = _run(te.create_schedule(B.op), [A, B], a, np.zeros_like(a))
    np.testing.assert_array_equal(got, a % 3 + (a // 3) * 10 + a ** 2 * 100)
    assert tvm.runtime.convert(7).value == 7
    assert [c.value for c in tvm.runtime.convert([1, 2])] == [1, 2]
    assert tvm.tir.IntImm("int32", 3).value == 3 and tvm.tir.IntImm("int32", 3).dtype == "int32"
    assert isinstance(te.var("n") + 1, tvm.tir.PrimExpr)
    with pytest.raises(te.InvalidArgumentError, match="exp"):
        te.power(A[0], 0.5)


def test_namespaces_for_isinstance():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i], name="B")
    s = te.create_schedule(B.op)
    assert isinstance(B, te.tensor.Tensor) and isinstance(A.op, te.PlaceholderOp)
    assert isinstance(B.op, te.ComputeOp) and isinstance(s, te.schedule.Schedule)


def test_testing_decorators_and_refusals():
    assert tvm.testing.device_enabled("llvm") and not tvm.testing.device_enabled("cuda")
    assert tvm.runtime.enabled("llvm")
    assert tvm.testing.requires_llvm(len) is len
    assert tvm.testing.skip_if_wheel_test(len) is len
    with pytest.raises(te.PolyoptError, match="tvm.topi.nn.batch_norm is not available.*po.ops"):
        tvm.topi.nn.batch_norm(None)
    with pytest.raises(te.PolyoptError, match="tvm.lower"):
        tvm.schedule_to_module(None)
    assert tvm.topi.get_const_tuple(te.placeholder((2, 3)).shape) == (2, 3)


def test_build_of_lowered_and_driver_build():
    A = te.placeholder((6,), name="A")
    B = te.compute((6,), lambda i: A[i] * 3, name="B")
    s = te.create_schedule(B.op)
    a = np.arange(6, dtype="float32")
    for f in (tvm.build(tvm.lower(s, [A, B], name="triple"), target="llvm"),
              tvm.driver.build(s, [A, B], "llvm")):
        b = tvm.nd.array(np.zeros(6, "float32"))
        f(tvm.nd.array(a), b)
        np.testing.assert_allclose(b.numpy(), 3 * a)
    with pytest.raises(tvm._ffi.base.TVMError):
        te.compute((6,), lambda i: A[i, i])


def test_whole_tensor_arithmetic_broadcasts_like_numpy():
    n, m = 3, 4
    A = te.placeholder((n, m), name="A")
    b = te.placeholder((m,), name="b")
    c = te.placeholder((n, 1), name="c")
    x = te.var("x", "float32")
    D = 2 + A * b - c / 4 + x
    assert (A * b).op.tag == "broadcast" and D.op.tag == (A * 2).op.tag == "elemwise"
    assert isinstance(A[0, 0] + A, te.tensor.Tensor)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((n, m)).astype("float32")
    bb = rng.standard_normal(m).astype("float32")
    cc = rng.standard_normal((n, 1)).astype("float32")
    f = tvm.build(te.create_schedule(D.op), [A, b, c, x, D], "llvm")
    d = tvm.nd.array(np.zeros((n, m), "float32"))
    f(tvm.nd.array(a), tvm.nd.array(bb), tvm.nd.array(cc), 0.5, d)
    np.testing.assert_allclose(d.numpy(), 2 + a * bb - cc / 4 + 0.5, rtol=1e-5)
    with pytest.raises(te.InvalidArgumentError, match="cannot broadcast"):
        A + te.placeholder((3,), name="e")
