"""Every error polyopt raises for a user mistake derives from :class:`PolyoptError`.

Messages say what was wrong and what to do about it.

>>> try:
...     raise InvalidArgumentError("tensor 'A' expects float32, got float64")
... except PolyoptError as err:
...     print(err)
tensor 'A' expects float32, got float64
"""


class PolyoptError(Exception):
    """Root of all errors polyopt raises on purpose."""


class InvalidArgumentError(PolyoptError, ValueError):
    """An argument has the wrong type, value, shape or dtype."""


class DTypeError(InvalidArgumentError, TypeError):
    """An expression mixes or uses data types in an unsupported way."""


class ScheduleFormatError(InvalidArgumentError):
    """A hand-written schedule (isl text, JSON or file) is malformed or does not fit
    the program: the message says which statement and what to fix."""


class NonAffineError(PolyoptError):
    """An index, bound or condition that must be affine is not."""


class OutOfBoundsError(PolyoptError):
    """A compute reads a tensor element outside the tensor's shape."""


class UndefinedTensorError(PolyoptError):
    """A compute reads a tensor that nothing defines or that was not passed in."""


class FrontendError(PolyoptError):
    """A ``po.kernel`` function uses Python outside the supported subset (the message
    names the file and line)."""


class ScheduleError(PolyoptError):
    """A scheduling request cannot be carried out."""


class IllegalScheduleError(ScheduleError):
    """A schedule would run some dependence sink before its source.

    ``violation`` (when known) holds the dependence and a concrete pair of instances.
    """

    def __init__(self, message: str, violation=None):
        super().__init__(message)
        self.violation = violation


class TensorizeError(PolyoptError):
    """A sub-nest does not match the requested intrinsic."""


class BackendError(PolyoptError):
    """A code generator or runtime failed on a valid program."""


class MissingBackendError(BackendError):
    """A backend needs a package or system library that is not installed."""


class InternalError(PolyoptError):
    """A bug in polyopt itself: please report it with the program that triggered it."""


class PolyoptWarning(UserWarning):
    """Something polyopt was asked for did not happen, though the result is correct
    (e.g. LLVM left a loop marked vectorized scalar)."""
