"""``po.auto_schedule`` marks no loop vectorized around a call of the C library that has
no vector form (``tan``, ``atan2``, ...: ``te.expr.LIBC_CALLS``): LLVM cannot vectorize
such a loop and warned that the loop marked vectorized stayed scalar.  Functions with a
vector form (``sqrt``: an instruction) keep their vector loop."""

import warnings

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.schedules.auto_band import library_calls
from tests.testlib.numeric import assert_numbers

SOURCE = """
#include <math.h>
void f(int n, double A[n][n], double B[n][n]) {{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      B[i][j] = {call} + A[j][i];
#pragma endscop
}}"""

CASES = {  # the call, NumPy's value of it (A: the input)
    "tan(A[i][j])": lambda a: np.tan(a),
    "atan2(A[i][j], 2.0)": lambda a: np.arctan2(a, 2.0),
    "sqrt(A[i][j])": lambda a: np.sqrt(a),
}


def _vectorized(schedule) -> list[str]:
    return [step.args[0] for step in schedule.steps if step.primitive == "vectorize"]


@pytest.mark.parametrize("call", sorted(CASES))
def test_loops_around_calls_without_vector_form_are_not_vectorized(call):
    kernel = po.from_c(SOURCE.format(call=call))
    schedule = po.auto_schedule(po.create_schedule(kernel), tile_sizes=16)
    scalar = library_calls(kernel.program, [st.name for st in kernel.program.statements])
    if call.startswith("sqrt"):
        assert scalar == [] and _vectorized(schedule) == ["j.inner"]
    else:
        assert scalar == [call.split("(")[0]]
        assert _vectorized(schedule) == []
        assert f"calls {scalar[0]} of the C library, which has no vector form" in \
            str(schedule.auto_report)
    with warnings.catch_warnings():
        warnings.simplefilter("error", po.PolyoptWarning)  # "LLVM did not vectorize"
        built = po.build(schedule)
    assert built.scalar_loops == ()
    values = arguments(kernel, {"n": 37})
    expected = CASES[call](values["A"]) + values["A"].T
    call_polyopt(kernel, built, values)
    assert_numbers(values["B"], expected)
