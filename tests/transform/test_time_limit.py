"""A computation that cannot be interrupted runs under a CPU-time limit in a forked
copy (polyopt.transform.time_limit), as isl's scheduler does in auto_schedule."""

import time

import islpy as isl

import polyopt as po
from polyopt.transform.time_limit import WALL_FACTOR, run_limited

# isl's scheduler ran for minutes on this program's dependences with 200,000 operations
# allowed (one operation on growing numbers takes long): found by the c-auto property
# family once auto_schedule expanded its scalars
RUNAWAY = """
void kern(int N, int M, int T, double A[N][N], double B[N], double y[M])
{
  int t, i, j;
  double w;
#pragma scop
  for (t = 0; t < T; t++) {
    for (i = 2; i < N - 2; i++) {
      w = A[i + 1][i + 2] * 0.5 + -0.25;
      A[i][i - 2] = w * 0.25 + A[i + 1][i + 2] * 0.5;
    }
    for (i = 2; i < N - 2; i++) {
      A[i][i + 1] += B[i - 2] * 0.25;
      for (j = i + 1; j < N - 2; j++) {
        A[i + 2][j - 1] += A[i - 2][j + 2] * 0.25;
      }
    }
    for (i = 2; i < N - 2; i++) {
      w = B[i - 2];
      for (j = 2; j <= i; j++) {
        w -= A[j + 1][j] * B[j] * 0.125;
      }
      B[i + 2] = w * 0.5;
    }
  }
#pragma endscop
}
"""


def test_answers_errors_and_timeouts():
    assert run_limited(lambda: "x" * 100_000, seconds=10) == ("ok", "x" * 100_000)
    status, message = run_limited(lambda: 1 / 0, seconds=10)
    assert status == "error" and "ZeroDivisionError" in message
    started = time.monotonic()   # a copy that uses no CPU ends at the wall-time bound
    assert run_limited(lambda: time.sleep(30) or "late", seconds=0.3) == ("timeout", "")
    assert time.monotonic() - started < 5


def _spin():
    while True:
        pass


def test_the_limit_counts_cpu_time():
    """The same answer however loaded the machine is: the copy is stopped after its
    own CPU seconds, not after seconds of the clock."""
    started = time.process_time(), time.monotonic()
    assert run_limited(_spin, seconds=0.3) == ("timeout", "")
    assert time.monotonic() - started[1] < WALL_FACTOR * 0.3   # before the wall bound
    assert time.process_time() - started[0] < 0.3   # the parent only polls


def test_an_isl_error_in_the_copy_is_reported():
    status, message = run_limited(lambda: str(isl.Set("{ [i] : i >= }")), seconds=10)
    assert status == "error" and "Error" in message


def test_auto_schedule_gives_up_on_a_runaway_scheduler_in_time():
    kernel = po.from_c(RUNAWAY, "kern")
    started = time.monotonic()
    s = po.auto_schedule(kernel, scheduler_seconds=0.5)
    assert time.monotonic() - started < 20
    assert s.is_legal()
    assert "no schedule in 0.5 s" in str(s.auto_report)
