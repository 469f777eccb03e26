"""po.from_c refuses what it cannot represent exactly, with a FrontendError naming the line."""

import pytest

import polyopt as po


def scop(body: str, params: str = "int n, double A[n][n], double x[n]",
         decls: str = "int i, j; double t;") -> str:
    return (f"void k({params})\n{{\n  {decls}\n#pragma scop\n{body}\n#pragma endscop\n}}\n")


# (body, the line of the offending construct, words the message must contain)
REFUSED = [
    ("  i = 0;\n  while (i < n) { x[i] = 0; i++; }", 6, "'while' loops"),
    ("  for (i = 0; i < n; i++)\n    x[i*i] = 1.0;", 6, "not affine"),
    ("  for (i = 0; i < n; i++)\n    for (j = 0; j < x[i]; j++)\n      A[i][j] = 0;", 6,
     "bounds of loop"),
    ("  for (i = 0; i < n; i++)\n    x[i] = foo(x[i]);", 6, "calling 'foo'"),
    ("  for (i = 0; i < n; i++)\n    if (x[i] > 0) x[i] = 0;", 6, "'if' condition"),
    ("  for (i = 0; i < n; i *= 2)\n    x[i] = 0;", 5, "non-zero integer constant"),
    ("  for (i = 0; i < n; i++)\n    x[i] = A[i];", 6, "indexed with 1"),
    ("  for (i = 0; i < n; i++)\n    break;", 6, "'break'"),
    ("  for (i = 0; i < n; i++)\n    A[i][(int)x[i]] = 1.0;", 6, "not affine"),
    ("  for (i = 0; i < n; i++)\n    x[i] = j0(x[i]);", 6, "calling 'j0'"),
    ("  for (i = 0; i < n; i++)\n    for (i = 0; i < n; i++)\n      x[i] = 0;", 6,
     "already the variable"),
    ("  for (i = 0; i < n; i++)\n    y[i] = 0;", 6, "'y' is not"),
    ("  for (i = 0; i < n; i--)\n    x[i] = 0;", 5, "steps down"),
    ("  for (i = 0; i <= n; i++)\n    x[i] = 0;", 6, "for no sizes"),
    ("  for (i = 0; i < n; i++)\n    x[i] = 0;\n  x[i - 1] = 1.0;", 7,
     "read after its loop (line 5) has ended"),
]


@pytest.mark.parametrize("body, line, words", REFUSED, ids=[r[2] for r in REFUSED])
def test_refusals_name_the_line(body, line, words):
    with pytest.raises((po.FrontendError, po.NonAffineError)) as info:
        po.from_c(scop(body))
    message = str(info.value)
    assert words in message, message
    if words != "for no sizes":
        assert f"line {line}, in " in message or f"at line {line} of" in message, message


def test_pointer_parameter_is_refused():
    with pytest.raises(po.FrontendError, match=r"line 1, .*pointer; declare arrays"):
        po.from_c(scop("  x[0] = 1;", params="int n, double *x"))


def test_syntax_error_and_missing_function():
    with pytest.raises(po.FrontendError, match="cannot parse"):
        po.from_c("void k(int n) { for (;; }\n")
    with pytest.raises(po.FrontendError, match="no function 'nope'"):
        po.from_c(scop("  x[0] = 1;"), function="nope")
    with pytest.raises(po.FrontendError, match="no C file"):
        po.from_c("missing_file.c")


def test_several_functions_need_a_choice():
    text = scop("  x[0] = 1;").replace("#pragma scop\n", "").replace("#pragma endscop\n", "")
    with pytest.raises(po.FrontendError, match="function=NAME"):
        po.from_c(text + text.replace("void k(", "void k2("))
    assert po.from_c(text + text.replace("void k(", "void k2("), function="k2").name == "k2"
