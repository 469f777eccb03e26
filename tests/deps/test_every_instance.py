"""The check that a schedule runs every instance (polyopt.deps.legality.
ensure_every_instance) reads each statement's row as a function, so that it stays
within isl's operation bound (issue 32: c-tune 100295 ran for minutes in isl's
``subtract`` of a projected row, which the bound does not count)."""

from __future__ import annotations

import islpy as isl
import pytest

import polyopt as po
from polyopt.deps.legality import ensure_every_instance
from polyopt.errors import CheckEffortError, InternalError
from polyopt.schedule_errors import IllegalScheduleError

from testlib.numeric import assert_c_same_as_default

# c-tune 100295 of the property run: auto_schedule's diamond tiling of a time loop over
# two statements, then a wavefront of the tiles: the rows carry symbolic divisions by
# 1920, and projecting them out of the row gave 12-digit coefficients
SOURCE = """
void kern(int N, int M, int T, double A[N][N], double B[N], double y[M])
{
  int t, i, j, k;
  double w;
#pragma scop
  for (t = 0; t < T; t++) {
    for (i = 2; i < N - 2; i++) {
      for (j = 2; j < i; j++) {
        for (k = 2; k < N - 2; k++) {
          B[j - 2] += A[k - 1][k] * 0.25;
        }
      }
      w = B[i] * 0.5 + 1.0;
      B[i + 2] = w * 0.25 + B[i - 2] * 0.5;
    }
    for (i = 2; i < N - 2; i++) {
      A[i][i] = (A[i - 1][i] + B[i + 1] + B[i]) * 0.25;
    }
  }
#pragma endscop
}
"""
OPTIONS = dict(unroll_jam=None, register_columns=32, vectorize=False, parallel=True,
               pack_panels=False, fusion="smart", stencil_tiling="diamond", jam_rows=16,
               point_order=0, tile_sizes=(16, 128, 64))


def test_wavefront_of_diamond_tiles_is_checked_within_the_bound():
    kernel = po.from_c(SOURCE, "kern")
    s = po.auto_schedule(kernel, **OPTIONS)
    try:
        s["S0"].wavefront("wave", "c1.outer", "t.inner")
    except CheckEffortError:
        pytest.fail("the check ran out of effort: it must answer on this kernel")
    except IllegalScheduleError as error:  # a refusal must name the broken dependence
        assert "S0" in str(error) or "S1" in str(error) or "S2" in str(error), error
        return
    for sizes in ({"N": 5, "M": 4, "T": 2}, {"N": 9, "M": 3, "T": 3}):
        assert_c_same_as_default(kernel, s, sizes, seed=sum(sizes.values()))


def test_a_schedule_that_leaves_out_instances_is_still_caught():
    """The function reading of the rows keeps the check exact: a schedule that runs
    every column but the last is refused, one that runs them all is not."""
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] + 1, name="B")
    program = po.create_schedule(B).program
    rows = isl.MultiUnionPwAff("[n] -> [{ B[i, j] -> [(i)] }, { B[i, j] -> [(j)] }]")

    def scheduled(domain):
        tree = isl.Schedule.from_domain(domain).insert_partial_schedule(
            rows.intersect_domain(domain))
        return program.replace(schedule=tree)

    ensure_every_instance(scheduled(program.domains), "reorder")
    kept = program.domains.intersect(isl.UnionSet("[n] -> { B[i, j] : j < n - 1 }"))
    with pytest.raises(InternalError, match=r"reorder built a schedule that leaves out "
                                            r"instances of B \(.*j = -1 \+ n"):
        ensure_every_instance(scheduled(kept), "reorder")
