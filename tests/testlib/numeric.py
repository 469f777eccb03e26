"""The suite's one reference check of numbers, and the helpers of the tensor-expression
tests against NumPy (tests/te).

Comparing (every test file uses these; none defines its own comparison):

- :func:`tolerance` chooses ``(rtol, atol)`` in one place, from the dtype and whether
  the numbers must be exact: integers, booleans and ``exact=True`` (a schedule with
  ``strict_fp``, sums of small integers, the same operations in the same order) compare
  bit for bit; floats otherwise within :data:`TOLERANCES` (the rounding of a reduction
  reassociated across vector lanes or contracted into fused multiply-adds);
- :func:`mismatch` says what differs (None when nothing does), naming the worst element:
  its index, the value got and the value expected;
- :func:`assert_numbers` asserts that nothing does; :func:`assert_matches` calls a kernel
  and compares with a NumPy reference; :func:`assert_same_as_default` compares a schedule
  with the default schedule of the same program (:func:`assert_c_same_as_default` for a
  C kernel, on :func:`polyopt.frontend.c_native.arguments` values).

A test that needs a tighter (or, against another library, looser) bound than the
documented one says so with ``rtol=``/``atol=``.

>>> assert_numbers(np.float32([1, 2]), np.float32([1, 2.00001]))
>>> mismatch(np.int32([1, 2, 3]), np.int32([1, 2, 4]))
'1 of 3 elements differ (int32, exact); worst at (2,): got 3, expected 4'

Building and running (tests/te): every kernel there is built with fixed sizes and with
symbolic ones (``po.var``): ``SYMBOLIC`` parametrizes a test over both, ``extents`` gives
the sizes in either form, ``run`` builds the kernel and calls it on NumPy arrays, and
``random_arrays`` makes a module's ``rand`` from that module's own seeded generator.
"""

import numpy as np
import pytest

import polyopt as po
from polyopt.te.evaluate import evaluate
from polyopt.te.tensor import ComputeOp
from polyopt.tune.compare import TOLERANCES as LIBRARY_TOLERANCES

SYMBOLIC = pytest.mark.parametrize("symbolic", [False, True], ids=["fixed", "symbolic"])

# (rtol, atol) of floating-point results that may be rounded differently: polyopt's own
# table (the autotuner checks candidates with it), so the tests and the library agree.
TOLERANCES = LIBRARY_TOLERANCES


def tolerance(dtype, exact: bool = False) -> tuple[float, float]:
    """``(rtol, atol)`` for results of ``dtype``: ``(0, 0)`` (bit for bit) for integers,
    booleans and ``exact``, :data:`TOLERANCES` for floats (``"bfloat16"``: float32 values
    converted from bfloat16 bits, see ``polyopt.dtypes``).

    >>> tolerance("int8"), tolerance("float64", exact=True), tolerance("float32")
    ((0.0, 0.0), (0.0, 0.0), (1e-05, 1e-05))
    """
    name = "bfloat16" if str(dtype) in ("bfloat16", "bf16") else np.dtype(dtype).name
    if exact or name != "bfloat16" and np.dtype(name).kind in "iub":
        return 0.0, 0.0
    if name not in TOLERANCES:
        raise ValueError(f"no documented tolerance for {name}: give rtol= and atol=")
    return TOLERANCES[name]


def mismatch(got, expected, *, dtype=None, exact: bool = False, rtol: float | None = None,
             atol: float | None = None, name: str = "") -> str | None:
    """What differs between ``got`` and ``expected`` (None when nothing does).

    The tolerance is :func:`tolerance` of ``dtype`` (when given, ``got`` must have it;
    otherwise ``got``'s dtype) unless ``rtol``/``atol`` say otherwise.  NaN equals NaN;
    an element differs when ``|got - expected| > atol + rtol * |expected|``.  The message
    names the worst element: its index, got and expected.

    >>> mismatch([1.0, 2.0], [1.0, 2.0 + 1e-13]) is None
    True
    """
    got, expected = np.asarray(got), np.asarray(expected)
    label = f"{name}: " if name else ""
    if dtype is not None and str(dtype) not in ("bfloat16", "bf16") \
            and got.dtype != np.dtype(dtype):
        return f"{label}got dtype {got.dtype}, expected {np.dtype(dtype)}"
    if got.shape != expected.shape and expected.ndim and got.ndim:
        return f"{label}got shape {got.shape}, expected {expected.shape}"
    default = tolerance(got.dtype if dtype is None else dtype, exact)
    rtol = default[0] if rtol is None else rtol
    atol = default[1] if atol is None else atol
    got_b, expected_b = np.broadcast_arrays(got, expected)
    if got.dtype.kind in "iub" and expected.dtype.kind in "iub":  # no float rounding
        if np.array_equal(got_b, expected_b):
            return None
        error = np.abs(got_b.astype(object) - expected_b.astype(object)).astype(float)
        bound = atol + rtol * np.abs(expected_b.astype(float))
    else:
        g, e = got_b.astype(np.float64), expected_b.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(e)
        with np.errstate(invalid="ignore", over="ignore"):
            error = np.where(both_nan | (g == e), 0.0, np.abs(g - e))
        error = np.where(np.isnan(error), np.inf, error)  # one NaN, or inf - inf
        bound = atol + rtol * np.abs(np.where(np.isfinite(e), e, 0.0))
    excess = error - bound
    wrong = excess > 0
    if not wrong.any():
        return None
    worst = np.unravel_index(int(np.argmax(np.where(wrong, excess, -np.inf))), excess.shape)
    kind = "exact" if rtol == atol == 0 else f"rtol={rtol:g}, atol={atol:g}"
    return (f"{label}{int(wrong.sum())} of {wrong.size} elements differ "
            f"({got.dtype}, {kind}); worst at {tuple(int(i) for i in worst)}: "
            f"got {got_b[worst]}, expected {expected_b[worst]}")


def assert_numbers(got, expected, **tolerances) -> None:
    """Assert that :func:`mismatch` finds nothing (same keywords).  Given two dicts (the
    values of a C kernel's parameters), compares each array of ``expected`` by name."""
    if isinstance(expected, dict):
        prefix = tolerances.pop("name", "")
        prefix = f"{prefix}: " if prefix else ""
        for key, value in expected.items():
            if isinstance(value, np.ndarray):
                assert_numbers(got[key], value, name=f"{prefix}{key}", **tolerances)
        return
    message = mismatch(got, expected, **tolerances)
    if message is not None:
        raise AssertionError(message)


def _as_list(values) -> list:
    return list(values) if isinstance(values, (list, tuple)) else [values]


def _callable(kernel_or_built, build_args=None, num_threads: int = 1):
    if isinstance(kernel_or_built, po.Schedule):
        return po.build(kernel_or_built, build_args, num_threads=num_threads)
    if isinstance(kernel_or_built, po.Kernel):
        return po.build(po.create_schedule(kernel_or_built), num_threads=num_threads)
    return kernel_or_built


def assert_matches(kernel_or_built, args, reference, *, sizes: dict | None = None,
                   build_args=None, num_threads: int = 1, **tolerances) -> list:
    """Call ``kernel_or_built`` (a built kernel, a schedule or a ``po.kernel``) on
    ``args`` (NumPy arrays: inputs, then outputs, filled in place) and ``sizes`` (by
    keyword) and compare with ``reference``: the arrays expected (one or a list, for
    the last arguments), or a function called on copies of ``args`` (and ``sizes``) that
    returns them or, returning None, updates its copies in place like the kernel (then
    every argument is compared).  Returns ``args``.

    >>> f = lambda a, b: np.multiply(a, 2, out=b)
    >>> _ = assert_matches(f, [np.ones(3), np.empty(3)], lambda a, b: a * 2)
    """
    sizes = sizes or {}
    copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    _callable(kernel_or_built, build_args, num_threads)(*args, **sizes)
    expected = reference(*copies, **sizes) if callable(reference) else reference
    expected = copies if expected is None else _as_list(expected)
    got = list(args)[len(args) - len(expected):]
    for k, (g, e) in enumerate(zip(got, expected)):
        assert_numbers(g, e, name=f"argument {len(args) - len(expected) + k}", **tolerances)
    return args


def default_of(schedule):
    """The default schedule of ``schedule``'s program (as :func:`po.create_schedule`
    made it, with the same ``strict_fp``)."""
    return type(schedule)(schedule.state.original, schedule.output_tensors, schedule.default_args,
                          strict_fp=schedule.strict_fp)


def assert_same_as_default(schedule, args, *, sizes: dict | None = None, build_args=None,
                           num_threads: int = 1, exact: bool | None = None,
                           **tolerances) -> list:
    """Build ``schedule`` and the default schedule of its program, call both on copies
    of ``args`` (and ``sizes`` by keyword) and compare every argument: bit for bit when
    ``exact`` (by default: when the schedule keeps reductions in order, ``strict_fp``),
    else within :func:`tolerance`.  Returns the arguments as ``schedule`` left them.

    >>> A = po.placeholder((4,), name="A"); B = po.compute((4,), lambda i: A[i] + 1)
    >>> s = po.create_schedule(B); _ = s[B].split(B.op.axis[0], factor=2)
    >>> _ = assert_same_as_default(s, [np.ones(4, "float32"), np.empty(4, "float32")],
    ...                            build_args=[A, B])
    """
    sizes = sizes or {}
    exact = schedule.strict_fp if exact is None else exact
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    po.build(schedule, build_args, num_threads=num_threads)(*got, **sizes)
    po.build(default_of(schedule), build_args)(*expected, **sizes)
    for k, (g, e) in enumerate(zip(got, expected)):
        if isinstance(g, np.ndarray):
            assert_numbers(g, e, exact=exact, name=f"argument {k}", **tolerances)
    return got


def assert_c_same_as_default(kernel, schedule, sizes: dict, *, seed: int = 0, arrays=None,
                             prepare=None, num_threads: int = 1, exact: bool = False,
                             **tolerances) -> dict:
    """The C kernel's default schedule and ``schedule`` on the same random values
    (``arguments(kernel, sizes, seed)``, changed in place by ``prepare(values)`` if
    given) compute the same ``arrays`` (by default every array parameter).  Floats may
    differ within :func:`tolerance` (C kernels contract products into fused multiply-adds
    and reassociate sums) unless ``exact``.  Returns the values ``schedule`` computed."""
    from polyopt.frontend.c_native import arguments, call_polyopt

    expected, actual = arguments(kernel, sizes, seed=seed), arguments(kernel, sizes, seed=seed)
    if prepare is not None:
        prepare(expected)
        prepare(actual)
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), expected)
    call_polyopt(kernel, po.build(schedule, num_threads=num_threads), actual)
    if arrays is None:
        arrays = [p.name for p in kernel.c_params if p.kind == "array"]
    for name in arrays:
        assert_numbers(actual[name], expected[name], exact=exact, name=name, **tolerances)
    return actual


# -- tensor expressions on NumPy arrays (tests/te) ----------------------------------------

def extents(symbolic: bool, **sizes):
    """The sizes as po.var (bound from the arrays at call time) or as fixed integers."""
    return [po.var(name) if symbolic else value for name, value in sizes.items()]


def run(args, inputs, **sizes):
    """Build ``args`` (inputs first, then outputs), call the kernel on ``inputs`` and
    return the outputs, which start filled with a sentinel so unwritten elements show."""
    outputs = [t for t in args if isinstance(t.op, ComputeOp)]
    kernel = po.build(po.create_schedule(outputs), args, target="llvm")
    results = [np.full(tuple(evaluate(e, sizes) for e in t.shape),
                       np.nan if t.dtype.startswith("float") else 99, dtype=t.dtype)
               for t in outputs]
    kernel(*inputs, *results)
    return results[0] if len(results) == 1 else results


def random_arrays(rng: np.random.Generator):
    """``rand(*shape, dtype="float32")``: standard-normal arrays drawn from ``rng``, so that
    each test module keeps its own reproducible stream."""
    def rand(*shape, dtype="float32"):
        return rng.standard_normal(shape).astype(dtype)
    return rand
