"""The LLVM target's lowering passes (polyopt.target.llvm.passes): outlining, transposed
copies, unrolling and widening are decided on the loop AST, visible in
``po.lower(..., target="llvm")``, and the emitted kernels compute what NumPy does."""

import numpy as np
import pytest

import polyopt as po
from polyopt.ast.nodes import For, Intrinsic, Outlined, Unrolled, Widened, walk
from polyopt.target.llvm import codegen
from polyopt.target.llvm.passes import UNROLL_LIMIT
from testlib.machine import HOST


def _nodes(func, kind):
    return [n for n in walk(func.body) if isinstance(n, kind)]


def test_matmul_template_outlines_unrolls_and_widens():
    A, B = po.placeholder((40, 30), name="A"), po.placeholder((30, 100), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    func = po.lower(s, [A, B, C], target="llvm")
    (region,) = _nodes(func, Outlined)
    assert region.loop.var == "j_outer" and region.private == ("B_global", "C_local")
    rows, vectors = HOST.register_tile()  # the host's tile: 6 x 64 (AVX-512), 6 x 16
    cols = vectors * HOST.lanes("float32")
    unrolled = _nodes(func, Unrolled)
    assert {(u.trips, u.guarded) for u in unrolled} == {(rows, False), (rows, True)}
    widened = _nodes(func, Widened)  # the last column block: 100 = 64 + 36 or 6 x 16 + 4
    assert widened and all(w.trips == cols for w in widened)
    assert f"#pragma vectorized: widened to {cols} iterations" in str(func)
    rng = np.random.default_rng(0)
    a, b = rng.random((40, 30), dtype=np.float32), rng.random((30, 100), dtype=np.float32)
    for threads in (1, 2):
        c = np.full((40, 100), np.nan, np.float32)
        po.build(s, [A, B, C], num_threads=threads, parallel_min_work=0)(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_transposed_copy_is_an_intrinsic():
    W = po.placeholder((20, 20), name="W")
    P = po.compute((20, 20), lambda k, f: W[f, k], name="P")
    s = po.create_schedule(P)
    ko, ki = s[P].split(P.op.axis[0], factor=8)
    fo, fi = s[P].split(P.op.axis[1], factor=8)
    s[P].reorder(ko, fo, ki, fi)
    s[P].unroll(ki)
    s[P].vectorize(fi)
    func = po.lower(s, [W, P], target="llvm")
    copies = _nodes(func, Intrinsic)
    assert len(copies) == 2  # the full tile and the general one (separate_full_tiles versions
    # both loops' tests at once)
    assert {c.name for c in copies} == {"transposed_copy"}
    assert "// transposed_copy:" in str(func)
    assert not _nodes(func, Unrolled)  # taken by the copy before unrolling
    w = np.random.default_rng(1).standard_normal((20, 20)).astype("float32")
    p = np.zeros((20, 20), "float32")
    f = po.build(s, [W, P])
    f(w, p)
    np.testing.assert_array_equal(p, w.T)
    assert "shufflevector" in f.llvm_ir


def test_long_unrolled_loop_stays_a_loop():
    n = UNROLL_LIMIT + 36
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
    s = po.create_schedule(B)
    s[B].unroll(B.op.axis[0])
    func = po.lower(s, [A, B], target="llvm")
    assert not _nodes(func, Unrolled)
    assert [loop.kind for loop in _nodes(func, For)] == ["unrolled"]
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    po.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_parallel_loop_inside_a_parallel_loop_runs_serially_in_each_thread():
    A = po.placeholder((7, 9), name="A")
    B = po.compute((7, 9), lambda i, j: A[i, j] * 3.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(B.op.axis[0])
    s[B].parallel(B.op.axis[1])
    func = po.lower(s, [A, B], target="llvm")
    (region,) = _nodes(func, Outlined)
    assert region.loop.var == "i"
    inner = [n for n in walk(region.loop.body) if isinstance(n, For)]
    assert [(loop.var, loop.kind) for loop in inner] == [("j", "parallel")]
    a = np.arange(63, dtype="float32").reshape(7, 9)
    b = np.zeros((7, 9), "float32")
    f = po.build(s, [A, B], num_threads=2, parallel_min_work=0)
    f(a, b)
    np.testing.assert_array_equal(b, 3 * a)
    assert f.llvm_ir.count("call void @\"polyopt_parallel\"") == 1


def test_module_for_needs_the_llvm_passes():
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(po.InvalidArgumentError, match="target='llvm'"):
        codegen.module_for(po.lower(po.create_schedule(B), [A, B]))
