"""A split loop hands its kind to the piece that means it: lanes and unrolled copies
to the inner loop, threads to the outer one; the numbers stay right."""

import numpy as np
import pytest

import polyopt as po
from testlib.errors import refused


def _double(n=64):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2, name="B")
    return A, B


@pytest.mark.parametrize("mark, outer_kind, inner_kind", [
    ("vectorize", "serial", "vectorized"),
    ("unroll", "serial", "unrolled"),
    ("parallel", "parallel", "serial"),
])
@pytest.mark.parametrize("how", [{"factor": 8}, {"nparts": 8}])
def test_split_keeps_the_kind_on_the_right_loop(mark, outer_kind, inner_kind, how):
    A, B = _double()
    s = po.create_schedule(B)
    getattr(s[B], mark)(B.op.axis[0])
    outer, inner = s[B].split(B.op.axis[0], **how)
    kinds = {a.name: a.kind for a in s.program.stage("B").axes}
    assert (kinds[outer.name], kinds[inner.name]) == (outer_kind, inner_kind)
    f = po.build(s, [A, B])
    a = np.random.default_rng(0).standard_normal(64).astype("float32")
    b = np.zeros(64, "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_nparts_of_a_symbolic_loop_keeps_unrolling_on_the_constant_outer_loop():
    """split(nparts=4) of a loop of n iterations: only the outer loop has a constant
    count, so it stays the unrolled one (an unrolled inner loop of n/4 iterations made
    LLVM warn that it could not unroll it)."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2, name="B")
    s = po.create_schedule(B)
    s[B].unroll(B.op.axis[0])
    outer, inner = s[B].split(B.op.axis[0], nparts=4)
    kinds = {a.name: a.kind for a in s.program.stage("B").axes}
    assert (kinds[outer.name], kinds[inner.name]) == ("unrolled", "serial")
    f = po.build(s, [A, B])
    for size in (0, 1, 5, 17):
        a = np.arange(size, dtype="float32")
        b = np.zeros(size, "float32")
        f(a, b)
        np.testing.assert_array_equal(b, a * 2)


def test_nparts_of_a_symbolic_loop_in_a_tiled_nest_is_refused_saying_what_works():
    """One piece per part on top of loops that already divide made the exact check run
    for minutes (slow property run, kernel-steps 102462): refused, with the alternative."""
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] * 2, name="B")
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    err = refused(po.SymbolicSplitError, lambda: s[B].split(B.op.axis[1], nparts=3))
    assert (err.stage, err.loop, err.nparts, err.tiled_loop) == ("B", "j", 3, "i.outer")
    s[B].split(B.op.axis[1], factor=5)  # the alternative it names works
    f = po.build(s, [A, B])
    a = np.arange(42, dtype="float32").reshape(6, 7)[:6, :6].copy()
    b = np.zeros((6, 6), "float32")
    f(a, b)
    np.testing.assert_array_equal(b, a * 2)
