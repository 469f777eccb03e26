"""Property test of the schedule primitives: random programs, random primitive sequences.

Every primitive call is either refused with a clean polyopt error (IllegalScheduleError,
ScheduleError, InvalidArgumentError; and then leaves the schedule exactly as it was) or
accepted.  The accepted schedule must then

* pass ``s.check()`` (nothing illegal slipped through, e.g. a parallel loop that a later
  primitive made carry a dependence),
* replay from ``s.script()`` on a fresh schedule to the same lowered program, and
* compute exactly the same numbers as the default schedule (itself tested against NumPy
  in tests/te), on sizes that the random factors do not divide (0 and 1 included).

Programs use int32 data with small values, so that results are exact: sums may be
reassociated (``rfactor``) without changing them, and any difference is a real bug.
Two families: tensor expressions (1-3 computes over 1-D or 2-D arrays, fixed or symbolic
sizes, reads at random offsets guarded by ``if_then_else``, transposed reads, window
sums and prefix sums) and in-place ``po.kernel`` nests with random offsets (closure
constants; time loops, a scratch array, a ``+=`` sum), where the rewrites are validated
against the original kernel's dataflow.  Primitives: split (factor, nparts), tile, reorder, fuse, skew, shift,
reverse, transform, parallel, vectorize, unroll, compute_with, compute_at,
compute_inline, compute_root, cache_read, cache_write, rfactor, with random arguments
taken from the current schedule.

Every primitive takes part, in any order (rewrites after attachments included).

``POLYOPT_PROPERTY_EXAMPLES=2000 pytest tests/transform/test_property.py`` runs more
examples, from a random seed.
"""

from __future__ import annotations

import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

import polyopt as po
from polyopt.te.evaluate import evaluate

from testlib.numeric import assert_numbers

CLEAN = (po.IllegalScheduleError, po.ScheduleError, po.InvalidArgumentError)
_EXAMPLES = int(os.environ.get("POLYOPT_PROPERTY_EXAMPLES", "0"))


def _settings(examples: int):
    """``examples`` in CI (deterministic: the same examples every run), or as many as
    POLYOPT_PROPERTY_EXAMPLES asks, from a random seed."""
    options = {} if _EXAMPLES else {"phases": [Phase.explicit, Phase.generate]}  # no shrinking
    return settings(max_examples=_EXAMPLES or examples, deadline=None,
                    derandomize=not _EXAMPLES, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    **options)


# -- random tensor-expression programs ------------------------------------------------------

def _guarded_read(tensor, index, extents):
    """``tensor[index]`` where it is in bounds, else 0."""
    cond = None
    for expr, extent in zip(index, extents):
        inside = (expr >= 0) & (expr < extent)
        cond = inside if cond is None else cond & inside
    return po.if_then_else(cond, tensor[tuple(index)], 0)


@st.composite
def te_specs(draw):
    """A random tensor-expression program, as plain data (see :func:`make_te`)."""
    rank = draw(st.integers(1, 2))
    symbolic = draw(st.booleans())
    square = rank == 2 and draw(st.booleans())
    n = draw(st.integers(2, 7))
    m = n if square else draw(st.integers(2, 6))
    n_inputs = draw(st.integers(1, 2))
    computes = []
    for c in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 3))  # 0, 1: elementwise; 2: window sum; 3: prefix sum
        window = kind >= 2
        count = 1 if window else draw(st.integers(1, 2))
        reads = tuple((draw(st.integers(0, n_inputs + c - 1)),
                       tuple(draw(st.integers(-2, 2)) for _ in range(rank)),
                       square and draw(st.integers(0, 3)) == 0,
                       draw(st.integers(1, 3))) for _ in range(count))
        width = (draw(st.integers(1, 3)) if kind == 2 else -1) if window else 0
        computes.append((reads, width, draw(st.integers(0, rank - 1))))
    outputs = tuple(draw(st.integers(0, 2)) == 0 for _ in computes[:-1]) + (True,)
    if symbolic:
        sizes = []
        for _ in range(2):
            a = draw(st.integers(0, 7))
            sizes.append((a, a if square else draw(st.integers(0, 6)))[:rank])
    else:
        sizes = [(n, m)[:rank]]
    return (rank, symbolic, square, n, m, n_inputs, tuple(computes), outputs, tuple(sizes))


def make_te(spec):
    """(inputs, outputs, sizes) of the program that ``spec`` describes."""
    rank, symbolic, square, n, m, n_inputs, computes, outputs, sizes = spec
    if symbolic:
        n = po.var("n")
        m = n if square else po.var("m")
    shape = (n, m)[:rank]
    inputs = [po.placeholder(shape, name="AB"[k], dtype="int32") for k in range(n_inputs)]
    pool = list(inputs)
    made = []
    for c, (reads, width, dim) in enumerate(computes):
        if width == 0:
            def body(*idx, reads=reads):
                total = 0
                for source, offset, transposed, coef in reads:
                    index = [i + o for i, o in zip(idx, offset)]
                    index = index[::-1] if transposed else index
                    total = total + _guarded_read(pool[source], index, shape) * coef
                return total
        elif width > 0:  # window: sum over r < width of X[.. i + o + r ..]
            r = po.reduce_axis((0, width), name="r")

            def body(*idx, reads=reads, r=r, dim=dim):
                source, offset, transposed, coef = reads[0]
                index = [i + o + (r if d == dim else 0)
                         for d, (i, o) in enumerate(zip(idx, offset))]
                index = index[::-1] if transposed else index
                return po.sum(_guarded_read(pool[source], index, shape) * coef, axis=r)
        else:  # prefix: sum over r <= i (of a parametric extent) of X[.. r + o ..]
            r = po.reduce_axis((0, shape[dim]), name="r")

            def body(*idx, reads=reads, r=r, dim=dim):
                source, offset, transposed, coef = reads[0]
                index = [(r if d == dim else i) + o for d, (i, o) in enumerate(zip(idx, offset))]
                index = index[::-1] if transposed else index
                value = _guarded_read(pool[source], index, shape) * coef
                return po.sum(po.if_then_else(r <= idx[dim], value, 0), axis=r)
        made.append(po.compute(shape, body, name=f"C{c}"))
        pool.append(made[-1])
    return inputs, [c for c, out in zip(made, outputs) if out], list(sizes)


# -- random in-place po.kernel nests ---------------------------------------------------------

N, M, T = po.var("N"), po.var("M"), po.var("T")


def kernel_time_1d(d1, d2, c):
    @po.kernel
    def time_1d(A: po.i32[N]):
        for t in range(T):
            for i in range(2, N - 2):
                A[i] = A[i + d1] + c * A[i + d2]
    return time_1d


def kernel_inplace_2d(d1, d2, d3, d4):
    @po.kernel
    def inplace_2d(A: po.i32[N, M]):
        for i in range(1, N - 1):
            for j in range(1, M - 1):
                A[i, j] = A[i + d1, j + d2] + A[i + d3, j + d4]
    return inplace_2d


def kernel_two_arrays(d1, d2, d3):
    @po.kernel
    def two_arrays(A: po.i32[N], B: po.i32[N]):
        for t in range(T):
            for i in range(2, N - 2):
                B[i] = A[i + d1] + A[i + d2]
            for i in range(2, N - 2):
                A[i] = B[i + d3] - A[i]
    return two_arrays


def kernel_same_loop(d1, d2):
    @po.kernel
    def same_loop(A: po.i32[N], B: po.i32[N]):
        for i in range(2, N - 2):
            A[i] = A[i + d1] + 1
            B[i] = A[i + d2] + B[i]
    return same_loop


def kernel_triangular(d1):
    @po.kernel
    def triangular(A: po.i32[N, N], x: po.i32[N]):
        for i in range(1, N):
            for j in range(i):
                x[i] += A[i, j] * x[j + d1]
    return triangular


def kernel_fixed_sizes(d1, d2):
    @po.kernel
    def fixed_sizes(A: po.i32[7, 6], y: po.i32[6], x: po.i32[7]):
        for t in range(3):
            for i in range(1, 6):
                for j in range(1, 5):
                    A[i, j] = A[i + d1, j + d2] + A[i, j]
        for i in range(7):
            for j in range(6):
                x[i] += A[i, j] * y[j]
    return fixed_sizes


def kernel_scratch(d1, d2):
    @po.kernel
    def scratch(A: po.i32[N], T: po.i32[N], B: po.i32[N]):
        for i in range(N):
            T[i] = A[i] * 2 + 1
        for i in range(2, N - 2):
            B[i] = T[i + d1] + T[i + d2]
        for i in range(N):
            T[i] = A[i] - T[i]
    return scratch


def kernel_sums(d1):
    @po.kernel
    def sums(A: po.i32[N, M], x: po.i32[N], y: po.i32[M]):
        for i in range(1, N - 1):
            for j in range(M):
                y[j] += A[i + d1, j] * x[i]
    return sums


KERNELS = [(kernel_time_1d, (2, 2, "c")), (kernel_inplace_2d, (1, 1, 1, 1)),
           (kernel_two_arrays, (2, 2, 2)), (kernel_same_loop, (2, 2)),
           (kernel_triangular, (0,)), (kernel_fixed_sizes, (1, 1)),
           (kernel_scratch, (2, 2)), (kernel_sums, (1,))]


@st.composite
def kernel_specs(draw):
    """(kernel family, its offsets, sizes): see :data:`KERNELS`."""
    which = draw(st.integers(0, len(KERNELS) - 1))
    params = tuple(draw(st.integers(0, 2)) if bound == "c" else draw(st.integers(-bound, bound))
                   for bound in KERNELS[which][1])
    sizes = tuple((draw(st.integers(0, 8)), draw(st.integers(0, 7)), draw(st.integers(0, 3)))
                  for _ in range(2))
    return which, params, sizes


def make_kernel(spec):
    which, params, sizes = spec
    return (KERNELS[which][0](*params),
            [dict(N=n, M=m, T=t) for n, m, t in sizes])


# -- random primitive sequences --------------------------------------------------------------

PRIMITIVES = ["split", "split", "tile", "reorder", "fuse", "skew", "shift", "reverse",
              "transform", "parallel", "vectorize", "unroll", "compute_with", "compute_at",
              "compute_inline", "compute_root", "rfactor", "cache_read", "cache_write"]
KERNEL_PRIMITIVES = PRIMITIVES  # kernels' rewrites are validated by comparing dataflow


def steps_of(primitives):
    return st.lists(st.tuples(st.sampled_from(primitives),
                              st.lists(st.integers(0, 1000), min_size=6, max_size=6)),
                    min_size=1, max_size=6)


steps_strategy = steps_of(PRIMITIVES)
kernel_steps_strategy = steps_of(KERNEL_PRIMITIVES)


def apply_step(s, primitive, r):
    """Apply one primitive with arguments picked (by the numbers ``r``) from the current
    schedule; returns a description, or None when the primitive does not apply."""
    stages = s.stages
    stage = stages[r[0] % len(stages)]
    axes = stage.axes
    other = stages[r[1] % len(stages)]
    if not axes and primitive not in ("compute_inline", "compute_root"):
        return None
    axis = axes[r[2] % len(axes)] if axes else None
    if primitive == "split":
        if r[3] % 3 == 0:
            return stage.split(axis, nparts=1 + r[4] % 4)
        return stage.split(axis, factor=1 + r[4] % 5)
    if primitive == "tile":
        if len(axes) < 2:
            return None
        p = r[2] % (len(axes) - 1)
        return stage.tile(axes[p], axes[p + 1], 1 + r[3] % 4, 1 + r[4] % 4)
    if primitive == "reorder":
        order = sorted(range(len(axes)), key=lambda k: (r[3] * (k + 1) * 7919 + r[4] * k) % 101)
        count = 2 + r[5] % max(1, len(axes) - 1)
        return stage.reorder(*[axes[k] for k in order[:count]])
    if primitive == "fuse":
        if len(axes) < 2:
            return None
        p = r[2] % (len(axes) - 1)
        return stage.fuse(axes[p], axes[p + 1])
    if primitive == "skew":
        if len(axes) < 2:
            return None
        p = r[2] % (len(axes) - 1)
        q = p + 1 + r[3] % (len(axes) - 1 - p)
        return stage.skew(axes[p], axes[q], [-2, -1, 1, 2][r[4] % 4])
    if primitive == "shift":
        return stage.shift(axis, [-2, -1, 1, 2][r[3] % 4])
    if primitive == "reverse":
        return stage.reverse(axis)
    if primitive == "transform":
        n = len(axes)
        names = [f"a{k}" for k in range(n)]
        order = sorted(range(n), key=lambda k: (r[3] * (k + 1) * 31 + r[4] * k) % 97)
        out = [names[k] for k in order]
        if n >= 2 and r[5] % 2:
            out[-1] = f"{out[-1]} + {out[0]}"
        return stage.transform(f"{{ [{', '.join(names)}] -> [{', '.join(out)}] }}")
    if primitive in ("parallel", "vectorize", "unroll"):
        return getattr(stage, primitive)(axis)
    if primitive in ("compute_with", "compute_at"):
        if other.name == stage.name or not other.axes:
            return None
        return getattr(stage, primitive)(other, other.axes[r[3] % len(other.axes)])
    if primitive == "compute_inline":
        return stage.compute_inline()
    if primitive == "compute_root":
        return stage.compute_root()
    if primitive == "cache_read":
        roles = ("placeholder", "inout") if s.kernel is not None else ("placeholder",)
        inputs = [a.name for a in s.program.arrays if a.role in roles]
        if not inputs:
            return None
        name = inputs[r[3] % len(inputs)]
        readers = [st.name for st in s.program.stages
                   if any(acc.array == name for n in (st.init, st.main) if n
                          for acc in s.program.statement(n).reads)]
        if not readers:
            return None
        chosen = readers if r[4] % 2 else readers[r[5] % len(readers):][:1]
        return s.cache_read(name, ["global", "shared", "local"][r[5] % 3], chosen)
    if primitive == "cache_write":
        return s.cache_write(stage.name, "local")
    if primitive == "rfactor" and s.kernel is not None:
        return s.rfactor(stage.name, stage.axes[r[0] % len(stage.axes)])
    if primitive == "rfactor":
        candidates = [(st.name, a.name) for st in s.program.stages if st.init is not None
                      for a in st.axes if st.involves_reduce(a)]
        if not candidates:
            return None
        return s.rfactor(*candidates[r[0] % len(candidates)])
    raise AssertionError(primitive)


def apply_steps(s, steps):
    for primitive, r in steps:
        program, count = s.program, len(s.steps)
        try:
            apply_step(s, primitive, r)
        except CLEAN:
            # a refusal changes nothing
            assert s.program is program and len(s.steps) == count
        if s.deferred:  # a compute_at waiting for another reader (TVM's order): it
            assert s.program is program and len(s.steps) == count  # changed nothing yet
            s.deferred.clear()  # this test takes it as refused
    s.check()
    assert s.is_legal()


def assert_replays(s, make_fresh, args):
    fresh = make_fresh()
    fresh.replay(s.script())
    assert str(po.lower(fresh, args)) == str(po.lower(s, args))


def run_te(s, inputs, outputs, shape):
    args = list(inputs) + list(outputs)
    rng = np.random.default_rng(sum(shape) + 7)
    ins = [rng.integers(-3, 4, size=shape).astype("int32") for _ in inputs]
    outs = [np.full(shape, -777, "int32") for _ in outputs]
    po.build(s, args)(*ins, *outs)
    return outs


@_settings(200)
@given(te_specs(), steps_strategy)
def test_random_te_schedules_compute_the_default_results(spec, steps):
    check_te(spec, steps)


def check_te(spec, steps):
    inputs, outputs, sizes = make_te(spec)
    s = po.create_schedule(outputs)
    inputs = [t for t in inputs if any(a.tensor is t for a in s.program.arrays)]
    args = list(inputs) + list(outputs)
    apply_steps(s, steps)
    assert_replays(s, lambda: po.create_schedule(outputs), args)
    default = po.create_schedule(outputs)
    for shape in sizes:
        expected = run_te(default, inputs, outputs, shape)
        actual = run_te(s, inputs, outputs, shape)
        for e, a in zip(expected, actual):
            assert_numbers(a, e, name=f"{s.script()}\nat {shape}")  # integers: exact


def run_kernel(s, k, sizes):
    rng = np.random.default_rng(sizes["N"] * 13 + sizes["M"])
    arrays = []
    for t in k.args:
        shape = tuple(evaluate(e, sizes) for e in t.shape)
        arrays.append(rng.integers(-2, 3, size=shape).astype("int32"))
    po.build(s)(*arrays, **{name: sizes[name] for name in ("T",)
                            if name in s.program.param_names})
    return arrays


@_settings(100)
@given(kernel_specs(), kernel_steps_strategy)
def test_random_kernel_schedules_compute_the_default_results(spec, steps):
    check_kernel(spec, steps)


def check_kernel(spec, steps):
    k, sizes = make_kernel(spec)
    s = po.create_schedule(k)
    apply_steps(s, steps)
    assert_replays(s, lambda: po.create_schedule(k), None)
    default = po.create_schedule(k)
    for size in sizes:
        expected = run_kernel(default, k, size)
        actual = run_kernel(s, k, size)
        for e, a in zip(expected, actual):
            assert_numbers(a, e, name=f"{s.script()}\nat {size}")  # integers: exact
