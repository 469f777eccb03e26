"""`polyopt demo`: the README's first command runs and checks its numbers, and says on
which CPU and how many threads each side ran (issue 37: NumPy's BLAS threads, unlimited,
made polyopt look 30x slower than it is on a loaded machine)."""

import os
import re

import pytest

import polyopt as po
from polyopt.cli import main
from polyopt.cli import demo as cli_demo


def test_demo_runs_and_matches_numpy(capsys):
    assert main(["demo", "--size", "48"]) == 0
    out = capsys.readouterr().out
    assert out.count("matches NumPy: yes") == 3
    assert "refused, as it should be" in out and "s.rfactor(C, 'k')" in out
    assert "flow C_update[i, j, k] -> C_update[i, j, k + 1] through C[i, j]" in out


def test_demo_names_the_cpu_and_both_sides_threads(capsys):
    assert main(["demo", "--size", "16", "--threads", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"CPU: {po.TargetInfo.host().describe()}"
    assert re.search(r"^threads: polyopt 1 .*NumPy 1 \(limited by threadpoolctl\)$", out, re.M)
    assert out.count("1 thread(s) each") == 3
    lines = out.splitlines()  # each step announced before it runs
    compiling = lines.index("  ... compiling the default schedule")
    result = next(k for k, line in enumerate(lines) if line.startswith("matmul, default"))
    assert compiling < result
    assert "  ... running it once and comparing with NumPy" in lines[compiling:result]


def test_numpy_threads_are_limited_inside_the_demo():
    import threadpoolctl  # (in the test extra)

    limit, note = cli_demo.numpy_threads_limited(1)
    assert note == "limited by threadpoolctl"
    with limit:
        blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)


def test_without_threadpoolctl_the_note_says_whether_the_variables_are_set(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_threadpoolctl(name, *args, **kwargs):
        if name == "threadpoolctl":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_threadpoolctl)
    for variable in cli_demo.BLAS_THREAD_VARIABLES:
        monkeypatch.setenv(variable, "3")
    assert cli_demo.numpy_threads_limited(3)[1] == \
        "set by OPENBLAS_NUM_THREADS/OMP_NUM_THREADS"
    assert cli_demo.numpy_threads_limited(2)[1].startswith("NOT limited")


def test_the_threads_argument_is_read_before_numpy():
    assert cli_demo._threads_argument(["demo", "--threads", "3"]) == 3
    assert cli_demo._threads_argument(["demo", "--threads=2", "--size", "9"]) == 2
    assert cli_demo._threads_argument(["demo"]) == cli_demo.available_cpus()
    assert cli_demo._threads_argument(["demo", "--threads", "x"]) is None
    assert cli_demo._threads_argument(["check", "f.py"]) is None


def test_a_slow_kernel_is_timed_within_the_budget():
    calls = []
    seconds, runs = cli_demo.median_time(lambda: calls.append(1), repeat=5, budget=0)
    assert (runs, len(calls)) == (1, 1) and seconds >= 0


@pytest.mark.parametrize("argv, words", [
    (["demo", "--threads", "0"], "--threads takes a number of threads of 1 or more"),
    (["demo", "--size", "0"], "--size takes a matmul size from 1 to 4096"),
])
def test_bad_demo_arguments(capsys, argv, words):
    assert main(argv) == 2
    assert words in capsys.readouterr().err
