"""C idioms of PolyBench's own kernel files: a typedef'd element type, a scalar
initialized where it is declared (before the scop), a chained assignment, a size
cast to double and a double cast to int.  Each computes what C computes (checked against gcc)."""

import numpy as np

import polyopt as po
from polyopt.frontend.c_native import NativeFunction, arguments, call_polyopt, compile_c

SOURCE = """
typedef double real;
typedef real number;
void idioms(int n, number A[n], number B[n], int T[n])
{
  int i;
  real eps = 0.5;
  real scale, shift;
#pragma scop
  scale = shift = 1.0 / (double)n;
  for (i = 0; i < n; i++) {
    A[i] = A[i] * scale + shift + (double)i + eps;
    B[i] = A[i] <= eps ? 1.0 : B[i] / (real)(i + 1);
    T[i] = T[i] + i;
  }
#pragma endscop
}
"""


def test_idioms_compute_what_gcc_computes():
    kernel = po.from_c(SOURCE)
    assert [p.name for p in kernel.c_params] == ["n", "A", "B", "T"]
    assert kernel.args[0].dtype == "float64" and kernel.args[2].dtype == "int32"
    sizes = {"n": 13}
    ours, theirs = arguments(kernel, sizes, seed=4), arguments(kernel, sizes, seed=4)
    ours["A"][:3] = [-20.0, 0.1, 0.2]
    theirs["A"][:3] = [-20.0, 0.1, 0.2]
    call_polyopt(kernel, po.build(po.auto_schedule(kernel)), ours)
    NativeFunction(compile_c(SOURCE, ("-O0",)), "idioms", kernel.c_params)(theirs)
    for name in ("A", "B", "T"):
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)


def test_casting_a_double_to_an_integer_truncates_toward_zero_as_gcc():
    text = SOURCE.replace("T[i] = T[i] + i;", "T[i] = (int)A[i] + (int)(-B[i]);")
    kernel = po.from_c(text)
    sizes = {"n": 13}
    ours, theirs = arguments(kernel, sizes, seed=5), arguments(kernel, sizes, seed=5)
    for values in (ours, theirs):
        values["A"][:4] = [-20.75, 0.1, -0.5, 7.9]
        values["B"][:4] = [2.5, -3.5, 0.25, -100.75]
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), ours)
    NativeFunction(compile_c(text, ("-O0",)), "idioms", kernel.c_params)(theirs)
    np.testing.assert_array_equal(ours["T"], theirs["T"])
