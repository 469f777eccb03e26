"""auto_schedule leaves a band untiled when each matrix element is used once along its
loops, one loop streams every matrix along its rows (auto_distribute.touched_once) and
tiles would not vectorize it either: gemver's fused passes.  Bands where tiles carry
reuse (a product's reduction, a stencil's time loop) or vectorize keep their tiles.
Numbers against the original at odd sizes; a cache of 64 bytes makes the small
matrices count as large ones."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.schedules.auto_affine import Rows, flatten, isl_schedule
from polyopt.schedules.auto_levels import tileable_run
from polyopt.schedules.auto_distribute import touched_once

from testlib.numeric import assert_c_same_as_default

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
UNTILED = "not tiled: each matrix element is used once"


def _kernel(name, **defines):
    return po.from_c(str(POLYBENCH / f"{name}.c"), defines=defines or None)


def _band_of(kernel) -> tuple[Rows, int, int]:
    s = po.create_schedule(kernel)
    rows = flatten(isl_schedule(s.program, s.deps)[0])
    return s.program, rows, *tileable_run(rows)


@pytest.mark.parametrize("n", [11, 6, 1])
def test_gemver_streams_its_fused_passes_untiled(n):
    kernel = _kernel("gemver", N=11)
    s = po.auto_schedule(kernel, cache_bytes=64, jam_rows=0)  # (auto_jam: rows jammed)
    report = str(s.auto_report)
    assert UNTILED in report and "tiled loops" not in report, report
    assert "split" not in s.script()
    assert s.is_legal()
    assert_c_same_as_default(kernel, s, {"n": n}, seed=4)


def test_products_and_stencils_keep_their_tiles():
    for name, defines in (("gemm", {"NI": 9, "NJ": 11, "NK": 13}),
                          ("jacobi-2d", {"N": 13, "TSTEPS": 3})):
        program, rows, lo, hi = _band_of(_kernel(name, **defines))
        subset = rows.subset([n for n in rows.rows if len(program.statement(n).dims) ==
                              max(len(st.dims) for st in program.statements)])
        assert not touched_once(program, subset, lo, hi), name
    s = po.auto_schedule(_kernel("gemm", NI=9, NJ=11, NK=13), cache_bytes=64)
    assert "tiled loops i, j, c3" in str(s.auto_report)  # the product
    assert UNTILED not in str(s.auto_report)  # its C *= beta pass: tiles vectorize it


def test_a_transpose_keeps_its_tiles():
    """``B[i][j] = A[j][i]``: no loop steps by one element in both matrices."""
    N = po.var("N")

    @po.kernel
    def transpose(A: po.f64[N, N], B: po.f64[N, N]):
        for i in range(N):
            for j in range(N):
                B[i, j] = A[j, i] + 1.0

    s = po.auto_schedule(transpose, cache_bytes=64)
    assert UNTILED not in str(s.auto_report) and "tiled loops" in str(s.auto_report)
    a = np.random.default_rng(2).random((13, 13))
    b = np.zeros((13, 13))
    po.build(s)(a, b)
    np.testing.assert_array_equal(b, a.T + 1.0)


def test_kept_tiles_when_only_tiles_vectorize():
    """ludcmp's second band: untiled its innermost loop would carry a dependence."""
    kernel = _kernel("ludcmp", N=13)
    s = po.auto_schedule(kernel, cache_bytes=64)
    assert UNTILED not in str(s.auto_report)
    assert_c_same_as_default(kernel, s, {"n": 13}, seed=4)


def test_stream_untiled_false_keeps_the_tiles():
    kernel = _kernel("gemver", N=11)
    s = po.auto_schedule(kernel, cache_bytes=64, stream_untiled=False)
    assert UNTILED not in str(s.auto_report) and "tiled loops" in str(s.auto_report)
    assert_c_same_as_default(kernel, s, {"n": 11}, seed=4)
