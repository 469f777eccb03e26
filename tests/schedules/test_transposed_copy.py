"""cache_read(..., layout=) on in-place kernels: a buffer stored in another order, checked
by following each buffer element to the element its copy filled it from; compute_root of
the copy makes it once before the reader's nest (refused when the array changes in the
nest); auto_schedule's transposed copies for column walks (syrk)."""

from pathlib import Path

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.deps.counterexample import ValueSource
from testlib.errors import read_change, refused

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
SIZES = {"n": 9, "m": 7}


def _syrk():
    return po.from_c(str(POLYBENCH / "syrk.c"), defines={"M": 7, "N": 9})


def _run(kernel, schedule, sizes, seed=4):
    values = arguments(kernel, sizes, seed=seed)
    call_polyopt(kernel, po.build(schedule), values)
    return values


def test_transposed_copy_before_the_nest_computes_the_same_numbers():
    kernel = _syrk()
    s = po.create_schedule(kernel)
    AT = s.cache_read("A", "global", ["S1"], layout="{ [a, b] -> [b, a] }")
    s[AT].compute_root()
    assert s.script() == ('s.cache_read("A", "global", ["S1"], layout="{ [a, b] -> [b, a] }")\n'
                          's["A_global"].compute_root()')
    assert [st.name for st in s.program.stages] == ["A_global", "S0", "S1"]
    reads = s.program.statement("S1").reads
    buffer = [r.relation for r in reads if r.array == "A_global"]
    assert buffer[0].union(buffer[1]).is_equal(isl.Map(
        "[n, m] -> { S1[i, k, j] -> A_global[k, o] : 0 <= i < n and 0 <= k < m and "
        "0 <= j <= i and (o = i or o = j) }").intersect_domain(
            s.program.statement("S1").domain))
    copy = s.program.statement("A_global")
    assert copy.writes[0].relation.is_equal(isl.Map(
        "[n, m] -> { A_global[a, b] -> A_global[b, a] : 0 <= a < n and 0 <= b < m and "
        "n <= 9 and m <= 7 }"))
    expected = _run(kernel, po.create_schedule(kernel), SIZES)
    actual = _run(kernel, s, SIZES)
    np.testing.assert_array_equal(actual["C"], expected["C"])
    a, c0 = expected["A"][:9, :7], arguments(kernel, SIZES, seed=4)["C"][:9, :9]
    alpha, beta = (float(arguments(kernel, SIZES, seed=4)[x]) for x in ("alpha", "beta"))
    want = np.tril(beta * c0 + alpha * a @ a.T)
    np.testing.assert_allclose(np.tril(actual["C"][:9, :9]), want, rtol=1e-12)


CHANGED = """
#define N 8
void changed(int n, double A[N][N], double C[N][N]) {
  int i, j, k;
#pragma scop
  for (i = 0; i < n; i++) {
    for (j = 0; j < n; j++)
      for (k = 0; k < n; k++)
        C[i][j] += A[j][k];
    for (k = 0; k < n; k++)
      A[i][k] = A[i][k] * 2.0;
  }
#pragma endscop
}"""


def test_a_copy_before_the_nest_of_an_array_the_nest_changes_is_refused():
    kernel = po.from_c(CHANGED)
    s = po.create_schedule(kernel)
    AT = s.cache_read("A", "global", ["S0"], layout="{ [a, b] -> [b, a] }")  # per instance
    err = refused(po.ChangedValuesError, lambda: s[AT].compute_root())
    assert err.what == "reads" and read_change(err) == (
        "S0[i=1, j=0, k=0]", "A[0, 0]", ValueSource("entry", "A[0, 0]"),
        ValueSource("written", "S1[i=0, k=0]"))
    expected = _run(kernel, po.create_schedule(kernel), {"n": 6})
    actual = _run(kernel, s, {"n": 6})  # the copy made right before each read is right
    np.testing.assert_array_equal(actual["C"], expected["C"])


def test_auto_schedule_reads_syrk_columns_from_a_transposed_copy():
    kernel = _syrk()
    s = po.auto_schedule(kernel, cache_bytes=64)  # tiled at these small sizes
    report = str(s.auto_report)
    assert "S1 reads columns of A along its stride-1 loop j: it reads a transposed copy " \
           "made before its nest" in report
    assert s.script().startswith('s.cache_read("A", "global", ["S1"], '
                                 'layout="{ [a, b] -> [b, a] }")\ns["A_global"].compute_root()')
    assert "register tile" in report and s.is_legal()
    expected = _run(kernel, po.create_schedule(kernel), SIZES)
    np.testing.assert_allclose(_run(kernel, s, SIZES)["C"], expected["C"], rtol=1e-13)
    plain = po.auto_schedule(kernel, cache_bytes=64, transpose_copies=False)
    assert "transposed" not in str(plain.auto_report) and "cache_read" not in plain.script()


def test_row_walks_get_no_copy():
    """gemm reads B[k][j] along j (rows) and A[i][k] with no j: nothing to transpose."""
    kernel = po.from_c(str(POLYBENCH / "gemm.c"), defines={"NI": 9, "NJ": 11, "NK": 13})
    s = po.auto_schedule(kernel, cache_bytes=4096)
    assert "cache_read" not in s.script() and "transposed" not in str(s.auto_report)
