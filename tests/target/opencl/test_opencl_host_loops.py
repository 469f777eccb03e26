"""A serial loop around loops bound to blockIdx runs on the host: each iteration
launches the kernels of its body, the loop variable passed as an argument (a scan's
time loop, the pivot loop of LU).  Conflicts between iterations are ordered by the
launches; within one launch they are checked as usual."""

import numpy as np

import polyopt as po
from testlib.kernels import lu, lu_ref


def lu_rows_on_work_groups():
    s = po.create_schedule(lu)
    s["S0"].bind("i", "blockIdx.x")
    return s


def test_lu_launches_one_kernel_per_pivot():
    f = po.build(lu_rows_on_work_groups(), target="opencl")
    assert f.source.count("__kernel") == 1 and "const long k)" in f.source
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 9):
        a = rng.random((n, n)) + n * np.eye(n)
        expected = a.copy()
        lu_ref(expected)
        f(a)
        np.testing.assert_allclose(a, expected, rtol=1e-10)


def test_lu_on_the_host_loop_is_clean_under_oclgrind(oclgrind):
    out, log = oclgrind("""
        import numpy as np
        from tests.target.opencl.test_opencl_host_loops import lu_rows_on_work_groups
        from testlib.kernels import lu_ref
        import polyopt as po
        f = po.build(lu_rows_on_work_groups(), target="opencl", device="oclgrind")
        a = np.random.default_rng(1).random((7, 7)) + 7 * np.eye(7)
        expected = a.copy()
        lu_ref(expected)
        f(a)
        np.testing.assert_allclose(a, expected, rtol=1e-10)
        print("checked")
    """)
    assert "checked" in out
    assert log == "", f"Oclgrind reported:\n{log[:3000]}"
