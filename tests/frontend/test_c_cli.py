"""``polyopt opt kernel.c``: the printed loop nest, ``--emit c`` (compiled with gcc, same
numbers as the original), ``--emit so`` and ``--check``."""

from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from polyopt.cli import main
from polyopt.frontend.c_native import NativeFunction, arguments, compile_c

ROOT = Path(__file__).resolve().parents[2]
CASES = [
    (ROOT / "benchmarks" / "polybench" / "jacobi-2d.c", ["N=14", "TSTEPS=3"],
     {"n": 14, "tsteps": 3}),
    (ROOT / "benchmarks" / "polybench" / "gemm.c", ["NI=10", "NJ=13", "NK=9"],
     {"ni": 10, "nj": 13, "nk": 9}),
    (ROOT / "benchmarks" / "polybench" / "syrk.c", ["N=13", "M=9"], {"n": 13, "m": 9}),
    (ROOT / "tests" / "frontend" / "c_corpus" / "guarded.c", [], {"n": 11, "m": 8}),
    (ROOT / "tests" / "frontend" / "c_corpus" / "reverse.c", [], {"n": 9}),
]


def defines_text(defines):
    return "".join(f"#define {d.replace('=', ' ')}\n" for d in defines)


@pytest.mark.parametrize("path, defines, sizes", CASES, ids=[c[0].stem for c in CASES])
def test_emit_c_compiles_and_computes_the_same(tmp_path, capsys, path, defines, sizes):
    out = tmp_path / "opt.c"
    flags = [a for d in defines for a in ("-D", d)]
    assert main(["opt", str(path), "--emit", "c", "-o", str(out), "--tile-size", "4",
                 *flags]) == 0
    emitted = out.read_text()
    assert "optimized by polyopt" in emitted
    assert ("#pragma omp" in emitted) == (path.stem != "reverse")  # back substitution: serial
    # syrk reads A from a transposed copy: allocated and freed
    assert ("= malloc(" in emitted and "free(" in emitted) == (path.stem == "syrk")
    kernel = po.from_c(str(path), defines=dict(d.split("=") for d in defines))
    original = NativeFunction(compile_c(defines_text(defines) + path.read_text(), ("-O1",)),
                              kernel.name, kernel.c_params)
    optimized = NativeFunction(compile_c(defines_text(defines) + emitted, openmp=True),
                               kernel.name, kernel.c_params)
    expected, actual = arguments(kernel, sizes), arguments(kernel, sizes)
    original(expected)
    optimized(actual)
    for p in kernel.c_params:
        if p.kind == "array":
            np.testing.assert_allclose(actual[p.name], expected[p.name], rtol=1e-12,
                                       atol=1e-12)


def test_loops_report_and_check(capsys):
    path = ROOT / "benchmarks" / "polybench" / "gemm.c"
    status = main(["opt", str(path), "-D", "NI=9", "-D", "NJ=11", "-D", "NK=8", "--check",
                   "--emit", "c", "-o", "/dev/null"])
    printed = capsys.readouterr().out
    assert status == 0, printed
    assert printed.count("same numbers") == 2
    assert main(["opt", str(path), "--tile-size", "16"]) == 0
    printed = capsys.readouterr().out
    assert "void kernel_gemm(" in printed and "auto_schedule" in printed
    assert 's["S0"].split("i", factor=16)' in printed


def test_emit_so(tmp_path):
    path = ROOT / "tests" / "frontend" / "c_corpus" / "triangular.c"
    target = tmp_path / "tri.so"
    assert main(["opt", str(path), "--emit", "so", "-o", str(target)]) == 0
    kernel = po.from_c(str(path))
    function = NativeFunction(str(target), "triangular", kernel.c_params)
    values = arguments(kernel, {"n": 6})
    function(values)
    np.testing.assert_allclose(values["y"][2], values["A"][2, :3] @ arguments(
        kernel, {"n": 6})["x"][:3])


def test_bad_input_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.c"
    bad.write_text("void f(int n, double *A) {\n#pragma scop\n A[0] = 1;\n#pragma endscop\n}\n")
    assert main(["opt", str(bad)]) == 2
    assert "pointer" in capsys.readouterr().err
    assert main(["opt", str(bad), "--sizes", "n"]) == 2

