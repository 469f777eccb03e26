"""bench_polybench.py --polybench DIR: a checkout in PolyBench/C 4.2.1's layout (a kernel
file needing polybench.h's macros, its header with datasets beside it, no harness) is
read kernel by kernel, scheduled, compiled by gcc and checked (a small checkout written
here, in that layout)."""

import subprocess
import sys
from pathlib import Path

import polyopt as po

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from polybench_checkout import kernels_of, size_macros  # noqa: E402

HEADER = """#ifndef _TWOSCALE_H
# define _TWOSCALE_H
# if !defined(MINI_DATASET) && !defined(LARGE_DATASET)
#  define LARGE_DATASET
# endif
# if !defined(N) && !defined(M)
#  ifdef MINI_DATASET
#   define N 6
#   define M 5
#  endif
#  ifdef LARGE_DATASET
#   define N 300
#   define M 200
#  endif
# endif
# define _PB_N POLYBENCH_LOOP_BOUND(N,n)
# define _PB_M POLYBENCH_LOOP_BOUND(M,m)
# ifdef DATA_TYPE_IS_DOUBLE
#  define DATA_TYPE double
#  define SCALAR_VAL(x) x
#  define SQRT_FUN(x) sqrt(x)
# endif
#endif
"""

SOURCE = """#include <stdio.h>
#include <polybench.h>
#include "twoscale.h"
#define halve(x) ((x) / SCALAR_VAL(2.0))

static void init_array(int n, int m, DATA_TYPE POLYBENCH_2D(A,N,M,n,m))
{
  polybench_init_whatever(A);
}

static
void kernel_twoscale(int n, int m, DATA_TYPE alpha,
                     DATA_TYPE POLYBENCH_2D(A,N,M,n,m), DATA_TYPE POLYBENCH_1D(s,N,n))
{
  int i, j;
#pragma scop
  for (i = 0; i < _PB_N; i++) {
    s[i] = SCALAR_VAL(0.0);
    for (j = 0; j < _PB_M; j++) {
      A[i][j] = halve(A[i][j]) * alpha;
      s[i] += A[i][j];
    }
    s[i] = SQRT_FUN(s[i]);
  }
#pragma endscop
}

int main(int argc, char **argv)
{
  POLYBENCH_2D_ARRAY_DECL(A, DATA_TYPE, N, M, n, m);
  return 0;
}
"""


def checkout(tmp_path: Path) -> Path:
    """A checkout without PolyBench's harness (``utilities/polybench.h`` and
    ``polybench.c``): the benchmark reads its kernels with a stand-in for polybench.h
    (with the harness, it builds them with it: tests/benchmarks/test_polybench_harness.py)."""
    (tmp_path / "utilities").mkdir()
    (tmp_path / "utilities" / "README").write_text("no harness here\n")
    folder = tmp_path / "linear-algebra" / "kernels" / "twoscale"
    folder.mkdir(parents=True)
    (folder / "twoscale.h").write_text(HEADER)
    (folder / "twoscale.c").write_text(SOURCE)
    return tmp_path


def test_kernels_of_a_checkout(tmp_path):
    (found,) = kernels_of(checkout(tmp_path))
    assert (found.name, found.function) == ("twoscale", "kernel_twoscale")
    assert size_macros(found.text) == {"N": 300, "M": 200}
    assert size_macros(found.text, {"N": 7, "M": 9}) == {"N": 7, "M": 9}
    kernel = po.from_c(found.text, found.function, defines={"N": 7, "M": 9})
    assert [p.name for p in kernel.c_params] == ["n", "m", "alpha", "A", "s"]
    assert str(kernel.program.statement("S1").domain) == \
        "[n, m] -> { S1[i, j] : 0 <= i < n and 0 <= j < m }"


def test_bench_runs_a_checkout(tmp_path):
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_polybench.py"), "--polybench",
         str(checkout(tmp_path)), "--quick", "--no-te", "--rounds", "1"],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                          "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "twoscale" in result.stdout and "same True" in result.stdout
    assert "Kernels: the PolyBench/C checkout" in result.stdout
    assert "no utilities/polybench.h and polybench.c: its kernels are read with a " \
           "stand-in for polybench.h" in result.stdout


def test_bench_reports_a_refused_kernel_and_goes_on(tmp_path):
    """A kernel polyopt refuses (here a 'while' loop in the scop) is reported as refused,
    with the reason, and the other kernels still run."""
    root = checkout(tmp_path)
    folder = root / "medley" / "whiley"
    folder.mkdir(parents=True)
    (folder / "whiley.h").write_text(HEADER.replace("TWOSCALE", "WHILEY"))
    (folder / "whiley.c").write_text(
        SOURCE.replace("twoscale", "whiley").replace(
            "for (i = 0; i < _PB_N; i++) {", "i = 0;\n  while (i < _PB_N) {"))
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_polybench.py"), "--polybench",
         str(root), "--quick", "--no-te", "--rounds", "1"],
        capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                          "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    refused = [line for line in result.stdout.splitlines() if line.startswith("whiley")]
    assert refused and "REFUSED (FrontendError)" in refused[0] and "'while'" in refused[0]
    assert "twoscale" in result.stdout and "same True" in result.stdout
    assert "| whiley | FrontendError |" in result.stdout
    assert "| every kernel optimized (none refused) | 1 refused | FAIL |" in result.stdout
