"""The exact check under a bound on isl's effort (polyopt.deps.effort), and the cheap
exact test of carried_pairs that makes the slowest generated cases fast."""

from __future__ import annotations

import subprocess
import sys

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.deps.effort import bounded_effort, check_effort

from property.plan import TIMEOUT
from property.pool import run_cases
from testlib.errors import refused


def wavefront_over_two_nparts_splits():
    """te-steps 102230 of the property run: a wavefront over two symbolic nparts splits,
    whose check took 7 s of the case's 26 s of CPU (20 s in carried_pairs)."""
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n, m), name="A")
    k = po.reduce_axis((0, n), name="k")
    C = po.compute((n, m), lambda i, j: po.sum(
        po.if_then_else(k <= i, A[k, j] * -1.0, 0.0), axis=k), name="C0")
    s = po.create_schedule(C)
    s[C].split("i", nparts=4)
    s[C].shift("i.inner", 3)
    s[C].split("k", nparts=5)
    return s, A, C


def expected(a):
    n = a.shape[0]
    return np.stack([-a[:i + 1].sum(axis=0) for i in range(n)])


def test_a_check_past_its_bound_is_refused_and_later_checks_work():
    s, A, C = wavefront_over_two_nparts_splits()
    steps = len(s.steps)
    ctx = isl.DEFAULT_CONTEXT
    with check_effort.set_to(20_000):
        # the message is the point here too: it names the setting that raises the bound
        with pytest.raises(po.CheckEffortError,
                           match=r"po\.check_effort\.operations = N") as err:
            s[C].wavefront("i.outer", "i.inner", "j")
        assert "wavefront" in err.value.what and err.value.limit == 20_000
        assert len(s.steps) == steps  # refused: the schedule is as it was
    with check_effort.set_to(100), pytest.raises(po.CheckEffortError):
        s.is_legal()  # neither legal nor illegal as far as polyopt knows
    # isl's context is as it was: no bound, and the same check now runs to its end
    assert ctx.get_max_operations() == 0
    assert check_effort.operations == po.deps.effort.DEFAULT_OPERATIONS
    s[C].wavefront("i.outer", "i.inner", "j")
    s.check()
    assert "wavefront" in s.script()
    f = po.build(s, [A, C])
    for n, m in ((7, 4), (3, 1), (9, 2)):
        a = np.random.default_rng(n).integers(-3, 4, size=(n, m)).astype(np.float32)
        c = np.full((n, m), -77, np.float32)
        f(a, c)
        np.testing.assert_allclose(c, expected(a), rtol=1e-5)


def test_an_illegal_step_is_still_refused_as_illegal_under_the_default_bound():
    s, A, C = wavefront_over_two_nparts_splits()
    err = refused(po.LoopCarriesDependenceError, lambda: s[C].parallel("k.outer"))
    assert (err.loop, err.what) == ("k.outer", "parallel loop")


def test_a_bound_hit_under_an_except_inside_the_block_still_refuses():
    hard = isl.Set("[n] -> { [i, j] : 0 <= i, j < n and 3 * floor(i / 7) + j = 5 }")

    def swallowed():
        try:
            hard.lexmin()
        except isl.Error:
            return "a fallback answer"

    with check_effort.set_to(50):
        with pytest.raises(po.CheckEffortError) as err:
            with bounded_effort("an example"):
                swallowed()
        assert (err.value.what, err.value.limit) == ("an example", 50)
    assert not hard.lexmin().is_empty()


def test_nested_blocks_share_the_outer_bound_and_zero_means_none():
    hard = isl.Set("[n] -> { [i, j] : 0 <= i, j < n and 3 * floor(i / 7) + j = 5 }")
    with check_effort.set_to(0):
        with bounded_effort("unbounded"):
            assert not hard.lexmin().is_empty()
    with check_effort.set_to(50):
        with pytest.raises(po.CheckEffortError) as err:
            with bounded_effort("outer"):
                with bounded_effort("inner"):
                    hard.lexmin()
        assert (err.value.what, err.value.limit) == ("outer", 50)


@pytest.mark.parametrize("bad", [-1, 2.5, "many", True])
def test_the_bound_must_be_a_count(bad):
    with pytest.raises(po.InvalidArgumentError, match="integer >= 0"):
        po.check_effort.operations = bad
    assert check_effort.operations == po.deps.effort.DEFAULT_OPERATIONS


def test_the_bound_is_set_for_a_process_by_its_environment_variable():
    code = ("import polyopt as po; print(po.check_effort.operations)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "POLYOPT_CHECK_EFFORT": "1234"})
    assert out.stdout.strip() == "1234", out.stderr
    bad = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**__import__("os").environ, "POLYOPT_CHECK_EFFORT": "lots"})
    assert "POLYOPT_CHECK_EFFORT must be an integer >= 0" in bad.stderr


def test_the_slowest_generated_cases_are_accepted_with_their_numbers_checked():
    """te-steps 102230 and 102398 (wavefronts over symbolic nparts splits) took 26 s and
    16 s of CPU, near the 30 s limit; each is run by the property harness, which checks
    the schedule's numbers against a twin computed without polyopt (with a limit ten
    times the harness's: a hang still fails, a loaded machine does not)."""
    records = run_cases([("te-steps", 102230), ("te-steps", 102398)], workers=2,
                        timeout=10 * TIMEOUT)
    assert [(r["seed"], r["outcome"]) for r in records] == [
        (102230, "ok-accepted"), (102398, "ok-accepted")], records


def test_polyopt_deps_legality_imports_as_documented():
    code = ("import polyopt.deps.legality as legality\n"
            "import polyopt.deps.legality\n"
            "import polyopt as po\n"
            "A = po.placeholder((8,), name='A')\n"
            "B = po.compute((8,), lambda i: A[i] * 2, name='B')\n"
            "C = po.compute((8,), lambda i: B[i] + 1, name='C')\n"
            "s = po.create_schedule(C)\n"
            "print(polyopt.deps.legality is legality, len(po.deps(s)),\n"
            "      legality.find_violations(s.program, po.deps(s)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["True", "1", "[]"], out.stderr
