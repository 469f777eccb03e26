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


# -- every math function with arguments of every type, against gcc bit for bit ------------
# (issue 32: expf(tanh(L[i])) in a vectorized loop called libmvec's vector expf, which
# rounds up to 4 ULP apart from libm's expf that gcc calls: a C program's math functions
# are libm's scalar ones in every loop)
from polyopt.frontend.c_exprs import _LIBM, _MATH  # noqa: E402  (the functions accepted)

_TYPES = {"I": ("int", np.int32), "L": ("long", np.int64), "F": ("float", np.float32),
          "D": ("double", np.float64)}
_UNIT = {"asin", "acos"}                      # arguments in [-1, 1]
_POSITIVE = {"log", "log2", "log10", "sqrt", "log1p", "pow", "fmod"}  # first argument > 0


def _all_types_kernel(func: str) -> str:
    """``func`` and ``func``f of int, long, float and double arrays: the double form into
    ``B``, the float form into ``G`` and, with float arithmetic, into the double ``H``."""
    arity = _LIBM.get(func, 1)
    params = ", ".join(f"{c} {t}[n], {c} {t}2[n]" for t, (c, _) in _TYPES.items())
    outputs = ", ".join(f"double B{t}[n], float G{t}[n], double H{t}[n]" for t in _TYPES)
    lines = []
    for t in _TYPES:
        args = f"{t}[i]" if arity == 1 else f"{t}[i], {t}2[i]"
        lines += [f"    B{t}[i] = {func}({args});", f"    G{t}[i] = {func}f({args});",
                  f"    H{t}[i] = {func}f({args}) - 0.1f * F2[i];"]
    body = "\n".join(lines)
    return (f"#include <math.h>\nvoid f(int n, {params}, {outputs}) {{\n  int i;\n"
            f"#pragma scop\n  for (i = 0; i < n; i++) {{\n{body}\n  }}\n#pragma endscop\n}}\n")


def _all_types_inputs(func: str, n: int) -> dict:
    rng = np.random.default_rng(sum(map(ord, func)))
    values = {"n": n}
    for t, (_, dtype) in _TYPES.items():
        floating = np.dtype(dtype).kind == "f"
        if func in _UNIT:
            first = rng.uniform(-1, 1, n) if floating else rng.integers(-1, 2, n)
        elif func in _POSITIVE:
            first = rng.uniform(0.05, 9, n) if floating else rng.integers(1, 10, n)
        else:
            first = rng.uniform(-9, 9, n) if floating else rng.integers(-9, 10, n)
        second = rng.uniform(0.25, 4, n) if floating else rng.integers(1, 5, n)
        values[t], values[t + "2"] = first.astype(dtype), second.astype(dtype)
        for prefix, out in (("B", np.float64), ("G", np.float32), ("H", np.float64)):
            values[prefix + t] = np.zeros(n, out)
    return values


@pytest.mark.parametrize("func", sorted(set(_MATH) | set(_LIBM)))
def test_every_math_function_of_every_type_gives_gcc_bits(func):
    """Each function's double and float forms of int, long, float and double arguments
    (converted as C converts them), in a loop LLVM vectorizes (n = 67: vector body and
    remainder), bit for bit as gcc -O0 and -O2 compute them."""
    source = _all_types_kernel(func)
    kernel = po.from_c(source)
    ours = _all_types_inputs(func, 67)
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), ours)
    for level in ("-O0", "-O2"):
        reference = _all_types_inputs(func, 67)
        NativeFunction(compile_c(source, (level,)), "f", kernel.c_params)(reference)
        for name, expected in reference.items():
            if isinstance(expected, np.ndarray) and name[0] in "BGH":
                got = ours[name]
                assert got.dtype == expected.dtype, name
                bits = "u4" if got.dtype == np.float32 else "u8"
                differ = np.flatnonzero(got.view(bits) != expected.view(bits))
                assert got.tobytes() == expected.tobytes(), (
                    f"{func}: {name} differs from gcc {level} at {differ[:4].tolist()}: "
                    f"got {got[differ[:4]].tolist()}, expected {expected[differ[:4]].tolist()}")


def test_c_kernels_keep_libm_scalar_calls():
    """The ``vector_math`` pass gives a C program no libmvec variants (a Python kernel's
    exp may get them: within 4 ULP, not gcc's bits)."""
    kernel = po.from_c(_kernel("expf(C[i]) + logf(C[i]) + tanhf(C[i])", "D"))
    decision = po.lower(po.create_schedule(kernel), target="llvm").decision("vector_math")
    assert decision.variants == () and "libm's scalar functions" in decision.why
