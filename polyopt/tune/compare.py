"""Whether a candidate's outputs match the untuned schedule's: one tolerance rule.

Integers, booleans and ``exact`` results (a schedule that keeps every reduction in its
written order) compare bit for bit; floats within :data:`TOLERANCES` (the rounding of a
reduction reassociated across vector lanes or contracted into fused multiply-adds), the
bounds the test suite uses (``tests/testlib/numeric.py``).

>>> import numpy as np
>>> mismatch(np.float32([1, 2]), np.float32([1, 2.00001])) is None
True
>>> mismatch(np.int32([1, 2, 3]), np.int32([1, 2, 4]))
'1 of 3 elements differ (int32, exact); worst at (2,): got 3, expected 4'
"""

from __future__ import annotations

import numpy as np

from ..errors import public

__all__ = ["TOLERANCES", "mismatch", "tolerance"]

# (rtol, atol) of floating-point results that may be rounded differently (reassociated
# reductions, fused multiply-adds): the rounding of sums of up to some thousand terms
# (machine epsilon: float64 2.2e-16, float32 1.2e-7, float16 9.8e-4, bfloat16 7.8e-3).
# The test suite's reference check (tests/testlib/numeric.py) uses this table.
TOLERANCES = {"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3),
              "bfloat16": (1e-2, 1e-2)}


@public
def tolerance(dtype, exact: bool = False) -> tuple[float, float]:
    """``(rtol, atol)`` for results of ``dtype`` (see the module docstring)."""
    name = np.dtype(dtype).name
    if exact or name not in TOLERANCES:
        return 0.0, 0.0
    return TOLERANCES[name]


@public
def mismatch(got, expected, *, exact: bool = False) -> str | None:
    """None when ``got`` matches ``expected``; else what differs (the worst element)."""
    expected = np.asarray(expected)
    if got is None:
        return "missing"
    got = np.asarray(got)
    if got.shape != expected.shape:
        return f"shape {got.shape}, expected {expected.shape}"
    rtol, atol = tolerance(expected.dtype, exact)
    wide_got, wide_expected = got.astype(np.float64), expected.astype(np.float64)
    both_nan = np.isnan(wide_got) & np.isnan(wide_expected)
    excess = np.abs(wide_got - wide_expected) - (atol + rtol * np.abs(wide_expected))
    excess = np.where(both_nan, -1.0, np.nan_to_num(excess, nan=np.inf))
    bad = excess > 0
    if not bad.any():
        return None
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    kind = "exact" if (rtol, atol) == (0.0, 0.0) else f"rtol {rtol:g}, atol {atol:g}"
    return (f"{int(bad.sum())} of {bad.size} elements differ ({expected.dtype.name}, {kind}); "
            f"worst at {tuple(int(k) for k in worst)}: got {got[worst]}, "
            f"expected {expected[worst]}")
