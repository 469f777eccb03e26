"""Long and deep programs: a chain of stencils builds and runs right, and the walks over
deep structures (isl ASTs of long chains, deep index expressions) need no recursion."""

import sys

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.ast.from_isl import index_expr, loop_ast
from polyopt.ast.nodes import Block, Op
from polyopt.te.fold import fold
from testlib.chains import stencil_chain
from testlib.numeric import assert_numbers


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
    assert_numbers(result, numpy_chain(a.astype(np.float64), stages), rtol=1e-4, atol=0)
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
        tree = loop_ast(program)
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


def test_a_sum_of_5000_terms_builds_and_matches_numpy():
    """Deeper than Python's recursion limit: the call runs again on a deep stack."""
    A = po.placeholder((4,), name="A")

    def deep(i):
        expr = A[i]
        for k in range(5000):
            expr = expr + A[i] * float(k % 3)
        return expr

    B = po.compute((4,), deep, name="B")
    s = po.create_schedule(B)
    assert str(po.lower(s, [A, B])).count("A[i]") == 5001
    f = po.build(s, [A, B], target="llvm")
    a = np.arange(4, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * (1 + sum(k % 3 for k in range(5000))))


def test_a_size_nested_3000_deep_builds():
    m = po.var("m")
    size = m
    for _ in range(3000):
        size = size + 1 - 1
    A = po.placeholder((size,), name="A")
    B = po.compute((size,), lambda i: A[i] * 2.0, name="B")
    f = po.build(po.create_schedule(B), [A, B])
    a = np.arange(5, dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_public_call_that_recurses_forever_raises_a_polyopt_error():
    @po.errors.public
    def forever(n):
        return forever.__wrapped__(n + 1)

    with pytest.raises(po.InvalidArgumentError, match="nested too deeply"):
        forever(0)
    assert sys.getrecursionlimit() < po.errors.DEEP_RECURSION_LIMIT  # restored


def test_long_names_build():
    """LLVM refuses local names over 1,024 characters (300 nested splits name a loop
    i_outer_outer...): the IR's names are clipped, with a hash that keeps them apart."""
    A = po.placeholder((8, 4), name="A" * 2000)
    k = po.reduce_axis((0, 4), name="k" * 2000)
    B = po.compute((8,), lambda i: po.sum(A[i, k], axis=k), name="B" * 1500)
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=2)
    f = po.build(s, [A, B])
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    b = np.zeros(8, dtype=np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a.sum(axis=1))


HANG_GUARD = """
import numpy as np
import polyopt as po
from polyopt.schedules.tensorized import int8_conv2d_template
X = po.placeholder((1, 256, 14, 14), name="X", dtype="uint8")
W = po.placeholder((4, 64, 3, 3, 64, 4), name="W", dtype="int8")
Y = po.ops.conv2d_u8s8_nchw(X, W, padding=1, name="Y")
s = po.create_schedule(Y)
int8_conv2d_template(s, Y, rows=4, parallel=False,  # (lowered only: any host)
                     target_info=po.TargetInfo.for_cpu("znver4"))
text = str(po.lower(s, [X, W, Y], target="llvm"))
assert "Y[" in text and "gemm_u8s8_4x64.update" in text, text[-3000:]
print("lowered")
"""


def test_a_tiled_copy_with_local_variables_scans_in_a_subprocess_without_hanging():
    """The band is trimmed from the schedule's own functions: rebuilt from the rows (a
    tiled copy's row has local variables), isl's scan ran for more than 10 minutes.
    Run in a child under a generous limit, so a regression fails instead of stalling."""
    import subprocess
    done = subprocess.run([sys.executable, "-c", HANG_GUARD], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "lowered" in done.stdout, done.stderr[-2000:]
