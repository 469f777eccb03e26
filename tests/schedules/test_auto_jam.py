"""auto_schedule runs matrix-vector work with rows side by side (schedules/auto_jam.py:
the source order distributed, 8 iterations of each nest's outer loop unrolled inside
its stride-1 loop), and the LLVM backend vectorizes that loop (target/llvm/row_streams)
and reassociates a kernel's ``-=`` accumulation like ``+=`` (trisolv).  Numbers against
NumPy at odd sizes, rows not a multiple of 8 included; the plans."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_jam import matrix_vector

from testlib.numeric import assert_numbers

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"
JAMMED = "iterations of the outer loop"


def _kernel(name, **defines):
    return po.from_c(str(POLYBENCH / f"{name}.c"), defines=defines or None)


def _run(kernel, schedule, sizes, seed=3):
    values = arguments(kernel, sizes, seed=seed)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in values.items()}
    call_polyopt(kernel, po.build(schedule), values)
    return before, values


@pytest.mark.parametrize("m, n", [(13, 11), (3, 5), (17, 1)])
def test_atax_rows_side_by_side(m, n):
    kernel = _kernel("atax", M=20, N=20)
    s = po.auto_schedule(kernel)
    assert JAMMED in str(s.auto_report), s.auto_report
    assert 'split("i", factor=8)' in s.script() and 'unroll("i.inner")' in s.script()
    v, out = _run(kernel, s, {"m": m, "n": n})
    a, x = v["A"][:m, :n], v["x"][:n]
    assert_numbers(out["tmp"][:m], a @ x)
    assert_numbers(out["y"][:n], a.T @ (a @ x))


@pytest.mark.parametrize("n, m", [(19, 13), (7, 9)])
def test_bicg_rows_side_by_side(n, m):
    kernel = _kernel("bicg", N=20, M=20)
    s = po.auto_schedule(kernel)
    assert JAMMED in str(s.auto_report), s.auto_report
    v, out = _run(kernel, s, {"n": n, "m": m})
    a = v["A"][:n, :m]
    assert_numbers(out["s"][:m], v["r"][:n] @ a)
    assert_numbers(out["q"][:n], a @ v["p"][:m])


@pytest.mark.parametrize("n", [19, 6])
def test_mvt_and_gemver_rows_side_by_side(n):
    mvt = _kernel("mvt", N=20)
    s = po.auto_schedule(mvt)
    assert JAMMED in str(s.auto_report), s.auto_report
    v, out = _run(mvt, s, {"n": n})
    a = v["A"][:n, :n]
    assert_numbers(out["x1"][:n], v["x1"][:n] + a @ v["y_1"][:n])
    assert_numbers(out["x2"][:n], v["x2"][:n] + a.T @ v["y_2"][:n])
    gemver = _kernel("gemver", N=20)
    s = po.auto_schedule(gemver)
    assert JAMMED in str(s.auto_report), s.auto_report
    v, out = _run(gemver, s, {"n": n})
    k = slice(0, n)
    a = v["A"][k, k] + np.outer(v["u1"][k], v["v1"][k]) + np.outer(v["u2"][k], v["v2"][k])
    x = v["x"][k] + v["beta"] * (a.T @ v["y"][k]) + v["z"][k]
    assert_numbers(out["A"][k, k], a)
    assert_numbers(out["x"][k], x)
    assert_numbers(out["w"][k], v["w"][k] + v["alpha"] * (a @ x))


def test_jammed_loop_is_vectorized_by_llvm():
    """The loop around the 8 unrolled rows reads them along its stride-1 index: LLVM
    vectorizes it: whole vectors loaded from the rows (LLVM may still gather a column
    of the 8 rows in a scalar remainder)."""
    f = po.build(po.auto_schedule(_kernel("atax", M=64, N=64)))
    assert "load <" in f.optimized_ir and "x double>" in f.optimized_ir


def test_options_and_refusals():
    kernel = _kernel("atax", M=20, N=20)
    s = po.auto_schedule(kernel, jam_rows=4)
    assert 'split("i", factor=4)' in s.script()
    v, out = _run(kernel, s, {"m": 9, "n": 7})
    a = v["A"][:9, :7]
    assert_numbers(out["y"][:7], a.T @ (a @ v["x"][:7]))
    replayed = po.create_schedule(kernel).replay(s.script())  # a normal, editable schedule
    np.testing.assert_array_equal(_run(kernel, replayed, {"m": 9, "n": 7})[1]["y"], out["y"])
    for off in ({"jam_rows": 0}, {"jam_rows": 1}, {"distribute": False},
                {"tile_sizes": 8}):
        assert JAMMED not in str(po.auto_schedule(kernel, **off).auto_report), off
    # dot products alone already stream at full speed: no rows side by side
    for name in ("gesummv", "trisolv", "durbin", "gemm", "jacobi-1d", "deriche"):
        kernel = _kernel(name)
        assert not matrix_vector(po.create_schedule(kernel).program), name


def test_illegal_jam_is_dropped():
    """Rows that read each other's results (a forward substitution whose update also
    runs along the rows) cannot go side by side: the check refuses, the schedule above
    is kept, and the numbers are right."""
    N = po.var("N")

    @po.kernel
    def chained(A: po.f64[N, N], y: po.f64[N]):
        for i in range(1, N):
            for j in range(N):
                y[j] += A[i, j] * y[i - 1]

    s = po.auto_schedule(chained)
    assert "side by side are illegal" in str(s.auto_report), s.auto_report
    a = np.random.default_rng(5).random((11, 11))
    y = np.random.default_rng(6).random(11)
    expected = y.copy()
    for i in range(1, 11):
        for j in range(11):  # (y[i - 1] itself changes at j = i - 1)
            expected[j] += a[i, j] * expected[i - 1]
    po.build(s)(a, y)
    assert_numbers(y, expected)


def test_trisolv_subtraction_is_reassociated():
    """``x[i] -= L[i][j] * x[j]`` accumulates with reassociation flags (the row dot
    product vectorizes), as ``+=`` does; a ``-=`` updating a new matrix element per
    iteration of its innermost loop (lu's, cholesky's) keeps its exact order."""
    kernel = _kernel("trisolv", N=40)
    s = po.auto_schedule(kernel)
    f = po.build(s)
    assert "fsub reassoc" in f.llvm_ir
    for n in (37, 9):
        v, out = _run(kernel, s, {"n": n})
        low = np.tril(v["L"][:n, :n])
        np.testing.assert_allclose(low @ out["x"][:n], v["b"][:n], rtol=1e-9)
    for name in ("lu", "cholesky"):
        other = po.build(po.auto_schedule(_kernel(name, N=24)))
        assert "fsub reassoc" not in other.llvm_ir, name
