"""Refusals beyond dependence order: races of parallel recomputed tiles."""

import numpy as np
import pytest

import polyopt as po


def _stencil():
    A = po.placeholder((10,), name="A", dtype="int32")
    B = po.compute((10,), lambda i: A[i] * 2, name="B")
    C = po.compute((8,), lambda i: B[i] + B[i + 2], name="C")
    return A, B, C


def test_parallel_over_overlapping_recomputed_tiles_is_refused():
    A, B, C = _stencil()
    s = po.create_schedule(C)
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    with pytest.raises(po.LoopRaceError) as refused:
        s[C].parallel(io)
    assert refused.value.loop == "i.outer"
    assert refused.value.race == ("B[i_outer=0, i=4] writes B[4] that C[i=4] reads, in "
                                  "another iteration")
    assert s[C].can_parallel(ii)


def test_parallel_over_disjoint_recomputed_tiles_is_accepted():
    A, B, _ = _stencil()
    D = po.compute((10,), lambda i: B[i] + 1, name="D")
    s = po.create_schedule(D)
    io, ii = s[D].split(D.op.axis[0], factor=4)
    s[B].compute_at(s[D], io)
    s[D].parallel(io)
    a, d = np.arange(10, dtype="int32"), np.zeros(10, "int32")
    po.build(s, [A, D])(a, d)
    np.testing.assert_array_equal(d, a * 2 + 1)
