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


def _triangle_tile(limit):
    """for io: for k: for r in 0..3 (unrolled): for v <= min(15, limit(io, r)) (vector)"""
    from polyopt.ast.nodes import Int, Name, Op, Run
    vector = For("v", Int(0), Op("le", (Name("v"), Op("min", (Int(15), limit(
        Name("io"), Name("r")))))), 1, Run("S", (Name("io"), Name("r"), Name("v"))),
        "vectorized")
    rows = For("r", Int(0), Op("le", (Name("r"), Int(3))), 1, vector, "unrolled")
    reduction = For("k", Int(0), Op("lt", (Name("k"), Name("m"))), 1, rows)
    return For("io", Int(0), Op("lt", (Name("io"), Name("n"))), 1, reduction)


def test_a_diagonal_test_linear_in_the_unrolled_rows_is_lifted_above_the_tile():
    from polyopt.ast.nodes import Op
    from polyopt.ast.tiles import separate_full_tiles
    diagonal = lambda io, r: Op("add", (io, r))  # a row's last column: io + r
    node = separate_full_tiles(_triangle_tile(diagonal))
    version = node.body
    assert isinstance(version, If), str(node)  # above the reduction loop: once per tile
    test = str(version.cond)
    assert "Int(value=0)" in test and "Int(value=3)" in test, test  # both rows' ends
    full = [l for l in walk(version.then) if isinstance(l, For) and l.var == "v"]
    assert str(full[0].cond) == "Op(op='le', args=(Name(name='v'), Int(value=15)))"
    inner_ifs = [n for n in walk(version.then) if isinstance(n, If)]
    assert not inner_ifs


def test_a_test_not_linear_in_the_rows_stays_inside_them():
    from polyopt.ast.nodes import Int, Op
    from polyopt.ast.tiles import separate_full_tiles
    halved = lambda io, r: Op("fdiv_q", (Op("add", (io, r)), Int(2)))
    node = separate_full_tiles(_triangle_tile(halved))
    assert not isinstance(node.body, If)
    rows = [l for l in walk(node) if isinstance(l, For) and l.var == "r"][0]
    assert isinstance(rows.body, If)  # versioned per row, as before
