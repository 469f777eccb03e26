"""Dependences computed by isl's dataflow analysis, compared with hand-written maps."""

import islpy as isl
import pytest

import polyopt as po


def _matmul():
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return C


def _equal(union_map, text):
    expected = isl.UnionMap(text)
    assert union_map.is_equal(expected), f"got {union_map}\nexpected {expected}"


def test_matmul_flow_dependences_are_exact():
    deps = po.deps(po.create_schedule(_matmul()))
    _equal(deps.between("C_update", "C_update", "flow"),
           "[M, K, N] -> { C_update[i, j, k] -> C_update[i, j, k + 1] :"
           " 0 <= i < M and 0 <= j < N and 0 <= k < K - 1 }")
    _equal(deps.between("C_init", "C_update", "flow"),
           "[M, K, N] -> { C_init[i, j] -> C_update[i, j, 0] : 0 <= i < M and 0 <= j < N and K > 0 }")


def test_matmul_anti_and_output_dependences():
    deps = po.deps(po.create_schedule(_matmul()))
    _equal(deps.between("C_update", "C_update", "anti"),
           "[M, K, N] -> { C_update[i, j, k] -> C_update[i, j, k + 1] :"
           " 0 <= i < M and 0 <= j < N and 0 <= k < K - 1 }")
    _equal(deps.between("C_init", "C_update", "output"),
           "[M, K, N] -> { C_init[i, j] -> C_update[i, j, 0] : 0 <= i < M and 0 <= j < N and K > 0 }")
    assert deps.between("C_init", "C_update", "anti").is_empty()


def test_dependences_print_readably():
    text = str(po.deps(po.create_schedule(_matmul())))
    assert ("flow C_update[i, j, k] -> C_update[i, j, k + 1] through C[i, j] "
            "for 0 <= i < M and 0 <= j < N and 0 <= k <= -2 + K") in text
    assert "flow C_init[i, j] -> C_update[i, j, 0] through C[i, j]" in text


def test_producer_consumer_flow_is_value_based():
    """The consumer reads the last write of each element: the final update, or the
    init when the reduction is empty."""
    C = _matmul()
    D = po.compute(C.shape, lambda i, j: C[i, j] * 2.0, name="D")
    deps = po.deps(po.create_schedule(D))
    _equal(deps.between("C_update", "D", "flow"),
           "[M, K, N] -> { C_update[i, j, K - 1] -> D[i, j] : 0 <= i < M and 0 <= j < N and K > 0 }")
    _equal(deps.between("C_init", "D", "flow"),
           "[M, K, N] -> { C_init[i, j] -> D[i, j] : 0 <= i < M and 0 <= j < N and K <= 0 }")


def test_stencil_consumer_reads_neighbours():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((n - 2,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
    deps = po.deps(po.create_schedule(C))
    _equal(deps.between("B", "C", "flow"),
           "[n] -> { B[b] -> C[c] : 0 <= c < n - 2 and c <= b <= c + 2 }")
    assert not list(deps.anti) and not list(deps.output)


def test_guarded_reads_only_depend_where_the_guard_holds():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
    P = po.compute((n + 2,), lambda i: po.if_then_else((i >= 1) & (i <= n), B[i - 1], 0.0),
                   name="P")
    deps = po.deps(po.create_schedule(P))
    _equal(deps.between("B", "P", "flow"), "[n] -> { B[i] -> P[i + 1] : 0 <= i < n }")


def test_prefix_sum_with_triangular_where():
    n = po.var("n")
    X = po.placeholder((n,), name="X")
    r = po.reduce_axis((0, n), name="r")
    S = po.compute((n,), lambda i: po.sum(X[r], axis=r, where=r <= i), name="S")
    program = po.create_schedule(S).program
    assert program.statement("S_update").domain.is_equal(
        isl.Set("[n] -> { S_update[i, r] : 0 <= r <= i < n }"))
    deps = po.deps(program)
    _equal(deps.between("S_update", "S_update", "flow"),
           "[n] -> { S_update[i, r] -> S_update[i, r + 1] : 0 <= r < i < n }")


@pytest.mark.parametrize("kind", ["flow", "anti", "output"])
def test_dependence_kinds_are_listed(kind):
    deps = po.deps(po.create_schedule(_matmul()))
    assert all(d.kind == kind for d in getattr(deps, kind))
    assert len(getattr(deps, kind)) >= 1


def _conv_with_caches():
    X = po.placeholder((1, 8, 10, 10), name="X")
    W = po.placeholder((16, 8, 3, 3), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
    s = po.create_schedule(Y)
    po.templates.conv2d_template(s, Y)
    return s


def _producer_consumer():
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((8,), lambda i: B[i] + B[7 - i], name="C")
    return po.create_schedule(C)


@pytest.mark.parametrize("make", [_conv_with_caches, _producer_consumer])
def test_arrays_written_once_have_no_output_dependences(make, monkeypatch):
    """Skipping isl's output analysis for arrays written once gives the same dependences."""
    from polyopt.deps import dataflow
    from polyopt.domain.program import AccessKind
    program = make().program
    assert any(dataflow.written_once(program.accesses(AccessKind.WRITE, a.name))
               for a in program.arrays if a.written)
    fast = dataflow.compute_dependences(program)
    monkeypatch.setattr(dataflow, "written_once", lambda writes: False)
    full = dataflow.compute_dependences(program)
    assert [str(d) for d in fast] == [str(d) for d in full]
    assert all(a.is_equal(b) for x, y in zip(fast, full)
               for a, b in ((x.relation, y.relation), (x.elements, y.elements)))


def test_written_once_needs_one_injective_writer():
    from polyopt.deps.dataflow import written_once
    assert written_once(isl.UnionMap("[n] -> { S[i] -> A[2i + 1] : 0 <= i < n }"))
    assert not written_once(isl.UnionMap("{ S[i] -> A[floor(i / 2)] : 0 <= i < 8 }"))
    assert not written_once(isl.UnionMap("{ S[i] -> A[i] : 0 <= i < 4; T[i] -> A[i + 4] : 0 <= i < 4 }"))
