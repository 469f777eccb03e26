"""C's math library in a scop, as C has it: ``pow`` with any exponent and the other
functions in their double and float forms give gcc's numbers (the same libm results:
LLVM's intrinsics, or calls of the C library's function where LLVM has none)."""

import numpy as np
import pytest

import polyopt as po
from polyopt.frontend.c_native import NativeFunction, arguments, call_polyopt, compile_c

DOUBLE = ["pow(2.0, -alpha * A[i])", "pow(A[i], 3)", "pow(A[i], i)", "pow(A[i], 0.5)",
          "floor(A[i] * 3)", "ceil(A[i] * 7)", "trunc(-A[i] * 5)", "round(A[i] * 4.5)",
          "sin(A[i])", "cos(A[i])", "exp2(A[i])", "log2(A[i])", "log10(A[i])",
          "pow(i, 2)", "tan(A[i])", "atan(A[i])", "atan2(A[i], alpha)", "fmod(A[i] * 7, 0.3)",
          "hypot(A[i], alpha)", "cbrt(A[i])", "expm1(A[i])", "log1p(A[i])", "erf(A[i])",
          "sinh(A[i]) + cosh(A[i]) + asin(A[i] - 1) + acos(A[i] - 1)",
          "fmax(A[i], 1.0) + fmin(A[i], 1)"]
FLOAT = ["powf(C[i], 1.7f)", "powf(C[i], 2)", "sinf(C[i])", "cosf(C[i])",
         "floorf(C[i] * 3.0f)", "ceilf(C[i])", "sqrtf(C[i])", "fabsf(-C[i])",
         "log10f(C[i])", "pow(C[i], 1.5f)", "atanf(C[i])", "fmodf(C[i], 0.3f)",
         "tanf(C[i]) + cbrtf(C[i])"]


def _kernel(expression: str, target: str) -> str:
    return ("#include <math.h>\n"
            "void f(int n, double A[n], double B[n], float C[n], float D[n], "
            "double alpha) {\n  int i;\n#pragma scop\n  for (i = 0; i < n; i++)\n"
            f"    {target}[i] = {expression};\n#pragma endscop\n}}\n")


@pytest.mark.parametrize("expression, target",
                         [(e, "B") for e in DOUBLE] + [(e, "D") for e in FLOAT])
def test_math_calls_give_gcc_numbers(expression, target):
    source = _kernel(expression, target)
    kernel = po.from_c(source)
    reference = arguments(kernel, {"n": 40}, seed=3)
    ours = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in reference.items()}
    NativeFunction(compile_c(source, ("-O2",)), "f", kernel.c_params)(reference)
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), ours)
    assert ours[target].dtype == (np.float64 if target == "B" else np.float32)
    np.testing.assert_array_equal(ours[target], reference[target])


def test_pow_of_a_float_is_a_double_and_powf_a_float():
    """C's types: pow(float, float) computes in double, powf in float."""
    kernel = po.from_c(_kernel("pow(C[i], 1.5f) + powf(C[i], 1.5f)", "B"))
    text = str(kernel.program.statement("S0").value)
    assert text == "pow((float64)C[i], (float64)1.5) + (float64)pow(C[i], (float32)1.5)"


def test_math_in_the_emitted_c(tmp_path, capsys):
    from polyopt.cli import main
    path = tmp_path / "k.c"
    path.write_text(_kernel("powf(C[i], 1.7f) + floorf(C[i])", "D"))
    assert main(["opt", str(path), "--emit", "c"]) == 0
    assert "powf(" in capsys.readouterr().out


def test_fmax_and_fmin_ignore_a_nan_as_c_does():
    """C's fmax(x, NaN) is x (not NaN, as a plain maximum would give)."""
    source = _kernel("fmax(A[i], alpha) + fmin(alpha, A[i]) + fmaxf(C[i], NAN)", "B")
    kernel = po.from_c(source)
    reference = arguments(kernel, {"n": 8}, seed=1)
    reference["A"][::2] = np.nan
    reference["alpha"][...] = np.nan
    ours = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in reference.items()}
    NativeFunction(compile_c(source, ("-O2",)), "f", kernel.c_params)(reference)
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), ours)
    np.testing.assert_array_equal(ours["B"], reference["B"])
    assert np.isnan(ours["B"][::2]).all() and not np.isnan(ours["B"][1::2]).any()
