"""``polyopt opt --check`` on C with undefined behaviour: a reference run that traps
(SIGFPE on an integer division by zero or INT_MIN / -1) is the user's program's fault,
reported as UserProgramCrashError (exit status 2); polyopt itself does not die."""

import argparse
import os
import signal

import numpy as np
import pytest

import polyopt as po
from polyopt.cli import main
from polyopt.cli import opt as cli_opt
from polyopt.frontend.c_preprocess import CPPOptions
from polyopt.frontend.c_native import (NativeFunction, arguments, compile_c, run_apart,
                                       signal_cause)

DIVIDE_BY_INPUT = """
void kern(int n, int A[n], int B[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = A[i] / B[i];
#pragma endscop
}
"""

INT_MIN_BY_MINUS_ONE = """
void kern(int n, int A[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = (-2147483647 - 1) / (i - 3);
#pragma endscop
}
"""

SAFE_DIVISION = """
void kern(int n, int A[n], int B[n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    A[i] = A[i] / (B[i] + 1) + A[i] % (B[i] + 1);
#pragma endscop
}
"""


def write(tmp_path, text):
    path = tmp_path / "kernel.c"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("text, sizes", [(DIVIDE_BY_INPUT, []),
                                         (INT_MIN_BY_MINUS_ONE, ["--sizes", "n=5"])],
                         ids=["division-by-zero", "int-min-by-minus-one"])
def test_a_trapping_reference_run_is_the_users_error(tmp_path, capsys, text, sizes):
    status = main(["opt", write(tmp_path, text), "--check", "--default", *sizes])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "the reference run" in err and "killed by SIGFPE" in err
    assert "division or remainder by zero" in err and "this is a bug" not in err


def test_the_same_program_on_sizes_without_the_trap_is_compared(tmp_path, capsys):
    # i - 3 is -1 only from n = 3 on (i = 2); 0 from n = 4 on
    assert main(["opt", write(tmp_path, INT_MIN_BY_MINUS_ONE), "--check", "--default",
                 "--sizes", "n=2"]) == 0
    assert "same numbers" in capsys.readouterr().out


def test_the_api_raises_the_typed_error(tmp_path):
    args = argparse.Namespace(sizes=None, emit="loops", file=write(tmp_path,
                                      DIVIDE_BY_INPUT))
    kernel = po.from_c(args.file)
    with pytest.raises(po.UserProgramCrashError, match="killed by SIGFPE"):
        cli_opt._check(kernel, po.create_schedule(kernel), DIVIDE_BY_INPUT, CPPOptions(), args)


def test_the_check_runs_after_openmp_ran_in_this_process(tmp_path, capsys):
    """The reference runs in a forked copy; the optimized builds (OpenMP, polyopt's
    pool) run here, so a thread pool this process already started does not hang them."""
    path = write(tmp_path, SAFE_DIVISION)
    kernel = po.from_c(path)
    emitted = tmp_path / "opt.c"
    assert main(["opt", path, "--emit", "c", "-o", str(emitted)]) == 0
    parallel = NativeFunction(compile_c(emitted.read_text(), openmp=True), kernel.name,
                              kernel.c_params)
    parallel(arguments(kernel, {"n": 100_000}))  # libgomp's pool now exists here
    assert main(["opt", path, "--check", "--emit", "c", "-o", str(emitted)]) == 0
    assert capsys.readouterr().out.count("same numbers") == 2


def test_run_apart_copies_results_back_and_reports_signals():
    values = {"A": np.arange(6, dtype=np.int32).reshape(2, 3), "n": 3}

    def double(v):
        v["A"] *= 2

    assert run_apart(double, values) is None
    np.testing.assert_array_equal(values["A"], np.arange(6).reshape(2, 3) * 2)

    def trap(v):
        v["A"][...] = -1
        os.kill(os.getpid(), signal.SIGFPE)

    assert run_apart(trap, values) == signal.SIGFPE
    np.testing.assert_array_equal(values["A"], np.arange(6).reshape(2, 3) * 2)  # unchanged
    assert signal_cause(signal.SIGSEGV).startswith("SIGSEGV (an access")


def test_run_apart_raises_the_calls_polyopt_error():
    def refuse(values):
        raise po.InvalidArgumentError("n must be at most 10")

    with pytest.raises(po.InvalidArgumentError, match="at most 10"):
        run_apart(refuse, {})

    def broken(values):
        raise KeyError("x")

    with pytest.raises(po.InternalError, match="KeyError"):
        run_apart(broken, {})
