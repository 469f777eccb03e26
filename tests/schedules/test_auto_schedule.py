"""po.auto_schedule: legal by construction and checked; the automatic schedule computes
the default schedule's numbers on small and odd sizes (C kernels, Python kernels and
tensor expressions), its options are honoured and its script replays."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po

from testlib.errors import refused
from testlib.numeric import assert_c_same_as_default

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "frontend" / "c_corpus"
POLYBENCH = ROOT / "benchmarks" / "polybench"

# (file, macro sizes, size parameters): small and odd sizes
C_CASES = [
    (CORPUS / "triangular.c", {}, {"n": 11}),
    (CORPUS / "guarded.c", {}, {"n": 9, "m": 7}),
    (CORPUS / "reverse.c", {}, {"n": 10}),
    (CORPUS / "stencil.c", {"N": 13, "TSTEPS": 3}, {}),
    (CORPUS / "locals.c", {}, {"n": 9}),
    (POLYBENCH / "gemm.c", {"NI": 13, "NJ": 11, "NK": 7}, {"ni": 13, "nj": 11, "nk": 7}),
    (POLYBENCH / "seidel-2d.c", {"N": 17, "TSTEPS": 5}, {"n": 17, "tsteps": 5}),
    (POLYBENCH / "jacobi-2d.c", {"N": 15, "TSTEPS": 4}, {"n": 15, "tsteps": 4}),
    (POLYBENCH / "lu.c", {"N": 14}, {"n": 14}),
]


@pytest.mark.parametrize("path, defines, sizes", C_CASES, ids=[c[0].stem for c in C_CASES])
@pytest.mark.parametrize("tile_sizes", [None, 4])
def test_c_kernels_compute_the_same(path, defines, sizes, tile_sizes):
    kernel = po.from_c(str(path), defines=defines)
    s = po.auto_schedule(po.create_schedule(kernel), tile_sizes=tile_sizes)
    assert s.is_legal()
    assert_c_same_as_default(kernel, s, sizes)


def test_report_and_script_replay():
    kernel = po.from_c(str(POLYBENCH / "gemm.c"), defines={"NI": 9, "NJ": 10, "NK": 11})
    s = po.auto_schedule(kernel, tile_sizes=4)
    text = str(s.auto_report)
    assert "isl's scheduler" in text and "tiled loops" in text and "vectorized" in text
    assert not s.auto_report.fell_back
    replayed = po.create_schedule(kernel).replay(s.script())
    assert str(po.lower(replayed)) == str(po.lower(s))
    kinds = {a.kind for st in s.program.stages for a in st.axes}
    assert {"parallel", "vectorized", "unrolled"} <= kinds


def test_options_parallel_tiling_and_errors():
    kernel = po.from_c(str(POLYBENCH / "gemm.c"), defines={"NI": 9, "NJ": 10, "NK": 11})
    serial = po.auto_schedule(kernel, parallel=False, tile=False, unroll_jam=0)
    kinds = {a.kind for st in serial.program.stages for a in st.axes}
    assert "parallel" not in kinds and "unrolled" not in kinds
    assert not any(".outer" in a.name for st in serial.program.stages for a in st.axes)
    assert_c_same_as_default(kernel, serial, {"ni": 9, "nj": 10, "nk": 11})
    with pytest.raises(po.InvalidArgumentError, match="no option tile_size"):
        po.auto_schedule(kernel, tile_size=3)
    with pytest.raises(po.InvalidArgumentError, match="fusion"):
        po.auto_schedule(kernel, fusion="some")
    s = po.create_schedule(kernel)
    s["S0"].split("i", factor=2)
    err = refused(po.AutoScheduleError, lambda: po.auto_schedule(s))
    assert (err.problem, err.steps) == ("primitives", ('s["S0"].split("i", factor=2)',))


@pytest.mark.parametrize("fusion", ["min", "smart"])
def test_fusion_strategies(fusion):
    kernel = po.from_c(str(POLYBENCH / "jacobi-2d.c"), defines={"N": 12, "TSTEPS": 3})
    s = po.auto_schedule(kernel, fusion=fusion, tile_sizes=4)
    assert_c_same_as_default(kernel, s, {"n": 12, "tsteps": 3})


def test_effort_bound_falls_back_to_the_default():
    kernel = po.from_c(str(POLYBENCH / "jacobi-2d.c"), defines={"N": 12, "TSTEPS": 3})
    s = po.auto_schedule(kernel, max_operations=10)
    assert s.auto_report.fell_back and "gave up" in str(s.auto_report)
    assert s.script() == ""
    assert_c_same_as_default(kernel, s, {"n": 12, "tsteps": 3})


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (7, 13, 5), (33, 17, 40)])
def test_tensor_expression_matmul(m, n, k):
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.auto_schedule(po.create_schedule(C), tile_sizes=8)
    assert "vectorized" in str(s.auto_report)
    rng = np.random.default_rng(1)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    po.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_tensor_expression_conv2d():
    data = po.placeholder((1, 3, 9, 11), name="data")
    weight = po.placeholder((5, 3, 3, 3), name="weight")
    out = po.ops.conv2d_nchw(data, weight, padding=1)
    s = po.auto_schedule(po.create_schedule(out))
    assert "conv is a direct convolution: the conv2d recipe" in str(s.auto_report)
    rng = np.random.default_rng(2)
    d = rng.standard_normal((1, 3, 9, 11), dtype=np.float32)
    w = rng.standard_normal((5, 3, 3, 3), dtype=np.float32)
    result = np.empty((1, 5, 9, 11), np.float32)
    po.build(s, [data, weight, out])(d, w, result)
    padded = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    np.testing.assert_allclose(result, np.einsum("nchwyx,fcyx->nfhw", windows, w), rtol=1e-4,
                               atol=1e-4)


def test_python_kernel():
    N, T = po.var("N"), po.var("T")

    @po.kernel
    def heat(A: po.f64[2, N]):
        for t in range(T):
            for i in range(1, N - 1):
                A[(t + 1) % 2, i] = 0.25 * (A[t % 2, i - 1] + 2.0 * A[t % 2, i] + A[t % 2, i + 1])
    s = po.auto_schedule(heat, tile_sizes=4)
    a = np.random.default_rng(3).random((2, 19))
    expected = a.copy()
    po.build(po.create_schedule(heat))(expected, T=7)
    po.build(s)(a, T=7)
    np.testing.assert_allclose(a, expected, rtol=1e-13)


def test_register_tile_option():
    kernel = po.from_c(str(POLYBENCH / "gemm.c"), defines={"NI": 13, "NJ": 21, "NK": 9})
    s = po.auto_schedule(kernel, tile_sizes=16, unroll_jam=3, register_columns=8)
    assert "and j.inner by 8" in str(s.auto_report)
    assert_c_same_as_default(kernel, s, {"ni": 13, "nj": 21, "nk": 9})


@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (37, 45, 29)])
def test_contraction_gets_the_matmul_recipe(m, n, k):
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.auto_schedule(po.create_schedule(C))
    assert "C is a contraction: the matmul recipe" in str(s.auto_report)
    assert s.is_legal() and 'cache_write("C", "local")' in s.script()
    rng = np.random.default_rng(4)
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    po.build(s, [A, B, C])(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_not_a_contraction_keeps_the_generic_band():
    A = po.placeholder((9, 7), name="A")
    k = po.reduce_axis((0, 7), name="k")
    R = po.compute((9,), lambda i: po.sum(A[i, k] * A[i, k], axis=k), name="R")
    s = po.auto_schedule(po.create_schedule(R))
    assert "recipe" not in str(s.auto_report)
    a = np.random.default_rng(5).random((9, 7), dtype=np.float32)
    r = np.empty(9, np.float32)
    po.build(s, [A, R])(a, r)
    np.testing.assert_allclose(r, (a * a).sum(axis=1), rtol=1e-5)


def test_gauss_seidel_runs_time_innermost_after_a_skew():
    kernel = po.from_c(str(POLYBENCH / "seidel-2d.c"), defines={"N": 19, "TSTEPS": 5})
    s = po.auto_schedule(kernel, tile_sizes=4)
    assert "skewed by level 0" in str(s.auto_report)
    assert "3t + i + j" in s.script()
    stage = s.program.stages[0]
    assert stage.axes[-1].name == "t.inner"
    assert_c_same_as_default(kernel, s, {"n": 19, "tsteps": 5})


def test_nests_in_sequence_get_a_band_each():
    kernel = po.from_c(str(POLYBENCH / "gemm.c"), defines={"NI": 13, "NJ": 11, "NK": 7})
    s = po.auto_schedule(kernel, tile_sizes=4)
    text = str(s.auto_report)
    assert "fusion min" in text and "2 loop nests in sequence" in text
    assert text.count("tiled loops") == 2
    assert 's["S1"].compute_with("S0", "c0")' in s.script()
    assert_c_same_as_default(kernel, s, {"ni": 13, "nj": 11, "nk": 7})
