"""Schedule templates: correct numbers on dividing and non-dividing sizes, real SIMD."""

import numpy as np
import pytest

import polyopt as po


@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (37, 53, 29), (1, 17, 5), (100, 3, 70)])
def test_matmul_template(m, n, k):
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, tile_i=16, tile_j=16, tile_k=8)
    f = po.build(s, [A, B, C])
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "#pragma parallel" in str(po.lower(s, [A, B, C]))
    assert "GOMP_parallel" in f.llvm_ir and "<16 x float>" in f.optimized_ir


@pytest.mark.parametrize("n", [1, 15, 16, 1001])
def test_injective_template(n):
    N = po.var("N")
    A = po.placeholder((N,), name="A")
    B = po.compute((N,), lambda i: po.maximum(A[i] * 2.0 - 1.0, 0.0), name="B")
    s = po.create_schedule(B)
    po.templates.injective_template(s, B)
    f = po.build(s, [A, B])
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    b = np.zeros(n, np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, np.maximum(a * np.float32(2) - np.float32(1), 0))
    assert "vectorize.enable" in f.llvm_ir
