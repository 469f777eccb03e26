"""``s.rfactor(C, ki, factor_axis=)`` as TVM has it: the factored loop becomes axis
``factor_axis`` of the partial result (0 first, -1 last), on tensor expressions and on
in-place kernels; each partial result and the total checked against NumPy (small
integers: every sum is exact in any order)."""

import numpy as np
import pytest

import polyopt as po
from testlib.numeric import assert_numbers
from testlib.schedules import irand

M, N, K, F = 3, 5, 12, 4


def partial_sums(factor_axis):
    A = po.placeholder((M, N, K), name="A")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, j, k], axis=k), name="C")
    s = po.create_schedule(C)
    _, ki = s[C].split(k, factor=F)
    CF = s.rfactor(C, ki, factor_axis=factor_axis)
    return s, A, C, CF


@pytest.mark.parametrize("factor_axis", [0, 1, 2, -1, -3])
def test_the_factored_axis_goes_where_factor_axis_says(factor_axis):
    s, A, C, CF = partial_sums(factor_axis)
    position = factor_axis % 3
    shape = [M, N]
    shape.insert(position, F)
    assert [int(e.value) for e in CF.shape] == shape
    assert CF.op.axis[position].name == "k_inner" and len(CF.op.axis) == 3
    a = irand(M, N, K)
    partial, total = np.full(shape, np.nan, "float32"), np.full((M, N), np.nan, "float32")
    po.build(s, [A, CF, C])(a, partial, total)
    expected = np.moveaxis(a.reshape(M, N, K // F, F).sum(axis=2), -1, position)
    assert_numbers(partial, expected)
    assert_numbers(total, a.sum(axis=2))


def test_factor_axis_is_recorded_and_replayed():
    s, A, C, CF = partial_sums(1)
    assert s.script().splitlines()[-1] == 's.rfactor("C", "k.inner", factor_axis=1)'
    again = po.create_schedule(C).replay(s.script())
    assert again.script() == s.script()
    assert partial_sums(0)[0].script().splitlines()[-1] == 's.rfactor("C", "k.inner")'


@pytest.mark.parametrize("factor_axis", [3, -4, 1.5, True, "0"])
def test_a_factor_axis_outside_the_partial_result_is_refused(factor_axis):
    A = po.placeholder((M, N, K), name="A")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, j, k], axis=k), name="C")
    s = po.create_schedule(C)
    _, ki = s[C].split(k, factor=F)
    with pytest.raises(po.InvalidArgumentError) as caught:
        s.rfactor(C, ki, factor_axis=factor_axis)
    assert type(caught.value) is po.InvalidArgumentError and s.steps[-1].primitive == "split"
    with pytest.raises(po.InvalidArgumentError):  # a bad argument, not a refusal
        s.can_rfactor(C, ki, factor_axis=factor_axis)


n = po.var("n")


@po.kernel
def row_sums(A: po.f64[3, n], y: po.f64[3]):
    for i in range(3):
        for k in range(n):
            y[i] += A[i, k]


@pytest.mark.parametrize("factor_axis", [0, -1])
def test_an_in_place_kernel_places_its_partial_sums_too(factor_axis):
    s = po.create_schedule(row_sums)
    _, ki = s["S0"].split("k", factor=F)
    yf = s.rfactor("S0", ki, factor_axis=factor_axis)
    assert [int(e.value) for e in yf.shape] == ([F, 3] if factor_axis == 0 else [3, F])
    a = irand(3, 10).astype("float64")
    y = np.arange(3.0)
    po.build(s)(a, y, n=10)
    assert_numbers(y, np.arange(3.0) + a.sum(axis=1))
