"""A bound on isl's effort in one exact check, so that a check that would run for
minutes ends in a refusal that says so instead of a hang.

polyopt checks every schedule exactly.  On some schedules (symbolic ``nparts`` splits
under a wavefront or a tiling: rows defined piecewise with floor divisions) isl's
exact answer can take minutes.  Inside :func:`bounded_effort` isl may make at most
``check_effort.operations`` operations (isl's ``max_operations``: it counts its
allocations, about a million per second of CPU); past that, the check raises
:class:`~polyopt.errors.CheckEffortError`, the schedule being neither accepted nor proved
illegal.  The default leaves a wide margin over every check the test suite and the
property run accept (``benchmarks/results/check_effort.md``); ``0`` removes the bound.
Set it with ``po.check_effort.operations = N``, for one block with
``with po.check_effort.set_to(N): ...``, or for a process with ``POLYOPT_CHECK_EFFORT=N``.

>>> import islpy as isl
>>> hard = isl.Set("[n] -> { [i, j] : 0 <= i, j < n and 3 * floor(i / 7) + j = 5 }")
>>> with check_effort.set_to(50):
...     with bounded_effort("an example"):
...         hard.lexmin()
Traceback (most recent call last):
polyopt.errors.CheckEffortError: an example: the exact check needed more than 50 isl operations (po.check_effort.operations) and was stopped; the schedule is neither accepted nor proved illegal. Simplify the schedule (a constant split factor instead of nparts=, fewer nested splits or tilings before the wavefront or parallel loop), or raise the bound: po.check_effort.operations = N (or POLYOPT_CHECK_EFFORT=N; 0 for none)
>>> hard.lexmin().is_empty()  # isl works again afterwards
False
"""

from __future__ import annotations

import contextlib
import os

import islpy as isl

from ..errors import CheckEffortError, InvalidArgumentError

DEFAULT_OPERATIONS = 50_000_000
_ACTIVE = [0]  # bounded regions entered (isl's context is one for the process)


def _validated(operations, origin: str) -> int:
    if isinstance(operations, bool) or not isinstance(operations, int) or operations < 0:
        raise InvalidArgumentError(f"{origin} must be an integer >= 0 (0: no bound), got "
                                   f"{operations!r}")
    return operations


def _from_environment() -> int:
    text = os.environ.get("POLYOPT_CHECK_EFFORT", "").strip()
    if not text:
        return DEFAULT_OPERATIONS
    try:
        value = int(text)
    except ValueError:
        value = text
    return _validated(value, "POLYOPT_CHECK_EFFORT")


class CheckEffort:
    """The most isl operations one exact check may take (0: no bound).

    >>> CheckEffort(10).operations
    10
    """

    def __init__(self, operations: int):
        self.operations = operations

    @property
    def operations(self) -> int:
        return self._operations

    @operations.setter
    def operations(self, value: int) -> None:
        self._operations = _validated(value, "po.check_effort.operations")

    @contextlib.contextmanager
    def set_to(self, operations: int):
        """The bound is ``operations`` within the block, as it was afterwards."""
        before = self.operations
        self.operations = operations
        try:
            yield self
        finally:
            self._operations = before

    def __repr__(self) -> str:
        return f"CheckEffort(operations={self.operations})"


check_effort = CheckEffort(_from_environment())


class bounded_effort:  # noqa: N801  (used as a context manager, like a function)
    """Within the block, isl may make at most ``check_effort.operations`` operations;
    past them the block raises :class:`CheckEffortError` naming ``what``.  Nested
    blocks share the outermost one's bound.  On the way out isl's context is as it was
    (its bound, its count of operations, its error mode), whatever happened inside.
    ``operations``: this block's own bound instead (a step with a budget of its own,
    e.g. merging the pieces of a hand-written schedule), when it is the outermost."""

    def __init__(self, what: str, operations: int | None = None):
        self.what = what
        self.owner = False
        self.operations = operations

    def __enter__(self):
        limit = check_effort.operations if self.operations is None else self.operations
        if _ACTIVE[0] or not limit:
            _ACTIVE[0] += 1
            return self
        ctx = isl.DEFAULT_CONTEXT
        self.owner, self.limit = True, limit
        self.before = ctx.get_max_operations(), ctx.get_on_error()
        ctx.set_on_error(isl.on_error.CONTINUE)  # no warning on stderr: we raise
        ctx.reset_operations()
        ctx.set_max_operations(limit)
        _ACTIVE[0] += 1
        return self

    def __exit__(self, kind, error, trace):
        _ACTIVE[0] -= 1
        if not self.owner:
            return False
        ctx = isl.DEFAULT_CONTEXT
        try:
            # the quota may have been hit under an ``except isl.Error`` inside the block:
            # once hit, every isl call fails until the count is reset
            exhausted = kind is not KeyboardInterrupt and _quota_exhausted()
        finally:
            max_operations, on_error = self.before
            ctx.set_max_operations(max_operations)
            ctx.reset_operations()
            ctx.set_on_error(on_error)
        if exhausted:
            raise CheckEffortError(
                f"{self.what}: the exact check needed more than {self.limit} isl operations "
                "(po.check_effort.operations) and was stopped; the schedule is neither "
                "accepted nor proved illegal. Simplify the schedule (a constant split factor "
                "instead of nparts=, fewer nested splits or tilings before the wavefront or "
                "parallel loop), or raise the bound: po.check_effort.operations = N (or "
                "POLYOPT_CHECK_EFFORT=N; 0 for none)", what=self.what,
                limit=self.limit) from error
        return False


def _quota_exhausted() -> bool:
    try:
        isl.Set("{ : }")
    except isl.Error:
        return True
    return False

