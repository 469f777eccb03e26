"""po.from_c follows C's semantics for the types it accepts, checked against gcc bit for
bit: integer promotions, usual arithmetic conversions, casts, the math functions'
double arguments, declared types of locals, and ``/`` ``%`` truncating toward zero;
constructs it does not follow are refused with a FrontendError."""

import numpy as np
import pytest

import polyopt as po
from polyopt.emit_c import replace_scop, scop_c
from polyopt.frontend.c_native import NativeFunction, call_polyopt, compile_c

TEMPLATE = "void k(int n, {params}) {{\n int i;{locals}\n#pragma scop\n{body}\n#pragma endscop\n}}\n"

# (name, parameters, locals, body, input values of the first array)
CASES = [
    ("char_promotion", "char A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = A[i] * A[i] * A[i] * 100;", [5, -7, 12, 100, -128]),
    ("uchar_promotion", "unsigned char A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = A[i] - 10;", [0, 3, 9, 200, 255]),
    ("float_times_double_literal", "float A[n], double B[n]", "",
     " for (i = 0; i < n; i++) B[i] = A[i] * 0.1;", [0.3, 1.7, -2.9, 1e3, 7.0]),
    ("float_literal_stays_float", "float A[n], double B[n]", "",
     " for (i = 0; i < n; i++) B[i] = A[i] * 0.1f;", [0.3, 1.7, -2.9, 1e3, 7.0]),
    ("sqrt_exp_of_float_are_double", "float A[n], float B[n]", "",
     " for (i = 0; i < n; i++) B[i] = sqrt(A[i]) + exp(A[i]);", [0.3, 1.7, 2.9, 5.5, 7.0]),
    ("sqrtf_is_float", "float A[n], double B[n]", "",
     " for (i = 0; i < n; i++) B[i] = sqrtf(A[i]) + expf(A[i] / 4);", [0.3, 1.7, 2.9, 5.5, 7.0]),
    ("long_cast", "int A[n], long B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (long)A[i] * 1000000 * 1000;", [1, -2, 3, 2000, -5000]),
    ("float_cast_rounds", "double A[n], double B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (float)A[i] / 3.0;", [0.1, 1.7, -2.9, 1e3, 7.3]),
    ("int_cast_truncates", "double A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (int)A[i] + (int)(A[i] * -1.5);",
     [2.7, -2.7, -0.5, 9.99, -1e3]),
    ("store_truncates", "double A[n], char B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (int)(A[i] * 100);", [2.7, -2.7, -0.5, 9.99, 1.3]),
    ("int_local", "double A[n], double B[n]", " int s;",
     " s = 0;\n for (i = 0; i < n; i++) s += A[i];\n B[0] = s;", [0.7, 0.7, 0.7, -3.2, 1.1]),
    ("float_local", "double A[n], double B[n]", " float t;",
     " for (i = 0; i < n; i++) { t = A[i] / 3.0; B[i] = t; }", [0.1, 1.7, -2.9, 1e3, 7.3]),
    ("char_local_wraps", "int A[n], int B[n]", " char c;",
     " for (i = 0; i < n; i++) { c = A[i] * 3; B[i] = c + 1; }", [50, -50, 100, 7, -128]),
    ("int_division_negative", "int A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (A[i] - 4) / 3 + (A[i] - 4) % 3 * 10;",
     [0, 1, 5, -9, 4]),
    ("division_by_negative_data", "int A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = 17 / (A[i] - 5) * 100 + 17 % (A[i] - 5);",
     [0, 1, 9, -9, 4]),
    ("division_by_negative_constant", "long A[n], long B[n]", "",
     " for (i = 0; i < n; i++) B[i] = A[i] / -4 * 100 + A[i] % -4;", [-7, 7, -8, 3, -1]),
    ("compound_division", "int A[n], int B[n]", "",
     " for (i = 0; i < n; i++) { B[i] = A[i] - 6; B[i] /= 4; B[i] %= 3; }",
     [0, 1, 5, -9, 17]),
    ("loop_variable_division", "int A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (i - 3) / 2 + (i - 3) % 2 * 10 + A[i] * 0;",
     [0, 0, 0, 0, 0]),
    ("comparison_is_an_int", "double A[n], int B[n]", "",
     " for (i = 0; i < n; i++) B[i] = (A[i] > 1.0) + (A[i] < 0) * 2;",
     [2.0, -1.0, 0.5, 1.0, -0.1]),
]

DTYPES = {"double": np.float64, "float": np.float32, "int": np.int32, "long": np.int64,
          "char": np.int8, "unsigned char": np.uint8}


def run(text, first_values, *, emitted=False):
    """polyopt's results (its build, or with ``emitted`` its C compiled by gcc) and gcc's."""
    kernel = po.from_c(text)
    n = len(first_values)

    def values():
        out = {"n": n}
        for position, p in enumerate(q for q in kernel.c_params if q.kind == "array"):
            dtype = DTYPES[p.ctype]
            source = first_values if position == 0 else [3] * n
            out[p.name] = np.array(source, dtype=np.float64).astype(dtype)
        return out

    theirs, ours = values(), values()
    NativeFunction(compile_c(text, ("-O1",)), "k", kernel.c_params)(theirs)
    if emitted:
        code = replace_scop(text, scop_c(po.auto_schedule(kernel), indent=1))
        NativeFunction(compile_c(code), "k", kernel.c_params)(ours)
    else:
        call_polyopt(kernel, po.build(po.create_schedule(kernel)), ours)
    return kernel, ours, theirs


@pytest.mark.parametrize("name, params, local, body, first", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("emitted", [False, True], ids=["build", "emit_c"])
def test_c_semantics_match_gcc_bit_for_bit(name, params, local, body, first, emitted):
    text = TEMPLATE.format(params=params, locals=local, body=body)
    kernel, ours, theirs = run(text, first, emitted=emitted)
    for p in kernel.c_params:
        if p.kind == "array":
            assert ours[p.name].tobytes() == theirs[p.name].tobytes(), \
                (p.name, ours[p.name], theirs[p.name])


def test_the_cases_differ_from_python_rules():
    """The cases test something: numbers computed with polyopt's own dtype rules (no
    promotion, floor division) differ from C's."""
    _, _, theirs = run(TEMPLATE.format(params="char A[n], int B[n]", locals="", body=CASES[0][3]),
                       CASES[0][4])
    wrapped = (np.array(CASES[0][4], np.int8) ** 3 * np.int8(100)).astype(np.int32)
    assert not np.array_equal(theirs["B"], wrapped)
    _, _, theirs = run(TEMPLATE.format(params="int A[n], int B[n]", locals="", body=CASES[13][3]),
                       CASES[13][4])
    a = np.array(CASES[13][4]) - 4
    assert not np.array_equal(theirs["B"], a // 3 + a % 3 * 10)


REFUSED = [
    ("an index dividing a value of unknown sign",
     " for (i = 1; i < n; i++) B[i] = A[(i - 3) % 2 + 2];", "truncates toward zero"),
    ("a loop bound dividing a value of unknown sign",
     " for (i = 0; i < (n - 9) / 2; i++) B[i] = A[i];", "truncates toward zero"),
    ("an unsigned size", None, "unsigned"),
    ("an unsigned constant", " for (i = 0; i < n; i++) B[i] = A[i] * 3u;", "unsigned"),
    ("a constant beyond long", " for (i = 0; i < n; i++) B[i] = A[i + 18446744073709551616];",
     "fit a long"),
    ("a cast to a pointer", " for (i = 0; i < n; i++) B[i] = (double *)0;", "cast"),
]


@pytest.mark.parametrize("what, body, words", REFUSED, ids=[r[0] for r in REFUSED])
def test_what_is_not_followed_is_refused(what, body, words):
    if body is None:
        text = ("void k(unsigned n, double A[n], double B[n]) {\n int i;\n#pragma scop\n"
                " for (i = 0; i < n; i++) B[i] = A[i];\n#pragma endscop\n}\n")
    else:
        text = TEMPLATE.format(params="double A[n], double B[n]", locals="", body=body)
    with pytest.raises(po.FrontendError) as info:
        po.from_c(text)
    assert words in str(info.value) and "line" in str(info.value)


def test_an_index_dividing_a_non_negative_value_is_floor_division():
    text = TEMPLATE.format(params="double A[n], double B[n]", locals="",
                           body=" for (i = 0; i < n; i++) B[i] = A[(i + 3) / 2] + A[i % 3];")
    kernel, ours, theirs = run(text, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    np.testing.assert_array_equal(ours["B"], theirs["B"])
