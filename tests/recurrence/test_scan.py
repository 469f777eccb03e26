"""po.scan: recurrences over a time axis (TVM-classic ``po.scan(init, update, state)``).

Numbers against plain Python loops on small and odd sizes (including 0 and 1 steps and
width 1), with symbolic and fixed sizes; the exact dependences against hand-written isl
maps; the time axis refused by ``parallel`` (the message names the dependence) while the
other axes are accepted; legal skewed, tiled and wavefront schedules of stencil scans
(heat-1D, heat-2D, a two-state cell) giving the same numbers as the default schedule;
and the errors of ``po.scan`` itself.
"""

import re

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.errors import IllegalScheduleError, InvalidArgumentError, OutOfBoundsError

from testlib.errors import pair, refused
from testlib.numeric import assert_numbers, assert_same_as_default

RNG = np.random.default_rng(2024)
F64 = "float64"
# (steps, width): no step, one step, width 1, odd sizes
SIZES = [(0, 3), (1, 1), (1, 4), (2, 1), (3, 2), (6, 5), (9, 7)]
# against the plain Python loops: tighter than the documented float64 bound; against the
# default schedule: bit for bit (assert_same_as_default(..., exact=True))
TIGHT = dict(rtol=1e-13, atol=1e-13)


def _fresh(*shape):
    """An output buffer filled with NaN, so that an element the kernel misses shows."""
    return np.full(shape, np.nan)


def _run(s, args, inputs, *out_shapes):
    outs = [_fresh(*shape) for shape in out_shapes]
    po.build(s, args)(*inputs, *outs)
    return outs[0] if len(outs) == 1 else outs


def _deps_equal(s, source, sink, expected, kind=None):
    """The dependences from ``source`` to ``sink`` are exactly the isl map ``expected``."""
    got = po.deps(s).between(source, sink, kind)
    want = isl.UnionMap(expected)
    assert got.is_equal(want), f"{source} -> {sink}:\n  got  {got}\n  want {want}"


def _parallel_refused(s, stage, axis, names):
    """``parallel`` of the time axis is refused, naming a concrete dependence pair."""
    with pytest.raises(IllegalScheduleError) as info:
        s[stage].parallel(axis)
    message = str(info.value)
    assert re.search(rf"loop '{axis}' carries a dependence between its iterations", message)
    inst = rf"(?:{names})\[t=\d+, [a-z]=\d+(?:, [a-z]=\d+)?\]"
    assert re.search(rf"{inst} writes \w+\[[-\d, ]+\] that {inst} reads", message), message
    assert re.search(rf"\[flow dependence (?:{names}) -> (?:{names}) through", message), message
    assert info.value.violation is not None
    assert info.value.violation.dependence.kind == "flow"


def _suggested_skew(err, distance, repair):
    """A refusal states the distance of the broken pairs and the skew that makes it
    non-negative where it suggests one (when the broken pairs share one distance)."""
    assert type(err) is po.DependenceViolationError, type(err)
    if err.repair is not None or err.violation.distance is not None:
        assert err.violation.distance == distance, err
        assert err.repair.startswith(repair), err


def _pragma_before(text, loop_var):
    """Whether the loop over ``loop_var`` is preceded by ``#pragma parallel``."""
    lines = text.splitlines()
    return any(line.strip() == "#pragma parallel"
               and lines[k + 1].strip().startswith(f"for ({loop_var} =")
               for k, line in enumerate(lines[:-1]))


# -- cumulative sum ------------------------------------------------------------------------

def _cumsum(m, n):
    X = po.placeholder((m, n), name="X", dtype=F64)
    state = po.placeholder((m, n), name="state", dtype=F64)
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    return X, po.scan(init, update, state, inputs=[X], name="Y")


def _cumsum_ref(x):
    y = np.empty_like(x)
    for t in range(x.shape[0]):
        y[t] = x[t] if t == 0 else y[t - 1] + x[t]
    return y


@pytest.mark.parametrize("m, n", SIZES)
def test_cumulative_sum_symbolic_sizes(m, n):
    X, Y = _cumsum(po.var("m"), po.var("n"))
    x = RNG.random((m, n))
    got = _run(po.create_schedule(Y), [X, Y], [x], (m, n))
    assert_numbers(got, _cumsum_ref(x), **TIGHT)
    assert_numbers(got, np.cumsum(x, axis=0), **TIGHT)


def test_cumulative_sum_fixed_sizes_and_loops():
    X, Y = _cumsum(5, 7)
    s = po.create_schedule(Y)
    assert [st.name for st in s.stages] == ["Y_init", "Y"]
    assert [a.name for a in s["Y"].axes] == ["t", "i"]
    text = str(po.lower(s, [X, Y]))
    assert "for (t = 1; t < 5; t += 1)" in text
    assert "Y[t, i] = Y[t - 1, i] + X[t, i];" in text
    assert "Y[0, i] = X[0, i];" in text
    x = RNG.random((5, 7))
    assert_numbers(_run(s, [X, Y], [x], (5, 7)), _cumsum_ref(x), **TIGHT)


def test_cumulative_sum_of_one_dimensional_integers_with_the_time_index():
    """``Y[t] = Y[t - 1] + t * X[t]`` in int32: exact."""
    m = po.var("m")
    X = po.placeholder((m,), name="X", dtype="int32")
    state = po.placeholder((m,), name="state", dtype="int32")
    Y = po.scan(po.compute((1,), lambda _: X[0], name="init"),
                po.compute((m,), lambda t: state[t - 1] + X[t] * t, name="update"),
                state, name="acc")
    f = po.build(po.create_schedule(Y), [X, Y])
    for steps in (1, 2, 7):
        x = RNG.integers(-9, 10, steps).astype("int32")
        y = np.full(steps, -999, "int32")
        f(x, y)
        expected = [int(x[0])]
        for t in range(1, steps):
            expected.append(expected[-1] + t * int(x[t]))
        np.testing.assert_array_equal(y, expected)


def test_cumulative_sum_dependences_are_exact():
    X, Y = _cumsum(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    _deps_equal(s, "Y", "Y", "[m, n] -> { Y[t, i] -> Y[t + 1, i] : 0 < t <= m - 2 and 0 <= i < n }")
    _deps_equal(s, "Y_init", "Y", "[m, n] -> { Y_init[0, i] -> Y[1, i] : m >= 2 and 0 <= i < n }")
    deps = po.deps(s)
    # every element is written once: no anti or output dependence
    assert deps.anti == () and deps.output == ()
    assert [(d.source, d.sink) for d in deps.flow] == [("Y", "Y"), ("Y_init", "Y")]


def test_cumulative_sum_time_axis_is_refused_by_parallel_and_the_other_is_accepted():
    X, Y = _cumsum(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    _parallel_refused(s, Y, "t", "Y")
    assert not s[Y].can_parallel("t")
    assert s[Y].can_parallel("i") and s["Y_init"].can_parallel("i")
    assert s[Y].parallel("i").kind == "parallel"
    s["Y_init"].parallel("i")
    text = str(po.lower(s, [X, Y]))
    assert text.count("#pragma parallel") == 2 and _pragma_before(text, "i")
    assert not _pragma_before(text, "t")
    x = RNG.random((6, 5))
    assert_numbers(_run(s, [X, Y], [x], (6, 5)), _cumsum_ref(x), **TIGHT)


def test_symbolic_extents_written_twice_are_the_same_size():
    """``m + 1`` in the state and in the update are two expressions of one size."""
    m, n = po.var("m"), po.var("n")
    X = po.placeholder((m + 1, 2 * n), name="X", dtype=F64)
    state = po.placeholder((m + 1, 2 * n), name="state", dtype=F64)
    Y = po.scan(po.compute((1, 2 * n), lambda _, i: X[0, i], name="init"),
                po.compute((m + 1, n + n), lambda t, i: state[t - 1, i] + X[t, i], name="up"),
                state, name="Y")
    x = RNG.random((4, 6))
    assert_numbers(_run(po.create_schedule(Y), [X, Y], [x], (4, 6)), _cumsum_ref(x), **TIGHT)


# -- two states ----------------------------------------------------------------------------

def _cell(m, n):
    """An RNN-like cell with two states: ``c`` and ``h`` each read both states of the
    previous step, ``h`` its right neighbour in ``c`` and ``c`` its left one in ``h``."""
    X = po.placeholder((m, n), name="X", dtype=F64)
    W = po.placeholder((n,), name="W", dtype=F64)
    h_s = po.placeholder((m, n), name="h_s", dtype=F64)
    c_s = po.placeholder((m, n), name="c_s", dtype=F64)
    h0 = po.compute((1, n), lambda _, i: X[0, i] * 0.5, name="h0")
    c0 = po.compute((1, n), lambda _, i: X[0, i] * 0.0 + 1.0, name="c0")
    h_up = po.compute((m, n), lambda t, i: po.tanh(po.if_then_else(i < n - 1, c_s[t - 1, i + 1],
                                                                     0.0)) * W[i]
                      + h_s[t - 1, i] * 0.5, name="h_up")
    c_up = po.compute((m, n), lambda t, i: c_s[t - 1, i] * 0.9
                      + po.if_then_else(i > 0, h_s[t - 1, i - 1], 0.0) + X[t, i], name="c_up")
    H, C = po.scan([h0, c0], [h_up, c_up], [h_s, c_s], inputs=[X, W], name="cell")
    return X, W, H, C


def _cell_ref(x, w):
    m, n = x.shape
    h, c = np.empty((m, n)), np.empty((m, n))
    for t in range(m):
        for i in range(n):
            if t == 0:
                h[t, i], c[t, i] = x[0, i] * 0.5, 1.0
                continue
            right = c[t - 1, i + 1] if i < n - 1 else 0.0
            h[t, i] = np.tanh(right) * w[i] + h[t - 1, i] * 0.5
            c[t, i] = c[t - 1, i] * 0.9 + (h[t - 1, i - 1] if i > 0 else 0.0) + x[t, i]
    return h, c


@pytest.fixture
def scalar_math(monkeypatch):
    """libm's scalar ``tanh`` in every kernel: where LLVM vectorizes a loop, libmvec's
    vector ``tanh`` (within its 4 ULP of libm, not bit-equal) replaces it, and which loops
    it vectorizes depends on the schedule and the CPU (with AVX2 the default schedule's
    and a parallel one's differed by 1 ULP): the schedules' own arithmetic is compared."""
    from polyopt.target.llvm import vecmath

    monkeypatch.setenv("POLYOPT_NO_LIBMVEC", "1")
    vecmath._libmvec.cache_clear()
    vecmath.host_variants.cache_clear()
    yield
    vecmath._libmvec.cache_clear()  # (the variable is restored after this)
    vecmath.host_variants.cache_clear()


def _check_cell(s, X, W, H, C, sizes=SIZES):
    for m, n in sizes:
        x, w = RNG.random((m, n)), RNG.random(n)
        *_, h, c = assert_same_as_default(s, [x, w, _fresh(m, n), _fresh(m, n)],
                                          build_args=[X, W, H, C], exact=True)
        eh, ec = _cell_ref(x, w)
        assert_numbers(h, eh, **TIGHT)
        assert_numbers(c, ec, **TIGHT)


def test_two_state_cell_numbers_and_fused_time_loop():
    X, W, H, C = _cell(po.var("m"), po.var("n"))
    s = po.create_schedule([H, C])
    assert (H.name, C.name) == ("cell_0", "cell_1")
    text = str(po.lower(s, [X, W, H, C]))
    # one time loop runs both updates
    assert text.count("for (t = 1; t < m; t += 1)") == 1
    _check_cell(s, X, W, H, C)


def test_two_state_cell_dependences_are_exact():
    X, W, H, C = _cell(po.var("m"), po.var("n"))
    s = po.create_schedule([H, C])
    steps = "0 < t <= m - 2"
    _deps_equal(s, "cell_0", "cell_0",
                f"[m, n] -> {{ cell_0[t, i] -> cell_0[t + 1, i] : {steps} and 0 <= i < n }}")
    _deps_equal(s, "cell_1", "cell_1",
                f"[m, n] -> {{ cell_1[t, i] -> cell_1[t + 1, i] : {steps} and 0 <= i < n }}")
    # h reads c's right neighbour, c reads h's left one
    _deps_equal(s, "cell_1", "cell_0",
                f"[m, n] -> {{ cell_1[t, i] -> cell_0[t + 1, i - 1] : {steps} and 0 < i < n }}")
    _deps_equal(s, "cell_0", "cell_1",
                f"[m, n] -> {{ cell_0[t, i] -> cell_1[t + 1, i + 1] : {steps} and "
                "0 <= i < n - 1 }")
    _deps_equal(s, "cell_0_init", "cell_1",
                "[m, n] -> { cell_0_init[0, i] -> cell_1[1, i + 1] : m >= 2 and 0 <= i < n - 1 }")
    _deps_equal(s, "cell_1_init", "cell_0",
                "[m, n] -> { cell_1_init[0, i] -> cell_0[1, i - 1] : m >= 2 and 0 < i < n }")
    assert po.deps(s).anti == () and po.deps(s).output == ()


def test_two_state_cell_time_axis_refused_other_axes_parallel(scalar_math):
    X, W, H, C = _cell(po.var("m"), po.var("n"))
    s = po.create_schedule([H, C])
    _parallel_refused(s, H, "t", "cell_0|cell_1")
    s[H].parallel("i")
    s[C].parallel("i")
    text = str(po.lower(s, [X, W, H, C]))
    assert text.count("#pragma parallel") == 2 and not _pragma_before(text, "t")
    _check_cell(s, X, W, H, C, sizes=[(1, 1), (6, 5)])


def test_two_state_cell_fused_skewed_and_time_tiled(scalar_math):
    """Both updates in one (t, i) nest; the distances (1, 1) and (1, -1) between the
    states need a skew before the (t, i) band can be tiled."""
    X, W, H, C = _cell(po.var("m"), po.var("n"))
    s = po.create_schedule([H, C])
    s[C].compute_with(H, "i")
    err = refused(po.DependenceViolationError, lambda: s[H].tile("t", "i", 2, 3))
    assert re.fullmatch(r"cell_[01]\[t=\d+, i=\d+\]", err.violation.source)
    s[H].skew("t", "i", 1)
    s[H].tile("t", "i", 2, 3)
    assert [a.name for a in s[C].axes] == ["t.outer", "i.outer", "t.inner", "i.inner"]
    _check_cell(s, X, W, H, C)


def test_two_state_cell_wavefront(scalar_math):
    X, W, H, C = _cell(po.var("m"), po.var("n"))
    s = po.create_schedule([H, C])
    s[C].compute_with(H, "i")
    s[H].skew("t", "i", 1)
    wave = s[H].wavefront("t", "i")
    axes = s[H].axes
    assert axes[0].name == wave.name and axes[0].kind != "parallel"
    assert [a.kind for a in axes[1:]] == ["parallel"]
    assert "#pragma parallel" in str(po.lower(s, [X, W, H, C]))
    _check_cell(s, X, W, H, C)


# -- neighbours of the previous step -------------------------------------------------------

def _neighbours(m, n):
    X = po.placeholder((m, n), name="X", dtype=F64)
    state = po.placeholder((m, n), name="state", dtype=F64)
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: po.if_then_else(i > 0, state[t - 1, i - 1], 0.0)
                        + po.if_then_else(i < n - 1, state[t - 1, i + 1], 0.0) + X[t, i],
                        name="update")
    return X, po.scan(init, update, state, inputs=[X], name="Y")


def _neighbours_ref(x):
    m, n = x.shape
    y = np.empty_like(x)
    for t in range(m):
        for i in range(n):
            if t == 0:
                y[t, i] = x[t, i]
            else:
                y[t, i] = ((y[t - 1, i - 1] if i > 0 else 0.0)
                           + (y[t - 1, i + 1] if i < n - 1 else 0.0) + x[t, i])
    return y


def _check_neighbours(s, X, Y, sizes=SIZES):
    for m, n in sizes:
        x = RNG.random((m, n))
        _, y = assert_same_as_default(s, [x, _fresh(m, n)], build_args=[X, Y], exact=True)
        assert_numbers(y, _neighbours_ref(x), **TIGHT)


def test_neighbours_of_the_previous_step_numbers():
    X, Y = _neighbours(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    text = str(po.lower(s, [X, Y]))
    assert "(i > 0 ? Y[t - 1, i - 1] : 0.0)" in text
    _check_neighbours(s, X, Y)


def test_neighbours_dependences_are_exact_with_the_guards():
    """The guards remove the reads outside the state: no element is read at i = -1 or n."""
    X, Y = _neighbours(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    _deps_equal(s, "Y", "Y", "[m, n] -> { Y[t, i] -> Y[t + 1, j] : 0 < t <= m - 2 and "
                "0 <= i < n and 0 <= j < n and (j = i + 1 or j = i - 1) }")
    _deps_equal(s, "Y_init", "Y", "[m, n] -> { Y_init[0, i] -> Y[1, j] : m >= 2 and "
                "0 <= i < n and 0 <= j < n and (j = i + 1 or j = i - 1) }")


def test_neighbours_rectangular_tile_refused_with_skew_repair_then_skewed_tiles():
    X, Y = _neighbours(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    err = refused(po.DependenceViolationError, lambda: s[Y].tile("t", "i", 2, 3))
    assert re.fullmatch(r"Y\[t=\d+, i=\d+\] Y\[t=\d+, i=\d+\] Y\[\d+, \d+\]",
                        " ".join(pair(err))), pair(err)
    assert err.violation.dependence.kind == "flow"
    _suggested_skew(err, (1, -1), "skew i by t with factor 1 first")
    assert s[Y].axes == po.create_schedule(Y)[Y].axes  # nothing changed
    s[Y].skew("t", "i", 1)
    to, io, ti, ii = s[Y].tile("t", "i", 2, 3)
    assert [a.name for a in (to, io, ti, ii)] == ["t.outer", "i.outer", "t.inner", "i.inner"]
    _check_neighbours(s, X, Y)


# -- an init of several steps --------------------------------------------------------------

def _two_step(m, n):
    """``Y[t] = Y[t - 1] + Y[t - 2] + X[t]`` after an init of two steps."""
    X = po.placeholder((m, n), name="X", dtype=F64)
    state = po.placeholder((m, n), name="state", dtype=F64)
    init = po.compute((2, n), lambda t, i: X[t, i] * 2.0, name="init")
    update = po.compute((m, n), lambda t, i: state[t - 1, i] + state[t - 2, i] + X[t, i],
                        name="update")
    return X, po.scan(init, update, state, inputs=[X], name="fib")


def _two_step_ref(x):
    y = np.empty_like(x)
    for t in range(x.shape[0]):
        y[t] = x[t] * 2.0 if t < 2 else y[t - 1] + y[t - 2] + x[t]
    return y


@pytest.mark.parametrize("m, n", SIZES + [(2, 3)])
def test_init_of_two_steps_numbers(m, n):
    X, Y = _two_step(po.var("m"), po.var("n"))
    x = RNG.random((m, n))
    assert_numbers(_run(po.create_schedule(Y), [X, Y], [x], (m, n)), _two_step_ref(x), **TIGHT)


def test_init_of_two_steps_domains_and_dependences():
    X, Y = _two_step(po.var("m"), po.var("n"))
    s = po.create_schedule(Y)
    program = s.program
    # the init stops at the scan's length (m = 1 runs one init step), the update starts at 2
    assert program.statement("fib_init").domain.is_equal(
        isl.Set("[m, n] -> { fib_init[t, i] : 0 <= t <= 1 and t < m and 0 <= i < n }"))
    assert program.statement("fib").domain.is_equal(
        isl.Set("[m, n] -> { fib[t, i] : 2 <= t < m and 0 <= i < n }"))
    _deps_equal(s, "fib_init", "fib", "[m, n] -> { fib_init[t, i] -> fib[u, i] : "
                "0 <= t <= 1 and 2 <= u <= t + 2 and u < m and 0 <= i < n }")
    _deps_equal(s, "fib", "fib", "[m, n] -> { fib[t, i] -> fib[u, i] : "
                "2 <= t and t + 1 <= u <= t + 2 and u < m and 0 <= i < n }")
    _parallel_refused(s, Y, "t", "fib")
    s[Y].parallel("i")
    x = RNG.random((7, 3))
    assert_numbers(_run(s, [X, Y], [x], (7, 3)), _two_step_ref(x), **TIGHT)


# -- a scan between two computes -----------------------------------------------------------

def _pipeline(m, n):
    """``X = 3A + 1`` feeds the scan, ``Z = Y - X`` reads it."""
    A = po.placeholder((m, n), name="A", dtype=F64)
    X = po.compute((m, n), lambda t, i: A[t, i] * 3.0 + 1.0, name="X")
    state = po.placeholder((m, n), name="state", dtype=F64)
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: state[t - 1, i] * 0.5
                        + po.if_then_else(i > 0, state[t - 1, i - 1], 0.0) + X[t, i],
                        name="update")
    Y = po.scan(init, update, state, inputs=[X], name="Y")
    Z = po.compute((m, n), lambda t, i: Y[t, i] - X[t, i], name="Z")
    return A, X, Y, Z


def _pipeline_ref(a):
    m, n = a.shape
    x = a * 3.0 + 1.0
    y = np.empty_like(a)
    for t in range(m):
        for i in range(n):
            if t == 0:
                y[t, i] = x[t, i]
            else:
                y[t, i] = y[t - 1, i] * 0.5 + (y[t - 1, i - 1] if i > 0 else 0.0) + x[t, i]
    return y - x


def _check_pipeline(s, A, Z, sizes=SIZES):
    for m, n in sizes:
        a = RNG.random((m, n))
        assert_numbers(_run(s, [A, Z], [a], (m, n)), _pipeline_ref(a), **TIGHT)


def test_scan_fed_by_a_compute_and_read_by_another():
    A, X, Y, Z = _pipeline(po.var("m"), po.var("n"))
    s = po.create_schedule(Z)
    assert [st.name for st in s.stages] == ["X", "Y_init", "Y", "Z"]
    text = str(po.lower(s, [A, Z]))
    assert "float64 X[m][n];  // allocated by the kernel" in text
    assert "float64 Y[m][n];  // allocated by the kernel" in text
    _check_pipeline(s, A, Z)


def test_scan_between_computes_dependences_are_exact():
    A, X, Y, Z = _pipeline(po.var("m"), po.var("n"))
    s = po.create_schedule(Z)
    _deps_equal(s, "X", "Y_init", "[m, n] -> { X[0, i] -> Y_init[0, i] : m > 0 and 0 <= i < n }")
    _deps_equal(s, "X", "Y", "[m, n] -> { X[t, i] -> Y[t, i] : 0 < t < m and 0 <= i < n }")
    _deps_equal(s, "X", "Z", "[m, n] -> { X[t, i] -> Z[t, i] : 0 <= t < m and 0 <= i < n }")
    _deps_equal(s, "Y_init", "Z", "[m, n] -> { Y_init[0, i] -> Z[0, i] : m > 0 and 0 <= i < n }")
    _deps_equal(s, "Y", "Z", "[m, n] -> { Y[t, i] -> Z[t, i] : 0 < t < m and 0 <= i < n }")
    _deps_equal(s, "Y", "Y", "[m, n] -> { Y[t, i] -> Y[t + 1, j] : 0 < t <= m - 2 and "
                "0 <= i < n and (j = i or j = i + 1) and j < n }")
    assert po.deps(s).between("Z", "Y").is_empty()


def test_scan_between_computes_only_the_scan_time_axis_is_sequential():
    A, X, Y, Z = _pipeline(po.var("m"), po.var("n"))
    s = po.create_schedule(Z)
    _parallel_refused(s, Y, "t", "Y")
    for stage, axis in ((X, "t"), (X, "i"), (Y, "i"), (Z, "t"), (Z, "i")):
        assert s[stage].can_parallel(axis), (stage, axis)
    s[X].parallel("t")
    s[Y].parallel("i")
    s[Z].parallel("t")
    assert str(po.lower(s, [A, Z])).count("#pragma parallel") == 3
    _check_pipeline(s, A, Z, sizes=[(1, 1), (6, 5)])


def test_scan_between_computes_fused_and_inlined():
    A, X, Y, Z = _pipeline(po.var("m"), po.var("n"))
    s = po.create_schedule(Z)
    s[Z].compute_with(Y, "t")  # Z[t] right after Y[t], in the scan's time loop
    s[X].compute_inline()
    text = str(po.lower(s, [A, Z]))
    assert "X[" not in text and text.count("for (t = ") == 1
    _check_pipeline(s, A, Z)
    # the scan's time loop cannot move before the init it reads
    s2 = po.create_schedule(Z)
    err = refused(po.DependenceViolationError, lambda: s2[Y].compute_with(X, "t"))
    assert re.fullmatch(r"Y_init\[_=0, i=\d+\]", err.violation.source)
    assert re.fullmatch(r"Y\[0, \d+\]", err.violation.element)


def test_scan_read_by_a_scan_fused_into_its_time_loop():
    m, n = po.var("m"), po.var("n")
    A = po.placeholder((m, n), name="A", dtype=F64)
    s1 = po.placeholder((m, n), name="s1", dtype=F64)
    s2 = po.placeholder((m, n), name="s2", dtype=F64)
    Y1 = po.scan(po.compute((1, n), lambda _, i: A[0, i], name="i1"),
                 po.compute((m, n), lambda t, i: s1[t - 1, i] * 0.5 + A[t, i], name="u1"),
                 s1, name="Y1")
    Y2 = po.scan(po.compute((1, n), lambda _, i: Y1[0, i] * 2.0, name="i2"),
                 po.compute((m, n), lambda t, i: s2[t - 1, i] + Y1[t, i], name="u2"),
                 s2, name="Y2")
    s = po.create_schedule(Y2)
    err = refused(po.DependenceViolationError, lambda: s["Y2"].compute_with("Y1", "t"))
    assert re.fullmatch(r"Y2_init\[_=0, i=\d+\]", err.violation.source)
    assert re.fullmatch(r"Y2\[0, \d+\]", err.violation.element)
    s["Y2_init"].compute_with("Y1_init", "i")
    s["Y2"].compute_with("Y1", "i")
    text = str(po.lower(s, [A, Y2]))
    assert text.count("for (t = ") == 1 and text.count("for (i = ") == 2
    for steps, width in [(1, 1), (2, 3), (7, 4)]:
        a = RNG.random((steps, width))
        y1 = np.empty_like(a)
        y2 = np.empty_like(a)
        for t in range(steps):
            y1[t] = a[t] if t == 0 else y1[t - 1] * 0.5 + a[t]
            y2[t] = y1[t] * 2.0 if t == 0 else y2[t - 1] + y1[t]
        assert_numbers(_run(s, [A, Y2], [a], (steps, width)), y2, **TIGHT)


# -- heat-1D and heat-2D -------------------------------------------------------------------

def _heat1d(m, n):
    X = po.placeholder((1, n), name="X", dtype=F64)
    U = po.placeholder((m, n), name="U", dtype=F64)
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: po.if_then_else(
        po.all(i > 0, i < n - 1),
        U[t - 1, i] + 0.25 * (U[t - 1, i - 1] - 2.0 * U[t - 1, i] + U[t - 1, i + 1]),
        U[t - 1, i]), name="update")
    return X, po.scan(init, update, U, inputs=[X], name="heat")


def _heat1d_ref(x, steps):
    n = x.shape[1]
    u = np.empty((steps, n))
    for t in range(steps):
        for i in range(n):
            if t == 0:
                u[t, i] = x[0, i]
            elif 0 < i < n - 1:
                u[t, i] = u[t - 1, i] + 0.25 * (u[t - 1, i - 1] - 2.0 * u[t - 1, i]
                                                + u[t - 1, i + 1])
            else:
                u[t, i] = u[t - 1, i]
    return u


HEAT_SIZES = [(1, 1), (2, 3), (5, 1), (6, 7), (9, 4)]


def _check_heat1d(s, X, H, fixed=None):
    for m, n in ([fixed] if fixed else HEAT_SIZES):
        x = RNG.random((1, n))
        _, h = assert_same_as_default(s, [x, _fresh(m, n)], build_args=[X, H], exact=True)
        assert_numbers(h, _heat1d_ref(x, m), **TIGHT)


def test_heat_1d_numbers_and_exact_dependences():
    X, H = _heat1d(po.var("m"), po.var("n"))
    s = po.create_schedule(H)
    _check_heat1d(s, X, H)
    # inner points read three neighbours, the two borders only themselves
    _deps_equal(s, "heat", "heat", "[m, n] -> { heat[t, i] -> heat[t + 1, j] : 0 < t <= m - 2 "
                "and 0 <= i < n and ((0 < j < n - 1 and j - 1 <= i <= j + 1) "
                "or ((j = 0 or j = n - 1) and i = j)) }")


@pytest.mark.parametrize("fixed", [False, True], ids=["symbolic", "fixed"])
def test_heat_1d_skewed_and_time_tiled(fixed):
    m, n = (7, 9) if fixed else (po.var("m"), po.var("n"))
    X, H = _heat1d(m, n)
    s = po.create_schedule(H)
    err = refused(po.DependenceViolationError, lambda: s[H].tile("t", "i", 3, 4))
    assert re.fullmatch(r"heat\[t=\d+, i=\d+\]", err.violation.source)
    _suggested_skew(err, (1, -1), "skew i by t with factor 1 first")
    s[H].skew("t", "i", 1)
    s[H].tile("t", "i", 3, 4)
    _check_heat1d(s, X, H, fixed=(7, 9) if fixed else None)


def test_heat_1d_wavefront_has_a_parallel_inner_loop():
    X, H = _heat1d(po.var("m"), po.var("n"))
    s = po.create_schedule(H)
    _parallel_refused(s, H, "t", "heat")
    s[H].skew("t", "i", 1)
    wave = s[H].wavefront("t", "i")
    axes = s[H].axes
    assert axes[0].name == wave.name and axes[0].kind == "serial"
    assert [a.kind for a in axes[1:]] == ["parallel"]
    text = str(po.lower(s, [X, H]))
    assert f"for ({wave.name} = " in text and _pragma_before(text, axes[1].name)
    assert not _pragma_before(text, wave.name)
    _check_heat1d(s, X, H)


def _heat2d(m, n):
    X = po.placeholder((n, n), name="X", dtype=F64)
    U = po.placeholder((m, n, n), name="U", dtype=F64)
    init = po.compute((1, n, n), lambda _, i, j: X[i, j], name="init")
    inside = lambda i, j: po.all(i > 0, i < n - 1, j > 0, j < n - 1)  # noqa: E731
    update = po.compute((m, n, n), lambda t, i, j: po.if_then_else(
        inside(i, j),
        U[t - 1, i, j] + 0.125 * (U[t - 1, i - 1, j] + U[t - 1, i + 1, j] + U[t - 1, i, j - 1]
                                  + U[t - 1, i, j + 1] - 4.0 * U[t - 1, i, j]),
        U[t - 1, i, j]), name="update")
    return X, po.scan(init, update, U, inputs=[X], name="heat2d")


def _heat2d_ref(x, steps):
    n = x.shape[0]
    u = np.empty((steps, n, n))
    for t in range(steps):
        if t == 0:
            u[0] = x
            continue
        p = u[t - 1]
        for i in range(n):
            for j in range(n):
                if 0 < i < n - 1 and 0 < j < n - 1:
                    u[t, i, j] = p[i, j] + 0.125 * (p[i - 1, j] + p[i + 1, j] + p[i, j - 1]
                                                    + p[i, j + 1] - 4.0 * p[i, j])
                else:
                    u[t, i, j] = p[i, j]
    return u


def _check_heat2d(s, X, H, sizes=((1, 1), (2, 3), (4, 1), (5, 6))):
    for m, n in sizes:
        x = RNG.random((n, n))
        _, h = assert_same_as_default(s, [x, _fresh(m, n, n)], build_args=[X, H], exact=True)
        assert_numbers(h, _heat2d_ref(x, m), **TIGHT)


def test_heat_2d_numbers_and_exact_dependences():
    X, H = _heat2d(po.var("m"), po.var("n"))
    s = po.create_schedule(H)
    _check_heat2d(s, X, H)
    _deps_equal(s, "heat2d", "heat2d", "[m, n] -> { heat2d[t, i, j] -> heat2d[t + 1, k, l] : "
                "0 < t <= m - 2 and 0 <= i < n and 0 <= j < n and ("
                "(0 < k < n - 1 and 0 < l < n - 1 and "
                "((i = k and j = l) or (i = k - 1 and j = l) or (i = k + 1 and j = l) "
                "or (i = k and j = l - 1) or (i = k and j = l + 1))) "
                "or ((k = 0 or k = n - 1 or l = 0 or l = n - 1) and i = k and j = l)) }")
    _parallel_refused(s, H, "t", "heat2d")
    assert s[H].can_parallel("i") and s[H].can_parallel("j")


def test_heat_2d_skewed_and_time_tiled_in_three_dimensions():
    X, H = _heat2d(po.var("m"), po.var("n"))
    s = po.create_schedule(H)
    err = refused(po.DependenceViolationError, lambda: s[H].tile("t", "i", 2, 2))
    assert re.fullmatch(r"heat2d\[t=\d+, i=\d+, j=\d+\]", err.violation.source)
    _suggested_skew(err, (1, -1, 0), "skew i by t with factor 1 first")
    s[H].skew("t", "i", 1)
    s[H].skew("t", "j", 1)
    s[H].tile("t", "i", 2, 3)
    s[H].split("j", factor=4)
    s[H].reorder("t.outer", "i.outer", "j.outer", "t.inner", "i.inner", "j.inner")
    assert [a.name for a in s[H].axes] == ["t.outer", "i.outer", "j.outer",
                                           "t.inner", "i.inner", "j.inner"]
    _check_heat2d(s, X, H)


def test_heat_2d_wavefront_parallel_inner_loops():
    X, H = _heat2d(po.var("m"), po.var("n"))
    s = po.create_schedule(H)
    s[H].skew("t", "i", 1)
    s[H].skew("t", "j", 1)
    wave = s[H].wavefront("t", "i", "j")
    axes = s[H].axes
    assert axes[0].name == wave.name and axes[0].kind == "serial"
    assert [a.kind for a in axes[1:]] == ["parallel", "parallel"]
    assert str(po.lower(s, [X, H])).count("#pragma parallel") == 2
    _check_heat2d(s, X, H)


# -- errors --------------------------------------------------------------------------------

def _parts():
    m, n = po.var("m"), po.var("n")
    X = po.placeholder((m, n), name="X", dtype=F64)
    state = po.placeholder((m, n), name="state", dtype=F64)
    init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    update = po.compute((m, n), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    return m, n, X, state, init, update


def _scan_and_schedule(init, update, state):
    """Some errors show when the statements are built (the exact time-step analysis)."""
    return po.create_schedule(po.scan(init, update, state, name="Y"))


def _err_update_dtype():
    m, n, X, state, init, _ = _parts()
    X32 = po.placeholder((m, n), name="X32", dtype="float32")
    return init, po.compute((m, n), lambda t, i: X32[t, i], name="update"), state


def _err_init_dtype():
    m, n, X, state, _, update = _parts()
    X32 = po.placeholder((m, n), name="X32", dtype="float32")
    return po.compute((1, n), lambda _, i: X32[0, i], name="init"), update, state


def _err_update_width():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((m, n + 1), lambda t, i: X[t, 0], name="update"), state


def _err_init_width():
    m, n, X, state, _, update = _parts()
    return po.compute((1, m), lambda _, i: X[0, 0], name="init"), update, state


def _err_update_steps():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((n, n), lambda t, i: X[0, i], name="update"), state


def _err_update_rank():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((m,), lambda t: X[t, 0], name="update"), state


def _err_counts():
    m, n, X, state, init, update = _parts()
    return [init], [update], [state, state]


def _err_state_not_placeholder():
    m, n, X, state, init, update = _parts()
    return init, update, init


def _err_not_a_tensor():
    m, n, X, state, init, update = _parts()
    return init, 3, state


def _err_reduction_update():
    m, n, X, state, init, _ = _parts()
    k = po.reduce_axis((0, n), name="k")
    return init, po.compute((m, n), lambda t, i: po.sum(state[t - 1, k], axis=k),
                            name="update"), state


def _err_reads_current_step():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((m, n), lambda t, i: state[t, i] + 1.0, name="update"), state


def _err_reads_current_step_of_a_neighbour():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((m, n), lambda t, i: po.if_then_else(i > 0, state[t, i - 1], 0.0)
                            + X[t, i], name="update"), state


def _err_reads_a_later_step():
    m, n, X, state, init, _ = _parts()
    return init, po.compute((m, n), lambda t, i: state[t + 1, i], name="update"), state


def _err_init_reads_state():
    m, n, X, state, _, update = _parts()
    return po.compute((1, n), lambda _, i: state[0, i], name="init"), update, state


def _err_sibling_current_step():
    m, n, X, h_s, h0, h_up = _parts()
    c_s = po.placeholder((m, n), name="c_s", dtype=F64)
    c0 = po.compute((1, n), lambda _, i: X[0, i], name="c0")
    c_up = po.compute((m, n), lambda t, i: c_s[t - 1, i] + h_s[t, i], name="c_up")
    return [h0, c0], [h_up, c_up], [h_s, c_s]


@pytest.mark.parametrize("make, message", [
    (_err_update_dtype, r"po\.scan state 0: init \(float64\), update \(float32\) and state "
                        r"\(float64\) must have the same dtype; use \.astype"),
    (_err_init_dtype, r"init \(float32\), update \(float64\) and state \(float64\)"),
    (_err_update_width, r"dimension 1 of the update \(n \+ 1\) differs from the state's \(n\)"),
    (_err_init_width, r"dimension 1 of the init \(m\) differs from the state's \(n\)"),
    (_err_update_steps, r"the update has n time steps but the state has m"),
    (_err_update_rank, r"the update has 1 dimension\(s\) but the state has 2; the first "
                       r"dimension is time"),
    (_err_counts, r"one init and one update per state, got 1 init\(s\), 1 update\(s\) and "
                  r"2 state\(s\)"),
    (_err_state_not_placeholder, r"the state must be a po\.placeholder"),
    (_err_not_a_tensor, r"po\.scan: update must be tensors, got 3"),
    (_err_reduction_update, r"the update is a reduction; compute the reduction in its own "
                            r"compute and read it from the scan"),
    (_err_reads_current_step, r"the update of scan 'Y' reads Y at the current or a later time "
                              r"step; a scan's update may only read earlier steps \(t - 1"),
    (_err_reads_current_step_of_a_neighbour, r"reads Y at the current or a later time step"),
    (_err_reads_a_later_step, r"reads Y at the current or a later time step"),
    (_err_init_reads_state, r"the init of scan 'Y' reads the scan's state; the init may only "
                            r"read other tensors"),
    (_err_sibling_current_step, r"the update of scan 'Y_1' reads Y_0 at the current or a later "
                                r"time step"),
], ids=lambda v: v.__name__[5:] if callable(v) else "")
def test_scan_errors(make, message):
    with pytest.raises(InvalidArgumentError, match=message):
        init, update, state = make()
        _scan_and_schedule(init, update, state)


def test_reading_before_the_first_step_is_out_of_bounds():
    """``t - 2`` after an init of one step reads step -1 at t = 1."""
    m, n, X, state, init, _ = _parts()
    update = po.compute((m, n), lambda t, i: state[t - 2, i] + X[t, i], name="update")
    with pytest.raises(OutOfBoundsError, match=r"reads Y\[-1, 0\] at Y\[t=1, i=0\]"):
        _scan_and_schedule(init, update, state)
