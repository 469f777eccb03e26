"""Loops marked vectorized whose iterations touch no common element tell LLVM so
(``llvm.loop.parallel_accesses`` and an access group on every load and store), and
loops LLVM still leaves scalar are reported (``f.scalar_loops``, a PolyoptWarning)."""

import re
import warnings

import numpy as np
import pytest

import polyopt as po
from polyopt.target.llvm import codegen
from polyopt.target.llvm.remarks import asks_for_vectors, loop_ids
from testlib.kernels import seidel_2d, seidel_2d_ref
from testlib.machine import HOST, WIDE_CPU, vector_of
from testlib.schedules import irand

PARALLEL = '"llvm.loop.parallel_accesses"'


def _seidel_time_vectorized():
    """seidel-2d skewed (i + t, j + 3t + i) and tiled, time innermost in a tile and
    vectorized: its accesses move by -N - 2 elements per iteration (gathers and
    scatters), which LLVM's own dependence analysis cannot prove independent."""
    s = po.create_schedule(seidel_2d)
    stage = s["S0"]
    for outer, inner, factor in [("t", "i", 1), ("t", "j", 2), ("i", "j", 1)]:
        stage.skew(outer, inner, factor)
    to, io, ti, ii = stage.tile("t", "i", 4, 8)
    jo, ji = stage.split("j", factor=16)
    stage.reorder(to, io, jo, ii, ji, ti)
    stage.vectorize(ti)
    return s


def _build_quietly(s, args=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error", po.PolyoptWarning)
        return po.build(s, args, **options)


def _loops(llvm_ir):
    """(asks for vectorization, has parallel accesses) per loop ID."""
    return [(asks_for_vectors(p), any(PARALLEL in part for part in p))
            for _, p in loop_ids(llvm_ir)]


@pytest.mark.parametrize("n, steps", [(10, 4), (19, 7), (34, 8), (37, 13)])
def test_skewed_seidel_time_loop_is_vectorized_and_exact(n, steps):
    f = _build_quietly(_seidel_time_vectorized())
    assert f.scalar_loops == ()
    assert vector_of("float64") in f.optimized_ir   # (gathers: see the next test)
    a = np.random.default_rng(n).random((n, n))
    expected = a.copy()
    seidel_2d_ref(expected, steps)
    f(a, T=steps)
    np.testing.assert_array_equal(a, expected)


def test_skewed_seidel_time_loop_gathers_with_avx512():
    """With AVX-512 LLVM's cost model gathers the skewed accesses (with AVX2 on Zen 3 it
    loads the lanes one by one): built for such a CPU, inspected."""
    f = _build_quietly(_seidel_time_vectorized(), target=f"llvm -mcpu={WIDE_CPU}")
    assert f.scalar_loops == ()
    assert "<8 x double>" in f.optimized_ir and "llvm.masked.gather" in f.optimized_ir


def test_without_parallel_accesses_the_seidel_loop_stays_scalar_and_is_reported():
    """What LLVM does alone (the pipeline without the ``parallel_accesses`` pass): the
    loop is reported."""
    with pytest.warns(po.PolyoptWarning, match="did not vectorize .*t_inner"):
        f = po.build(_seidel_time_vectorized(),
                     passes=lambda pipeline: pipeline.without("parallel_accesses"))
    assert f.scalar_loops == ("t_inner",)
    assert PARALLEL not in f.llvm_ir and "x double>" not in f.optimized_ir


def test_metadata_is_exactly_on_vectorized_loops():
    """B's vectorized loop (a full and a partial tile: two loop IDs, two groups) lists
    its access group; the loops around it (IDs that forbid vectorizing them) and C's
    loops (no ID) list none; B's loads and stores are in a group, C's are not."""
    n = po.var("n")
    A = po.placeholder((n, 40), name="A")
    B = po.compute((n, 40), lambda i, j: A[i, j] * 3, name="B")
    C = po.compute((n, 40), lambda i, j: B[i, j] + 1, name="C")
    s = po.create_schedule(C)
    jo, ji = s[B].split(B.op.axis[1], factor=16)
    s[B].vectorize(ji)
    f = _build_quietly(s, [A, C])
    assert sorted(_loops(f.llvm_ir)) == [(False, False)] * 2 + [(True, True)] * 2
    groups = set(re.findall(r"!llvm\.access\.group (![0-9]+)", f.llvm_ir))
    assert len(groups) == 2  # one per version of the loop
    accesses = [line for line in f.llvm_ir.splitlines()
                if re.search(r"= load float|store float", line)]
    tagged = [line for line in accesses if "!llvm.access.group" in line]
    assert len(tagged) == 4 and len(accesses) == 6  # B's load and store in each version
    a = irand(21, 40)
    c = np.zeros((21, 40), np.float32)
    f(a, c, n=21)
    np.testing.assert_array_equal(c, a * 3 + 1)
    assert str(codegen.module_for(po.lower(s, [A, C], target="llvm"),  # deterministic
                                  target_info=HOST)) == f.llvm_ir


def test_a_reduction_along_the_vectorized_loop_keeps_llvm_analysis():
    A = po.placeholder((6, 40), name="A")
    k = po.reduce_axis((0, 40), name="k")
    C = po.compute((6,), lambda i: po.sum(A[i, k], axis=k), name="C")
    s = po.create_schedule(C)
    s[C].vectorize(k, check=False)  # the accumulator C[i] is written in every iteration
    f = po.build(s, [A, C])
    assert PARALLEL not in f.llvm_ir and "llvm.access.group" not in f.llvm_ir
    a = irand(6, 40)
    c = np.zeros(6, np.float32)
    f(a, c)
    np.testing.assert_array_equal(c, a.sum(axis=1))


def test_a_buffer_reused_by_every_iteration_gets_no_parallel_accesses():
    """B computed inside C's vectorized loop is contracted to one element that every
    iteration writes: legal in the schedule (each iteration reads its own B[i, j]) but
    the iterations share memory, so LLVM must check them itself."""
    A = po.placeholder((8, 40), name="A")
    B = po.compute((8, 40), lambda i, j: A[i, j] * 2, name="B")
    C = po.compute((8, 40), lambda i, j: B[i, j] + 1, name="C")
    s = po.create_schedule(C)
    s[B].compute_at(s[C], C.op.axis[1])
    s[C].vectorize(C.op.axis[1])
    func = po.lower(s, [A, C])
    assert [str(e) for e in func.temps[0].shape] == ["1", "1"]
    f = po.build(s, [A, C])
    assert PARALLEL not in f.llvm_ir
    a = irand(8, 40)
    c = np.zeros((8, 40), np.float32)
    f(a, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_a_widened_partial_tile_keeps_llvm_analysis():
    """The partial column tile of the matmul template runs at full width with
    conditional stores (see ``ast.tiles.can_widen``): its extra iterations are not
    covered by the dependence test, so only the full tiles' loops list access groups."""
    A, B = po.placeholder((12, 8), name="A"), po.placeholder((8, 100), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    f = _build_quietly(s, [A, B, C])
    loops = _loops(f.llvm_ir)
    widened = re.findall(r"^widened(?:\.[0-9]+)?:", f.llvm_ir, re.MULTILINE)
    assert widened and loops.count((True, False)) == len(widened)
    assert (True, True) in loops
    a, b = irand(12, 8), irand(8, 100)
    c = np.zeros((12, 100), np.float32)
    f(a, b, c)
    np.testing.assert_array_equal(c, a @ b)
