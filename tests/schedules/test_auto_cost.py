"""What keeps ``po.auto_schedule`` and ``po.build`` cheap on PolyBench kernels without
changing what they produce: stencil dependences handed to isl's scheduler as one
translation per distance (the same relation, the same schedule), the nests of a
schedule scanned one by one (the same loop AST), and LLVM's own unrolling off in big
modules (the same numbers)."""

from pathlib import Path

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.ast import from_isl
from polyopt.frontend.c_native import arguments, call_polyopt
from polyopt.target.llvm import jit, optimization
from polyopt.target.llvm.optimization import emitted_size
from polyopt.schedules import auto_affine
from polyopt.schedules.auto_affine import flatten, uniform_pieces

POLYBENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "polybench"


def _kernel(name: str, **defines):
    return po.from_c(str(POLYBENCH / f"{name}.c"), defines=defines or None)


def _problem(program, deps):
    domain = isl.UnionSet.empty(program.context.get_space())
    for stmt in program.statements:
        domain = domain.union(isl.UnionSet.from_set(stmt.domain.intersect_params(
            program.context)))
    relation = isl.UnionMap.empty(program.context.get_space())
    for dep in deps.items:
        relation = relation.union(isl.UnionMap.from_map(dep.relation))
    return domain, relation.gist_params(program.context)


def _basic_maps(relation) -> int:
    maps = []
    relation.foreach_map(maps.append)
    return sum(m.n_basic_map() for m in maps)


@pytest.mark.parametrize("name, defines", [("heat-3d", dict(N=10, TSTEPS=4)),
                                           ("jacobi-2d", dict(N=13, TSTEPS=3)),
                                           ("fdtd-2d", dict(NX=9, NY=11, TMAX=3))])
def test_stencil_dependences_become_translations_of_the_same_relation(name, defines):
    s = po.create_schedule(_kernel(name, **defines))
    domain, relation = _problem(s.program, s.deps)
    pieces = uniform_pieces(relation)
    assert pieces.is_equal(relation)
    assert pieces.n_map() == relation.n_map()
    translated = _basic_maps(pieces) > _basic_maps(relation)  # one per distance
    assert translated == (name != "fdtd-2d")  # 5- and 7-point stencils; fdtd's are plain
    # the same schedule from either (isl's own cache is bypassed: _compute); the wall
    # time bound is auto_schedule's, not this comparison's (the raw relation took
    # over 1.5 s on a loaded machine)
    raw, _ = auto_affine._compute(domain, relation, "max", 2_000_000, seconds=120)
    split, _ = auto_affine._compute(domain, pieces, "max", 2_000_000, seconds=120)
    rows = {n: [str(v) for v in r] for n, r in flatten(raw).rows.items()}
    assert rows == {n: [str(v) for v in r] for n, r in flatten(split).rows.items()}


def test_a_diamond_of_distances_becomes_its_five_translations():
    r = isl.UnionMap("[n] -> { S[t, i] -> S[t + 1, i2] : 0 <= t < n and 0 < i < 9 and "
                     "0 < i2 < 9 and -1 <= i2 - i <= 1 }")
    assert uniform_pieces(r).is_equal(r)
    octahedron = isl.UnionMap(
        "[n] -> { S[t, i, j] -> S[t + 1, i2, j2] : 0 <= t < n and 0 <= i, i2, j, j2 < 20 "
        "and i2 - i + j2 - j <= 1 and i - i2 + j2 - j <= 1 and i2 - i + j - j2 <= 1 "
        "and i - i2 + j - j2 <= 1 }")
    split = uniform_pieces(octahedron)
    assert split.is_equal(octahedron)
    assert _basic_maps(split) == 5 > _basic_maps(octahedron)  # written as translations
    deltas = isl.Set.from_union_set(split.deltas()).project_out(isl.dim_type.param, 0, 1)
    points = []
    deltas.foreach_point(lambda p: points.append(tuple(
        p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(3))))
    assert sorted(points) == [(1, -1, 0), (1, 0, -1), (1, 0, 0), (1, 0, 1), (1, 1, 0)]


def test_other_dependences_are_left_as_they_are():
    triangular = isl.UnionMap("[n] -> { S[i, j] -> S[i2, j2] : 0 <= i < i2 < n and "
                              "0 <= j < n and j2 = j + i2 - i }")  # unbounded distances
    assert uniform_pieces(triangular).is_equal(triangular)
    assert _basic_maps(uniform_pieces(triangular)) == _basic_maps(triangular) == 1
    many = isl.UnionMap("{ S[i, j] -> S[i2, j2] : 0 <= i, j, i2, j2 < 100 and i2 >= i and "
                        "j2 >= j and i2 - i + j2 - j <= 90 }")  # 4,186 distances
    assert _basic_maps(uniform_pieces(many)) == 1 and uniform_pieces(many).is_equal(many)
    widths = isl.UnionMap("{ S[i] -> T[i, j] : 0 <= i < 9 and 0 <= j < 3 }")
    assert uniform_pieces(widths).is_equal(widths)
    assert _basic_maps(uniform_pieces(widths)) == 1


def test_nests_scanned_one_by_one_give_the_code_of_the_whole_scan(monkeypatch):
    kernel = _kernel("3mm", NI=11, NJ=13, NK=15, NL=17, NM=19)
    s = po.auto_schedule(kernel, cache_bytes=64)
    groups = from_isl._root_groups(s.program)
    assert len(groups) == 6  # one per nest: C = 0; C += ...; ... (six statements)
    one_by_one = from_isl._loop_ast(s.program)
    monkeypatch.setattr(from_isl, "SEQUENCE_FROM", 1000)
    assert len(from_isl._root_groups(s.program)) == 1
    assert from_isl._loop_ast(s.program) == one_by_one


def test_big_modules_without_llvms_own_unrolling_compute_the_same_numbers(monkeypatch):
    """gemm's register-tiled nest (about 1,900 IR lines) built with and without LLVM's
    unrolling heuristics: the same numbers as the source order, bit for bit."""
    sizes = dict(NI=37, NJ=45, NK=29)
    kernel = _kernel("gemm", **sizes)
    s = po.auto_schedule(kernel, cache_bytes=4096)
    args = {"ni": 37, "nj": 45, "nk": 29}
    expected = arguments(kernel, args, seed=3)
    call_polyopt(kernel, po.build(po.create_schedule(kernel)), expected)
    size = po.build_cache.size
    po.build_cache.set_size(0)
    try:
        for limit in (10**6, 0):  # LLVM's unrolling on, then off
            monkeypatch.setattr(optimization, "OWN_UNROLL_SIZE", limit)
            f = po.build(s)
            assert f.llvm_ir.count("\n") > 500
            actual = arguments(kernel, args, seed=3)
            call_polyopt(kernel, f, actual)
            np.testing.assert_array_equal(actual["C"], expected["C"])
    finally:
        po.build_cache.set_size(size)


def test_only_in_place_kernels_go_without_llvms_own_unrolling(monkeypatch):
    """A tensor-expression template keeps it (a 3x3 conv2d's 28-column rows ran 10x
    slower without); an in-place kernel's big module does without."""
    asked = []
    optimized = jit._optimized
    monkeypatch.setattr(jit, "_optimized", lambda text, cpu, speed, unroll=True: (
        asked.append(unroll), optimized(text, cpu, speed, unroll))[1])
    size = po.build_cache.size
    po.build_cache.set_size(0)
    try:
        kernel = _kernel("gemm", NI=37, NJ=45, NK=29)
        po.build(po.auto_schedule(kernel, cache_bytes=4096))
        assert asked == [False]
        A, B = po.placeholder((64, 48), name="A"), po.placeholder((48, 80), name="B")
        C = po.ops.matmul(A, B)
        s = po.create_schedule(C)
        po.templates.matmul_template(s, C)
        f = po.build(s, [A, B, C])
        assert emitted_size(f.func.program, f.func.body) > optimization.OWN_UNROLL_SIZE
        assert f.func.decision("optimization").own_unrolling and asked[1:] == [True]
        rng = np.random.default_rng(1)
        a = rng.standard_normal((64, 48)).astype(np.float32)
        b = rng.standard_normal((48, 80)).astype(np.float32)
        c = np.empty((64, 80), np.float32)
        f(a, b, c)
        np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)
    finally:
        po.build_cache.set_size(size)
