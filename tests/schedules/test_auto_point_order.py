"""The order of a tile's loops above its innermost one (``point_order``, a knob of
``po.tune.auto_task``): each order is a checked schedule computing the same numbers,
and the knob changes the loop nest that is built."""

import numpy as np
import pytest

import polyopt as po
from polyopt.ast.nodes import loops
from polyopt.errors import InvalidArgumentError
from polyopt.schedules.auto_band import permuted
from testlib.numeric import assert_matches, assert_numbers

N = 48


def _matmul():
    A = po.placeholder((N, N), name="A")
    B = po.placeholder((N, N), name="B")
    k = po.reduce_axis((0, N), name="k")
    C = po.compute((N, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return A, B, C


def _update_loops(schedule, tensors) -> list[str]:
    """The loops around the update of C (the last nest): outermost first."""
    nest = [loop.var for loop in loops(po.lower(schedule, tensors).body)]
    return nest[-3:]


def test_two_orders_compute_the_same_numbers_in_other_loop_nests():
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((N, N), dtype="float32"), rng.standard_normal(
        (N, N), dtype="float32")
    results, nests = [], []
    for order in (0, 1):
        A, B, C = _matmul()
        s = po.auto_schedule(po.create_schedule(C), tile_sizes=16, unroll_jam=0,
                             point_order=order)
        s.check()
        nests.append(_update_loops(s, [A, B, C]))
        got = assert_matches(po.build(s, [A, B, C]), [a, b, np.empty((N, N), "float32")],
                             lambda x, y, z: x @ y)[2]
        results.append(got)
    assert nests == [["i_inner", "k_inner", "j_inner"], ["k_inner", "i_inner", "j_inner"]]
    assert_numbers(results[1], results[0])


def test_the_report_names_the_order_and_the_default_is_the_band_order():
    _, _, C = _matmul()
    s = po.auto_schedule(po.create_schedule(C), tile_sizes=16, point_order=1)
    assert "loops inside the tile above j.inner: k.inner, i.inner (point_order=1)" in \
        s.auto_report.lines
    plain = po.auto_schedule(po.create_schedule(C), tile_sizes=16)
    assert plain.script() == po.auto_schedule(po.create_schedule(C), tile_sizes=16,
                                              point_order=0).script()
    assert not any("point_order" in line for line in plain.auto_report.lines)


def test_permutations_are_numbered_from_the_given_order():
    loops_ = ["i", "j", "k"]
    orders = [permuted(loops_, n) for n in range(6)]
    assert orders[0] == loops_ and len({tuple(o) for o in orders}) == 6
    assert permuted(loops_, 6) == loops_  # (modulo their count)


def test_the_tuning_space_has_the_knob():
    _, _, C = _matmul()
    space = po.tune.auto_task(C).space
    assert [entity.val for entity in space.knobs["point_order"].entities] == list(range(6))
    digits = [0] * len(space.dims)
    digits[list(space.knobs).index("point_order")] = 1
    config = space.get(space.index_of(digits))
    assert po.tune.auto_options(config)["point_order"] == 1
    assert po.tune.auto_options(space.get(0))["point_order"] == 0


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1"])
def test_a_bad_order_is_refused(bad):
    _, _, C = _matmul()
    with pytest.raises(InvalidArgumentError, match="point_order must be an integer >= 0"):
        po.auto_schedule(po.create_schedule(C), point_order=bad)
