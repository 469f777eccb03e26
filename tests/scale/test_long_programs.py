"""Long and deep programs: a chain of stencils builds and runs right, and the walks over
deep structures (isl ASTs of long chains, deep index expressions) need no recursion."""

import sys

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.ast.from_isl import index_expr, scan
from polyopt.ast.nodes import Block, Op
from polyopt.te.fold import fold
from testlib.chains import stencil_chain


def numpy_chain(a: np.ndarray, stages: int) -> np.ndarray:
    for _ in range(stages):
        b = a.copy()
        b[1:, 1:] = (a[1:, 1:] + a[:-1, 1:] + a[1:, :-1]) * 0.25
        a = b
    return a


def build_and_check(stages: int, n: int = 8):
    A, out = stencil_chain(stages, n)
    s = po.create_schedule(out)
    assert len(po.deps(s).flow) == stages - 1
    s[out].split(out.op.axis[1], factor=4)  # checked against the dependences
    f = po.build(s, [A, out], target="llvm")
    a = np.random.default_rng(1).random((n, n), dtype=np.float32)
    result = np.empty_like(a)
    f(a, result)
    np.testing.assert_allclose(result, numpy_chain(a.astype(np.float64), stages), rtol=1e-4)
    return f


def test_a_chain_of_120_stencils_builds_and_matches_numpy():
    f = build_and_check(120)
    # the nests are outlined and the 119 equal ones share one function
    assert f.llvm_ir.count("define internal void") == 2


@pytest.mark.slow
def test_a_chain_of_500_stencils_builds_and_matches_numpy():
    build_and_check(500)


def test_chain_dependences_are_those_of_isl_dataflow():
    A, out = stencil_chain(3, 6)
    program = po.create_schedule(out).program
    deps = po.deps(po.create_schedule(out))
    writes = isl.UnionMap.from_map(program.statement("S0").writes[0].relation)
    reads = isl.UnionMap.from_map(program.statement("S1").reads[0].relation)
    for access in program.statement("S1").reads[1:]:
        reads = reads.union(isl.UnionMap.from_map(access.relation))
    flow = (isl.UnionAccessInfo.from_sink(reads).set_must_source(writes)
            .set_schedule_map(program.schedule.get_map()).compute_flow())
    expected = flow.get_full_must_dependence().range_factor_domain()
    assert deps.between("S0", "S1", "flow").is_equal(expected)
    assert not deps.anti and not deps.output


def test_the_isl_ast_of_a_long_chain_converts_under_a_low_recursion_limit():
    A, out = stencil_chain(300, 4)
    program = po.create_schedule(out).program
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        tree = scan(program)
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(tree, Block) and len(tree.items) == 300


def test_a_deep_isl_expression_converts_under_a_low_recursion_limit():
    names = [f"p{k}" for k in range(600)]
    text = " + ".join(names)
    build = isl.AstBuild.from_context(isl.Set(f"[{', '.join(names)}] -> {{ : }}"))
    expr = build.expr_from_pw_aff(isl.PwAff(f"[{', '.join(names)}] -> {{ [({text})] }}"))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        result = index_expr(expr)
    finally:
        sys.setrecursionlimit(limit)
    depth = fold(result, lambda e: e.args if isinstance(e, Op) else (),
                 lambda e, inner: 1 + max(inner, default=0))
    assert depth >= 600


def test_fold_walks_5000_deep_without_recursion():
    tree = 0
    for k in range(1, 5001):
        tree = ("+", tree, k)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(100)
    try:
        total = fold(tree, lambda t: t[1:] if isinstance(t, tuple) else (),
                     lambda t, values: sum(values) if isinstance(t, tuple) else t)
    finally:
        sys.setrecursionlimit(limit)
    assert total == 5000 * 5001 // 2


def test_a_sum_of_5000_terms_raises_a_polyopt_error_not_a_recursion_error():
    A = po.placeholder((4,), name="A")

    def deep(i):
        expr = A[i]
        for _ in range(5000):
            expr = expr + A[i]
        return expr

    try:
        B = po.compute((4,), deep, name="B")
        s = po.create_schedule(B)
        f = po.build(s, [A, B], target="llvm")
    except po.PolyoptError as err:
        assert "nested too deeply" in str(err)
    else:  # once every walk is iterative, the numbers must be right
        a = np.arange(4, dtype=np.float32)
        b = np.empty_like(a)
        f(a, b)
        np.testing.assert_allclose(b, a * 5001)
