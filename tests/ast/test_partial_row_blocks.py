"""separate_full_tiles on rows jammed in a stencil (an unrolled row loop below the
vector loop, starting at ``max(0, ..)`` at the first row): the full row blocks get
constant bounds (no guard, vectorized), the general copy runs its rows as a plain
loop (guarded copies do not vectorize), and the numbers stay the original's."""

from pathlib import Path

import numpy as np

import polyopt as po
from polyopt.ast.nodes import For, If, Int, walk
from polyopt.frontend.c_native import arguments, call_polyopt

JACOBI = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench" / "jacobi-2d.c"


def _jammed():
    kernel = po.from_c(str(JACOBI))
    return kernel, po.auto_schedule(kernel, tile_sizes=(4, 8, 16))


def _row_loops(node):
    return [n for n in walk(node) if isinstance(n, For) and n.var == "c1_inner_inner"]


def test_full_row_blocks_have_constant_bounds_and_the_rest_is_rolled():
    _, s = _jammed()
    func = po.lower(s)
    versions = [n for n in walk(func.body) if isinstance(n, If) and _row_loops(n.then)
                and n.otherwise is not None and _row_loops(n.otherwise)]
    assert versions, str(func)
    for version in versions:
        full = _row_loops(version.then)
        assert all(loop.kind == "unrolled" and loop.init == Int(0) and
                   loop.cond.args[1] == Int(1) for loop in full), str(version)
        vectors = [n for n in walk(version.then) if isinstance(n, For)
                   and n.kind == "vectorized"]
        assert vectors and all(_row_loops(v) for v in vectors)
        general = [n for n in walk(version.otherwise) if isinstance(n, For)]
        assert not [n for n in general if n.kind in ("vectorized", "unrolled")
                    and n.var in ("c2_inner", "c1_inner_inner")], str(version.otherwise)


def test_versioned_rows_compute_the_original_bit_for_bit():
    kernel, s = _jammed()
    sizes = {"n": 21, "tsteps": 6}
    expected = arguments(kernel, sizes, seed=5)
    actual = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in expected.items()}
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), expected)
    call_polyopt(kernel, po.build(s), actual)
    for name in ("A", "B"):
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
