"""Regression tests of the promise: one per class of defect that differential testing
found (an accepted schedule computing other numbers, an exception that is not a
``PolyoptError``, a crash or a hang of isl).  Each builds its own program; the
numbers are checked against NumPy or a plain Python loop nest.

The two that once killed or stalled the process run in a subprocess under a time
limit, so that a regression fails the test instead of the test run.
"""

import subprocess
import sys
import textwrap

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.deps.dataflow import compute_dependences, flow_schedule
from polyopt.domain.affine import parts as isl_parts
from testlib.errors import pair, refused


def _run_isolated(code: str, folder, seconds: float = 60) -> subprocess.CompletedProcess:
    """Run ``code`` as a script in ``folder`` in a fresh Python; a hang or a signal is
    a failed assertion."""
    script = folder / "case.py"
    script.write_text(textwrap.dedent(code))
    try:
        done = subprocess.run([sys.executable, str(script)],
                              capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"did not finish in {seconds} s:\n{code}")
    assert done.returncode == 0, (f"exit status {done.returncode}\n{done.stdout}\n"
                                  f"{done.stderr[-3000:]}")
    return done


# -- loops named alike -----------------------------------------------------------------

def test_compute_at_a_loop_named_like_the_producers_reduce_axis():
    n = 5
    X = po.placeholder((n, n), name="X", dtype="int32")
    r = po.reduce_axis((0, n), name="r")
    rowsum = po.compute((n,), lambda i: po.sum(X[i, r], axis=r), name="rowsum")
    r2 = po.reduce_axis((0, n), name="r")            # the same name, another axis
    out = po.compute((n,), lambda i: po.sum(rowsum[i] * X[r2, i], axis=r2), name="out")
    s = po.create_schedule(out)
    s[rowsum].compute_at(s[out], out.op.reduce_axis[0])
    x = np.arange(n * n, dtype="int32").reshape(n, n) % 7 - 3
    result = np.zeros(n, "int32")
    po.build(s, [X, out])(x, result)
    np.testing.assert_array_equal(result, x.sum(1) * x.sum(0))


def test_reduce_axis_named_like_a_loop_of_its_own_compute():
    X = po.placeholder((4, 6), name="X", dtype="int32")
    r = po.reduce_axis((0, 6), name="i")              # named like the spatial axis
    total = po.compute((4,), lambda i: po.sum(X[i, r], axis=r), name="total")
    twice = po.compute((4,), lambda i: total[i] * 2, name="twice")
    s = po.create_schedule(twice)
    s[total].compute_at(s[twice], twice.op.axis[0])
    x = np.arange(24, dtype="int32").reshape(4, 6)
    result = np.zeros(4, "int32")
    po.build(s, [X, twice])(x, result)
    np.testing.assert_array_equal(result, 2 * x.sum(1))


# -- producers that do not write X[their own loop variables] ------------------------

LAYOUTS = {
    "transposed": ((5, 3), "{ [a, b] -> [b, a] }"),
    "packed": ((12, 2), "{ [a, b] -> [floor(a / 4), b, a mod 4] }"),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_compute_inline_of_a_cache_with_a_layout(layout):
    shape, relation = LAYOUTS[layout]
    A = po.placeholder(shape, name="A", dtype="float32")
    B = po.compute(shape, lambda i, j: A[i, j] * 3.0 - A[i, j], name="B")
    s = po.create_schedule(B)
    s.cache_read(A, "global", [B], layout=relation)
    s["A_global"].compute_inline()
    a = np.random.default_rng(1).standard_normal(shape).astype("float32")
    b = np.zeros(shape, "float32")
    po.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a * np.float32(3.0) - a)


@pytest.mark.parametrize("layout", LAYOUTS, ids=list(LAYOUTS))
def test_compute_at_of_a_cache_with_a_layout(layout):
    shape, relation = LAYOUTS[layout]
    A = po.placeholder(shape, name="A", dtype="float32")
    B = po.compute(shape, lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    s.cache_read(A, "global", [B], layout=relation)
    outer, _ = s[B].split(B.op.axis[0], factor=2)
    s["A_global"].compute_at(s[B], outer)
    a = np.random.default_rng(2).standard_normal(shape).astype("float32")
    b = np.zeros(shape, "float32")
    po.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1.0))


def test_rfactor_of_a_cache_with_a_layout():
    A = po.placeholder((6, 8), name="A", dtype="int32")
    k = po.reduce_axis((0, 8), name="k")
    C = po.compute((6, 6), lambda i, j: po.sum(A[i, k] * A[j, k], axis=k), name="C")
    s = po.create_schedule(C)
    s.cache_write(C, "local", layout="{ [i, j] -> [floor(j / 4), i, j mod 4] }")
    _, inner = s["C_local"].split("k", factor=3)
    s.rfactor("C_local", inner)
    a = np.random.default_rng(3).integers(-4, 5, (6, 8)).astype("int32")
    c = np.zeros((6, 6), "int32")
    po.build(s, [A, C])(a, c)
    np.testing.assert_array_equal(c, a @ a.T)


def test_cache_write_of_a_cache_with_a_layout_copies_what_it_holds():
    A = po.placeholder((10,), name="A", dtype="float32")
    B = po.compute((10,), lambda i: A[i] * 2.0, name="B")
    s = po.create_schedule(B)
    s.cache_read(A, "shared", [B], layout="{ [d] -> [floor(d / 4), d mod 4] }")
    s.cache_write("A_shared", "global")
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    po.build(s, [A, B])(a, b)
    np.testing.assert_array_equal(b, 2 * a)


# -- attachments ------------------------------------------------------------------------

def _two_nests():
    N, M = po.var("N"), po.var("M")

    @po.kernel
    def two_nests(A: po.f64[N], B: po.f64[N]):
        for i in range(N):
            for j in range(M):
                B[i] += 1.0
        for i in range(N):
            for j in range(M):
                A[i] = B[i] * 2.0 + A[i]
            A[i] += 1.0

    return two_nests


def _two_nests_reference(a, b, m):
    for i in range(len(b)):
        b[i] += m
    for i in range(len(a)):
        for _ in range(m):
            a[i] = b[i] * 2.0 + a[i]
        a[i] += 1.0


def test_compute_with_keeps_the_stages_that_shared_the_producers_loops():
    s = po.create_schedule(_two_nests())
    s["S1"].compute_with(s["S0"], "i")      # S2 shares S1's loop i: it follows
    a, b = np.arange(6.0), np.arange(6.0) * 3
    expected_a, expected_b = a.copy(), b.copy()
    _two_nests_reference(expected_a, expected_b, 4)
    po.build(s)(a, b, M=4)
    np.testing.assert_array_equal(a, expected_a)
    np.testing.assert_array_equal(b, expected_b)


def test_compute_with_below_a_stage_sharing_loops_is_refused_cleanly():
    s = po.create_schedule(_two_nests())
    err = refused(po.DependenceViolationError, lambda: s["S1"].compute_with(s["S0"], "j"))
    assert pair(err)[0::2] == ("S0[i=0, j=1]", "B[0]")


# -- bounded counterexamples, isl's limits -----------------------------------------------

def test_diamond_tile_of_a_tiled_reduction_is_refused_quickly(tmp_path):
    done = _run_isolated("""
        import polyopt as po
        n, m = po.var("n"), po.var("m")
        B = po.placeholder((n,), name="B", dtype="float64")
        k = po.reduce_axis((0, n), name="k")
        C = po.compute((m,), lambda i: po.sum(B[k], axis=k), name="C")
        s = po.create_schedule(C, strict_fp=True)  # the sums in their written order
        s[C].tile("i", "k", 3, 3)
        try:
            s[C].diamond_tile("i.outer", "k.outer", 8)
        except po.IllegalScheduleError as err:
            print(err)
    """, tmp_path, seconds=60)
    assert "is illegal: C_update[i=0, k=2] writes C[0] that C_update[i=0, k=3] reads" \
        in done.stdout


def test_dependences_after_a_cache_read_on_a_guarded_in_place_kernel(tmp_path):
    done = _run_isolated("""
        import polyopt as po
        N, T = po.var("N"), po.var("T")

        @po.kernel
        def guarded(A: po.f64[N, N]):
            for t in range(T):
                for i in range(1, N):
                    if i % 2 == 0:
                        for j in range(N):
                            A[j, i] += 1.0
                            A[i, i] = A[i, j] + A[i - 1, j]
                    for j in range(N):
                        A[j, i] = 1.0

        s = po.create_schedule(guarded)
        s.cache_read("A", "local", ["S1"])
        print(len(po.deps(s)))
    """, tmp_path)
    assert int(done.stdout) > 0


def test_constant_schedule_columns_do_not_change_dependences():
    n = po.var("n")
    A = po.placeholder((n, n), name="A")
    B = po.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    k = po.reduce_axis((0, n), name="k")
    C = po.compute((n,), lambda i: po.sum(B[i, k], axis=k), name="C")
    program = po.create_schedule(C).program
    compact = flow_schedule(program)
    full = program.schedule_map()
    width = [next(iter(isl_parts(u))).dim(isl.dim_type.out) for u in (compact, full)]
    assert width == [4, 6]
    # the same order of every pair of instances
    assert full.lex_lt_union_map(full).is_equal(compact.lex_lt_union_map(compact))
    deps = compute_dependences(program)
    assert {(d.kind, d.source, d.sink) for d in deps} == {
        ("flow", "B", "C_update"), ("flow", "C_init", "C_update"),
        ("flow", "C_update", "C_update"), ("output", "C_init", "C_update"),
        ("anti", "C_update", "C_update"), ("output", "C_update", "C_update")}
    assert deps.flow[0].relation.is_equal(isl.Map(
        "[n] -> { B[i, j] -> C_update[i, j] : 0 <= i < n and 0 <= j < n }"))


def test_accesses_with_and_without_size_constraints_in_one_analysis():
    N, M = po.var("N"), po.var("M")

    @po.kernel
    def triangle(B: po.f64[N]):
        for i in range(2, N, 2):
            for j in range(i):
                for k in range(1, i):
                    B[j] = B[k + 1] + B[j]
                for k in range(0, M - 2):
                    B[j] = B[i - 2]

    s = po.create_schedule(triangle)
    s.cache_write(s["S0"], "global")

    def reference(b, m):
        n = len(b)
        for i in range(2, n, 2):
            for j in range(i):
                for k in range(1, i):
                    b[j] = b[k + 1] + b[j]
                for k in range(0, m - 2):
                    b[j] = b[i - 2]

    b = np.linspace(-1, 1, 9)
    expected = b.copy()
    reference(expected, 4)
    po.build(s)(b, M=4)
    np.testing.assert_array_equal(b, expected)


# -- empty domains ------------------------------------------------------------------------

def test_transform_of_a_reduction_over_nothing():
    A = po.placeholder((7,), name="A", dtype="float32")
    k = po.reduce_axis((0, 7), name="k")
    C = po.compute((3,), lambda i: po.sum(A[k], axis=k, where=k > 9), name="C")
    s = po.create_schedule(C)
    s[C].transform("{ [a, b] -> [b, a] }")
    c = np.full(3, 5.0, "float32")
    po.build(s, [A, C])(np.ones(7, "float32"), c)
    np.testing.assert_array_equal(c, np.zeros(3, "float32"))


# -- arguments ------------------------------------------------------------------------------

def test_fuse_of_loops_whose_extent_isl_cannot_bound_runs_them_as_one():
    N = po.var("N")

    @po.kernel
    def strided(A: po.f64[N, N]):
        for t in range(N):
            for i in range(0, N, 2):
                A[t, i] = A[t, i] * 0.5

    s = po.create_schedule(strided)
    s["S0"].tile("t", "i", 4, 3)
    fused = s["S0"].fuse("t.outer", "i.outer")  # both extents symbolic: the two loops
    assert [a.name for a in s["S0"].axes] == ["t.outer.i.outer.fused", "t.inner", "i.inner"]
    err = refused(po.FusedPartsError, lambda: s["S0"].split(fused, factor=2))
    assert (err.stage, err.loop) == ("S0", "t.outer.i.outer.fused")


@pytest.mark.parametrize("call", [
    lambda s, B: s[B].split("i", factor=10**20),
    lambda s, B: s[B].split("i", factor=np.int64(2**40)),
    lambda s, B: s[B].shift("i", -(2**63)),
    lambda s, B: s[B].skew("i", "i", 2.5),
], ids=["huge factor", "numpy factor", "huge offset", "float factor"])
def test_out_of_range_integer_arguments(call):
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match="must be"):
        call(s, B)


def test_reorder_of_one_loop_or_none_changes_nothing():
    A = po.placeholder((8, 4), name="A")
    B = po.compute((8, 4), lambda i, j: A[i, j] * 2.0, name="B")
    s = po.create_schedule(B)
    before = str(po.lower(s, [A, B]))
    s[B].reorder()
    s[B].reorder(B.op.axis[1])
    assert str(po.lower(s, [A, B])) == before


def test_deeply_nested_json_schedule():
    N = po.var("N")

    @po.kernel
    def bump(A: po.f64[N]):
        for i in range(N):
            A[i] += 1.0

    deep = '{"statements": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(po.ScheduleFormatError, match="nested too deeply"):
        po.check(po.create_schedule(bump), schedule=deep)


def test_a_hand_written_schedule_of_statements_without_instances():
    @po.kernel
    def nothing_to_do(A: po.f64[5, 5]):
        for i in range(2, 3):
            for j in range(2, i):
                A[j, i] = A[j + 1, i] * 0.5

    report = po.check(po.create_schedule(nothing_to_do), schedule="{ S0[i, j] -> [j, i] }")
    assert report.legal and report.violations == ()


def test_transform_takes_a_map():
    A = po.placeholder((5, 6), name="A")
    C = po.compute((5, 6), lambda i, j: A[i, j] + 1.0, name="C")
    s = po.create_schedule(C)
    with pytest.raises(po.InvalidArgumentError, match="transform takes an isl map"):
        s[C].transform(5)


def test_an_anti_dependence_refusal_names_the_element_the_writer_overwrites():
    @po.kernel
    def smooth(B: po.f64[8]):
        for i in range(2, 6):
            B[i] = (B[i + 1] + B[i + 2]) * 0.5

    s = po.create_schedule(smooth)
    with pytest.raises(po.IllegalScheduleError) as refusal:
        s["S0"].reverse("i")
    violation = refusal.value.violation
    assert violation.dependence.kind == "anti"
    assert (violation.source, violation.sink, violation.element) == ("S0[i=2]", "S0[i=3]",
                                                                     "B[3]")


def test_replay_takes_a_script_or_steps():
    A = po.placeholder((5, 6), name="A")
    C = po.compute((5, 6), lambda i, j: A[i, j] + 1.0, name="C")
    s = po.create_schedule(C)
    with pytest.raises(po.InvalidArgumentError, match="replay takes the text of s.script()"):
        s.replay(None)


def test_wavefront_after_diamond_tiles_is_checked_quickly(tmp_path):
    """The legality tests work on pairs of times: composing the schedule rows with the
    lexicographic order first took 30-50 s on this tiled schedule."""
    done = _run_isolated("""
        import polyopt as po
        n = 6
        A = po.placeholder((n, n), name="A", dtype="float32")
        k = po.reduce_axis((0, 2), name="k")
        C = po.compute((n, n), lambda i, j: po.max(
            po.if_then_else(j + k < n, A[i, j + k], 0.0), axis=k), name="C")
        s = po.create_schedule(C)
        s["C"].diamond_tile("i", "j", 4)
        s["C"].reorder("i", "i.diamond")
        s["C"].wavefront("j.diamond", "i.diamond", "j")
        print(s.script().count("parallel"))
    """, tmp_path, seconds=20)
    assert int(done.stdout) >= 1


@pytest.mark.parametrize("outputs", ["stage", "number in a list", "None", "name"])
def test_create_schedule_of_something_else(outputs):
    A = po.placeholder((3,), name="A")
    B = po.compute((3,), lambda i: A[i] * 2.0, name="B")
    bad = {"stage": po.create_schedule(B)[B], "number in a list": [B, 3], "None": None,
           "name": "B"}[outputs]
    with pytest.raises(po.InvalidArgumentError, match="create_schedule takes computed tensors"):
        po.create_schedule(bad)


def test_transform_with_a_size_the_program_does_not_have():
    A = po.placeholder((5, 6), name="A")
    C = po.compute((5, 6), lambda i, j: A[i, j] + 1.0, name="C")
    s = po.create_schedule(C)
    with pytest.raises(po.InvalidArgumentError, match="uses Q, which is not a var"):
        s[C].transform("[Q] -> { [a0, a1] -> [a0 + Q, a1] }")


def test_a_refusal_without_a_concrete_pair_names_the_relation(monkeypatch):
    """The last resort of the witness search: when isl cannot give a pair, the refusal
    still comes, naming the dependence's violating relation."""
    from polyopt.deps import counterexample

    def no_pair(pairs):
        raise isl.Error("no witness")

    monkeypatch.setattr(counterexample, "first_point", no_pair)
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((7,), lambda i: B[i + 1] + 1.0, name="C")
    s = po.create_schedule(C)
    err = refused(po.DependenceViolationError, lambda: s[B].compute_with(s[C], C.op.axis[0]))
    assert err.violation.source == "an instance of B"
    assert err.violation.sink.startswith("an instance of C (B[i] ->")  # the relation


def test_strict_fp_sums_in_the_written_order_bit_for_bit():
    """strict_fp=True: LLVM gets no reassociation flags, so a float32 sum equals the
    sequential float32 accumulation exactly (with them, LLVM may vectorize it and round
    differently: 148 of 300 random inputs differed)."""
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    k = po.reduce_axis((0, n), name="k")
    P = po.compute((n,), lambda i: po.sum(po.if_then_else(k <= i, A[k], 0.0), axis=k),
                   name="P")
    s = po.create_schedule(P, strict_fp=True)
    s[P].reverse(P.op.axis[0])
    f = po.build(s, [A, P])
    assert "reassoc" not in f.get_source("ll")
    assert "strict_fp" in str(po.lower(s, [A, P]))
    rng = np.random.default_rng(5)
    for _ in range(100):
        a = rng.standard_normal(37).astype(np.float32)
        got = np.zeros_like(a)
        f(a, got)
        expected, total = np.empty_like(a), np.float32(0)
        for i, value in enumerate(a):
            total = np.float32(total + value)
            expected[i] = total
        np.testing.assert_array_equal(got, expected)
