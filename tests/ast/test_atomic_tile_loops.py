"""Loops over tiles are scanned "atomic" (polyopt.ast.from_isl): isl does not split
their ranges into copies, and the code computes the same numbers."""

import islpy as isl
import numpy as np
import pytest

import polyopt as po
from polyopt.ast.from_isl import _atomic_tile_loops, _is_tile_index


@pytest.mark.parametrize("text, expected", [
    ("{ S[t, i] -> [(floor(t / 32) + floor((t + i) / 64))]; T[t] -> [(floor(t / 32))] }", True),
    ("{ S[t, i] -> [(t mod 32)] }", False),               # a point loop
    ("{ S[t, i] -> [(floor(t / 4))]; T[t] -> [(t)] }", False),  # not for every statement
    ("{ S[t, i] -> [(0)] }", False),                      # a statement order
    ("{ S[t, i] -> [(t + floor(i / 4))] }", False),
])
def test_tile_index_members(text, expected):
    assert _is_tile_index(isl.UnionPwAff(text)) is expected


def test_tile_loops_of_a_band_are_marked_atomic():
    domain = isl.UnionSet("[n] -> { S[t, i] : 0 <= t < n and 0 <= i < n }")
    band = isl.MultiUnionPwAff(
        "[n] -> [{ S[t, i] -> [(floor(t / 4))] }, { S[t, i] -> [(floor(i / 8))] }, "
        "{ S[t, i] -> [(t mod 4)] }, { S[t, i] -> [(i mod 8)] }]")
    schedule = _atomic_tile_loops(isl.Schedule.from_domain(domain).insert_partial_schedule(band))
    node = schedule.get_root().child(0)
    kinds = [node.band_member_get_ast_loop_type(k) for k in range(4)]
    assert kinds == [isl.ast_loop_type.atomic] * 2 + [isl.ast_loop_type.default] * 2


def test_a_time_tiled_stencil_computes_the_same():
    N, T = po.var("N"), po.var("T")

    @po.kernel
    def jacobi(A: po.f64[N], B: po.f64[N]):
        for t in range(T):
            for i in range(1, N - 1):
                B[i] = (A[i - 1] + A[i] + A[i + 1]) * 0.33
            for i in range(1, N - 1):
                A[i] = (B[i - 1] + B[i] + B[i + 1]) * 0.33

    s = po.create_schedule(jacobi)
    s.replay(po.auto_schedule(jacobi, tile_sizes=4).script())
    f = po.build(s)
    for n, t in ((5, 0), (9, 3), (23, 7)):
        a = np.linspace(0, 1, n)
        b = np.zeros(n)
        expected_a, expected_b = a.copy(), b.copy()
        for _ in range(t):
            expected_b[1:-1] = (expected_a[:-2] + expected_a[1:-1] + expected_a[2:]) * 0.33
            expected_a[1:-1] = (expected_b[:-2] + expected_b[1:-1] + expected_b[2:]) * 0.33
        f(a, b, T=t)
        np.testing.assert_allclose(a, expected_a, rtol=1e-12)
        np.testing.assert_allclose(b, expected_b, rtol=1e-12)
