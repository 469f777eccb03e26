"""The runner turns a worker's death or hang into a failed case, with its reproducer,
and goes on with the next cases in a new worker."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from property.families import families
from property import pool
from property.pool import WALL_FACTOR, run_cases
from property.script import HARNESS, Script


def test_a_signal_fails_its_case_and_the_next_case_runs(tmp_path):
    records = run_cases([("selftest-signal", 0), ("te", 1)], workers=1, timeout=120)
    assert [r["outcome"] for r in records] == ["signal", "ok-accepted"]
    assert "SIGSEGV" in records[0]["detail"]
    script = tmp_path / "reproducer.py"
    script.write_text(records[0]["reproducer"])
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=60)
    assert ran.returncode == -11  # the reproducer dies the same way


def test_a_worker_ready_after_the_startup_wait_answers_its_cases(monkeypatch):
    """On a loaded machine a new worker's imports can outlast STARTUP: its "ready" then
    comes while the runner waits for the first case, and must not be taken for that
    case's record (the slow run of issue 32 stopped on a KeyError: 'family')."""
    monkeypatch.setattr(pool, "STARTUP", 0.0)
    records = run_cases([("bad-input", 84), ("bad-input", 85)], workers=1, timeout=120)
    assert [(r["family"], r["seed"]) for r in records] == [("bad-input", 84),
                                                           ("bad-input", 85)]
    assert all(r["outcome"] in ("ok-accepted", "ok-refused") for r in records)


def test_a_hang_is_a_timeout_with_its_reproducer():
    """A case that sleeps uses no CPU: the clock's bound (WALL_FACTOR x) ends it."""
    record, = run_cases([("selftest-hang", 0)], workers=1, timeout=2)
    assert record["outcome"] == "timeout"
    assert "time.sleep(3600)" in record["reproducer"]
    assert record["seconds"] >= 2 * WALL_FACTOR


def test_a_busy_case_is_stopped_by_its_cpu_time():
    record, = run_cases([("selftest-spin", 0)], workers=1, timeout=2)
    assert record["outcome"] == "timeout"
    assert record["detail"] == (f"no answer within 2 s of CPU time ({2 * WALL_FACTOR} s on "
                                "the clock)")
    assert "while True:" in record["reproducer"]


@pytest.mark.parametrize("family, seed", [("handwritten", 3), ("bad-input", 84)])
def test_reproducer_prints_the_outcome_of_its_case(tmp_path, family, seed):
    """A case's script, saved on its own, prints the OUTCOME the worker found."""
    script = Script(tmp_path / "inflight.py")
    try:
        script.run(HARNESS, top=True)
        outcome = families()[family](random.Random(f"{family}:{seed}"), script)
    except Exception as error:  # a defect: the script must print its class too
        outcome = script.namespace["outcome_line"](error)
    path = tmp_path / "case.py"
    path.write_text(script.reproducer(f"{family} {seed}"))
    ran = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         timeout=120)
    last = ran.stdout.strip().splitlines()[-1]
    assert last.split()[:2] == f"OUTCOME: {outcome}".split()[:2], (last, outcome)


def test_stopped_workers_remove_their_cases_folders():
    """A worker is stopped by closing its input, so its atexit cleanups run: the folder a
    command-line case of the bad-input family made is gone (killed workers left one per
    process in the temporary directory: 403 after one day of runs)."""
    import glob
    import os
    import tempfile

    pattern = os.path.join(tempfile.gettempdir(), "polyopt-cli-*")
    before = set(glob.glob(pattern))
    records = run_cases([("bad-input", 0), ("bad-input", 8)], workers=1, timeout=120)
    assert all(r["outcome"] in ("ok-accepted", "ok-refused") for r in records)
    assert set(glob.glob(pattern)) <= before
