"""Every error polyopt raises for a user mistake derives from :class:`PolyoptError`.

Messages say what was wrong and what to do about it.  The ways a schedule primitive
can fail each have a subclass of :class:`ScheduleError` in :mod:`polyopt.schedule_errors`
(in the bottom layer too; it imports this module), with the objects involved as
attributes.  Public functions are marked :func:`public`: any other exception that would
leave one (an isl or LLVM failure, a bug) becomes an :class:`InternalError` naming the
function, as a last resort.

>>> try:
...     raise InvalidArgumentError("tensor 'A' expects float32, got float64")
... except PolyoptError as err:
...     print(err)
tensor 'A' expects float32, got float64
"""

import contextlib
import functools
import inspect
import os
import sys
import threading

__all__ = ["PolyoptError", "InvalidArgumentError", "DTypeError", "ScheduleFormatError",
           "NonAffineError", "OutOfBoundsError", "UndefinedTensorError", "FrontendError",
           "ScheduleError", "IllegalScheduleError", "CheckEffortError", "TensorizeError",
           "BackendError", "MissingBackendError", "ReleasedKernelError", "DamagedFileError",
           "AMXPermissionError",
           "ExternCallError", "UserCodeError", "UserProgramCrashError", "InternalError", "PolyoptWarning"]


class PolyoptError(RuntimeError):
    """Root of all errors polyopt raises on purpose.

    A :class:`RuntimeError`, as TVM's ``TVMError`` is: code written for TVM that catches
    ``RuntimeError`` or ``tvm.TVMError`` catches it."""

    def __reduce__(self):
        # subclasses take their attributes as arguments (polyopt.schedule_errors): a copy
        # is rebuilt from the message and the attributes, without calling __init__ again
        return _rebuilt, (type(self), self.args, self.__dict__)

    def with_message(self, message: str) -> "PolyoptError":
        """A copy of this error, of its class and with its attributes, saying ``message``
        (a caller adding context keeps the type that tests and handlers look at)."""
        return _rebuilt(type(self), (message,), dict(self.__dict__))


def _rebuilt(cls, args, attributes):
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(attributes)
    return error


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


class TemporaryScalarError(FrontendError):
    """A scalar temporary is used where plain forward substitution cannot give its value:
    ``name`` is the temporary, ``problem`` one of ``"reassigned"`` (assigned again in an
    inner loop or branch), ``"stale"`` (reads an array written before the use) or
    ``"no_value"`` (read before it is assigned in the same block); keep it in an array
    element instead (the C front end does so by itself)."""

    PROBLEMS = ("reassigned", "stale", "no_value")

    def __init__(self, message: str, *, name: str, problem: str):
        super().__init__(message)
        self.name, self.problem = name, problem


class ScheduleError(PolyoptError):
    """A scheduling request cannot be carried out."""


class IllegalScheduleError(ScheduleError):
    """A schedule would run some dependence sink before its source.

    ``violation`` (when known) holds the dependence and a concrete pair of instances.
    """

    def __init__(self, message: str, violation=None):
        super().__init__(message)
        self.violation = violation


class CheckEffortError(ScheduleError):
    """The exact legality check needed more of isl's effort than its bound
    (``po.check_effort``) allows: the schedule is neither accepted nor proved illegal.

    ``what`` names the check, ``limit`` the bound it hit (isl operations, or seconds of
    CPU for the dependences of a rewritten kernel)."""

    def __init__(self, message: str, *, what: str | None = None, limit=None):
        super().__init__(message)
        self.what, self.limit = what, limit


class TensorizeError(ScheduleError):
    """A sub-nest does not match the requested intrinsic (or running it as one step
    would be illegal)."""


class BackendError(PolyoptError):
    """A code generator or runtime failed on a valid program."""


class ReleasedKernelError(BackendError):
    """A compiled kernel was called after ``f.release()`` freed its machine code."""


class MissingBackendError(BackendError):
    """A backend needs a package or system library that is not installed."""


class AMXPermissionError(BackendError):
    """Linux refused this process the AMX tile state (``arch_prctl(ARCH_REQ_XCOMP_PERM,
    XFEATURE_XTILEDATA)``), so a kernel using AMX tiles cannot run here; ``errno`` is the
    kernel's error number (0 where the system has no such request at all)."""

    def __init__(self, message: str, errno: int = 0):
        self.errno = errno
        super().__init__(message)


class DamagedFileError(BackendError):
    """A saved file does not match the SHA-256 recorded for it (truncated, replaced or
    edited)."""


class ExternCallError(PolyoptError):
    """The user's own function behind a ``po.extern`` (``register_func``, or a Python
    function) raised while the built function ran it; the original error is the cause."""


class UserCodeError(InvalidArgumentError):
    """A function the user gave polyopt (a compute's ``fcompute``, an extern's
    ``fcompute``, an intrinsic's ``fimpl``, a reducer's ``fcombine``/``fidentity``)
    raised while polyopt called it: the message names the function, the original error
    is the cause (``__cause__``).  Raised by :func:`call_user`."""


def call_user(function, *args, role: str, hint: str = ""):
    """``function(*args)``, the user's own function (``role``: what it is, e.g. "the
    fcompute of extern 'E'"): a polyopt error it raises leaves as it is, any other
    becomes :class:`UserCodeError` naming the function and chained to the original.

    >>> call_user(lambda x: 1 / x, 0, role="the fcompute of compute 'B'")
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    polyopt.errors.UserCodeError: the fcompute of compute 'B' (<lambda>, ...) raised ZeroDivisionError: division by zero; fix that function (the chained error shows where it failed)
    """
    try:
        return function(*args)
    except (PolyoptError, MemoryError, KeyboardInterrupt, RecursionError):
        raise  # RecursionError: the public guard retries deep programs on a deep stack
    except Exception as err:
        raise UserCodeError(
            f"{role} ({function_label(function)}) raised {type(err).__name__}: {err}; "
            f"{hint or 'fix that function (the chained error shows where it failed)'}"
        ) from err


def function_label(function) -> str:
    """``name, file:line`` of a Python function (its name alone for other callables)."""
    name = getattr(function, "__qualname__", None) or type(function).__name__
    code = getattr(function, "__code__", None)
    if code is None:
        return name
    return f"{name}, {os.path.basename(code.co_filename)}:{code.co_firstlineno}"


class UserProgramCrashError(PolyoptError):
    """The user's own program, run as written (gcc's build of a C file, for a check),
    was killed by a signal: undefined behaviour in it (a division by zero, ``INT_MIN /
    -1``, an access outside an array) on the inputs it was given."""


class InternalError(PolyoptError):
    """A bug in polyopt itself: please report it with the program that triggered it."""


REPORT = ("this is a bug in polyopt: please report it with the code that triggered it "
          "(the program, and the schedule's s.script())")


def public(function):
    """Mark ``function`` as public: a :class:`PolyoptError` leaves it as it is, a call
    with arguments that do not fit its signature raises :class:`InvalidArgumentError`,
    and any other exception becomes an :class:`InternalError`.

    >>> @public
    ... def halve(n: int) -> int:
    ...     return [0][n]
    >>> halve(3)
    Traceback (most recent call last):
    polyopt.errors.InternalError: halve failed inside polyopt (IndexError: list index out of range); this is a bug in polyopt: please report it with the code that triggered it (the program, and the schedule's s.script())
    >>> halve(1, 2)
    Traceback (most recent call last):
    polyopt.errors.InvalidArgumentError: halve(): too many positional arguments
    """
    name = function.__qualname__

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except PolyoptError:
            raise
        except TypeError as err:
            try:
                inspect.signature(function).bind(*args, **kwargs)
            except TypeError as mismatch:
                raise InvalidArgumentError(f"{name}(): {mismatch}") from None
            raise InternalError(f"{name} failed inside polyopt ({type(err).__name__}: "
                                f"{err}); {REPORT}") from err
        except (MemoryError, KeyboardInterrupt):
            raise
        except RecursionError as err:
            if not getattr(_DEEP, "active", False):
                return guarded_deep(*args, **kwargs)
            raise InvalidArgumentError(
                f"{name}: the program is nested too deeply for polyopt (an expression, a "
                "size or a loop nest deeper than polyopt's recursion limit, "
                f"{DEEP_RECURSION_LIMIT}, even on a {DEEP_STACK_BYTES >> 20} MiB stack); "
                "build deep sums as several computes or with po.sum over a reduce "
                "axis") from err
        except Exception as err:  # the last resort: see the module's doc
            raise InternalError(f"{name} failed inside polyopt ({type(err).__name__}: "
                                f"{err}); {REPORT}") from err

    def guarded_deep(*args, **kwargs):
        return run_deep(guarded, *args, **kwargs)

    guarded.__wrapped_public__ = True
    return guarded


# A deep program (an expression of 5,000 nested sums, a chain of 1,000 stages) makes
# polyopt's walkers recurse deeper than Python's default limit of 1,000 frames.  A
# public call that hits the limit runs again, once, on a thread with a large stack (only
# touched pages are committed) and a higher recursion limit, for that call only.
DEEP_STACK_BYTES = 1 << 30
DEEP_RECURSION_LIMIT = 200_000
_DEEP = threading.local()
_DEEP_LOCK = threading.Lock()
_DEEP_RUNNING = [0]
_LIMIT_BEFORE = [0]


@contextlib.contextmanager
def deep_recursion_limit():
    """Python's recursion limit is :data:`DEEP_RECURSION_LIMIT` within the block and as
    it was afterwards (whatever the block raised).  CPython keeps one limit per
    interpreter, so other threads see the higher limit while the block runs: the
    block is one deep call, not more.  Overlapping blocks (threads) share one raise; a
    limit the program set meanwhile is kept.

    >>> before = sys.getrecursionlimit()
    >>> with deep_recursion_limit():
    ...     sys.getrecursionlimit() == DEEP_RECURSION_LIMIT
    True
    >>> sys.getrecursionlimit() == before
    True
    """
    with _DEEP_LOCK:
        if _DEEP_RUNNING[0] == 0:
            _LIMIT_BEFORE[0] = sys.getrecursionlimit()
            sys.setrecursionlimit(max(_LIMIT_BEFORE[0], DEEP_RECURSION_LIMIT))
        _DEEP_RUNNING[0] += 1
    try:
        yield
    finally:
        with _DEEP_LOCK:
            _DEEP_RUNNING[0] -= 1
            if _DEEP_RUNNING[0] == 0 and \
                    sys.getrecursionlimit() == max(_LIMIT_BEFORE[0], DEEP_RECURSION_LIMIT):
                sys.setrecursionlimit(_LIMIT_BEFORE[0])


def run_deep(function, *args, **kwargs):
    """``function(*args, **kwargs)`` on a thread with a deep stack, under
    :func:`deep_recursion_limit`; its result, or its exception.

    >>> def depth(n):
    ...     return 0 if n == 0 else 1 + depth(n - 1)
    >>> run_deep(depth, 20_000)
    20000
    """
    outcome: list = []

    def body():
        _DEEP.active = True
        try:
            outcome.append((True, function(*args, **kwargs)))
        except BaseException as err:  # handed to the caller's thread as it is
            outcome.append((False, err))

    with deep_recursion_limit():
        with _DEEP_LOCK:
            size = threading.stack_size(DEEP_STACK_BYTES)
            try:
                thread = threading.Thread(target=body, name="polyopt-deep", daemon=True)
                thread.start()
            finally:
                threading.stack_size(size)
        thread.join()
    succeeded, value = outcome[0]
    if succeeded:
        return value
    raise value


_PUBLIC_DUNDERS = ("__call__", "__getitem__", "__str__", "__repr__")


def public_methods(cls):
    """Class decorator: :func:`public` on every method whose name has no leading
    underscore, and on ``__call__``, ``__getitem__``, ``__str__`` and ``__repr__``."""
    for attr, value in list(vars(cls).items()):
        if (not attr.startswith("_") or attr in _PUBLIC_DUNDERS) and \
                inspect.isfunction(value):
            setattr(cls, attr, public(value))
    return cls


class PolyoptWarning(UserWarning):
    """Something polyopt was asked for did not happen, though the result is correct
    (e.g. LLVM left a loop marked vectorized scalar)."""
