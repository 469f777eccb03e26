"""cache_read with a layout: packed copies with another element order, same numbers."""

import numpy as np
import pytest

import polyopt as po
from testlib.schedules import assert_matmul_kernel, irand, run

ROW_PANELS = "{ [i, k] -> [floor(i / 6), k, i mod 6] }"


def _matmul(M, N, K):
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    return A, B, po.ops.matmul(A, B)


@pytest.mark.parametrize("symbolic", [False, True])
def test_a_packed_in_row_panels(symbolic):
    sizes = dict(M=13, N=9, K=7)
    A, B, C = _matmul(*(po.var(n) if symbolic else v for n, v in sizes.items()))
    s = po.create_schedule(C)
    AP = s.cache_read(A, "global", [C], layout=ROW_PANELS)
    shape = [str(e) for e in s.program.array_of(AP).shape]
    assert shape == (["(M + 5) // 6", "K", "6"] if symbolic else ["3", "7", "6"])
    text = str(po.lower(s, [A, B, C]))
    assert "A_global[ax0 // 6, ax1, ax0 - 6 * (ax0 // 6)] = A[ax0, ax1];" in text
    for m, n, k in ([(13, 9, 7)] if not symbolic else [(13, 9, 7), (1, 2, 3), (12, 5, 4)]):
        a, b = irand(m, k), irand(k, n)
        np.testing.assert_array_equal(run(s, [A, B, C], [a, b], M=m, N=n, K=k), a @ b)
    assert s.script().splitlines()[0] == \
        f's.cache_read("A", "global", ["C"], layout="{ROW_PANELS}")'


def test_a_packed_panel_per_tile_is_contracted_and_contiguous():
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B, C = _matmul(M, N, K)
    s = po.create_schedule(C)
    AP = s.cache_read(A, "global", [C], layout=ROW_PANELS)
    loops = po.templates.matmul_template(s, C, parallel=False)
    s[AP].compute_at(s[loops["local"]], loops["i.outer"])
    func = po.lower(s, [A, B, C])
    assert [str(e) for e in func.storage["A_global"].extents] == ["1", "K", "6"]
    assert "A_global[0, k, (i - 6 * i_outer)]" in str(func)
    f = po.build(s, [A, B, C])
    assert_matmul_kernel(f, [(12, 64, 5), (31, 70, 9)])


def test_replay_reapplies_the_layout():
    A, B, C = _matmul(8, 8, 8)
    s = po.create_schedule(C)
    s.cache_read(A, "global", [C], layout="{ [i, k] -> [k, i] }")
    again = po.create_schedule(C).replay(s.script())
    assert [str(e) for e in again.program.array("A_global").shape] == ["8", "8"]


@pytest.mark.parametrize("layout, message", [
    ("{ [i, k] -> [floor(i / 2), k] }", "puts two elements of 'A_global' at the same place"),
    ("{ [i] -> [i] }", "takes 1 indices but 'A_global' has 2 dimensions"),
    ("{ [i, k] -> [i + ", "cannot parse the layout"),
    ("[T] -> { [i, k] -> [i + T, k] }", "unknown vars: T"),
])
def test_bad_layouts_are_refused(layout, message):
    A, B, C = _matmul(8, 8, 8)
    s = po.create_schedule(C)
    with pytest.raises(po.InvalidArgumentError, match=message):
        s.cache_read(A, "global", [C], layout=layout)
    assert s.steps == []


def test_cache_write_with_a_layout():
    """The accumulator tile stored transposed: same numbers, and the script replays it."""
    A, B, C = _matmul(12, 10, 7)
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local", layout="{ [i, j] -> [j, i] }")
    assert [str(e) for e in s.program.array_of(CL).shape] == ["10", "12"]
    a, b = irand(12, 7), irand(7, 10)
    np.testing.assert_array_equal(run(s, [A, B, C], [a, b]), a @ b)
    assert s.script().splitlines()[0] == \
        's.cache_write("C", "local", layout="{ [i, j] -> [j, i] }")'
    again = po.create_schedule(C).replay(s.script())
    assert [str(e) for e in again.program.array("C_local").shape] == ["10", "12"]
