"""The pieces of TVM's namespace classic code uses besides the tutorials' main lines."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.machine import HOST


def test_placeholder_in_tvm_positional_order_and_constant_shapes():
    A = te.placeholder((3, 4), "int32", "A")
    assert (A.name, A.dtype) == ("A", "int32")
    assert int(A.shape[0]) == 3 and np.zeros(A.shape).shape == (3, 4)


def test_target_strings():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    s = te.create_schedule(B.op)
    for target in ("llvm", "llvm -mcpu=skylake-avx512 -opt-level=3", tvm.target.Target("llvm")):
        f = tvm.build(s, [A, B], target)
        if "skylake-avx512" in str(target):
            assert f.cpu.name == "skylake-avx512"
            if not HOST.has_avx512:  # (code for a named CPU runs only where it can)
                with pytest.raises(te.BackendError, match="compiled for skylake-avx512"):
                    f(np.ones(4, "float32"), np.zeros(4, "float32"))
                continue
        b = np.zeros(4, "float32")
        f(np.ones(4, "float32"), b)
        np.testing.assert_array_equal(b, 2)
    with pytest.raises(te.InvalidArgumentError, match="unknown target 'hexagon'.*'llvm'"):
        tvm.build(s, [A, B], "hexagon")
    with pytest.raises(te.InvalidArgumentError, match="not of the form -key=value"):
        tvm.build(s, [A, B], "llvm mcpu")


def test_pass_context_and_lower_with_a_name():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 3, name="B")
    s = te.create_schedule(B.op)
    with tvm.transform.PassContext(opt_level=3):
        text = str(tvm.lower(s, [A, B], name="triple", simple_mode=True))
    assert text.startswith("void triple(")


def test_stage_op_body_after_rfactor():
    A = te.placeholder((4, 32), name="A")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((4,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(k, factor=8)
    BF = s.rfactor(B, ki)
    assert "B_rf" in str(s[B].op.body).replace(".", "_")
    assert [t.name for t in s[B].op.input_tensors] == [BF.name]


def test_not_yet_available_parts_say_what_to_use():
    with pytest.raises(te.PolyoptError, match="po.graph.from_onnx"):
        tvm.relay.build
    with pytest.raises(te.PolyoptError, match="call_pure_extern"):
        tvm.ir.register_intrin_lowering
    A = te.placeholder((4,), name="A")
    with pytest.raises(te.PolyoptError, match="call_pure_extern"):
        te.compute(A.shape, lambda i: tvm.tir.call_intrin("float32", "tir.mylog", A[i]))


def test_sigmoid_through_te_and_tir():
    A = te.placeholder((7,), name="A")
    B = te.compute(A.shape, lambda i: te.sigmoid(A[i]) + tvm.tir.sigmoid(A[i] * 2), name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm")
    a = np.random.uniform(-3, 3, size=7).astype("float32")
    b = np.zeros(7, "float32")
    f(a, b)
    np.testing.assert_allclose(b, 1 / (1 + np.exp(-a)) + 1 / (1 + np.exp(-2 * a)), rtol=1e-5)


def test_min_max_values_and_select():
    A = te.placeholder((5,), name="A")
    k = te.reduce_axis((0, 5), name="k")
    M = te.compute((1,), lambda i: te.max(A[k], axis=k), name="M")
    C = te.compute((5,), lambda i: tvm.tir.Select(A[i] > te.min_value("float32"), A[i],
                                                  te.max_value("float32")), name="C")
    f = tvm.build(te.create_schedule([M.op, C.op]), [A, M, C], "llvm")
    a = np.random.rand(5).astype("float32")
    m, c = np.zeros(1, "float32"), np.zeros(5, "float32")
    f(a, m, c)
    assert m[0] == a.max()
    np.testing.assert_array_equal(c, a)


def test_time_evaluator_checks_its_arguments():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 3, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B], "llvm", name="triple")
    with pytest.raises(te.InvalidArgumentError, match="one function, 'triple'"):
        f.time_evaluator("other", tvm.cpu())
    with pytest.raises(te.InvalidArgumentError, match="number must be an integer >= 1"):
        f.time_evaluator(f.entry_name, tvm.cpu(), number=0)
    assert f["triple"] is f
