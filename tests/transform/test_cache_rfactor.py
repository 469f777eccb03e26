"""Schedule-level primitives that add stages: cache_read, cache_write and rfactor.

Float data are small integers, so that every sum is exact in any order: the results
must equal NumPy's and the default schedule's bit for bit.
"""

import re

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from testlib.errors import pair, read_change, refused
from testlib.numeric import assert_numbers
from testlib.schedules import axis_names, irand, lowered, run


def matmul(M, N, K, dtype="float32"):
    A = po.placeholder((M, K), name="A", dtype=dtype)
    B = po.placeholder((K, N), name="B", dtype=dtype)
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def symbolic_matmul():
    return matmul(po.var("M"), po.var("N"), po.var("K"))


MATMUL_SIZES = [(7, 6, 5), (8, 8, 8), (1, 1, 1), (9, 3, 0), (0, 4, 2), (5, 13, 11)]


def check_matmul(s, A, B, C, m, n, k):
    a, b = irand(m, k), irand(k, n)
    got = run(s, [A, B, C], [a, b], M=m, N=n, K=k)
    assert_numbers(got, a @ b)  # integers: bit for bit
    assert_numbers(got, run(po.create_schedule(C), [A, B, C], [a, b], M=m, N=n, K=k))


def fix(domain, dims=(), **params):
    """``domain`` with parameters (by name) and its first dimensions fixed."""
    names = domain.get_space().get_var_names(isl.dim_type.param)
    for name, value in params.items():
        domain = domain.fix_val(isl.dim_type.param, names.index(name), isl.Val(value))
    for pos, value in enumerate(dims):
        domain = domain.fix_val(isl.dim_type.set, pos, isl.Val(value))
    return domain


# -- cache_read --------------------------------------------------------------------------------

def test_cache_read_at_the_root():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    assert AS.name == "A.shared" and AS.dtype == "float32"
    assert [st.name for st in s.stages] == ["A_shared", "C"]
    text = lowered(s, [A, B, C])
    assert "A_shared[ax0, ax1] = A[ax0, ax1];" in text
    assert "A_shared[i, k] * B[k, j]" in text
    assert s.script() == 's.cache_read("A", "shared", ["C"])'
    for sizes in MATMUL_SIZES[:3]:
        check_matmul(s, A, B, C, *sizes)


def test_cache_read_computed_at_a_tile_copies_the_tile_rows():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[AS].compute_at(s[C], jo)
    domain = s.program.statement("A_shared").domain
    expected = isl.Set("[M, N, K] -> { A_shared[io, jo, a, b] : io >= 0 and jo >= 0 and "
                       "4io < M and 4jo < N and 4io <= a <= 4io + 3 and a < M and "
                       "0 <= b < K }")
    assert domain.is_equal(expected.align_params(domain.get_space())), domain
    text = lowered(s, [A, B, C])
    # contracted to the tile's rows: 4 x K
    assert "float32 A_shared[4][K];" in text
    assert text.index("A_shared[(ax0 - 4 * i_outer), ax1] = A[ax0, ax1];") < text.index("for (i_inner")
    for sizes in MATMUL_SIZES:
        check_matmul(s, A, B, C, *sizes)


def test_cache_read_both_operands_at_the_reduction_tile():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    AS = s.cache_read(A, "shared", [C])
    BS = s.cache_read(B, "shared", [C])
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s[C].reorder(io, jo, ko, ii, ji, ki)
    s[AS].compute_at(s[C], ko)
    s[BS].compute_at(s[C], ko)
    # per (i tile, j tile, k tile): at most 4 x 3 elements of A and 3 x 4 of B
    for name, count in (("A_shared", 4 * 3), ("B_shared", 3 * 4)):
        domain = s.program.statement(name).domain
        assert domain.dim(isl.dim_type.set) == 5  # i.outer, j.outer, k.outer, ax0, ax1
        tile = fix(domain, M=8, N=8, K=9, dims=(1, 1, 2))
        assert tile.count_val().to_python() == count
    for sizes in MATMUL_SIZES:
        check_matmul(s, A, B, C, *sizes)


def test_cache_read_refusals():
    A, B, C = matmul(4, 4, 4)
    D = po.compute((4, 4), lambda i, j: C[i, j] + 1.0, name="D")
    s = po.create_schedule(D)
    with pytest.raises(po.NotAReaderError) as refused:
        s.cache_read(A, "shared", [D])
    assert (refused.value.producer, refused.value.reader) == ("A", "D")
    with pytest.raises(po.InvalidArgumentError, match="cache_read needs at least one reader"):
        s.cache_read(A, "shared", [])
    with pytest.raises(po.InvalidArgumentError, match="unknown scope 'texture'; use one of "
                                                      "global, shared, local"):
        s.cache_read(A, "texture", [C])
    assert s.steps == []


# -- cache_write -------------------------------------------------------------------------------

def test_cache_write_computed_at_a_tile_of_the_copy():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local")
    assert CL.name == "C.local"
    assert [st.name for st in s.stages] == ["C_local", "C"]
    assert axis_names(s[CL]) == ["i", "j", "k"]
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 4)
    s[CL].compute_at(s[C], jo)
    text = lowered(s, [A, B, C])
    assert "float32 C_local[4][4];" in text  # the tile's footprint
    assert ("C_local[(i - 4 * i_outer), (j - 4 * j_outer)] = C_local[(i - 4 * i_outer), "
            "(j - 4 * j_outer)] + A[i, k] * B[k, j];") in text
    assert ("C[(4 * i_outer + i_inner), (4 * j_outer + j_inner)] = "
            "C_local[i_inner, j_inner];") in text
    assert s.script().splitlines() == ['s.cache_write("C", "local")',
                                       's["C"].tile("i", "j", 4, 4)',
                                       's["C_local"].compute_at("C", "j.outer")']
    domain = s.program.statement(s.program.stage("C_local").main).domain
    assert domain.dim(isl.dim_type.set) == 5  # i.outer, j.outer, i, j, k
    for sizes in MATMUL_SIZES:
        check_matmul(s, A, B, C, *sizes)


def test_cache_write_with_a_split_reduction_inside():
    A, B, C = matmul(12, 10, 7)
    s = po.create_schedule(C)
    CL = s.cache_write(C, "local")
    io, jo, ii, ji = s[C].tile(C.op.axis[0], C.op.axis[1], 5, 4)
    s[CL].compute_at(s[C], jo)
    ko, ki = s[CL].split("k", factor=2)
    check_matmul(s, A, B, C, 12, 10, 7)


def test_cache_write_after_the_loops_changed_is_refused():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    s[C].split(C.op.axis[0], factor=2)
    with pytest.raises(po.PrimitiveOrderError) as refused:
        s.cache_write(C, "local")
    assert (refused.value.primitive, refused.value.stage) == ("cache_write", "C")


# -- rfactor -----------------------------------------------------------------------------------

def row_reduce(n, k_extent, combiner=po.sum, dtype="float32"):
    A = po.placeholder((n, k_extent), name="A", dtype=dtype)
    k = po.reduce_axis((0, k_extent), name="k")
    C = po.compute((n,), lambda i: combiner(A[i, k], axis=k), name="C")
    return A, C


@pytest.mark.parametrize("m, k", [(5, 11), (4, 8), (1, 1), (3, 0), (0, 5), (2, 3)])
@pytest.mark.parametrize("factor", [2, 4, 16])
def test_rfactor_sum_numbers(m, k, factor):
    A, C = row_reduce(po.var("M"), po.var("K"))
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=factor)
    CF = s.rfactor(C, ki)
    assert CF.shape[0].value == factor
    a = irand(m, k)
    np.testing.assert_array_equal(run(s, [A, C], [a], M=m, K=k), a.sum(axis=1))


def test_rfactor_structure():
    A, C = row_reduce(po.var("M"), po.var("K"))
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    CF = s.rfactor(C, ki)
    assert CF.name == "C.rf"
    assert [st.name for st in s.stages] == ["C_rf", "C"]
    assert axis_names(s[CF]) == ["k_inner", "i", "k.outer"]
    assert axis_names(s[C]) == ["i", "k_inner"]
    text = lowered(s, [A, C])
    assert "float32 C_rf[4][M];  // allocated by the kernel" in text
    assert "C_rf[k_inner, i] = C_rf[k_inner, i] + A[i, (k_inner + 4 * k_outer)];" in text
    assert "C[i] = C[i] + C_rf[k_inner, i];" in text
    assert s.script().splitlines() == ['s["C"].split("k", factor=4)',
                                       's.rfactor("C", "k.inner")']


def test_rfactor_then_parallel_and_vectorize():
    A, C = row_reduce(po.var("M"), po.var("K"), dtype="int32")
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=8)
    CF = s.rfactor(C, ki)
    s[CF].parallel("k_inner")
    s[CF].vectorize("i")
    err = refused(po.LoopCarriesDependenceError, lambda: s[CF].parallel("k.outer"))
    assert (err.loop, err.what) == ("k.outer", "parallel loop")
    # the final combination is still a reduction over the partial results
    err = refused(po.LoopCarriesDependenceError, lambda: s[C].parallel("k_inner"))
    assert err.loop == "k_inner" and err.repair.startswith("'k_inner' is a reduction loop")
    s[C].parallel("i")
    text = lowered(s, [A, C])
    assert text.count("#pragma parallel") == 2 and text.count("#pragma vectorized") == 1
    for m, k in [(6, 30), (1, 7), (3, 0)]:
        a = irand(m, k, dtype="int32")
        np.testing.assert_array_equal(run(s, [A, C], [a], M=m, K=k), a.sum(axis=1))


def test_rfactor_of_an_unsplit_reduction_loop():
    A, C = row_reduce(6, 9)
    s = po.create_schedule(C)
    CF = s.rfactor(C, C.op.reduce_axis[0])
    assert CF.shape[0].value == 9
    s[CF].parallel(s[CF].axes[0])
    a = irand(6, 9)
    np.testing.assert_array_equal(run(s, [A, C], [a]), a.sum(axis=1))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_rfactor_of_a_skewed_loop_accepts_an_empty_range(n):
    """After a skew, the factored loop's range is ``2 * n - 1`` wide: its partial sums
    have at least zero rows (n = 0 gave the buffer a negative size and the call was
    refused while the default schedule returned the empty result)."""
    size = po.var("n")
    A = po.placeholder((size,), name="A")
    r = po.reduce_axis((0, size), name="r")
    C = po.compute((size,), lambda i: po.sum(A[r] * (i + 1), axis=r), name="C")
    s = po.create_schedule(C)
    s[C].skew(C.op.axis[0], r, -2)
    s.rfactor(C, r)
    a = irand(n)
    np.testing.assert_array_equal(run(s, [A, C], [a], n=n), a.sum() * np.arange(1, n + 1))


@pytest.mark.parametrize("combiner, reference", [(po.max, np.max), (po.min, np.min)])
def test_rfactor_max_min(combiner, reference):
    A, C = row_reduce(po.var("M"), po.var("K"), combiner, dtype="int32")
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=3)
    s.rfactor(C, ki)
    for m, k in [(4, 10), (2, 3), (1, 1)]:
        a = irand(m, k, dtype="int32")
        np.testing.assert_array_equal(run(s, [A, C], [a], M=m, K=k), reference(a, axis=1))


def test_rfactor_matmul_numbers():
    A, B, C = symbolic_matmul()
    s = po.create_schedule(C)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    CF = s.rfactor(C, ki)
    s[CF].parallel("k_inner")
    for sizes in MATMUL_SIZES:
        a, b = irand(sizes[0], sizes[2]), irand(sizes[2], sizes[1])
        m, n, k = sizes
        np.testing.assert_array_equal(run(s, [A, B, C], [a, b], M=m, N=n, K=k), a @ b)


def test_rfactor_refusals():
    M = po.var("M")
    A, C = row_reduce(M, po.var("K"))
    E = po.compute((M,), lambda i: C[i] * 2.0, name="E")
    s = po.create_schedule(E)
    with pytest.raises(po.NotAReductionError) as refused:
        s.rfactor(C, C.op.axis[0])
    assert (refused.value.stage, refused.value.loop) == ("C", "i")
    with pytest.raises(po.NotAReductionError) as refused:
        s.rfactor(E, E.op.axis[0])
    assert (refused.value.stage, refused.value.loop) == ("E", None)
    s[C].compute_with(s[E], E.op.axis[0])
    with pytest.raises(po.PrimitiveOrderError) as refused:
        s.rfactor(C, C.op.reduce_axis[0])
    assert (refused.value.primitive, refused.value.before, refused.value.stage) == (
        "rfactor", "compute_at", "C")
    assert s.script() == 's["C"].compute_with("E", "i")'


# -- in-place arrays ---------------------------------------------------------------------------

N, T = po.var("N"), po.var("T")


@po.kernel
def two_sweeps(A: po.i32[N], B: po.i32[N]):
    for t in range(T):
        for i in range(2, N - 2):
            B[i] = A[i - 1] + A[i + 1]
        for i in range(2, N - 2):
            A[i] = B[i - 1] - A[i]


def two_sweeps_reference(a, b, steps):
    for _ in range(steps):
        for i in range(2, len(a) - 2):
            b[i] = a[i - 1] + a[i + 1]
        for i in range(2, len(a) - 2):
            a[i] = b[i - 1] - a[i]


def test_cache_read_of_an_array_its_in_place_reader_writes():
    @po.kernel
    def prefix(A: po.i32[N]):
        for i in range(1, N):
            A[i] += A[i - 1]

    s = po.create_schedule(prefix)
    io, _ = s["S0"].split("i", factor=4)
    AS = s.cache_read(prefix.args[0], "shared", ["S0"])  # a copy right before each read
    a = np.arange(11, dtype="int32")
    po.build(s)(a)
    np.testing.assert_array_equal(a, np.cumsum(np.arange(11, dtype="int32")))
    # one copy per tile would miss the running sum: the read whose value changes
    err = refused(po.ChangedValuesError, lambda: s[AS].compute_at(s["S0"], io))
    assert err.what == "reads" and err.primitive.startswith("s[")
    reader, element, source, original = read_change(err)
    assert re.fullmatch(r"S0\[i=\d+\]", reader) and re.fullmatch(r"A\[\d+\]", element)
    assert source.kind == "entry" and re.fullmatch(r"A\[\d+\]", source.at), source
    assert original.kind == "written" and re.fullmatch(r"S0\[i=\d+\]", original.at), original


def test_cache_read_of_an_array_written_in_the_time_loop():
    s = po.create_schedule(two_sweeps)
    s.cache_read(two_sweeps.args[0], "shared", ["S0"])
    a = np.arange(9, dtype="int32") % 5
    b = np.zeros(9, "int32")
    ea, eb = a.copy(), b.copy()
    two_sweeps_reference(ea, eb, 2)
    po.build(s)(a, b, T=2)
    np.testing.assert_array_equal(a, ea)
    np.testing.assert_array_equal(b, eb)


# -- rewrites after attaching --------------------------------------------------------------------

def attached_producer():
    n = po.var("n")
    A = po.placeholder((n, 4), name="A", dtype="int32")
    P = po.compute((n,), lambda i: A[i, 0] + 1, name="P")
    k = po.reduce_axis((0, 4), name="k")
    C = po.compute((n,), lambda i: po.sum(P[i] * A[i, k], axis=k), name="C")
    s = po.create_schedule(C)
    s[P].compute_with(s[C], C.op.axis[0])
    return s, A, P, C


def check_attached_producer(s, A, C):
    a = np.arange(12, dtype="int32").reshape(3, 4)
    assert_numbers(run(s, [A, C], [a], n=3), ((a[:, 0] + 1)[:, None] * a).sum(1))


def test_rfactor_after_compute_with_of_its_input():
    s, A, P, C = attached_producer()
    try:
        s.rfactor(C, C.op.reduce_axis[0])
    except po.PolyoptError:
        return  # a refusal would be right too
    check_attached_producer(s, A, C)


def test_cache_read_of_a_tensor_computed_inside_its_reader():
    s, A, P, C = attached_producer()
    try:
        s.cache_read(P, "local", [C])
    except po.PolyoptError:
        return  # a refusal would be right too
    check_attached_producer(s, A, C)


def test_rfactor_then_compute_with_is_checked():
    """The other order is checked: after the rewrite, attaching P inside C (which now runs
    after the partial sums that read P) is refused."""
    n = po.var("n")
    A = po.placeholder((n, 4), name="A", dtype="int32")
    P = po.compute((n,), lambda i: A[i, 0] + 1, name="P")
    k = po.reduce_axis((0, 4), name="k")
    C = po.compute((n,), lambda i: po.sum(P[i] * A[i, k], axis=k), name="C")
    s = po.create_schedule(C)
    s.rfactor(C, C.op.reduce_axis[0])
    err = refused(po.DependenceViolationError, lambda: s[P].compute_with(s[C], C.op.axis[0]))
    assert pair(err) == ("P[i=0]", "C_rf_update[k_1=0, i=0, k=0]", "P[0]")
    check_attached_producer(s, A, C)
