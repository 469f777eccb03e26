"""The ways tuning fails, below :class:`polyopt.errors.PolyoptError`.

>>> issubclass(RecordsError, TuningError), issubclass(TuningError, PolyoptError)
(True, True)
"""

from ..errors import PolyoptError

__all__ = ["RecordsError", "TuningError"]


class TuningError(PolyoptError):
    """A tuning run cannot go on (the untuned schedule itself fails to build or run,
    no point of the space can be measured, a tuner is misused)."""


class RecordsError(TuningError):
    """A records file cannot be used (a folder another user can write, not a records
    file, unreadable)."""
