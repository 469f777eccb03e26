"""Random OpenCL schedules of one program (testlib.opencl.matmul_variant): each is either
refused with a clean polyopt error or computes NumPy's numbers on PoCL; a few fixed ones
also run under Oclgrind with race checks."""

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import polyopt as po
from testlib.opencl import check, matmul_variant

CLEAN = (po.IllegalScheduleError, po.ScheduleError, po.InvalidArgumentError)
VARIANTS = st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.booleans(),
                     st.booleans(), st.tuples(st.booleans(), st.booleans()), st.booleans(),
                     st.booleans())


@settings(max_examples=12, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=[HealthCheck.too_slow])
@given(VARIANTS)
def test_random_schedules_are_right_or_refused(variant):
    try:
        case = matmul_variant(*variant)
        f = po.build(case.schedule, case.args, target="opencl")
    except CLEAN:
        return
    check(case, f)


FIXED = [(4, 3, 2, True, True, (True, True), True, True),      # __local tiles, refilled per k
         (3, 5, 4, True, True, (True, False), True, False),    # copy by one work-item per row
         (2, 2, 3, False, False, (True, True), False, False),  # k inside the work-items
         (5, 1, 2, True, True, (False, True), True, True)]     # one-column tiles


def test_fixed_variants_are_clean_under_oclgrind(oclgrind):
    out, log = oclgrind(f"""
        from testlib.opencl import check, matmul_variant
        for variant in {FIXED!r}:
            check(matmul_variant(*variant), device="oclgrind")
        print("checked")
    """)
    assert "checked" in out
    assert log == "", f"Oclgrind reported:\\n{log[:3000]}"
