"""separate_full_tiles: a register tile (an unrolled row loop inside a vectorized
column loop's tile) is versioned once on both partial-tile tests, a full version and a
general one, and computes NumPy's numbers at sizes no tile divides."""

import numpy as np

import polyopt as po
from polyopt.ast.nodes import For, If, walk


def _register_tiled_matmul(n, m, k):
    A = po.placeholder((n, k), name="A", dtype="float64")
    B = po.placeholder((k, m), name="B", dtype="float64")
    r = po.reduce_axis((0, k), name="r")
    C = po.compute((n, m), lambda i, j: po.sum(A[i, r] * B[r, j], axis=r), name="C")
    s = po.create_schedule(C)
    i, j = C.op.axis
    io, ii = s[C].split(i, factor=6)
    jo, ji = s[C].split(j, factor=16)
    s[C].reorder(jo, io, r, ii, ji)
    s[C].unroll(ii)
    s[C].vectorize(ji)
    return s, A, B, C


def test_one_full_version_for_both_tests():
    s, A, B, C = _register_tiled_matmul(23, 37, 9)
    func = po.lower(s, [A, B, C])
    versions = [n for n in walk(func.body) if isinstance(n, If)]
    assert len(versions) == 1, str(func)  # not one per loop (4 copies of the nest)
    full, general = versions[0].then, versions[0].otherwise
    loops = lambda node: {l.var: str(l.cond) for l in walk(node) if isinstance(l, For)}
    assert "min" not in loops(full)["i_inner"] and "min" not in loops(full)["j_inner"]
    assert "min" in loops(general)["i_inner"] and "min" in loops(general)["j_inner"]
    test = str(versions[0].cond)
    assert "i_outer" in test and "j_outer" in test


def test_versions_compute_numpys_numbers():
    rng = np.random.default_rng(3)
    for n, m, k in ((23, 37, 9), (12, 32, 5), (5, 7, 3)):
        s, A, B, C = _register_tiled_matmul(n, m, k)
        a, b = rng.random((n, k)), rng.random((k, m))
        c = np.full((n, m), np.nan)
        po.build(s, [A, B, C])(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-12)
