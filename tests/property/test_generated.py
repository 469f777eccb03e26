"""The property run: generated cases, each in a worker process under a time limit.

Every case must end ``ok-accepted`` (the numbers were checked against a twin computed
without polyopt) or ``ok-refused`` (a ``PolyoptError``, never ``InternalError``).  A
failure lists every defect and prints standalone reproducers.  Families and the size of
each run: :mod:`property.plan`.
"""

from __future__ import annotations

import os

import pytest

from property.plan import FAST, SLOW, SLOW_FIRST_SEED, TIMEOUT, cases, format_defects
from property.pool import defects, run_cases


@pytest.mark.parametrize("family", sorted(FAST))
def test_fast_subset_has_no_defect(family):
    records = run_cases(cases({family: FAST[family]}), workers=2, timeout=TIMEOUT)
    assert len(records) == FAST[family]
    assert any(r["outcome"] == "ok-accepted" for r in records)  # numbers were checked
    found = defects(records)
    assert not found, format_defects(found)


@pytest.mark.slow
def test_ten_thousand_cases_have_no_defect():
    scale = float(os.environ.get("POLYOPT_PROPERTY_SCALE", "1"))
    records = run_cases(cases(SLOW, SLOW_FIRST_SEED, scale), workers=2, timeout=TIMEOUT)
    assert len(records) >= 10_000 * min(scale, 1)
    found = defects(records)
    assert not found, format_defects(found)
