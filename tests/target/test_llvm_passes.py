"""The LLVM target's lowering passes (polyopt.target.llvm.passes): outlining, transposed
copies, unrolling and widening are decided on the loop AST, visible in
``po.lower(..., target="llvm")``, and the emitted kernels compute what NumPy does."""

import numpy as np
import pytest

import polyopt as po
from polyopt.ast.nodes import For, Intrinsic, Outlined, Run, Unrolled, Widened, walk
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


# -- the code generator's decisions: passes recorded in the AST, the emitter follows ----

def _without(*names):
    return lambda pipeline: pipeline.without(*names)


def test_parallel_accesses_pass_marks_independent_vectorized_loops():
    A = po.placeholder((64,), name="A")
    B = po.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].vectorize(B.op.axis[0])
    func = po.lower(s, [A, B], target="llvm")
    (loop,) = [n for n in walk(func.body) if isinstance(n, For)]
    assert loop.hints == ("iterations independent",)
    assert "#pragma vectorized (iterations independent)" in str(func)
    marked = po.build(s, [A, B])
    plain = po.build(s, [A, B], passes=_without("parallel_accesses"))
    assert "llvm.loop.parallel_accesses" in marked.llvm_ir
    assert "llvm.loop.parallel_accesses" not in plain.llvm_ir
    a = np.arange(64, dtype="float32")
    for f in (marked, plain):
        b = np.zeros(64, "float32")
        f(a, b)
        np.testing.assert_array_equal(b, 2 * a)


def test_row_streams_pass_lets_llvm_vectorize_a_loop_around_jammed_rows():
    A = po.placeholder((8, 64), name="A")
    B = po.compute((8, 64), lambda i, j: A[i, j] * 2.0, name="B")
    s = po.create_schedule(B)
    i, j = B.op.axis
    s[B].reorder(j, i)
    s[B].unroll(i)
    func = po.lower(s, [A, B], target="llvm")
    (loop,) = [n for n in walk(func.body) if isinstance(n, For) and n.var == "j"]
    assert loop.hints == ("row stream",)
    forbidding = '!"llvm.loop.vectorize.enable", i1 0'
    assert forbidding not in po.build(s, [A, B]).llvm_ir
    f = po.build(s, [A, B], passes=_without("row_streams"))
    assert forbidding in f.llvm_ir  # the emitter forbids it unless the pass allowed it
    a = np.arange(512, dtype="float32").reshape(8, 64)
    b = np.zeros((8, 64), "float32")
    f(a, b)
    np.testing.assert_array_equal(b, 2 * a)


def test_reassociate_pass_marks_accumulations_and_strict_fp_keeps_the_order():
    X = po.placeholder((4, 256), name="X")
    k = po.reduce_axis((0, 256), name="k")
    S = po.compute((4,), lambda i: po.sum(X[i, k], axis=k), name="S")
    s = po.create_schedule(S)
    func = po.lower(s, [X, S], target="llvm")
    marked = [run.stmt for run in walk(func.body) if isinstance(run, Run) and run.reassociate]
    assert marked == ["S_update"] and "// reassociated" in str(func)
    fast = po.build(s, [X, S])
    plain = po.build(s, [X, S], passes=_without("reassociate"))
    assert "fadd reassoc" in fast.llvm_ir and "reassoc" not in plain.llvm_ir
    x = np.random.default_rng(2).standard_normal((4, 256)).astype("float32")
    for f in (fast, plain):
        out = np.zeros(4, "float32")
        f(x, out)
        np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-4, atol=1e-4)


def test_vector_math_pass_records_the_variants_the_emitter_attaches():
    A = po.placeholder((64,), name="A")
    B = po.compute((64,), lambda i: po.exp(A[i]), name="B")
    s = po.create_schedule(B)
    host = po.lower(s, [A, B], target="llvm").decision("vector_math")
    named = po.lower(s, [A, B], target="llvm -mcpu=haswell").decision("vector_math")
    assert named.variants == () and "compiled for -mcpu=haswell" in str(named)
    f = po.build(s, [A, B])
    for scalar, vector, lanes in host.variants:  # (none without libmvec)
        assert f'"vector-function-abi-variant"="_ZGV_LLVM_N{lanes}v_{scalar}({vector})"' \
            in f.llvm_ir
    assert bool(host.variants) == ("_ZGV" in f.llvm_ir)
    a = np.linspace(-3, 3, 64, dtype="float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_allclose(b, np.exp(a), rtol=4e-6)
    no_exp = po.compute((64,), lambda i: A[i] + 1.0, name="C")
    assert po.lower(po.create_schedule(no_exp), [A, no_exp],
                    target="llvm").decision("vector_math") is None


def test_the_optimizer_follows_the_choose_optimization_decision(monkeypatch):
    """A pass deciding O2 first (as for 3 register-tiled nests) makes the optimizer try
    O2; the default decision for one nest is O3 only."""
    from polyopt.ast.pipeline import Pass
    from polyopt.target.llvm import jit
    from polyopt.target.llvm.optimization import Optimization, tiled_nests

    speeds = []
    optimized = jit._optimized
    monkeypatch.setattr(jit, "_optimized", lambda text, cpu, speed, unroll=True: (
        speeds.append((speed, unroll)), optimized(text, cpu, speed, unroll))[1])
    A, B = po.placeholder((40, 30), name="A"), po.placeholder((30, 100), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    func = po.lower(s, [A, B, C], target="llvm")
    assert tiled_nests(func.body) == 1
    assert func.decision("optimization") == Optimization(False, True, nests=1)
    po.build(s, [A, B, C])
    assert speeds == [(3, True)]
    speeds.clear()
    o2 = Pass("o2_first", lambda f: f.decide("optimization", Optimization(True, False, 3)))
    f = po.build(s, [A, B, C], passes=lambda p: p.without("choose_optimization").append(o2))
    assert speeds[0] == (2, False) and speeds[1:] in ([], [(3, False)])
    rng = np.random.default_rng(0)
    a, b = rng.random((40, 30), dtype=np.float32), rng.random((30, 100), dtype=np.float32)
    c = np.zeros((40, 100), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def _smoothing(steps: int) -> str:
    """C: ``steps`` 5-point smoothings back and forth between A and B."""
    body = []
    for q in range(steps):
        src, dst = ("A", "B") if q % 2 == 0 else ("B", "A")
        body.append(f"  for (i = 1; i < 31; i++) for (j = 1; j < 31; j++) {dst}[i][j] = "
                    f"0.2f * ({src}[i][j] + {src}[i-1][j] + {src}[i+1][j] + {src}[i][j-1] "
                    f"+ {src}[i][j+1]);")
    return ("void smooth(float A[32][32], float B[32][32]) {\n  int i, j;\n"
            + "\n".join(body) + "\n}\n")


def _smoothing_reference(a, b, steps):
    for q in range(steps):
        src, dst = (a, b) if q % 2 == 0 else (b, a)
        dst[1:-1, 1:-1] = np.float32(0.2) * (src[1:-1, 1:-1] + src[:-2, 1:-1] + src[2:, 1:-1]
                                             + src[1:-1, :-2] + src[1:-1, 2:])


@pytest.mark.parametrize("steps", [1, 8])
def test_an_in_place_kernel_over_the_bound_goes_without_llvms_own_unrolling(steps):
    from polyopt.target.llvm.optimization import OWN_UNROLL_SIZE

    kernel = po.from_c(_smoothing(steps), "smooth")
    s = po.create_schedule(kernel)
    decision = po.lower(s, target="llvm").decision("optimization")
    assert (decision.size > OWN_UNROLL_SIZE) == (steps == 8)
    assert decision.own_unrolling == (steps == 1)
    assert ("only the unrolling polyopt marks" in str(decision)) == (steps == 8)
    rng = np.random.default_rng(steps)
    a, b = rng.random((32, 32), dtype=np.float32), rng.random((32, 32), dtype=np.float32)
    expected_a, expected_b = a.copy(), b.copy()
    _smoothing_reference(expected_a, expected_b, steps)
    po.build(s)(a, b)
    np.testing.assert_allclose(a, expected_a, rtol=1e-6)
    np.testing.assert_allclose(b, expected_b, rtol=1e-6)


@pytest.mark.slow
def test_three_register_tiled_matmuls_try_o2_first_and_compute_3mm():
    """PolyBench 3mm, scheduled automatically: three register-tiled nests, so O2 first
    (kept when it vectorizes every marked loop); G = (A B)(C D) as NumPy computes it."""
    from pathlib import Path

    source = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "3mm.c"
    sizes = dict(NI=200, NJ=210, NK=220, NL=230, NM=240)  # (small ones are not tiled)
    kernel = po.from_c(str(source), defines=sizes)
    s = po.auto_schedule(kernel)
    decision = po.lower(s, target="llvm").decision("optimization")
    assert decision.nests == 3 and decision.o2_first
    assert "O2 if it vectorizes every marked loop" in str(decision)
    rng = np.random.default_rng(5)
    ni, nj, nk, nl, nm = (sizes[k] for k in ("NI", "NJ", "NK", "NL", "NM"))
    a, b = rng.random((ni, nk)), rng.random((nk, nj))
    c, d = rng.random((nj, nm)), rng.random((nm, nl))
    e, f, g = np.zeros((ni, nj)), np.zeros((nj, nl)), np.zeros((ni, nl))
    po.build(s)(e, a, b, f, c, d, g, ni=ni, nj=nj, nk=nk, nl=nl, nm=nm)
    np.testing.assert_allclose(g, (a @ b) @ (c @ d), rtol=1e-10)
