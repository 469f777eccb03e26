"""Generated kernels run under Oclgrind with data-race checks: no out-of-bounds access,
no data race, no barrier divergence (its log stays empty), and NumPy's numbers.  This is
what shows that the kernels are race-free, not just lucky on PoCL."""

import pytest

from testlib.opencl import CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_are_clean_under_oclgrind(oclgrind, name):
    out, log = oclgrind(f"""
        from testlib.opencl import CASES, check
        check(CASES[{name!r}](), device="oclgrind")
        print("checked")
    """)
    assert "checked" in out
    assert log == "", f"Oclgrind reported:\n{log[:3000]}"


def test_oclgrind_sees_the_race_without_the_barriers(oclgrind):
    """The check is not vacuous: the tiled matmul with its barriers removed races."""
    out, log = oclgrind("""
        import numpy as np, polyopt as po
        from polyopt.target.opencl.codegen import BARRIER
        from polyopt.target.opencl.runtime import compile_program
        from polyopt.target.opencl.target import OpenCLKernel
        from testlib.opencl import matmul_case, run
        case = matmul_case(shared=True)
        f = po.build(case.schedule, case.args, target="opencl", device="oclgrind")
        assert BARRIER in f.source
        source = f.source.replace(BARRIER, "")
        racy = OpenCLKernel(f.func, f.kernels, source,
                            compile_program(f.queue.context, source), f.queue)
        run(case, racy, dict(m=16, n=16, k=16))
        print("ran")
    """)
    assert "ran" in out
    assert "data race" in log
