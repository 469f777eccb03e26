"""Issue 38, typed errors: each way a primitive or a lowering pass fails has its class,
raised through the public API with the objects involved as attributes (tests assert on
the type and the attributes, not on the text), and one counterexample printer renders
every broken dependence."""

import inspect
import pickle

import numpy as np
import pytest

import polyopt as po
from polyopt.deps.counterexample import Counterexample, describe
from polyopt.deploy import ExportError
from polyopt.target.accel.sim import HazardError
from testlib.errors import refused


def elementwise(n=None):
    n = po.var("n") if n is None else n
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    return A, B


def row_sum():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="S")
    return A, S, k


def chain():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((n,), lambda i: B[i] + 1.0, name="C")
    return A, B, C


def prefix_sum():
    """B[i] = B[i - 1] + A[i]: a loop that carries a dependence."""
    @po.kernel
    def scan(A: po.f32[16], B: po.f32[16]):
        for i in range(1, 16):
            B[i] = B[i - 1] + A[i]
    return scan


# -- loops ------------------------------------------------------------------------------

def test_unknown_loop():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.UnknownLoopError, lambda: s[B].split("q", factor=2))
    assert (err.stage, err.loop, err.loops) == ("B", "q", ("i", "j"))
    assert isinstance(err, po.ScheduleError)
    assert not s[B].can_split("q", factor=2)  # a schedule error: can_* answers False


def test_axis_of_another_stage():
    _, B, C = chain()
    s = po.create_schedule(C)
    err = refused(po.ForeignAxisError, lambda: s[C].split(B.op.axis[0], factor=2))
    assert (err.stage, err.axis) == ("C", "i")
    assert isinstance(err, po.InvalidArgumentError)


@pytest.mark.parametrize("factor, requirement", [(0, "a positive integer"),
                                                 (2.5, "a positive integer"),
                                                 (2**40, "at most 2147483647 in absolute "
                                                         "value")])
def test_invalid_factor(factor, requirement):
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.InvalidFactorError, lambda: s[B].split(B.op.axis[0], factor=factor))
    assert (err.what, err.value, err.requirement) == ("factor", factor, requirement)
    # an argument error, not a refused schedule: can_split raises it too
    assert not isinstance(err, po.ScheduleError)
    with pytest.raises(po.InvalidFactorError):
        s[B].can_split(B.op.axis[0], factor=factor)


def test_split_needs_one_of_factor_and_nparts():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.SplitArgumentsError,
                  lambda: s[B].split(B.op.axis[0], factor=2, nparts=2))
    assert (err.factor, err.nparts) == (2, 2)


def test_symbolic_split_with_too_many_parts():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.SymbolicSplitError, lambda: s[B].split(B.op.axis[0], nparts=65))
    assert (err.stage, err.loop, err.nparts, err.tiled_loop) == ("B", "i", 65, None)


def test_symbolic_split_of_a_tiled_nest():
    _, B = elementwise()
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    err = refused(po.SymbolicSplitError, lambda: s[B].split(B.op.axis[1], nparts=2))
    assert (err.stage, err.loop, err.nparts, err.tiled_loop) == ("B", "j", 2, "i.outer")


@pytest.mark.parametrize("primitive", ["tile", "fuse"])
def test_loops_not_adjacent(primitive):
    n = po.var("n")
    A = po.placeholder((n, n, n), name="A")
    B = po.compute((n, n, n), lambda i, j, l: A[i, j, l] * 2.0, name="B")
    s = po.create_schedule(B)
    i, _, l = B.op.axis
    if primitive == "tile":
        err = refused(po.LoopsNotAdjacentError, lambda: s[B].tile(i, l, 2, 2))
    else:
        err = refused(po.LoopsNotAdjacentError, lambda: s[B].fuse(i, l))
    assert (err.primitive, err.stage, err.loops, err.order) == (primitive, "B", ("i", "l"),
                                                                "outer first")


def test_wavefront_needs_adjacent_loops():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.LoopsNotAdjacentError, lambda: s[B].wavefront(B.op.axis[0]))
    assert (err.primitive, err.loops) == ("wavefront", ("i",))


def test_skew_needs_the_outer_loop_outside():
    _, B = elementwise()
    s = po.create_schedule(B)
    i, j = B.op.axis
    err = refused(po.LoopOrderError, lambda: s[B].skew(j, i, 1))
    assert (err.primitive, err.stage, err.outer, err.inner) == ("skew", "B", "j", "i")


def test_reorder_lists_a_loop_twice():
    _, B = elementwise()
    s = po.create_schedule(B)
    i, j = B.op.axis
    err = refused(po.DuplicateLoopError, lambda: s[B].reorder(i, j, i))
    assert (err.primitive, err.stage, err.loops) == ("reorder", "B", ("i", "j", "i"))


def test_split_of_a_fuse_of_two_symbolic_extents():
    _, B = elementwise()
    s = po.create_schedule(B)
    fused = s[B].fuse(*B.op.axis)  # both extents symbolic: run as the two loops
    err = refused(po.FusedPartsError, lambda: s[B].split(fused, factor=2))
    assert (err.stage, err.loop) == ("B", "i.j.fused")


def test_loops_partly_shared_with_another_stage():
    _, B = elementwise()
    C = po.compute(B.shape, lambda i, j: B[i, j] * 3.0, name="C")
    s = po.create_schedule(C)
    s[B].compute_with(s[C], C.op.axis[0])  # B shares C's loop i, not j
    err = refused(po.PartlySharedLoopsError, lambda: s[B].fuse(*B.op.axis))
    assert (err.stage, err.other, err.lo, err.hi, err.depth, err.attached) == (
        "B", "C", 1, 2, 1, False)


def test_attached_inside_the_loops_asked_for():
    _, B = elementwise()
    C = po.compute(B.shape, lambda i, j: B[i, j] * 3.0, name="C")
    s = po.create_schedule(C)
    s[B].compute_with(s[C], C.op.axis[0])
    err = refused(po.PartlySharedLoopsError, lambda: s[C].fuse(*C.op.axis))
    assert (err.stage, err.other, err.lo, err.hi, err.depth, err.attached) == (
        "B", "C", 1, 2, 1, True)


# -- attaching, inlining, caches ---------------------------------------------------------

def test_attach_cycle():
    _, B, C = chain()
    s = po.create_schedule(C)
    s[B].compute_with(s[C], C.op.axis[0])
    err = refused(po.AttachCycleError, lambda: s[C].compute_with(s[B], B.op.axis[0]))
    assert (err.producer, err.consumer) == ("C", "B")


def test_sharing_a_reduction_loop():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((n, n), lambda i, j: po.sum(A[i, k], axis=k), name="S")
    E = po.compute((n, n, n), lambda i, j, l: S[i, j] + 1.0, name="E")
    s = po.create_schedule(E)
    err = refused(po.SharedReductionLoopError,
                  lambda: s[S].compute_with(s[E], E.op.axis[2]))
    assert (err.stage, err.loop) == ("S", "k")


def test_already_attached():
    _, B, C = chain()
    s = po.create_schedule(C)
    co, ci = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], co)
    err = refused(po.AlreadyAttachedError, lambda: s[B].compute_at(s[C], ci))
    assert (err.stage, err.target) == ("B", "C")


def test_cache_read_for_a_stage_that_does_not_read():
    A, B, C = chain()
    s = po.create_schedule(C)
    err = refused(po.NotAReaderError, lambda: s.cache_read(A, "local", [s[C]]))
    assert (err.producer, err.reader, err.inside) == ("A", "C", False)


def test_compute_at_of_an_output_the_tiles_do_not_cover():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] + 1, name="B")
    C = po.compute((n - 1,), lambda i: B[i] * 2, name="C")
    s = po.create_schedule([B, C])
    err = refused(po.PartialOutputError, lambda: s[B].compute_at(s[C], C.op.axis[0]))
    assert (err.output, err.consumer) == ("B", "C")


def test_cannot_inline_a_reduction_or_an_output():
    A, S, _ = row_sum()
    E = po.compute(S.shape, lambda i: S[i] * 2.0, name="E")
    s = po.create_schedule(E)
    err = refused(po.CannotInlineError, lambda: s[S].compute_inline())
    assert (err.stage, err.reader, err.problem) == ("S", None, "reduction")
    err = refused(po.CannotInlineError, lambda: s[E].compute_inline())
    assert (err.stage, err.problem) == ("E", "output")


def test_cannot_inline_a_stage_others_share_loops_with():
    _, B, C = chain()
    D = po.compute(C.shape, lambda i: C[i] + B[i], name="D")
    s = po.create_schedule(D)
    s[C].compute_with(s[B], B.op.axis[0])
    err = refused(po.SharedLoopsError, lambda: s[B].compute_inline())
    assert (err.primitive, err.stage, err.sharer) == ("compute_inline", "B", "C")


def test_cache_write_of_an_array_several_statements_write():
    @po.kernel
    def twice(A: po.f32[8], B: po.f32[8]):
        for i in range(8):
            B[i] = A[i]
        for i in range(8):
            B[i] = B[i] * 2.0

    s = po.create_schedule(twice)
    err = refused(po.AmbiguousWriterError, lambda: s.cache_write(twice.args[1], "local"))
    assert (err.array, err.writers) == ("B", ("S0", "S1"))


# -- order of primitives, reductions ---------------------------------------------------

def test_rfactor_of_a_non_reduction_stage_and_loop():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.NotAReductionError, lambda: s.rfactor(B, B.op.axis[0]))
    assert (err.primitive, err.stage, err.loop) == ("rfactor", "B", None)
    _, S, _ = row_sum()
    s = po.create_schedule(S)
    err = refused(po.NotAReductionError, lambda: s.rfactor(S, S.op.axis[0]))
    assert (err.primitive, err.stage, err.loop) == ("rfactor", "S", "i")


def test_cache_write_after_changing_the_loops():
    _, B = elementwise()
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    err = refused(po.PrimitiveOrderError, lambda: s.cache_write(B, "local"))
    assert (err.primitive, err.stage) == ("cache_write", "B")


def test_rfactor_before_attaching():
    _, S, k = row_sum()
    E = po.compute(S.shape, lambda i: S[i] * 2.0, name="E")
    s = po.create_schedule(E)
    s[S].compute_at(s[E], E.op.axis[0])
    err = refused(po.PrimitiveOrderError, lambda: s.rfactor(S, k))
    assert (err.primitive, err.before, err.stage) == ("rfactor", "compute_at", "S")


def test_unknown_pragma():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.UnknownPragmaError, lambda: s[B].pragma(B.op.axis[0], "unroll_explicit"))
    assert (err.pragma, err.stage) == ("unroll_explicit", "B")
    assert err.pragmas == ("import_llvm", "import_c", "unroll", "vectorize")


def test_auto_schedule_after_primitives():
    _, B = elementwise()
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    err = refused(po.AutoScheduleError, lambda: po.auto_schedule(s))
    assert (err.problem, err.steps) == ("primitives", ('s["B"].split("i", factor=4)',))


def test_store_predicate_other_than_one_store_per_group():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.StorePredicateError, lambda: s[B].set_store_predicate(B.op.axis[0]))
    assert err.stage == "B"


def test_expand_scalar_of_a_tensor_expression():
    _, B = elementwise()
    s = po.create_schedule(B)
    err = refused(po.InPlaceKernelError, lambda: s.expand_scalar("w"))
    assert (err.primitive, err.problem) == ("expand_scalar", "needs_kernel")


def test_template_needing_instructions_the_cpu_lacks():
    from polyopt.schedules.tensorized import bf16_matmul_template

    cpu = po.TargetInfo.for_cpu("znver3")
    assert not cpu.has_bf16  # the machine model says so: the template must refuse it
    A = po.placeholder((12, 40), name="A", dtype="bfloat16")
    packed = po.ops.pack_vnni_numpy(np.zeros((40, 50), "uint16"), columns=64, blocked=True,
                                    group=2)
    W = po.placeholder(packed.shape, name="W", dtype="bfloat16")
    C = po.ops.matmul_bf16(A, W)
    s = po.create_schedule(C)
    err = refused(po.MissingInstructionsError,
                  lambda: bf16_matmul_template(s, C, parallel=False, target_info=cpu))
    assert err.cpu == cpu.name and "BF16" in err.missing[0]
    assert isinstance(err, po.TensorizeError)


# -- legality and the counterexample printer ---------------------------------------------

def test_dependence_violation_carries_the_pair():
    scan = prefix_sum()
    s = po.create_schedule(scan)
    err = refused(po.DependenceViolationError, lambda: s["S0"].reverse("i"))
    v = err.violation
    assert err.transform.startswith("reverse") or "reverse" in err.transform
    assert v.dependence.kind == "flow" and v.dependence.array == "B"
    assert (v.source, v.sink, v.element) == ("S0[i=1]", "S0[i=2]", "B[1]")
    assert isinstance(err, po.IllegalScheduleError)
    assert str(err) == f"{err.transform} is illegal: {v.explain()}" + (
        f". Repair: {err.repair}" if err.repair else "")


def test_parallel_loop_that_carries_a_dependence():
    scan = prefix_sum()
    s = po.create_schedule(scan)
    err = refused(po.LoopCarriesDependenceError, lambda: s["S0"].parallel("i"))
    assert (err.loop, err.what) == ("i", "parallel loop")
    assert (err.violation.source, err.violation.sink) == ("S0[i=1]", "S0[i=2]")


def test_parallel_loop_with_a_race_on_a_recomputed_buffer():
    A = po.placeholder((10,), name="A")
    B = po.compute((10,), lambda i: A[i] * 2, name="B")
    C = po.compute((8,), lambda i: B[i] + B[i + 2], name="C")
    s = po.create_schedule(C)
    io, _ = s[C].split(C.op.axis[0], factor=4)
    s[B].compute_at(s[C], io)
    err = refused(po.LoopRaceError, lambda: s[C].parallel(io))
    assert err.loop == "i.outer" and err.repair
    assert err.race == "B[i_outer=0, i=4] writes B[4] that C[i=4] reads, in another iteration"


def test_a_rewrite_that_changes_values_names_the_read():
    n = po.var("N")

    @po.kernel
    def prefix(A: po.i32[n]):
        for i in range(1, n):
            A[i] += A[i - 1]

    s = po.create_schedule(prefix)
    io, _ = s["S0"].split("i", factor=4)
    AS = s.cache_read(prefix.args[0], "shared", ["S0"])
    err = refused(po.ChangedValuesError, lambda: s[AS].compute_at(s["S0"], io))
    assert err.what == "reads" and err.primitive.startswith("s[")
    assert err.example.kind == "read" and err.example.element.startswith("A[")
    assert err.example.original is not None  # (what the original order reads instead)


def test_one_printer_renders_every_kind():
    pair = Counterexample("flow", "S[i=0]", "T[i=1]", "A[0]", {"n": 2})
    assert describe(pair) == "S[i=0] writes A[0] that T[i=1] reads (when n=2)"
    assert str(pair) == describe(pair)
    assert describe(Counterexample("output", "S[i=0]", "S[i=1]", "A[0]", {}), "late") == \
        "S[i=0] and then S[i=1] write A[0], late"


# -- tensorize ---------------------------------------------------------------------------

def _vector_add_intrinsic(n=4):
    a = po.placeholder((n,), name="a")
    b = po.placeholder((n,), name="b")
    c = po.compute((n,), lambda i: a[i] + b[i], name="c")
    return po.decl_tensor_intrin(c.op, lambda ins, outs: po.tensorize.call_extern(
        "int32", "vadd", ins[0].access_ptr("r"), ins[1].access_ptr("r"),
        outs[0].access_ptr("w")), name="vadd")


def test_tensorize_mismatch():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    err = refused(po.TensorizeMismatchError,
                  lambda: s[B].tensorize(B.op.axis[0], _vector_add_intrinsic()))
    assert (err.stage, err.axis, err.intrinsic) == ("B", "i", "vadd")
    assert (err.problem, err.loops, err.intrinsic_loops) == ("loop_count", ("i", "j"), ("i",))
    assert isinstance(err, po.TensorizeError)


def test_already_tensorized():
    A = po.placeholder((8,), name="A")
    Bt = po.placeholder((8,), name="Bt")
    C = po.compute((8,), lambda i: A[i] + Bt[i], name="C")
    s = po.create_schedule(C)
    _, ii = s[C].split(C.op.axis[0], factor=4)
    s[C].tensorize(ii, _vector_add_intrinsic())
    err = refused(po.AlreadyTensorizedError,
                  lambda: s[C].tensorize(ii, _vector_add_intrinsic()))
    assert (err.stage, err.axis) == ("C", "i.inner")


# -- the classes themselves ----------------------------------------------------------

ALL = [getattr(po, name) for name in po.schedule_errors.__all__ +
       po.tensorize_errors.__all__ + po.lowering_errors.__all__]


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_every_class_is_a_polyopt_error_exported_at_the_top(cls):
    assert issubclass(cls, po.PolyoptError)
    assert issubclass(cls, (po.ScheduleError, po.InvalidArgumentError))
    assert cls.__doc__


def test_messages_render_from_the_attributes():
    err = po.NotEnoughLoopsError("P", 1, 2, shared_with="C", down_to="j")
    assert str(err) == "stage 'P' has 1 loops; it cannot share 2 loops of 'C' (down to 'j')"
    err = po.ScalarExpansionError(None, "no_store_after", statement="S3")
    assert str(err) == "expand_scalar: no store follows S3"
    assert set(po.ScalarExpansionError.PROBLEMS) >= {"not_a_scalar", "never_stored"}


def test_typed_errors_pickle_and_keep_their_attributes():
    err = po.SymbolicSplitError("B", "i", 65)
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is po.SymbolicSplitError and str(copy) == str(err)
    assert (copy.stage, copy.loop, copy.nparts) == ("B", "i", 65)
    again = err.with_message("context: " + str(err))
    assert type(again) is po.SymbolicSplitError and again.nparts == 65
    assert str(again).startswith("context: split(nparts=65)")


def test_lowering_classes_render_from_their_attributes():
    err = po.WorkGroupSizeError("k1", 4096, 1024, "OpenCL", shape=(64, 64, 1))
    assert (err.kernel, err.size, err.limit, err.shape) == ("k1", 4096, 1024, (64, 64, 1))
    assert "64x64x1" in str(err) and "threadIdx" in str(err)
    pair = Counterexample("flow", "B[i=7]", "C[i=8]", "B[7]", {"N": 9})
    race = po.WorkItemRaceError("B", pair, "work-group", "across_groups", kernel="k")
    assert str(race).startswith("B[i=7] writes B[7] that C[i=8] reads (when N=9): they run "
                                "in different work-groups of kernel k, and no barrier orders "
                                "work-groups. Split the computation")
    assert (race.example, race.unit, race.problem, race.kernel) == (pair, "work-group",
                                                                   "across_groups", "k")


# -- every class raised by a primitive or a pass: attributes, no free text -----------------

# parameters that would carry a pre-worded message instead of the objects involved
FREE_TEXT = {"reason", "message", "advice", "detail", "text", "hint"}
NOT_YET: dict[str, set] = {}  # (none left: every class renders its message)


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_no_class_takes_a_pre_worded_message(cls):
    import inspect
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert parameters & FREE_TEXT <= NOT_YET.get(cls.__name__, set()), cls.__name__
    if "PROBLEMS" in vars(cls):  # the way of failing is a key, its text the class's
        assert "problem" in parameters, cls.__name__

# one instance per way of failing, built from its attributes: each renders a message
# that names them (so the text cannot drift from the attributes)
EXAMPLES = [
    (po.TensorizeMismatchError, ("C", "i", "vadd", "foreign_statements"),
     {"statements": ("S1",)}, ("S1", "'i'", "'C'")),
    (po.TensorizeMismatchError, ("C", "i", "vadd", "reduction_kind"), {"reduction": True},
     ("'C' is a reduction", "'vadd' is not")),
    (po.TensorizeMismatchError, ("C", "i", "vadd", "no_update"), {}, ("'C'", "'vadd'")),
    (po.AutoScheduleError, ("scheduler",), {"scheduler": "isl gave up (timeout)"},
     ("isl gave up (timeout)", "max_operations")),
    (po.ThreadBindingError, ("i", "threadIdx.y", "several_accumulators"),
     {"statement": "S2"}, ("S2", "'i'", "threadIdx.y")),
    (po.BufferScopeError, ("X_shared", "shared", "two_kernels"), {"kernels": ("k0", "k1")},
     ("'X_shared'", "k0 and k1")),
    (po.BufferScopeError, ("B", "acc", "entry_shape"),
     {"shape": (8, 8), "device_shape": (16, 16)}, ("(8, 8)", "(16, 16)")),
    (po.BufferScopeError, ("T", "inp", "symbolic_extent"), {"extent": "n"}, ("'T'", " n;")),
    (po.DeviceCapacityError, ("__local memory", 70000, 65536),
     {"kernel": "k0", "device": "gpu"}, ("k0", "70000", "65536", "gpu")),
    (po.DeviceCapacityError, ("micro-op buffer", 9000, 8192), {}, ("9000", "8192")),
    (po.DeviceCapacityError, ("wgt buffer", 524288, 262144),
     {"buffer": "W", "shape": (64, 2, 16, 16), "dtype": "int8", "nbytes": 32768,
      "per": "per iteration of i", "threads": 2,
      "split": (("k",), 0, 64, 32, 131072, 262144)},
     ("'W'", "64x2x16x16", "x2 virtual threads", "loop over k by factor 32")),
    (po.AcceleratorMappingError, ("S3", "entry_shapes"),
     {"source": "A", "target": "A_inp", "shapes": ((1, 16), (16, 16))},
     ("'A'", "(1, 16)", "'A_inp'", "(16, 16)")),
    (po.AcceleratorMappingError, ("S4", "overwritten"), {"array": "X", "other": "Y"},
     ("S4", "'X'", "'Y'")),
]


@pytest.mark.parametrize("cls, args, kwargs, named", EXAMPLES,
                         ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_each_way_of_failing_renders_its_attributes(cls, args, kwargs, named):
    err = cls(*args, **kwargs)
    for value in named:
        assert value in str(err), (value, str(err))
    for key, value in kwargs.items():
        assert getattr(err, key) == value
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is cls and str(copy) == str(err)
    assert copy.__dict__ == err.__dict__


@pytest.mark.parametrize("cls", [c for c in ALL if "PROBLEMS" in vars(c)],
                         ids=lambda c: c.__name__)
def test_every_problem_of_a_class_renders(cls):
    """Each key of PROBLEMS formats with the class's attributes (no KeyError at the raise
    site of a rare failure)."""
    import inspect
    parameters = inspect.signature(cls.__init__).parameters
    positional = [p for p in parameters.values() if p.name not in ("self", "problem")
                  and p.default is inspect.Parameter.empty and p.kind != p.KEYWORD_ONLY]
    for problem in cls.PROBLEMS:
        names = list(parameters)[1:]
        args = []
        for name in names:
            if name == "problem":
                args.append(problem)
            elif parameters[name] in positional:
                args.append(f"<{name}>")
        err = cls(*args)
        assert err.problem == problem and str(err)


# -- the graph layer and the accelerator simulator: one class per way a model is refused ----

GRAPH = [getattr(po.graph, name) for name in po.graph.graph_errors.__all__]


@pytest.mark.parametrize("cls", GRAPH + [HazardError, ExportError], ids=lambda c: c.__name__)
def test_graph_classes_take_their_objects_not_a_message(cls):
    assert issubclass(cls, po.PolyoptError) and cls.__doc__
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self"}
    assert not parameters & FREE_TEXT, cls.__name__
    if "PROBLEMS" in vars(cls):
        assert "problem" in parameters, cls.__name__


# one instance per way of failing (every key of every PROBLEMS table), the attributes it
# keeps and the words its message must contain
GRAPH_EXAMPLES = [
    (po.graph.UnsupportedOperatorError, ("n", "Foo"), {}, ("'n'", "Foo")),
    (po.graph.UnknownOperatorError, ("n", "Trilu", "unknown"), {"supported": ("Add", "Relu")},
     ("'n'", "Trilu", "Add, Relu")),
    (po.graph.UnknownOperatorError, ("n", "ConvInteger", "int8"), {}, ("ConvInteger", "float32")),
    (po.graph.UnknownOperatorError, ("n", "Foo", "domain"), {"domain": "com.x"},
     ("com.x.Foo", "'com.x'")),
    (po.graph.UnknownOperatorError, ("n", "ConvPacked", "internal"), {"supported": ("Conv",)},
     ("ConvPacked is not an ONNX operator", "Conv")),
    (po.graph.UnsupportedAttributeError, ("n", "Relu", "alpha", ("beta",)), {},
     ("'alpha'", "beta")),
    (po.graph.UnsupportedAttributeError, (None, None, "g"), {"kind": "GraphProto"},
     ("'g'", "GraphProto")),
    (po.graph.UnsupportedAttributeValueError, ("n", "Pad", "mode", "median", ("edge",)), {},
     ("mode='median'", "'edge'")),
    (po.graph.UnsupportedDTypeError, ("n", "Sigmoid", "x", "int32", ("float32",)), {},
     ("'n'", "int32", "'x'", "float32")),
    (po.graph.UnsupportedDTypeError, ("n", "Relu", "x", "bool", ("float32",)), {},
     ("bool", "Cast")),
    (po.graph.UnsupportedDTypeError, (None, None, "x", 16, ("float32",)), {},
     ("'x'", "element type 16", "float32")),
    (po.graph.UnsupportedShapeError, ("n", "Conv", "w", (3, 3)), {"ranks": (4,)},
     ("'n'", "w", "[3, 3]", "4-D")),
    (po.graph.UnsupportedShapeError, ("n", "MatMul", "a", (3,)), {"min_rank": 2},
     ("[3]", "at least 2-D")),
    (po.graph.UnsupportedShapeError, ("n", "QLinearConv", "x_scale", (2,)),
     {"shapes": ((), (1,))}, ("x_scale", "[2]", "[] or [1]")),
    (po.graph.UnsupportedInputError, ("n", "LSTM", "optional", "P", "p"), {}, ("P", "remove")),
    (po.graph.UnsupportedInputError, ("n", "Gather", "constant", "indices", "i1"), {},
     ("indices", "'i1'", "constant")),
    (po.graph.UnsupportedCombinationError, ("n", "AveragePool", "partial_window"),
     {"ceil_mode": 1, "count_include_pad": 1}, ("ceil_mode=1", "count_include_pad=1")),
    (po.graph.UnsupportedCombinationError, ("n", "AveragePool", "dilated_padding"),
     {"dilations": (2, 2), "pads": (1, 1, 1, 1), "count_include_pad": 0}, ("dilations",)),
    (po.graph.UnsupportedCombinationError, ("n", "Pad", "wide_pads"),
     {"mode": "reflect", "pads": [(0, 3)], "shape": (2, 3), "most": 2},
     ("reflect", "(2, 3)", "at most 2")),
    (po.graph.UnsupportedCombinationError, ("n", "Gather", "gather_indices"),
     {"count": 65, "most": 64}, ("65 indices", "at most 64")),
    (po.graph.UnsupportedCombinationError, (None, "LSTM", "paired_recurrence"),
     {"seq": 5, "block": 32, "gates": 96}, ("seq=5", "block=32", "96")),
    (po.graph.RecurrenceAttributeError, ("n", "GRU", "activation_count"),
     {"names": ["Tanh"], "count": 2, "total": 2, "directions": 1}, ("['Tanh']", "2 functions")),
    (po.graph.RecurrenceAttributeError, ("n", "RNN", "unknown_activation"),
     {"name": "Cube", "supported": "Relu, Tanh"}, ("'Cube'", "Relu, Tanh")),
    (po.graph.RecurrenceAttributeError, ("n", "RNN", "clip"), {"clip": 0.0}, ("clip=0.0",)),
    (po.graph.RecurrenceAttributeError, ("n", "LSTM", "direction"), {"direction": "up"},
     ("'up'", "bidirectional")),
    (po.graph.RecurrenceAttributeError, ("n", "GRU", "layout"), {"layout": 2}, ("layout=2",)),
    (po.graph.OptionalOutputsError, ("n", "LSTM", 3, 1), {}, ("3 outputs", "computes 1")),
    (po.graph.NotFusableError, ("n", "GRU"), {}, ("'n'", "GRU")),
    (po.graph.OpsetError, (None, 13), {}, ("no opset",)),
    (po.graph.OpsetError, (1, 13, ValueError("no adapter")), {}, ("opset 1", "no adapter")),
    (po.graph.ConstantFoldError, ("n", "Shape", KeyError("x")), {}, ("'n'", "KeyError")),
    (po.graph.EinsumEquationError, ("e", "malformed", "ii,j"),
     {"faults": (("operands", (2, 1)), ("characters", "i1"), ("diagonal", "ii"))},
     ("2 operand term(s) for 1", "'i1'", "'ii' repeats")),
    (po.graph.EinsumEquationError, ("e", "unknown_letters", "i->z"), {"letters": "z"},
     ("names z",)),
    (po.graph.EinsumEquationError, ("e", "term_shape", "ijk->i"),
     {"term": "ijk", "input": "x0", "shape": [3, 4]}, ("'ijk'", "'x0'", "[3, 4]")),
    (po.graph.EinsumEquationError, ("e", "letter_sizes", "ij,jk"),
     {"letter": "j", "sizes": (4, 5)}, ("'j'", "4 and 5")),
    (po.graph.EinsumEquationError, ("e", "no_broadcast", "...i"),
     {"shapes": [(2,), (3,)]}, ("[(2,), (3,)]",)),
    (po.graph.EinsumEquationError, ("e", "mixed_dtypes", "i,i"),
     {"dtypes": ["float32", "int32"]}, ("float32", "Cast")),
    (po.graph.EinsumEquationError, ("e", "missing"), {}, ("'equation'",)),
    (po.graph.EinsumEquationError, ("e", "sums_ellipsis", "...i->i"), {}, ("'...i->i'",)),
    (po.graph.KernelSignatureError, ("g0", "Relu", "count"), {"expected": 2, "got": 3},
     ("'g0'", "takes 3 arguments", "passes 2")),
    (po.graph.KernelSignatureError, ("g0", "Relu", "dtype"),
     {"tensor": "y", "expected": "int32", "got": "float64"}, ("float64", "'y'", "int32")),
    (po.graph.KernelSignatureError, ("g0", "Relu", "shape"),
     {"tensor": "x", "expected": [4], "got": [8]}, ("'x'", "[8]", "[4]")),
    (po.graph.TooManyInputsError, ("n", "Relu", 1, ("x", "")), {}, ("at most 1", "(x, _)")),
    (po.graph.TensorTooLargeError, ("t", 2 << 30, 1 << 30), {"info": "float32[512, 2**20]"},
     ("'t'", "2.0 GiB", "1.0 GiB", "POLYOPT_MEMORY_LIMIT")),
    (po.graph.TensorTooLargeError, (None, 2 << 30, 1 << 30), {"largest": ("a", "b")},
     ("intermediate", "a, b")),
    (HazardError, ("deadlock",), {"waiting": {"compute": 0}}, ("deadlock", "compute: "
                                                                "instruction 0")),
    (HazardError, ("unordered",), {"instruction": 1, "other": 0, "buffer": "acc",
                                   "access": "writes", "program": ("Load", "Gemm")},
     ("instruction 1 (Gemm) writes acc", "instruction 0 (Load)")),
    (ExportError, ("offload",), {"groups": ("g1", "g2")}, ("g1, g2", "offload")),
    (ExportError, ("duplicate_output",), {"outputs": ("y", "y")}, ("['y', 'y']",)),
    (ExportError, ("no_buffer",), {"tensor": "t"}, ("'t'",)),
    (ExportError, ("recurrence",), {"nodes": ("node 'r' (GRU)",)}, ("node 'r' (GRU)",
                                                                    "forward LSTM")),
    (ExportError, ("lstm_runner",), {"groups": ("lstm0",)}, ("lstm0", "export_library")),
    (ExportError, ("symbolic_sizes",), {"groups": ("g",), "sizes": ("n",)}, ("(n)",)),
    (ExportError, ("argument",), {"groups": ("g",), "tensor": "x", "dtype": "float64",
                                  "shape": (8,)}, ("g", "x as float64[8]")),
]


@pytest.mark.parametrize("cls, args, kwargs, named", GRAPH_EXAMPLES,
                         ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_each_way_a_model_is_refused_renders_its_attributes(cls, args, kwargs, named):
    err = cls(*args, **kwargs)
    assert isinstance(err, po.InvalidArgumentError) or cls is HazardError
    kept = {**getattr(err, "attributes", {}), **getattr(err, "details", {}), **vars(err)}
    for key, value in kwargs.items():
        if key != "program":  # (the instructions are named in the message)
            assert kept[key] == value, key
    for value in named:
        assert value in str(err), (value, str(err))
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is cls and str(copy) == str(err)
    assert copy.__dict__.keys() == err.__dict__.keys()


def test_every_graph_problem_has_an_example():
    def problem(cls, args):
        names = list(inspect.signature(cls.__init__).parameters)[1:]
        return args[names.index("problem")]
    covered = {(cls, problem(cls, args)) for cls, args, _, _ in GRAPH_EXAMPLES
               if "PROBLEMS" in vars(cls)}
    wanted = {(cls, key) for cls in GRAPH + [ExportError] if "PROBLEMS" in vars(cls)
              for key in cls.PROBLEMS}
    assert wanted <= covered, wanted - covered
    assert {cls for cls, *_ in GRAPH_EXAMPLES} >= set(GRAPH)
