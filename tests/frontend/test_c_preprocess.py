"""``po.from_c`` and ``polyopt opt`` read C files as a C compiler does: ``-I`` folders
for local headers whatever the bracket style, ``-D NAME`` / ``-D NAME=VALUE``, ``-U``,
``-include``, the real system headers (included from local headers too), and a file
whose other functions use C the parser does not understand."""

import numpy as np
import pytest

import polyopt as po
from polyopt.cli import main
from polyopt.frontend.c_native import NativeFunction, arguments, compile_c

HEADER = """#ifndef LOCAL_H
#define LOCAL_H
#include <stdlib.h>
#include <stdio.h>
#include <stdint.h>
#include <math.h>
#ifdef SMALL
# define N 6
#else
# define N 1000
#endif
#define SCALE(x) ((x) * M_PI)
#endif
"""

KERNEL = """#include <local.h>
#include <string.h>

static int helper(int n) __attribute__((unused));  /* GNU extensions */
static int helper(int n) { return n ?: 3; }

void kernel(int n, double A[N], uint8_t B[N])
{
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    A[i] = SCALE(A[i]) + B[i] * 2;
#pragma endscop
}

int main(void) { size_t k = sizeof(double); printf("%zu %d\\n", k, helper(0)); return 0; }
"""


def _checkout(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "local.h").write_text(HEADER)
    (tmp_path / "kernel.c").write_text(KERNEL)
    return tmp_path / "kernel.c", tmp_path / "inc"


def test_include_dirs_defines_and_system_headers(tmp_path):
    path, inc = _checkout(tmp_path)
    kernel = po.from_c(str(path), include_dirs=[str(inc)], defines=["SMALL"])
    assert [(p.name, p.kind, p.ctype) for p in kernel.c_params] == [
        ("n", "size", "int"), ("A", "array", "double"), ("B", "array", "unsigned char")]
    assert [str(e) for e in kernel.args[0].shape] == ["6"]
    # uint8_t is the system header's typedef of unsigned char; M_PI its value
    values = arguments(kernel, {"n": 6})
    expected = values["A"] * np.pi + values["B"].astype(np.float64) * 2
    po.build(po.create_schedule(kernel))(values["A"], values["B"], n=6)
    np.testing.assert_array_equal(values["A"], expected)


def test_defines_as_dict_with_none_and_undefines(tmp_path):
    path, inc = _checkout(tmp_path)
    kernel = po.from_c(str(path), include_dirs=[str(inc)], defines={"SMALL": None})
    assert [str(e) for e in kernel.args[0].shape] == ["6"]
    kernel = po.from_c(str(path), include_dirs=[str(inc)], defines=["SMALL"],
                       undefines=["SMALL"])
    assert [str(e) for e in kernel.args[0].shape] == ["1000"]


def test_forced_include(tmp_path):
    path, inc = _checkout(tmp_path)
    forced = tmp_path / "small.h"
    forced.write_text("#define SMALL 1\n")
    kernel = po.from_c(str(path), include_dirs=[str(inc)], includes=[str(forced)])
    assert [str(e) for e in kernel.args[0].shape] == ["6"]


def test_a_missing_header_says_to_give_include_dirs(tmp_path):
    path, _ = _checkout(tmp_path)
    with pytest.raises(po.FrontendError, match="-I DIR"):
        po.from_c(str(path))


@pytest.mark.parametrize("options, words", [
    ({"include_dirs": ["/nonexistent/folder"]}, "not a folder"),
    ({"includes": ["/nonexistent/file.h"]}, "not a file"),
    ({"undefines": ["not a name"]}, "not a C macro name"),
    ({"defines": ["1X=2"]}, "not a C macro name"),
    ({"include_dirs": 3}, "takes a list"),
])
def test_bad_preprocessor_options(tmp_path, options, words):
    path, _ = _checkout(tmp_path)
    with pytest.raises(po.FrontendError, match=words):
        po.from_c(str(path), **options)


def test_the_scop_function_must_parse():
    text = ("void k(int n, double A[10]) {\n  int i;\n#pragma scop\n"
            "  for (i = 0; i < n; i++) A[i] = i ?: 1.0;\n#pragma endscop\n}\n")
    with pytest.raises(po.FrontendError, match="cannot parse the C code"):
        po.from_c(text)


def test_size_t_keeps_its_type():
    """A system typedef keeps its real type: size_t is unsigned, which is refused."""
    text = ("#include <stddef.h>\nvoid k(size_t n, double A[10]) {\n  int i;\n"
            "#pragma scop\n  for (i = 0; i < n; i++) A[i] = 1.0;\n#pragma endscop\n}\n")
    with pytest.raises(po.FrontendError, match="unsigned"):
        po.from_c(text)


def test_cli_takes_compiler_options(tmp_path, capsys):
    path, inc = _checkout(tmp_path)
    out = tmp_path / "out.c"
    assert main(["opt", "-I", str(inc), str(path), "-D", "SMALL", "--emit", "c",
                 "-o", str(out)]) == 0
    capsys.readouterr()
    emitted = out.read_text()
    assert "#include <local.h>" in emitted and "optimized by polyopt" in emitted
    kernel = po.from_c(str(path), include_dirs=[str(inc)], defines=["SMALL"])
    flags = ("-O2", f"-I{inc}", "-DSMALL")
    original = NativeFunction(compile_c(KERNEL, flags), "kernel", kernel.c_params)
    optimized = NativeFunction(compile_c(emitted, flags), "kernel", kernel.c_params)
    a, b = arguments(kernel, {"n": 6}), arguments(kernel, {"n": 6})
    original(a)
    optimized(b)
    np.testing.assert_array_equal(a["A"], b["A"])
    assert main(["opt", str(path), "-I", str(inc), "-D", "SMALL", "-U", "SMALL"]) == 0
    assert "1000" in capsys.readouterr().out
    assert main(["opt", str(path), "-I", "/nonexistent/folder"]) == 2
    assert "-I has '/nonexistent/folder', which is not a folder" in capsys.readouterr().err
