"""Checks shared by the property worker and the reproducer scripts it writes.

The text of this module is pasted at the top of every reproducer, so it imports only
NumPy and polyopt.  A case ends with one outcome: ``ok-accepted``, ``ok-refused`` or a
defect (``crash``, ``internal``, ``wrong``, ``replay``, ``accepted-illegal``,
``oracle``, ``bad-refusal``, ``accepted-bad``; the parent adds ``signal`` and ``timeout``).

>>> classify(po.IllegalScheduleError("x"))
'ok-refused'
>>> classify(KeyError("x"))
'crash'
"""

import traceback

import numpy as np
import polyopt as po


class Defect(Exception):
    """A broken promise found by a check: ``kind`` is the outcome class."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def classify(error):
    """The outcome class of an exception that left polyopt."""
    if isinstance(error, Defect):
        return error.kind
    if isinstance(error, po.InternalError):
        return "internal"
    if isinstance(error, po.PolyoptError):
        return "ok-refused"
    return "crash"


def describe(error):
    """One line for an outcome, plus the innermost frames for crashes."""
    text = f"{type(error).__name__}: {str(error)[:400]}"
    if classify(error) in ("crash", "internal"):
        frames = traceback.extract_tb(error.__traceback__)[-4:]
        text += " @ " + " <- ".join(f"{f.filename.rsplit('/', 2)[-1]}:{f.lineno} {f.name}"
                                     for f in reversed(frames))
    return text


ATTEMPTS = []


def attempt(s, call, unchecked=None):
    """Run one primitive ``call()`` on schedule ``s``: True if accepted, False if refused
    with a PolyoptError (which must leave ``s`` as it was); anything else propagates.
    A refusal that is not an IllegalScheduleError must not be about legality:
    ``unchecked(copy)``, the same call with ``check=False`` on a copy of ``s``, must be
    refused too (else the refusal was the legality check's, under the wrong class)."""
    program, count = s.program, len(s.steps)
    ATTEMPTS.append(call)
    try:
        call()
        if getattr(s, "deferred", None):  # a compute_at waiting for another reader
            if s.program is not program or len(s.steps) != count:  # (TVM's order): it
                raise Defect("crash", "a deferred compute_at changed the schedule")
            s.deferred.clear()  # changed nothing; these cases take it as refused
            return False
        return True
    except po.PolyoptError as error:
        if isinstance(error, po.InternalError):
            raise
        if s.program is not program or len(s.steps) != count:
            raise Defect("crash", f"a refused primitive changed the schedule: {error}") from error
        if unchecked is not None and not isinstance(error, po.IllegalScheduleError):
            copy = _copy(s)
            try:
                unchecked(copy)
            except po.PolyoptError:
                return False
            if not copy.is_legal():
                raise Defect("refusal-class", f"refused with {type(error).__name__} ({error}); "
                             "with check=False it applies and the schedule is illegal: "
                             "an illegal schedule must raise IllegalScheduleError") from error
        return False


def _copy(s):
    """An independent copy of schedule ``s`` (its state is a value)."""
    return s.fork()


def finish(s):
    """The last checks of a case, on the program's globals ``fresh()`` (a default
    schedule), ``ARGS``, ``SIZES`` and ``run(schedule, sizes) -> (outputs, twin's)``:
    ``s`` passes ``s.check()`` and replays from ``s.script()``; on every size the
    default schedule computes the twin's numbers, and ``s`` the default's bit for bit.
    The exception is the floating-point promise's: a reduction's combining operator may
    be reassociated (``rfactor``; LLVM's ``reassoc contract nsz`` on accumulations), so
    float programs with a reduction (``REDUCTIONS``) are compared within rounding;
    integer results are always compared exactly."""
    try:
        s.check()
    except po.PolyoptError as error:
        raise Defect("accepted-illegal", f"s.check() after accepted steps: {error}") from error
    again = fresh()
    try:
        again.replay(s.script())
        same = str(po.lower(again, ARGS)) == str(po.lower(s, ARGS))
    except po.PolyoptError as error:
        raise Defect("replay", f"replaying s.script() raised {type(error).__name__}: {error}") \
            from error
    if not same:
        raise Defect("replay", "s.script() replayed on a fresh schedule lowers differently")
    default = fresh()
    outcome = "ok-refused" if ATTEMPTS and not s.steps else "ok-accepted"
    for sizes in SIZES:
        got_default, twin = run(default, sizes)
        assert_numbers(twin, got_default, f"default schedule vs twin at {sizes}",
                       mode="close" if REDUCTIONS else "values")
        try:
            got, _ = run(s, sizes)
        except po.PolyoptError as error:
            if isinstance(error, po.InternalError):
                raise
            return f"ok-refused at build: {type(error).__name__}: {str(error)[:200]}"
        assert_numbers(got_default, got, f"schedule vs default at {sizes}",
                       mode="close" if REDUCTIONS or "rfactor" in s.script() else "bits")
    return outcome


def same_bits(expected, actual):
    """Bit-identical arrays (NaN payloads and signed zeros included)."""
    expected, actual = np.asarray(expected), np.asarray(actual)
    return (expected.shape == actual.shape and expected.dtype == actual.dtype
            and expected.tobytes() == actual.tobytes())


def assert_numbers(expected, actual, what, *, mode="bits"):
    """``actual`` equals ``expected``: bit for bit (``"bits"``), as values (``"values"``:
    -0.0 == 0.0, for the twin, whose Python arithmetic may round a zero's sign
    differently from polyopt's simplified expressions) or within rounding
    (``"close"``: a reassociated reduction).  Integers are always compared exactly."""
    for k, (e, a) in enumerate(zip(expected, actual)):
        if e.shape != a.shape or e.dtype != a.dtype:
            raise Defect("wrong", f"{what}: output {k} is {a.dtype}{a.shape}, "
                         f"expected {e.dtype}{e.shape}")
        if mode == "bits" or e.dtype.kind in "iu":
            ok = same_bits(e, a)
        elif mode == "values":
            ok = np.array_equal(e, a, equal_nan=True)
        else:
            ok = np.allclose(e, a, rtol=1e-4, atol=1e-4, equal_nan=True)
        if not ok:
            bad = [tuple(int(x) for x in idx) for idx in np.ndindex(e.shape)
                   if not same_bits(e[idx], a[idx])][:3]
            raise Defect("wrong", f"{what}: output {k} differs ({mode} expected) at "
                         + ", ".join(f"{idx}: expected {e[idx]!r}, got {a[idx]!r}"
                                     for idx in bad))


def outcome_line(error):
    """The OUTCOME text of a case that raised ``error``."""
    if classify(error) in ("crash", "internal"):
        traceback.print_exception(error)
    return f"{classify(error)} {describe(error)}"


def expect(call, mode="either", check=None):
    """Call a public entry point with a bad input: a PolyoptError (not InternalError) is
    the right answer; acceptance is a defect in ``mode="refuse"``, and is checked with
    ``check(result)`` (which raises :class:`Defect`) otherwise."""
    try:
        result = call()
    except po.PolyoptError as error:
        if isinstance(error, po.InternalError):
            raise
        return f"ok-refused {type(error).__name__}: {str(error)[:200]}"
    if mode == "refuse":
        raise Defect("accepted-bad", f"accepted a bad input (returned {result!r:.200})")
    if check is not None:
        check(result)
    return "ok-accepted"
