"""GPU steps of the classic tutorials, ported by changing the imports only, run on the
OpenCL target (PoCL): a scan's time loop on the host around kernels, and split(nparts=)
of a symbolic extent bound to work-groups and work-items.  (The same schedules run
under Oclgrind's race checks in tests/target/opencl/test_opencl_tvm_tutorials.py.)"""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)


def cumulative_sum():
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
    return X, s_init, s_update, s_scan


def test_scan_on_the_gpu_runs_its_time_loop_on_the_host(opencl):
    X, s_init, s_update, s_scan = cumulative_sum()
    s = te.create_schedule(s_scan.op)
    num_thread = 16
    block_x = te.thread_axis("blockIdx.x")
    thread_x = te.thread_axis("threadIdx.x")
    xo, xi = s[s_init].split(s_init.op.axis[1], factor=num_thread)
    s[s_init].bind(xo, block_x)
    s[s_init].bind(xi, thread_x)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=num_thread)
    s[s_update].bind(xo, block_x)
    s[s_update].bind(xi, thread_x)
    f = tvm.build(s, [X, s_scan], "opencl")
    source = f.imported_modules[0].get_source()
    assert source.count("__kernel") == 2 and "const long t" in source
    for m, n in ((7, 40), (1, 5), (3, 16)):
        x = np.random.rand(m, n).astype("float32")
        y = tvm.nd.array(np.zeros((m, n), "float32"))
        f(tvm.nd.array(x), y)
        tvm.testing.assert_allclose(y.numpy(), np.cumsum(x, axis=0), rtol=1e-5)


def test_a_scan_cell_of_two_stages_on_the_gpu(opencl):
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update_s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2, name="s1")
    s_update_s2 = te.compute((m, n), lambda t, i: s_update_s1[t, i] + X[t, i], name="s2")
    s_scan = tvm.te.scan(s_init, s_update_s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    for stage in (s_init, s_update_s1, s_update_s2):
        xo, xi = s[stage].split(stage.op.axis[1], factor=8)
        s[stage].bind(xo, te.thread_axis("blockIdx.x"))
        s[stage].bind(xi, te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [X, s_scan], "opencl")
    x = np.random.rand(5, 20).astype("float32")
    y = np.zeros_like(x)
    f(x, y)
    expected = np.zeros_like(x)
    expected[0] = x[0]
    for t in range(1, 5):
        expected[t] = expected[t - 1] * 2 + x[t]
    np.testing.assert_allclose(y, expected, rtol=1e-6)


def test_a_shared_copy_inside_the_scan_step_is_refilled_per_launch(opencl):
    X, s_init, s_update, s_scan = cumulative_sum()
    s = te.create_schedule(s_scan.op)
    XS = s.cache_read(X, "shared", [s_update])
    for stage in (s_init, s_update):
        xo, xi = s[stage].split(stage.op.axis[1], factor=8)
        s[stage].bind(xo, te.thread_axis("blockIdx.x"))
        s[stage].bind(xi, te.thread_axis("threadIdx.x"))
    s[XS].compute_at(s[s_update], s[s_update].axes[1])
    s[XS].bind(s[XS].op.axis[1], te.thread_axis("threadIdx.x"))
    f = tvm.build(s, [X, s_scan], "opencl")
    assert "__local float X_shared[8]" in f.imported_modules[0].get_source()
    x = np.random.rand(5, 19).astype("float32")
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)


def test_a_schedule_built_for_cuda_runs_through_opencl_as_written(opencl):
    """The tutorials' ``tvm.build(s, args, "cuda")`` and ``tvm.cuda(0)``: polyopt has no
    CUDA backend, so the same schedule runs through OpenCL, with a warning saying so."""
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    bx, tx = s[C].split(C.op.axis[0], factor=64)
    s[C].bind(bx, te.thread_axis("blockIdx.x"))
    s[C].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.warns(te.PolyoptWarning, match="no 'cuda' backend.*OpenCL.*'arch'"):
        fadd = tvm.build(s, [A, B, C], "cuda -arch=sm_80", name="myadd")
    dev = tvm.cuda(0)
    assert dev.exist
    a = tvm.nd.array(np.random.uniform(size=1000).astype(A.dtype), dev)
    b = tvm.nd.array(np.random.uniform(size=1000).astype(B.dtype), dev)
    c = tvm.nd.array(np.zeros(1000, dtype=C.dtype), dev)
    fadd(a, b, c)
    tvm.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    assert "__kernel" in fadd.imported_modules[0].get_source()
