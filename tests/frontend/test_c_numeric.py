"""po.from_c against gcc: each corpus kernel, built by polyopt with its default schedule,
computes what gcc's build of the same C computes, on small, odd and empty sizes."""

from pathlib import Path

import pytest

import polyopt as po
from polyopt.frontend.c_native import NativeFunction, arguments, call_polyopt, compile_c

from testlib.numeric import assert_numbers

CORPUS = Path(__file__).parent / "c_corpus"
CASES = [
    ("triangular", [{"n": 0}, {"n": 1}, {"n": 7}]),
    ("guarded", [{"n": 1, "m": 1}, {"n": 9, "m": 6}, {"n": 4, "m": 13}]),
    ("reverse", [{"n": 1}, {"n": 6}]),
    ("stencil", [{}]),
    ("first_row", [{"n": 1, "m": 0}, {"n": 3, "m": 5}]),
    ("locals", [{"n": 5}, {"n": 8}]),
    ("int_math", [{"n": 10}]),
]


def run_both(kernel, text: str, sizes: dict, schedule=None):
    native = NativeFunction(compile_c(text, ("-O1",)), kernel.name, kernel.c_params)
    ours, theirs = arguments(kernel, sizes), arguments(kernel, sizes)
    native(theirs)
    call_polyopt(kernel, po.build(schedule or po.create_schedule(kernel)), ours)
    return ours, theirs


@pytest.mark.parametrize("name, all_sizes", CASES, ids=[c[0] for c in CASES])
def test_corpus_matches_gcc(name, all_sizes):
    path = CORPUS / f"{name}.c"
    kernel = po.from_c(str(path))
    for sizes in all_sizes:
        ours, theirs = run_both(kernel, path.read_text(), sizes)
        assert_numbers(ours, theirs)


def test_macro_sizes_can_be_redefined():
    text = (CORPUS / "stencil.c").read_text()
    kernel = po.from_c(text, defines={"N": 9, "TSTEPS": 3})
    assert [int(e.value) for e in kernel.args[0].shape] == [9, 9]
    native_text = "#define N 9\n#define TSTEPS 3\n" + text
    ours, theirs = run_both(kernel, native_text, {})
    assert_numbers(ours, theirs)


CARRIED = """
void carried(int n, double A[100], double y[100]) {
  int i, j;
  double s, p;
#pragma scop
  for (i = 0; i < n; i++) {
    s = 0.0;
    p = A[i];
    for (j = 0; j < n; j++)
      s = s + A[j] * p;
    y[i] = s;
  }
#pragma endscop
}"""


def test_only_the_refused_temporary_is_kept_in_an_array():
    kernel = po.from_c(CARRIED)  # s is carried across j (TemporaryScalarError); p is not
    kept = {a.name for a in kernel.program.arrays if a.shape == () and a.role == "compute"}
    assert kept == {"s"}
    for sizes in ({"n": 0}, {"n": 7}):
        ours, theirs = run_both(kernel, CARRIED, sizes)
        assert_numbers(ours, theirs)


NEVER_RUNS = """
void never(int n, double A[100], double B[100]) {
  int i;
#pragma scop
  for (i = 0; i < n; i++)
    if ((0 * ('a' - 96)) % 3 == 1)
      A[i] = B[i] + 1.0;
  for (i = 0; i < n; i++)
    B[i] = B[i] * 2.0;
#pragma endscop
}"""


def test_auto_schedule_of_a_kernel_with_a_statement_that_never_runs():
    """A guard no size satisfies leaves a statement with an empty domain, which isl's
    scheduler leaves out: auto_schedule keeps it as it is (it raised KeyError 'S0',
    found by the c-types property family)."""
    kernel = po.from_c(NEVER_RUNS)
    for sizes in ({"n": 0}, {"n": 9}):
        ours, theirs = run_both(kernel, NEVER_RUNS, sizes, po.auto_schedule(kernel))
        assert_numbers(ours, theirs)
