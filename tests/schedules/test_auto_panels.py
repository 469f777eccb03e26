"""auto_schedule's register tiles of contractions (schedules/auto_panels.py): the right
operand B[k, j] read from a copy packed in register-tile-wide panels (option
pack_panels=True), and fewer rows
(dividing the columns) where the band is a triangle (syrk's j <= i).  Numbers against
NumPy and the source order's numbers, at odd sizes that leave partial
panels, partial tiles and tiles crossing the diagonal."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments
from polyopt.schedules.auto_affine import flatten, isl_schedule
from polyopt.schedules.auto_panels import (coupled_levels, packed_panels, panel_operands,
                                           row_count)

from testlib.numeric import assert_c_same_as_default

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
PACKED = "from a copy packed in panels of"
# the source order's numbers: products may be contracted differently (FMA), the
# documented reassociation
AS_SOURCE = dict(seed=7, rtol=1e-13, atol=1e-13)


def _kernel(name, **defines):
    return po.from_c(str(POLYBENCH / f"{name}.c"), defines=defines or None)


@pytest.mark.parametrize("sizes", [{"ni": 13, "nj": 37, "nk": 11}, {"ni": 7, "nj": 5, "nk": 3}])
def test_gemm_reads_a_packed_panel_copy_and_computes_numpys_numbers(sizes):
    kernel = _kernel("gemm", NI=13, NJ=37, NK=11)
    s = po.auto_schedule(kernel, tile_sizes=8, register_columns=16, pack_panels=True)
    assert PACKED + " 16 columns" in str(s.auto_report), s.auto_report
    assert 'layout="{ [a, b] -> [floor(b / 16), a, b mod 16] }"' in s.script()
    assert s.is_legal()
    before = arguments(kernel, sizes, seed=7)
    after = assert_c_same_as_default(kernel, s, sizes, arrays=["C"], **AS_SOURCE)
    ni, nj, nk = sizes["ni"], sizes["nj"], sizes["nk"]
    A, B, C = before["A"][:ni, :nk], before["B"][:nk, :nj], before["C"][:ni, :nj]
    expected = before["beta"] * C + before["alpha"] * A @ B
    np.testing.assert_allclose(after["C"][:ni, :nj], expected, rtol=1e-12)


def test_packing_is_off_by_default():
    kernel = _kernel("gemm", NI=9, NJ=10, NK=11)
    s = po.auto_schedule(kernel, tile_sizes=8)
    assert PACKED not in str(s.auto_report) and "layout" not in s.script()
    assert_c_same_as_default(kernel, s, {"ni": 9, "nj": 10, "nk": 11}, arrays=["C"], **AS_SOURCE)


def test_two_products_pack_their_own_inputs_only():
    kernel = _kernel("3mm", NI=9, NJ=10, NK=11, NL=12, NM=13)
    assert panel_operands(kernel.program) == [("S1", "B"), ("S3", "D")]  # not F: written
    s = po.auto_schedule(kernel, tile_sizes=8, pack_panels=True)
    assert str(s.auto_report).count(PACKED) == 2
    assert_c_same_as_default(kernel, s, {"ni": 9, "nj": 10, "nk": 11, "nl": 12, "nm": 13},
                             arrays=["G"], **AS_SOURCE)


def test_operands_read_by_two_statements_or_along_columns_are_not_packed():
    assert panel_operands(_kernel("syrk", N=9, M=7).program) == []  # A[j][k]: transposed
    kernel = _kernel("symm", M=9, N=7)  # B[k][j] in S1, and in S2 once acc is expanded
    s = po.auto_schedule(kernel, tile_sizes=8, pack_panels=True)
    assert "S1, S2 read rows of B across a reduction loop: not packed (one copy per " \
           "reading statement)" in str(s.auto_report)
    assert "layout=\"{ [a, b] -> [floor" not in s.script()
    assert_c_same_as_default(kernel, s, {"m": 9, "n": 7}, arrays=["C"], **AS_SOURCE)
    notes = []  # the kernel as written: S1 alone reads B that way
    packed = packed_panels(po.create_schedule(kernel), notes, 32)
    assert packed.script().startswith('s.cache_read("B", "global", ["S1"], layout=')


def test_register_rows_divide_the_columns():
    assert [row_count(6, w) for w in (32, 64, 16, 24, 8, 1, 0)] == [4, 4, 4, 6, 4, 6, 6]


def test_a_triangle_couples_its_levels_and_a_rectangle_does_not():
    for name, defines, expected in (("syrk", {"N": 9, "M": 7}, True),
                                    ("gemm", {"NI": 9, "NJ": 10, "NK": 11}, False)):
        s = po.create_schedule(_kernel(name, **defines))
        rows = flatten(isl_schedule(s.program, s.deps)[0])
        deepest = max(len(st.dims) for st in s.program.statements)
        rows = rows.subset([n for n in rows.rows if len(s.program.statement(n).dims) ==
                            deepest])
        loops = [k for k in range(rows.depth)
                 if not all(isinstance(r[k], int) for r in rows.rows.values())]
        found = any(coupled_levels(s.program, rows, a, b)
                    for a in loops for b in loops if a < b)
        assert found is expected, name


@pytest.mark.parametrize("n, m", [(45, 9), (37, 19), (5, 3)])
def test_syrk_triangular_register_tiles_compute_the_source_numbers(n, m):
    kernel = _kernel("syrk", N=45, M=19)
    # tiles of 16 and 8 columns: many register tiles cross the diagonal
    s = po.auto_schedule(kernel, tile_sizes=16, register_columns=8)
    report = str(s.auto_report)
    assert "split by 4 and" in report, report
    before = arguments(kernel, {"n": n, "m": m}, seed=7)
    after = assert_c_same_as_default(kernel, s, {"n": n, "m": m}, arrays=["C"], **AS_SOURCE)
    A, C = before["A"][:n, :m], before["C"][:n, :n]
    expected = before["beta"] * C + before["alpha"] * A @ A.T
    lower = np.tril_indices(n)
    np.testing.assert_allclose(after["C"][:n, :n][lower], expected[lower], rtol=1e-12)
    np.testing.assert_array_equal(np.triu(after["C"][:n, :n], 1), np.triu(C, 1))


def test_syrk_default_register_tile_is_four_rows_and_full_tiles_hold_no_row_guard():
    kernel = _kernel("syrk", N=200, M=40)
    s = po.auto_schedule(kernel, tile_sizes=64)
    assert "split by 4 and" in str(s.auto_report)
    source = po.build(s).source
    full = source.split("#pragma unrolled: 4 copies\n")[1].split("else")[0]
    assert " if (" not in full, full  # the diagonal's test is lifted above the tile
    assert_c_same_as_default(kernel, s, {"n": 200, "m": 40}, arrays=["C"], **AS_SOURCE)
