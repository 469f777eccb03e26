"""The OpenCL schedules of the ported TVM tutorials (tests/tvm_compat) under Oclgrind
with data-race checks: NumPy's numbers and an empty log."""

import pytest

TUTORIALS = {
    "vector_add": """
        n = te.var("n")
        A = te.placeholder((n,), name="A"); B = te.placeholder((n,), name="B")
        C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
        s = te.create_schedule(C.op)
        bx, tx = s[C].split(C.op.axis[0], factor=16)
        s[C].bind(bx, te.thread_axis("blockIdx.x")); s[C].bind(tx, te.thread_axis("threadIdx.x"))
        f = tvm.build(s, [A, B, C], "opencl", device="oclgrind")
        a, b = np.random.rand(37).astype("float32"), np.random.rand(37).astype("float32")
        c = tvm.nd.array(np.zeros(37, "float32"))
        f(a, b, c)
        np.testing.assert_allclose(c.numpy(), a + b)
    """,
    "cross_thread_row_sum": """
        n, m = te.var("n"), te.var("m")
        A = te.placeholder((n, m), name="A")
        k = te.reduce_axis((0, m), "k")
        B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
        s = te.create_schedule(B.op)
        ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
        BF = s.rfactor(B, ki)
        xo, xi = s[B].split(s[B].op.axis[0], factor=4)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        tx = te.thread_axis("threadIdx.x")
        s[B].bind(s[B].op.reduce_axis[0], tx)
        s[B].set_store_predicate(tx.var.equal(0))
        bo, bi = s[BF].split(BF.op.axis[1], factor=4)
        s[BF].reorder(bo, bi, BF.op.axis[0])
        s[BF].bind(bo, "blockIdx.x"); s[BF].bind(bi, "threadIdx.x")
        f = tvm.build(s, [A, B], "opencl", device="oclgrind")
        a = np.random.rand(9, 21).astype("float32")
        b = np.zeros(9, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    """,
    "cross_thread_reduction_in_thread_rows": """
        n, m = te.var("n"), te.var("m")
        A = te.placeholder((n, m), name="A")
        k = te.reduce_axis((0, m), "k")
        B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
        s = te.create_schedule(B.op)
        ko, ki = s[B].split(B.op.reduce_axis[0], factor=8)
        BF = s.rfactor(B, ki)
        xo, xi = s[B].split(s[B].op.axis[0], factor=4)
        s[B].bind(xo, te.thread_axis("blockIdx.x"))
        s[B].bind(xi, te.thread_axis("threadIdx.y"))
        tx = te.thread_axis("threadIdx.x")
        s[B].bind(s[B].op.reduce_axis[0], tx)
        s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
        s[B].set_store_predicate(tx.var.equal(0))
        f = tvm.build(s, [A, B], "opencl", device="oclgrind")
        a = np.random.rand(6, 21).astype("float32")
        b = np.zeros(6, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    """,
    "convolution_with_shared_copies": """
        from tests.tvm_compat import test_tvm_gpu_convolution as conv
        conv.batch = conv.out_channel = 16
        conv.in_channel = 4
        A, W, Apad, B = conv.convolution()
        s = te.create_schedule(B.op)
        s[Apad].compute_inline()
        AA = s.cache_read(Apad, "shared", [B])
        WW = s.cache_read(W, "shared", [B])
        hi, wi, fi, ni = s[B].op.axis
        bz = s[B].fuse(hi, wi)
        by, fi = s[B].split(fi, factor=16)
        bx, ni = s[B].split(ni, factor=16)
        ty, fi = s[B].split(fi, nparts=4)
        tx, ni = s[B].split(ni, nparts=4)
        ry, rx, rc = s[B].op.reduce_axis
        rco, rci = s[B].split(rc, factor=2)
        s[B].reorder(bz, by, bx, rco, ry, rx, ty, tx, rci, fi, ni)
        for loop, tag in ((bz, "blockIdx.z"), (by, "blockIdx.y"), (bx, "blockIdx.x"),
                          (ty, "threadIdx.y"), (tx, "threadIdx.x")):
            s[B].bind(loop, te.thread_axis(tag))
        for cache in (AA, WW):
            s[cache].compute_at(s[B], rx)
            a0, a1, a2, a3 = s[cache].op.axis
            cx, a3 = s[cache].split(a3, nparts=4)
            s[cache].reorder(cx, a0, a1, a2, a3)
            s[cache].bind(cx, te.thread_axis("threadIdx.x"))
        conv.check(tvm.build(s, [A, W, B], "opencl", device="oclgrind"), A, W, B)
    """,
    "convolution_as_the_tutorial_writes_it": """
        from tests.tvm_compat import test_tvm_gpu_convolution as conv
        conv.batch = conv.out_channel = 16
        conv.in_channel = 4
        A, W, Apad, B = conv.convolution()
        s = conv.tutorial_schedule(A, W, Apad, B)
        conv.check(tvm.build(s, [A, W, B], "opencl", device="oclgrind"), A, W, B)
    """,
    "scan_time_loop_on_the_host": """
        m, n = te.var("m"), te.var("n")
        X = te.placeholder((m, n), name="X")
        s_state = te.placeholder((m, n))
        s_init = te.compute((1, n), lambda _, i: X[0, i])
        s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        s_scan = tvm.te.scan(s_init, s_update, s_state, inputs=[X])
        s = te.create_schedule(s_scan.op)
        for stage in (s_init, s_update):
            xo, xi = s[stage].split(stage.op.axis[1], factor=8)
            s[stage].bind(xo, te.thread_axis("blockIdx.x"))
            s[stage].bind(xi, te.thread_axis("threadIdx.x"))
        f = tvm.build(s, [X, s_scan], "opencl", device="oclgrind")
        x = np.random.rand(4, 19).astype("float32")
        y = np.zeros_like(x)
        f(x, y)
        np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)
    """,
    "split_nparts_of_a_symbolic_extent": """
        n = te.var("n")
        A = te.placeholder((n,), name="A")
        B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
        s = te.create_schedule(B.op)
        bx, xi = s[B].split(B.op.axis[0], nparts=3)
        tx, xi = s[B].split(xi, nparts=8)
        s[B].bind(bx, te.thread_axis("blockIdx.x")); s[B].bind(tx, te.thread_axis("threadIdx.x"))
        f = tvm.build(s, [A, B], "opencl", device="oclgrind")
        a = np.random.rand(50).astype("float32"); b = np.zeros(50, "float32")
        f(a, b)
        np.testing.assert_allclose(b, a * 2)
    """,
}


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_tutorial_schedules_are_clean_under_oclgrind(oclgrind, name):
    out, log = oclgrind("import numpy as np\nimport polyopt as te\nfrom polyopt import tvm\n"
                        + "\n".join(line[8:] for line in TUTORIALS[name].splitlines())
                        + "\nprint('checked')\n")
    assert "checked" in out
    assert log == "", f"Oclgrind reported:\n{log[:3000]}"
