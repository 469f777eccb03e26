"""The OpenCL backend on PoCL: NumPy's numbers on sizes the work-groups divide and sizes
they do not, the LLVM backend's numbers, device arrays, readable sources."""

import numpy as np
import pytest

import polyopt as po
from polyopt.target.opencl.codegen import BARRIER
from testlib.opencl import CASES, matmul_case, run

EXTRA_SIZES = {"matmul_shared": [dict(m=32, n=24, k=40), dict(m=1, n=1, k=1)],
               "matmul_naive": [dict(m=32, n=24, k=40)],
               "elementwise_chain": [dict(n=2, w=64)],
               "scan": [dict(t=1, n=16)],
               "local_accumulator": [dict(m=16, k=1)]}


@pytest.fixture(scope="module")
def built():
    """Each case built once for PoCL (a build takes about half a second)."""
    cache = {}

    def get(name):
        if name not in cache:
            case = CASES[name]()
            cache[name] = case, po.build(case.schedule, case.args, target="opencl")
        return cache[name]
    return get


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_numpy(built, name):
    case, f = built(name)
    for sizes in case.sizes + EXTRA_SIZES.get(name, []):
        assert run(case, f, sizes) <= case.tol, sizes


@pytest.mark.parametrize("name", ["matmul_shared", "conv2d"])
def test_same_numbers_as_the_llvm_backend(built, name):
    """With small integers in float arrays every sum is exact: bit for bit."""
    case, f = built(name)
    llvm = po.build(case.schedule, case.args, target="llvm")
    sizes = case.sizes[-1]
    inputs = [np.round(a * 3) for a in case.inputs(**sizes)]
    expected = case.reference(*inputs)
    ours = [np.full(e.shape, np.nan, e.dtype) for e in expected]
    theirs = [np.full(e.shape, np.nan, e.dtype) for e in expected]
    f(*inputs, *ours)
    llvm(*inputs, *theirs)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[0], expected[0])


def test_device_arrays_stay_on_the_device(built):
    import pyopencl.array as cla

    case, f = built("matmul_shared")
    a, b = case.inputs(m=19, n=23, k=13)
    da, db = cla.to_device(f.queue, a), cla.to_device(f.queue, b)
    dc = cla.empty(f.queue, (19, 23), np.float32)
    f(da, db, dc)
    f(da, db, dc)  # again, nothing copied back and forth
    np.testing.assert_allclose(dc.get(), a @ b, rtol=1e-4, atol=1e-4)
    with pytest.raises(po.InvalidArgumentError, match="dtype float32"):
        f(da, db, cla.empty(f.queue, (19, 23), np.float64))


def test_tiled_matmul_source(built):
    _, f = built("matmul_shared")
    source = f.source
    assert "__local float A_shared[64]" in source and "__local float B_shared[64]" in source
    assert "get_group_id(1)" in source and "get_local_id(0)" in source
    assert "reqd_work_group_size(8, 8, 1)" in source
    # one barrier after the cooperative loads, one before the next k step overwrites them
    assert source.count(BARRIER) == 2
    body = source[source.index("for (long k_outer"):]
    assert body.index("A_shared[") < body.index(BARRIER) < body.index("k_inner")


def test_naive_matmul_and_elementwise_sources_have_no_barrier(built):
    for name in ("matmul_naive", "elementwise_chain"):
        _, f = built(name)
        assert "barrier(" not in f.source and "__local" not in f.source
    _, chain = built("elementwise_chain")
    assert chain.source.count("__kernel") == 3  # one kernel per stage, launched in order


def test_a_barrier_between_producer_and_consumer_work_items(built):
    _, f = built("neighbours")
    assert f.source.count(BARRIER) == 1
    body = f.source[f.source.index("__kernel"):]
    assert body.index("B[") < body.index(BARRIER) < body.index("C[")


def test_softmax_reduces_across_work_items(built):
    _, f = built("softmax")
    assert "reduction across work-items (threadIdx.x)" in f.source
    assert "__local float po_red0" in f.source
    assert "po_fmax(" in f.source


def test_private_accumulator(built):
    _, f = built("local_accumulator")
    assert "float y_local[1];" in f.source and "__local" not in f.source


def test_bound_loops_run_as_loops_on_llvm():
    case = matmul_case(shared=True)
    f = po.build(case.schedule, case.args, target="llvm")
    assert run(case, f, dict(m=19, n=23, k=13)) < 1e-4


def test_device_chosen_by_name_or_environment(monkeypatch):
    case = CASES["scan"]()
    f = po.build(case.schedule, case.args, target="opencl", device="pocl")
    assert "Portable Computing Language" in f.device
    monkeypatch.setenv("PYOPENCL_CTX", "0")
    g = po.build(case.schedule, case.args, target="opencl")
    assert run(case, g, dict(t=3, n=9)) < 1e-5


def test_hand_written_schedules_run_in_one_work_item():
    """A schedule given as an isl map (po.check) has no bound loops: one work-item."""
    from testlib.kernels import lu, lu_ref

    report = po.check(lu, schedule="{ S0[k, i] -> [i, k, 0, 0]; S1[k, i, j] -> [i, k, 1, j] }")
    s = po.Schedule(report.program, lu.outputs, default_args=lu.args)
    f = po.build(s, target="opencl")
    rng = np.random.default_rng(0)
    a = rng.random((6, 6)) + 6 * np.eye(6)
    expected = a.copy()
    lu_ref(expected)
    f(a)
    np.testing.assert_allclose(a, expected, rtol=1e-12)
