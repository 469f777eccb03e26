"""Schedule templates: correct numbers on dividing and non-dividing sizes, real SIMD."""

import numpy as np
import pytest

import polyopt as po

from testlib.machine import HOST, vector_of, vector_register


def _matmul(symbolic: bool, m: int, n: int, k: int):
    M, N, K = (po.var("M"), po.var("N"), po.var("K")) if symbolic else (m, n, k)
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    return A, B, po.ops.matmul(A, B)


@pytest.mark.parametrize("pack", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m, n, k", [(64, 64, 64), (37, 53, 29), (1, 17, 5), (100, 3, 70),
                                     (13, 130, 9)])
def test_matmul_template(m, n, k, threads, pack):
    A, B, C = _matmul(True, m, n, k)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, rows=4, cols=32, pack=pack)
    f = po.build(s, [A, B, C], num_threads=threads, parallel_min_work=0)
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    for _ in range(2):  # buffers are reused correctly from one call to the next
        c = np.full((m, n), np.nan, np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
    assert "#pragma parallel" in str(po.lower(s, [A, B, C]))
    assert "polyopt_parallel" in f.llvm_ir and vector_of("float32") in f.optimized_ir


@pytest.mark.parametrize("m, n, k", [(48, 128, 40), (50, 100, 33)])
def test_matmul_template_register_tile(m, n, k):
    """The host's register tile (6 x 64 with AVX-512, 6 x 16 with AVX2) is an alloca
    promoted to registers (24 zmm, 12 ymm): the reduction loop has that many vector FMAs
    and no store."""
    rows, vectors = HOST.register_tile()
    cols = vectors * HOST.lanes("float32")
    A, B, C = _matmul(True, m, n, k)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C, parallel=False)
    func = po.lower(s, [A, B, C])
    assert func.storage["C_local"].loops == ("j.outer", "i.outer")
    assert [str(e) for e in func.storage["C_local"].extents] == [str(rows), str(cols)]
    assert [str(e) for e in func.storage["B_global"].extents] == ["K", str(cols)]
    f = po.build(s, [A, B, C])
    assert f"%\"C_local.stack\" = alloca [{4 * rows * cols} x i8], align 64" in f.llvm_ir
    loops = _innermost_loops(f.assembly)
    register = vector_register()
    assert any(body.count("vfmadd231ps") == rows * vectors and register in body
               and f"vmovups\t%{register}" not in body for body in loops), loops
    rng = np.random.default_rng(1)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def _innermost_loops(assembly: str) -> list[str]:
    """Text of each backward-branching block (label ... jump back to it)."""
    lines = assembly.splitlines()
    bodies = []
    for end, line in enumerate(lines):
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("j") and parts[1].startswith(".LBB"):
            label = parts[1] + ":"
            starts = [n for n in range(end) if lines[n].strip() == label]
            if starts:
                bodies.append("\n".join(lines[starts[-1]:end + 1]))
    return bodies


def test_matmul_template_is_deterministic():
    texts = []
    for _ in range(2):
        A, B, C = _matmul(True, 0, 0, 0)
        s = po.create_schedule(C)
        po.templates.matmul_template(s, C)
        texts.append(po.build(s, [A, B, C]).llvm_ir)
    assert texts[0] == texts[1]


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


def test_matmul_template_needs_a_contraction():
    A = po.placeholder((8, 8), name="A")
    T = po.compute((8, 8), lambda i, j: A[j, i] * 2, name="T")
    s = po.create_schedule(T)
    with pytest.raises(po.InvalidArgumentError, match="reads no tensor as B\\[k, j\\]"):
        po.templates.matmul_template(s, T)


def test_batched_matmul_template_runs_batches_in_parallel():
    """A batched product with one column block per batch (attention's probabilities
    times values: 64 columns) runs its batches and column blocks in one parallel loop."""
    A = po.placeholder((3, 20, 24), name="A")
    B = po.placeholder((3, 24, 40), name="B")
    k = po.reduce_axis((0, 24), name="k")
    C = po.compute((3, 20, 40), lambda b, i, j: po.sum(A[b, i, k] * B[b, k, j], axis=k),
                   name="C")
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    parallel = [loop.name for loop in s[C].axes if loop.kind == "parallel"]
    assert parallel == ["b.j.outer.fused"], parallel
    f = po.build(s, [A, B, C], num_threads=2)
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 20, 24),
                                                                        (3, 24, 40)))
    c = np.empty((3, 20, 40), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)
