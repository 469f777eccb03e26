"""Copies computed inside both loops of a ``split(nparts=)`` (issue 32's hang_m2): they
are keyed by the loop before the split (one dimension, ``t`` for ``t.outer, t.inner``),
so their domains and dataflow stay as simple as the kernel's; the checks after a
rewrite are exact and answer within seconds, and the numbers stay right."""

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from testlib.numeric import assert_numbers, assert_same_as_default
from testlib.kernels import triangles as in_place


def cached_in_split_loops():
    s = po.create_schedule(in_place)
    s["S2"].split("t", nparts=4)
    s.cache_write(s["S2"], "global")
    return s


def test_copies_are_keyed_by_the_loop_before_the_split():
    program = cached_in_split_loops().program
    for copy in ("A_global_in", "A_global_out"):
        stage = program.stage(copy)
        domain = program.statement(copy).domain
        assert (stage.attach.depth, stage.attach.outer_dims) == (5, 4)  # t.outer, t.inner: t
        assert domain.get_var_names(isl.dim_type.set)[:4] == ["t", "i", "j", "k"]
        assert "floor" not in str(domain) and "mod" not in str(domain)
        assert [a.name for a in stage.axes[:5]] == ["t.outer", "t.inner", "i", "j", "k"]
        row = program.order_rows()[copy]  # ordered by t, as the kernel's statements
        assert "floor" not in str(row) and row.dim(isl.dim_type.out) == \
            program.order_rows()["S2"].dim(isl.dim_type.out)


def test_hang_m2_reverse_is_refused_by_the_violated_flow_dependence():
    s = cached_in_split_loops()
    with pytest.raises(po.DependenceViolationError) as refused:
        s["S1"].reverse("k")
    error = refused.value
    assert error.transform == 's["S1"].reverse("k")' and error.repair is None
    dependence = error.violation.dependence
    assert (dependence.kind, dependence.source, dependence.sink, dependence.array) == \
        ("flow", "A_global_out", "S1", "A")
    assert error.violation.source.startswith("A_global_out[t=")
    assert error.violation.sink.startswith("S1[t=")
    assert error.violation.pairs.is_subset(dependence.relation)
    assert [step.primitive for step in s.steps] == ["split", "cache_write"]


@pytest.mark.slow  # (two builds of the kernel)
def test_the_refused_reverse_would_change_the_numbers():
    """The refusal is not a false one: forced, the reverse computes other values at the
    sizes of the violation's example."""
    s = cached_in_split_loops()
    sizes = {"N": 6, "T": 2, "M": 2}
    a = np.random.default_rng(3).random((6, 6))
    legal = assert_same_as_default(s, [a], sizes=sizes)[0]
    s["S1"].reverse("k", check=False)
    forced = a.copy()
    po.build(s)(forced, **sizes)
    assert np.abs(forced - legal).max() > 1e-3


@pytest.mark.slow  # (two builds of the kernel)
def test_legal_steps_on_the_copies_keep_the_numbers():
    s = cached_in_split_loops()
    s["S3"].split("j", factor=2)  # checked against the rewritten kernel's dependences
    for sizes in ({"N": 7, "T": 5, "M": 3}, {"N": 5, "T": 3, "M": 1}):
        a = np.random.default_rng(sizes["T"]).random((sizes["N"], sizes["N"]))
        assert_same_as_default(s, [a], sizes=sizes)


def test_reduction_computed_in_split_loops_then_at_the_root():
    """A reduction's init runs in the split loops too (the copy's key is taken on the init
    as well); compute_root afterwards drops the shared loops and the key dimension."""
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n, m), name="A")
    B = po.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    k = po.reduce_axis((0, m), name="k")
    C = po.compute((n,), lambda i: po.sum(B[i, k], axis=k), name="C")
    s = po.create_schedule(C)
    _, inner = s[C].split(C.op.axis[0], nparts=3)
    s[B].compute_at(s[C], inner)
    stage = s.program.stage("B")
    assert (stage.attach.depth, stage.attach.outer_dims) == (2, 1)
    assert [a.name for a in stage.axes] == ["i.outer", "i.inner", "i", "j"]
    a = np.random.default_rng(0).random((7, 5)).astype(np.float32)
    for _ in range(2):
        c = np.zeros(7, np.float32)
        po.build(s, [A, C])(a, c)
        assert_numbers(c, (2 * a.astype(np.float64)).sum(axis=1), dtype=np.float32)
        s[B].compute_root()
    assert s.program.stage("B").attach.kind == "root"

