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
}


@pytest.mark.parametrize("name", sorted(TUTORIALS))
def test_tutorial_schedules_are_clean_under_oclgrind(oclgrind, name):
    out, log = oclgrind("import numpy as np\nimport polyopt as te\nfrom polyopt import tvm\n"
                        + "\n".join(line[8:] for line in TUTORIALS[name].splitlines())
                        + "\nprint('checked')\n")
    assert "checked" in out
    assert log == "", f"Oclgrind reported:\n{log[:3000]}"
