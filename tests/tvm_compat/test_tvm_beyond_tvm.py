"""What TVM refuses but users write anyway: a reduction inside a larger expression
becomes its own compute."""

import numpy as np

import polyopt as po


def test_mean_of_rows():
    n, m = po.var("n"), po.var("m", min=1)
    A = po.placeholder((n, m), name="A")
    k = po.reduce_axis((0, m), name="k")
    mean = po.compute((n,), lambda i: po.sum(A[i, k], axis=k) / m, name="mean")
    assert [t.name for t in mean.op.inputs] == ["mean_sum"]
    f = po.build(po.create_schedule(mean), [A, mean])
    a = np.random.rand(5, 7).astype("float32")
    out = np.zeros(5, "float32")
    f(a, out)
    np.testing.assert_allclose(out, a.mean(axis=1), rtol=1e-5)


def test_attention_scores_then_softmax_numerator():
    n, dim = 6, 8
    Q = po.placeholder((n, dim), name="Q")
    K = po.placeholder((n, dim), name="K")
    d = po.reduce_axis((0, dim), name="d")
    S = po.compute((n, n), lambda i, j: po.exp(po.sum(Q[i, d] * K[j, d], axis=d) / 8.0),
                   name="S")
    s = po.create_schedule(S)
    s[S].parallel(S.op.axis[0])
    f = po.build(s, [Q, K, S])
    q, kk = np.random.rand(n, dim).astype("float32"), np.random.rand(n, dim).astype("float32")
    out = np.zeros((n, n), "float32")
    f(q, kk, out)
    np.testing.assert_allclose(out, np.exp(q @ kk.T / 8.0), rtol=1e-5)


def test_two_reductions_and_one_over_an_offset_axis():
    A = po.placeholder((4, 10), name="A")
    k = po.reduce_axis((2, 10), name="k")
    j = po.reduce_axis((0, 3), name="j")
    # sum_k A[i, k] - max_k A[i, k], and a nested one: sum_j (sum_k A[i, k] * j)
    B = po.compute((4,), lambda i: po.sum(A[i, k], axis=k) - po.max(A[i, k], axis=k),
                   name="B")
    C = po.compute((4,), lambda i: po.sum(po.sum(A[i, k], axis=k) * j, axis=j), name="C")
    f = po.build(po.create_schedule([B, C]), [A, B, C])
    a = np.random.rand(4, 10).astype("float32")
    b, c = np.zeros(4, "float32"), np.zeros(4, "float32")
    f(a, b, c)
    part = a[:, 2:]
    np.testing.assert_allclose(b, part.sum(1) - part.max(1), rtol=1e-5)
    np.testing.assert_allclose(c, part.sum(1) * 3, rtol=1e-5)
