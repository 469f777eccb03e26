"""Issue 38 item 5: every typed error class raised through the public API that raises it
(schedules, kernels from C, tensorize, the accelerator target; two through a primitive
registered from outside the package, the registry being an extension point), asserting
the exact type and the attributes, never the text."""

import dataclasses
import sys
import pathlib

import pytest

import polyopt as po
from polyopt.domain.schedule import Axis
from polyopt.machine.accel import VTA
from polyopt.tensorize.builtin import dot_16x4_u8s8
from polyopt.transform import group
from polyopt.transform.registry import LOOP, register, unregister
from testlib.errors import refused
from testlib.tensorize import int8_matmul, row_dot_schedule

sys.path.insert(0, str(pathlib.Path(__file__).parent / "target" / "accel"))
from schedules import matmul as accel_matmul  # noqa: E402

n = po.var("n")


def row_sum():
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    C = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="C")
    return A, C, k


# -- attaching, caches -------------------------------------------------------------------

def test_compute_with_more_loops_than_the_stage_has():
    A = po.placeholder((n, n), name="A")
    P = po.compute((n,), lambda i: A[i, 0] * 2.0, name="P")
    C = po.compute((n, n), lambda i, j: A[i, j] + P[i], name="C")
    s = po.create_schedule(C)
    err = refused(po.NotEnoughLoopsError, lambda: s[P].compute_with(s[C], C.op.axis[1]))
    assert (err.stage, err.count, err.needed, err.shared_with, err.down_to) == \
        ("P", 1, 2, "C", "j")
    assert not s[P].can_compute_with(s[C], C.op.axis[1])


def test_a_reduction_cannot_read_a_copy_of_what_it_writes():
    A, C, _ = row_sum()
    D = po.compute((n,), lambda i: C[i] * 2.0, name="D")
    s = po.create_schedule(D)
    err = refused(po.CacheOfWrittenError, lambda: s.cache_read(C, "local", [C]))
    assert (err.statement, err.array) == ("C_init", "C")


N, M = po.var("N"), po.var("M")


@po.kernel
def shortest(A: po.f64[N], y: po.f64[1]):
    for k in range(min(N, M)):
        y[0] += A[k]


def test_set_scope_of_an_array_the_kernel_does_not_compute():
    s = po.create_schedule(shortest)
    err = refused(po.NotComputedError, lambda: s["S0"].set_scope("acc"))
    assert (err.primitive, err.tensor) == ("set_scope", "y")


def test_rfactor_of_a_loop_whose_bound_has_pieces():
    s = po.create_schedule(shortest)
    err = refused(po.PiecewiseBoundError, lambda: s.rfactor("S0", "k"))
    assert err.primitive == "rfactor" and "N" in err.bound and "M" in err.bound


def test_rfactor_of_a_reduction_over_a_tuple():
    idx = po.placeholder((n, n), name="idx", dtype="int32")
    val = po.placeholder((n, n), name="val", dtype="float32")
    argmax = po.comm_reducer(
        lambda x, y: (po.if_then_else(x[1] >= y[1], x[0], y[0]),
                      po.if_then_else(x[1] >= y[1], x[1], y[1])),
        lambda t0, t1: (po.const(-1, t0), po.min_value(t1)), name="argmax")
    k = po.reduce_axis((0, n), name="k")
    T0, T1 = po.compute((n,), lambda i: argmax((idx[i, k], val[i, k]), axis=k), name="T")
    s = po.create_schedule(T0.op)
    _, ki = s[T0].split(k, factor=4)
    err = refused(po.TupleReductionError, lambda: s.rfactor(T0, ki))
    assert (err.primitive, err.init_moved) == ("rfactor", False)
    assert err.stage == s._stage_name(T0) and len(err.outputs) == 1


# -- scalar expansion (C kernels) --------------------------------------------------------

def kernel_with_scalar(store: str):
    """A row sum into the local ``w``, then ``store`` (C, as the front end reads it)."""
    return po.from_c(f"""
#define N 10
void f(int n, double A[N][N], double y[N]) {{
  int i, j;
  double w;
#pragma scop
  for (i = 0; i < n; i++) {{
    w = 0.0;
    for (j = 0; j < n; j++)
      w += A[i][j];
    {store}
  }}
#pragma endscop
}}""")


@pytest.mark.parametrize("scalar, options, problem", [
    ("A", {}, "not_a_scalar"),                 # an argument, not a local
    ("w", {"dims": 2}, "too_few_loops"),       # "w = 0.0" has one loop around it
])
def test_expand_scalar_refusals(scalar, options, problem):
    s = po.create_schedule(kernel_with_scalar("y[i] = w;"))
    err = refused(po.ScalarExpansionError, lambda: s.expand_scalar(scalar, **options))
    assert (err.scalar, err.problem) == (scalar, problem)
    assert err.dims == options.get("dims") and s.steps == []


def test_expand_scalar_of_a_scalar_never_stored():
    s = po.create_schedule(kernel_with_scalar("y[i] = 1.0;"))
    err = refused(po.ScalarExpansionError, lambda: s.expand_scalar("w"))
    assert (err.scalar, err.problem, err.statement) == ("w", "never_stored", None)


# -- tensorize ---------------------------------------------------------------------------

def test_a_buffer_that_needs_aligned_tiles():
    a = po.placeholder((4,), name="a")
    c = po.compute((4,), lambda i: a[i] * 3.0, name="c")
    intrin = po.decl_tensor_intrin(
        c.op, lambda ins, outs: po.tensorize.call_extern(
            "void", "f", outs[0].access_ptr("w"), ins[0].access_ptr("r")),
        binds={a: po.decl_buffer((4,), "float32", "a", offset_factor=8)})
    A = po.placeholder((20,), name="A")
    B = po.compute((20,), lambda i: A[i] * 3.0, name="B")
    s = po.create_schedule(B)
    _, inner = s[B].split(B.op.axis[0], factor=4)
    err = refused(po.BufferAlignmentError, lambda: s[B].tensorize(inner, intrin))
    assert (err.buffer, err.factor, err.array, err.start, err.row) == ("a", 8, "A", (4,), None)


def test_an_unchecked_tensorize_whose_tiles_break_a_dependence():
    A, W, C = int8_matmul(2, 16, 8)
    s, ji = row_dot_schedule(C)
    s[C].reverse(C.op.reduce_axis[0], check=False)
    s[C].tensorize(ji, dot_16x4_u8s8(), check=False)
    err = refused(po.IllegalTensorizeError, s.check)
    assert (err.axis, err.inside) == ("j.inner", False)
    assert (err.dependence.kind, err.dependence.array) == ("flow", "C")
    assert err.violation.dependence is err.dependence


# -- the accelerator target --------------------------------------------------------------

def test_accelerator_buffer_too_small_for_the_tiles():
    s, args = accel_matmul(VTA, 1, 64, 64, tile_n=64, tile_k=32)  # 64x32 weight tiles
    err = refused(po.DeviceCapacityError, lambda: po.build(s, args, target="accel"))
    assert (err.resource, err.needed, err.available, err.buffer) == \
        ("wgt buffer", 524288, 262144, "W_wgt")


def test_accelerator_computation_outside_its_buffers():
    A = po.placeholder((16, 16), name="A", dtype="int8")
    B = po.compute((16, 16), lambda i, j: A[i, j] + A[j, i], name="B")
    s = po.create_schedule(B)
    err = refused(po.AcceleratorMappingError, lambda: po.lower(s, [A, B], target="accel"))
    assert (err.what, err.problem, err.target) == ("B", "global_compute", "B")


# -- through a primitive registered from outside the package ----------------------------

def uneven(state, stage, axis):
    """Split ``axis`` of the stage, but not of the stages sharing it (a broken primitive
    written outside polyopt): edit_band refuses it."""
    level = state.program.stage(stage).axis(axis) + 1

    def change(member, loops):
        if member.name != stage:
            return loops
        (old,) = loops
        return [Axis(old.name + ".a", old.value), Axis(old.name + ".b", old.value * 0)]
    return state.advanced(group.edit_band(state.program, stage, level, level, change)), None


def lean(state, stage, axis):
    """Make the stage's loop ``axis`` run ``axis + outer`` (the first loop it shares)."""
    record = state.program.stage(stage)
    position = record.axis(axis)
    first = record.axes[0].value
    axes = list(record.axes)
    axes[position] = dataclasses.replace(axes[position], value=axes[position].value.add(first))
    stages = tuple(dataclasses.replace(st, axes=tuple(axes)) if st.name == stage else st
                   for st in state.program.stages)
    return state.advanced(state.program.with_stages(stages)), None


@pytest.fixture
def outside_primitives():
    register("uneven", params={"axis": LOOP})(uneven)
    register("lean", params={"axis": LOOP}, checked=False)(lean)
    yield
    unregister("uneven")
    unregister("lean")


def test_a_loop_change_that_gives_stages_sharing_loops_different_loops(outside_primitives):
    A = po.placeholder((n, n), name="A")
    P = po.compute((n, n), lambda i, j: A[i, j] * 2.0, name="P")
    C = po.compute((n, n), lambda i, j: A[i, j] + 1.0, name="C")
    s = po.create_schedule([P, C])
    s[P].compute_with(s[C], C.op.axis[0])
    err = refused(po.BandMismatchError, lambda: s[C].uneven(C.op.axis[0]))
    assert err.stage == "C" and set(err.stages) == {"C", "P"}


def test_compute_root_of_a_stage_whose_loop_uses_the_loops_it_is_computed_at(
        outside_primitives):
    A = po.placeholder((n, n), name="A")
    P = po.compute((n, n), lambda i, j: A[i, j] * 2.0, name="P")
    C = po.compute((n, n), lambda i, j: P[i, j] + 1.0, name="C")
    s = po.create_schedule(C)
    s[P].compute_at(s[C], C.op.axis[0])
    s[P].lean("j")
    err = refused(po.AttachedLoopError, lambda: s[P].compute_root())
    assert err.stage == "P"
