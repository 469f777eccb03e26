"""compute_at, cache_read and compute_root on in-place kernels: accepted exactly when the
rewritten kernel computes the same values (checked by comparing dataflow), with numbers
against plain Python references and refusals that name the read or element that would
change."""

import functools

import re

import numpy as np
import pytest

import polyopt as po
from polyopt.deps.counterexample import ChangedValue, ValueSource
from testlib.errors import read_change, refused
from testlib.kernels import jacobi_1d, jacobi_1d_ref, seidel_2d

N, M, K = po.var("N"), po.var("M"), po.var("K")
SIZES = (0, 1, 2, 5, 8, 11)


@po.kernel
def pointwise(A: po.f64[N], B: po.f64[N], C: po.f64[N]):
    for i in range(N):
        B[i] = A[i] * 2
    for i in range(N):
        C[i] = B[i] * 3


@po.kernel
def mirrored(A: po.f64[N], B: po.f64[N], C: po.f64[N]):
    for i in range(N):
        B[i] = A[i] * 2
    for i in range(N):
        C[i] = B[i] + B[N - 1 - i]


@po.kernel
def blur(A: po.f64[N], B: po.f64[N], C: po.f64[N]):
    for i in range(N):
        B[i] = A[i] * 2
    for i in range(1, N - 1):
        C[i] = B[i - 1] + B[i + 1]


@po.kernel
def doubled_in_place(A: po.f64[N], C: po.f64[N]):
    for i in range(N):
        A[i] = A[i] * 2
    for i in range(N):
        C[i] = A[i] + A[N - 1 - i]


@po.kernel
def matmul_then_scale(A: po.f64[M, K], B: po.f64[K, N], C: po.f64[M, N], D: po.f64[M, N]):
    for i in range(M):
        for j in range(N):
            C[i, j] = 0.0
    for i in range(M):
        for j in range(N):
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]
    for i in range(M):
        for j in range(N):
            D[i, j] = C[i, j] * 2


def _run(s, arrays, **sizes):
    copies = [a.copy() for a in arrays]
    po.build(s)(*copies, **sizes)
    return copies


def _vectors(n, count):
    rng = np.random.default_rng(n)
    return [rng.random(n) for _ in range(count)]


@pytest.mark.parametrize("n", SIZES)
def test_compute_at_fuses_a_producer_into_the_consumer_tiles(n):
    s = po.create_schedule(pointwise)
    io, _ = s["S1"].split("i", factor=4)
    s["S0"].compute_at(s["S1"], io)
    a, b, c = _run(s, _vectors(n, 3))
    np.testing.assert_array_equal(b, _vectors(n, 3)[0] * 2)
    np.testing.assert_array_equal(c, _vectors(n, 3)[0] * 6)
    text = str(po.lower(s))
    assert text.index("i_outer") < text.index("B[i] = A[i] * 2")


@pytest.mark.parametrize("n", SIZES)
def test_compute_at_recomputes_what_two_tiles_both_read(n):
    s = po.create_schedule(mirrored)
    io, _ = s["S1"].split("i", factor=3)
    s["S0"].compute_at(s["S1"], io)
    assert s.program.statement("S0").dims == ("i_outer", "i")
    a, b, c = _run(s, _vectors(n, 3))
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(c, 2 * a + 2 * a[::-1])


def test_compute_at_refused_when_an_element_would_no_longer_be_written():
    s = po.create_schedule(blur)
    io, _ = s["S1"].split("i", factor=4)
    err = refused(po.ChangedValuesError, lambda: s["S0"].compute_at(s["S1"], io))
    assert (err.primitive, err.what) == ('s["S0"].compute_at("S1", "i.outer")', "leaves")
    assert err.example == ChangedValue("unwritten", "B[0]", ValueSource("written", "S0[i=0]"),
                                       {"N": 1})
    assert [str(step) for step in s.steps] == ['s["S1"].split("i", factor=4)']


def test_compute_at_refused_when_a_recomputation_reads_its_own_update():
    s = po.create_schedule(doubled_in_place)
    io, _ = s["S1"].split("i", factor=2)
    err = refused(po.ChangedValuesError, lambda: s["S0"].compute_at(s["S1"], io))
    assert err.what == "reads"
    reader, element, source, original = read_change(err)
    assert re.fullmatch(r"S0\[i=\d\]", reader) and re.fullmatch(r"A\[\d\]", element)
    assert source.kind == "written" and re.fullmatch(r"S0\[i=\d\]", source.at), source
    assert original.kind == "entry" and re.fullmatch(r"A\[\d\]", original.at), original
    assert not s["S0"].can_compute_at(s["S1"], io)


@pytest.mark.parametrize("shape", [(3, 5, 4), (6, 7, 1), (1, 1, 1), (5, 8, 3)])
def test_compute_at_of_an_update_chain_takes_its_earlier_updates(shape):
    m, n, k = shape
    s = po.create_schedule(matmul_then_scale)
    io, jo, _, _ = s["S2"].tile("i", "j", 2, 4)
    s["S1"].compute_at(s["S2"], jo)
    rng = np.random.default_rng(0)
    a, b = rng.random((m, k)), rng.random((k, n))
    _, _, c, d = _run(s, [a, b, np.zeros((m, n)), np.zeros((m, n))])
    np.testing.assert_allclose(c, a @ b)
    np.testing.assert_allclose(d, 2 * (a @ b))


@pytest.mark.parametrize("n, steps", [(3, 1), (7, 3), (12, 4), (2, 2)])
def test_cache_read_in_a_time_loop_filled_once_per_tile(n, steps):
    s = po.create_schedule(jacobi_1d)
    io, _ = s["S0"].split("i", factor=4)
    AL = s.cache_read("A", "local", ["S0"])
    s[AL].compute_at(s["S0"], io)
    text = str(po.lower(s))
    copy = "A_local[(ax0 - 4 * i_outer + 1)] = A[ax0]"  # a buffer of the tile's footprint
    assert "float64 A_local[6];" in text and text.index("for (t") < text.index(copy)
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n)
    ours = _run(s, [a, b], T=steps)
    ref_a, ref_b = a.copy(), b.copy()
    jacobi_1d_ref(ref_a, ref_b, steps)
    np.testing.assert_array_equal(ours[0], ref_a)
    np.testing.assert_array_equal(ours[1], ref_b)
    assert 's.cache_read("A", "local", ["S0"])' in s.script()


def test_cache_read_alone_copies_right_before_each_read():
    s = po.create_schedule(seidel_2d)
    s.cache_read("A", "local", ["S0"])
    a = np.random.default_rng(1).random((6, 6))
    ours, = _run(s, [a], T=2)
    ref, = _run(po.create_schedule(seidel_2d), [a], T=2)
    np.testing.assert_array_equal(ours, ref)


def test_cache_read_refused_when_the_array_changes_inside_the_tile():
    s = po.create_schedule(seidel_2d)
    io, _ = s["S0"].split("i", factor=4)
    AL = s.cache_read("A", "local", ["S0"])
    err = refused(po.ChangedValuesError, lambda: s[AL].compute_at(s["S0"], io))
    assert (err.primitive, err.what) == ('s["A_local"].compute_at("S0", "i.outer")', "reads")
    assert err.example == ChangedValue("read", "A[1, 1]", ValueSource("entry", "A[1, 1]"),
                                       {"N": 4, "T": 1}, "S0[t=0, i=1, j=2]",
                                       ValueSource("written", "S0[t=0, i=1, j=1]"))
    s[AL].compute_at(s["S0"], "j")  # the innermost loop stays legal


def test_compute_root_after_compute_at_restores_the_producer():
    s = po.create_schedule(mirrored)
    io, _ = s["S1"].split("i", factor=3)
    s["S0"].compute_at(s["S1"], io)
    s["S0"].compute_root()
    assert s.program.statement("S0").dims == ("i",)
    a, b, c = _run(s, _vectors(7, 3))
    np.testing.assert_array_equal(c, 2 * a + 2 * a[::-1])


def test_unchecked_rewrite_is_caught_by_check():
    s = po.create_schedule(doubled_in_place)
    io, _ = s["S1"].split("i", factor=2)
    s["S0"].compute_at(s["S1"], io, check=False)
    assert not s.is_legal()
    err = refused(po.ChangedValuesError, s.check)
    assert err.what == "reads" and err.example.element.startswith("A[")


def test_rewrites_replay_on_a_fresh_schedule():
    s = po.create_schedule(jacobi_1d)
    io, _ = s["S0"].split("i", factor=4)
    s[s.cache_read("A", "local", ["S0"])].compute_at(s["S0"], io)
    fresh = po.create_schedule(jacobi_1d).replay(s.script())
    assert str(po.lower(fresh)) == str(po.lower(s))


def test_kernel_cache_read_takes_one_reader():
    s = po.create_schedule(jacobi_1d)
    with pytest.raises(po.InPlaceKernelError) as refused:
        s.cache_read("A", "local", ["S0", "S1"])
    assert (refused.value.primitive, refused.value.problem) == ("cache_read", "one_reader")
    assert s.steps == []


@po.kernel
def scratch(A: po.f64[N], T: po.f64[N], C: po.f64[N]):
    for i in range(N):
        T[i] = A[i] * 2
    for i in range(1, N):
        C[i] = T[i] + T[i - 1]
    for i in range(N):
        T[i] = 0.0


@pytest.mark.parametrize("n", SIZES)
def test_compute_inline_substitutes_a_scratch_value(n):
    s = po.create_schedule(scratch)
    s["S0"].compute_inline()
    assert [st.name for st in s.program.stages] == ["S1", "S2"]
    assert "C[i] = A[i] * 2 + A[i - 1] * 2;" in str(po.lower(s))
    a, t, c = _vectors(n, 3)
    _, t2, c2 = _run(s, [a, t, c])
    expected = c.copy()
    expected[1:] = 2 * a[1:] + 2 * a[:-1]
    np.testing.assert_array_equal(c2, expected)
    np.testing.assert_array_equal(t2, np.zeros(n))


@po.kernel
def scratch_kept(A: po.f64[N], T: po.f64[N], C: po.f64[N]):
    for i in range(N):
        T[i] = A[i] * 2
    for i in range(N):
        C[i] = T[i] + 1


@po.kernel
def input_overwritten(A: po.f64[N], T: po.f64[N], C: po.f64[N]):
    for i in range(N):
        T[i] = A[i] * 2
    for i in range(N):
        A[i] = 0.0
    for i in range(N):
        C[i] = T[i] + 1
    for i in range(N):
        T[i] = 0.0


def test_compute_inline_refusals_on_kernels():
    err = refused(po.ChangedValuesError,
                  lambda: po.create_schedule(scratch_kept)["S0"].compute_inline())
    assert err.what == "leaves" and (err.example.kind, err.example.element) == ("unwritten",
                                                                                "T[0]")
    err = refused(po.ChangedValuesError,
                  lambda: po.create_schedule(input_overwritten)["S0"].compute_inline())
    assert err.what == "reads" and read_change(err) == (
        "S2[i=0]", "A[0]", ValueSource("written", "S1[i=0]"), ValueSource("entry", "A[0]"))
    s = po.create_schedule(jacobi_1d)
    err = refused(po.CannotInlineError, lambda: s["S0"].compute_inline())
    assert (err.stage, err.problem, err.reader, err.array) == ("S0", "partly_read", "S1", "B")
    s = po.create_schedule(pointwise)
    io, _ = s["S1"].split("i", factor=4)
    s["S0"].compute_at(s["S1"], io)
    err = refused(po.PrimitiveOrderError, lambda: s["S0"].compute_inline())
    assert (err.primitive, err.before, err.stage, err.in_place) == (
        "compute_inline", "compute_at and caches", "S0", True)


def test_a_buffer_shared_by_parallel_tiles_is_refused():
    s = po.create_schedule(jacobi_1d)
    io, _ = s["S0"].split("i", factor=4)
    s["S0"].parallel(io)
    err = refused(po.LoopCarriesDependenceError, lambda: s.cache_read("A", "local", ["S0"]))
    assert (err.loop, err.what, err.violation.dependence.array) == ("i.outer", "parallel loop",
                                                                    "A_local")
    assert len(s.steps) == 2


@po.kernel
def matmul(A: po.f64[M, K], B: po.f64[K, N], C: po.f64[M, N]):
    for i in range(M):
        for j in range(N):
            C[i, j] = 0.0
    for i in range(M):
        for j in range(N):
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]


@functools.cache
def _register_tiled_matmul():
    s = po.create_schedule(matmul)
    io, jo, ii, ji = s["S1"].tile("i", "j", 4, 8)
    s["S1"].reorder(io, jo, "k", ii, ji)
    s.cache_write("S1", "local")
    s["C_local_in"].compute_at(s["S1"], jo)
    s["C_local_out"].compute_at(s["S1"], jo)
    return s


@pytest.mark.parametrize("shape", [(9, 11, 5), (8, 16, 3), (1, 1, 1), (3, 2, 0), (0, 4, 2)])
def test_cache_write_accumulates_a_tile_in_a_buffer(shape):
    m, n, k = shape
    s = _register_tiled_matmul()
    rng = np.random.default_rng(k)
    a, b, c = rng.random((m, k)), rng.random((k, n)), rng.random((m, n))
    _, _, ours = _run(s, [a, b, c])
    np.testing.assert_allclose(ours, a @ b)
    text = str(po.lower(s))
    assert "float64 C_local[4][8];" in text  # the tile's footprint: a register tile
    tile = text[text.index("for (j_outer"):]
    buffer = "C_local[(ax0 - 4 * i_outer), (ax1 - 8 * j_outer)]"
    assert tile.index(f"{buffer} = C[ax0, ax1]") < tile.index("for (k") \
        < tile.index(f"C[ax0, ax1] = {buffer}")


def test_cache_write_copies_around_each_instance_until_moved():
    s = po.create_schedule(matmul)
    s.cache_write("S1", "local")
    assert [st.name for st in s.program.stages] == ["S0", "C_local_in", "S1", "C_local_out"]
    a, b = np.ones((3, 2)), np.ones((2, 4))
    np.testing.assert_array_equal(_run(s, [a, b, np.zeros((3, 4))])[2], np.full((3, 4), 2.0))


def test_cache_write_needs_the_stage_when_several_write_the_array():
    from testlib.kernels import lu

    s = po.create_schedule(lu)
    err = refused(po.AmbiguousWriterError, lambda: s.cache_write("A", "local"))
    assert (err.array, err.writers) == ("A", ("S0", "S1"))


def test_cache_write_copy_in_refused_above_another_writer():
    from testlib.kernels import lu, lu_ref

    s = po.create_schedule(lu)
    s.cache_write("S1", "local")
    # the copy would run after the i loop
    err = refused(po.ChangedValuesError, lambda: s["A_local_in"].compute_at(s["S1"], "k"))
    assert err.what == "reads" and read_change(err)[:3] == (
        "S1[k=0, i=1, j=1]", "A[0, 1]", ValueSource("unset", "A_local"))
    s["A_local_in"].compute_at(s["S1"], "i")
    s["A_local_out"].compute_at(s["S1"], "i")
    a = np.random.default_rng(3).random((7, 7)) + 7 * np.eye(7)
    ref = a.copy()
    lu_ref(ref)
    np.testing.assert_allclose(_run(s, [a])[0], ref)


@po.kernel
def accumulate(A: po.f64[M, K], B: po.f64[K, N], C: po.f64[M, N]):
    for i in range(M):
        for j in range(N):
            for k in range(K):
                C[i, j] += A[i, k] * B[k, j]


@po.kernel
def column_sums(A: po.f64[N, M], x: po.f64[N], y: po.f64[M]):
    for i in range(N):
        for j in range(M):
            y[j] += A[i, j] * x[i]


@pytest.mark.parametrize("shape", [(5, 3, 10), (2, 7, 4), (1, 1, 1), (3, 2, 0)])
def test_rfactor_splits_a_kernel_sum_into_parallel_partial_sums(shape):
    m, n, k = shape
    s = po.create_schedule(accumulate)
    _, ki = s["S0"].split("k", factor=4)
    CF = s.rfactor("S0", ki)
    assert CF.name == "C.rf"
    assert [st.name for st in s.program.stages] == ["C_rf_init", "C_rf", "S0"]
    s["C_rf"].parallel(s["C_rf"].axes[0])
    rng = np.random.default_rng(k)
    a, b, c = rng.random((m, k)), rng.random((k, n)), rng.random((m, n))
    np.testing.assert_allclose(_run(s, [a, b, c])[2], c + a @ b)
    assert "#pragma parallel\n  for (k_inner = 0;" in str(po.lower(s))


@pytest.mark.parametrize("n", [0, 1, 7, 12])
def test_rfactor_over_an_outer_loop(n):
    s = po.create_schedule(column_sums)
    io, _ = s["S0"].split("i", factor=3)
    s.rfactor("S0", io)
    s["y_rf"].parallel(s["y_rf"].axes[0])
    assert "float64 y_rf[maximum((N + 2) // 3, 0)][M];" in str(po.lower(s))
    rng = np.random.default_rng(n)
    a, x, y = rng.random((n, 4)), rng.random(n), rng.random(4)
    np.testing.assert_allclose(_run(s, [a, x, y])[2], y + a.T @ x)


def test_rfactor_refusals_on_kernels():
    from testlib.kernels import lu

    with pytest.raises(po.InPlaceKernelError) as refused:
        po.create_schedule(lu).rfactor("S1", "j")
    assert (refused.value.primitive, refused.value.problem, refused.value.stage) == (
        "rfactor", "not_alone", "S1")
    with pytest.raises(po.NotAReductionError) as refused:
        po.create_schedule(doubled_in_place).rfactor("S0", "i")
    assert (refused.value.stage, refused.value.update, refused.value.array) == (
        "S0", "addend", "A")
    s = po.create_schedule(matmul)
    s.cache_write("S1", "local")
    with pytest.raises(po.PrimitiveOrderError) as refused:
        s.rfactor("S1", "k")
    assert (refused.value.primitive, refused.value.stage) == ("rfactor", "S1")


def test_rewrites_after_rfactor_are_validated_against_the_factored_kernel():
    s = po.create_schedule(accumulate)
    ko, ki = s["S0"].split("k", factor=2)
    s.rfactor("S0", ki)
    s.cache_write("C_rf", "local")
    s["C_rf_local_in"].compute_at(s["C_rf"], "i")
    s["C_rf_local_out"].compute_at(s["C_rf"], "i")
    rng = np.random.default_rng(5)
    a, b, c = rng.random((3, 5)), rng.random((5, 4)), rng.random((3, 4))
    np.testing.assert_allclose(_run(s, [a, b, c])[2], c + a @ b)
    # copied in at every step but out once per row: the running sum would be lost
    err = refused(po.ChangedValuesError,
                  lambda: s["C_rf_local_in"].compute_at(s["C_rf"], s["C_rf"].axes[-1]))
    assert err.what == "reads"
    reader, element, source, _ = read_change(err)
    assert reader.startswith("C_rf_update[") and element.startswith("C_rf[")
    assert source.kind == "written" and source.at.startswith("C_rf_init["), source


def test_a_chain_of_copies_longer_than_followed_is_refused_not_accepted(monkeypatch):
    """Copies that re-copy what they copied (here: copies around every LU update of the
    whole footprint, unchanged elements included) form chains as long as N; past the
    length the validation follows, the read is refused, never left unchecked."""
    from polyopt.transform import inplace
    from testlib.kernels import lu

    monkeypatch.setattr(inplace, "_for_stage", lambda stage, footprint: footprint)
    err = refused(po.ChangedValuesError, lambda: po.create_schedule(lu).cache_write("S1", "local"))
    assert err.what == "reads" and err.example.source == ValueSource("unresolved")
