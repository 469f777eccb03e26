"""The "getting started with tensor expressions" tutorial, ported by changing the
imports only: vector addition, its schedules, timing and the printed code."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)


def vector_add():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


def run_and_check(fadd, n=1024):
    dev = tvm.device("llvm", 0)
    a = tvm.nd.array(np.random.uniform(size=n).astype("float32"), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype("float32"), dev)
    c = tvm.nd.array(np.zeros(n, dtype="float32"), dev)
    fadd(a, b, c)
    assert_numbers(c.numpy(), a.numpy() + b.numpy(), rtol=1e-7, atol=1e-7)  # (TVM's)
    return a, b, c


def test_default_schedule_builds_with_a_positional_target():
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], "llvm", name="myadd")
    assert fadd.entry_name == "myadd"
    run_and_check(fadd)
    assert "define" in fadd.get_source()
    assert fadd.imported_modules == []


def test_time_evaluator_reports_seconds_per_call():
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], target="llvm -mcpu=native")
    a, b, c = run_and_check(fadd, 4096)
    evaluator = fadd.time_evaluator(fadd.entry_name, tvm.cpu(), number=5, repeat=2)
    result = evaluator(a, b, c)
    assert len(result.results) == 2 and 0 < result.mean < 1
    assert result.mean == pytest.approx(np.mean(result.results))


@pytest.mark.parametrize("factor", [4, 64])
def test_parallel_and_vectorized_split(factor):
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=factor)
    s[C].parallel(outer)
    s[C].vectorize(inner)
    text = str(tvm.lower(s, [A, B, C], simple_mode=True))
    assert "for (i_outer" in text.replace(".", "_")
    fadd = tvm.build(s, [A, B, C], tvm.target.Target("llvm"), name="myadd_parallel")
    run_and_check(fadd, 1000)


def test_numpy_arrays_pass_as_they_are():
    A, B, C = vector_add()
    fadd = te.build(te.create_schedule([C.op]), [A, B, C], "llvm")
    a = np.arange(7, dtype="float32")
    c = np.empty(7, dtype="float32")
    fadd(a, a, c)
    np.testing.assert_array_equal(c, 2 * a)


def test_gpu_style_binding_on_opencl(opencl):
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    fadd = tvm.build(s, [A, B, C], target="opencl", name="myadd")
    assert "__kernel" in fadd.imported_modules[0].get_source()
    dev = tvm.device("opencl", 0)
    n = 1000
    a = tvm.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(n, dtype=C.dtype), dev)
    fadd(a, b, c)
    assert_numbers(c.numpy(), a.numpy() + b.numpy(), rtol=1e-7, atol=1e-7)  # (TVM's)


def test_scalar_float_var_is_an_input():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    alpha = te.var("alpha", dtype="float32")
    B = te.compute((n,), lambda i: A[i] * alpha, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, alpha, B], "llvm")
    a = np.arange(5, dtype="float32")
    b = np.zeros(5, "float32")
    f(a, 2.5, b)
    np.testing.assert_allclose(b, a * 2.5)


def test_shapes_written_with_true_division():
    N, bn = 64, 16
    A = te.placeholder((N / bn, bn), name="A")   # 4.0: an integral float
    B = te.compute((N / bn, bn), lambda i, j: A[i, j] * 2, name="B")
    f = tvm.build(te.create_schedule(B.op), [A, B])
    a = np.random.rand(4, 16).astype("float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)


def test_export_library_and_runtime_load_module(tmp_path):
    A, B, C = vector_add()
    s = te.create_schedule(C.op)
    fadd = tvm.build(s, [A, B, C], "llvm", name="myadd")
    path = str(tmp_path / "myadd.so")
    fadd.export_library(path)
    run_and_check(tvm.runtime.load_module(path), n=37)
