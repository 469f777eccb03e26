"""The libraries' property test is the ``library`` family of ``tests/property``: a seed
gives a random spec and a sequence of builds that are interrupted, concurrent or tampered
with, each step checked by loading the library in a fresh process
(:mod:`property.library_check`; the default run takes ``plan.FAST["library"]`` cases,
``benchmarks/run_property.py`` the slow set).  Here: one fixed sequence through every
kind of step, which the random ones may miss.
"""

from __future__ import annotations

import pytest

from property.library_check import run_library_case


@pytest.mark.slow
def test_a_tampered_cache_and_library_then_a_killed_build():
    kernels = [("sq", [3, 8], ["float32", "int32"], True), ("inc", [17], ["float64"], False)]
    outcome = run_library_case(kernels, [
        ("build", 2), ("tamper", "object", "swap", 1), ("tamper", "shared", "truncate", 0),
        ("respec", 2), ("interrupt", 0.8), ("tamper", "meta", "flip", 7),
        ("concurrent", 1), ("tamper", "manifest", "flip", 120)])
    verdicts = outcome.split()
    assert verdicts[:3] == ["ok-accepted", "build:OK", "tamper:OK"], outcome
    assert verdicts[3] in ("tamper:REFUSED", "tamper:WARNED"), outcome  # the .so: detected
    assert verdicts[-2:] == ["tamper:OK", "final:OK"], outcome  # (a hash of the header)
    assert "concurrent:OK" in verdicts, outcome
