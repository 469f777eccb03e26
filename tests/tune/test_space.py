"""ConfigSpace: knobs, mixed-radix points, JSON, neighbours, features, typed errors."""

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError
from polyopt.tune import ConfigSpace, knob_features


def _space():
    space = ConfigSpace()
    space.define_split("s", 24, num_outputs=3)
    space.define_knob("k", ["a", "b", "c"])
    space.define_reorder("r", ["x", "y", "z"])
    space.define_annotate("a", ["x", "y"], policy="try_unroll_vec")
    return space


def test_split_sizes_multiply_to_the_extent_and_cover_every_factorization():
    space = ConfigSpace()
    space.define_split("s", 24, num_outputs=3)
    sizes = [e.size for e in space.knobs["s"].entities]
    assert all(np.prod(size) == 24 for size in sizes)
    divisors = [d for d in range(1, 25) if 24 % d == 0]
    expected = sum(1 for a in divisors for b in divisors if 24 % (a * b) == 0)
    assert len(sizes) == expected == len({tuple(s) for s in sizes})


def test_power2_split_rounds_the_outer_loop_up():
    space = ConfigSpace()
    space.define_split("s", 20, policy="power2", max_factor=8)
    assert [e.size for e in space.knobs["s"].entities] == [[20, 1], [10, 2], [5, 4], [3, 8]]


def test_points_are_mixed_radix_and_round_trip_through_json():
    space = _space()
    assert len(space) == np.prod(space.dims) == len(space.knobs["s"]) * 3 * 6 * 6
    seen = set()
    for index in range(0, len(space), 7):
        cfg = space.get(index)
        assert space.index_of(space.digits(index)) == index
        assert space.from_json(cfg.to_json()) == cfg
        seen.add(tuple(knob_features(cfg)))
    assert len(seen) == len(range(0, len(space), 7))


def test_neighbors_differ_in_one_knob():
    space, rng = _space(), np.random.default_rng(1)
    for index in (0, 5, len(space) - 1):
        found = space.neighbors(index, rng)
        assert len(found) == 4
        for other in found:
            differ = [a != b for a, b in zip(space.digits(index), space.digits(other))]
            assert sum(differ) == 1


def test_a_template_applies_its_knobs_with_checked_primitives(matmul_task):
    space = matmul_task.space
    cfg = space.get(len(space) - 1)
    s, _ = matmul_task.instantiate(cfg)
    script = s.script()
    assert f'factor={cfg["tile_i"].size[1]}' in script and "vectorize" in script


@pytest.mark.parametrize("bad", [
    lambda s: s.define_split("x", 0),
    lambda s: s.define_split("x", 8, policy="odd"),
    lambda s: s.define_split("x", 8, num_outputs=9),
    lambda s: s.define_knob("x", 3),
    lambda s: s.define_knob("x", [object()]),
    lambda s: s.define_reorder("x", list(range(9))),
    lambda s: s.define_annotate("x", ["i"], policy="never"),
    lambda s: s.get(-1),
    lambda s: s.get(10 ** 9),
    lambda s: s["missing"],
    lambda s: s.from_json({"index": 0, "knobs": {"s": [1, 1, 24]}}),
    lambda s: s.from_json("{not json"),
])
def test_bad_input_is_a_typed_error(bad):
    space = _space()
    with pytest.raises(InvalidArgumentError):
        bad(space)


def test_a_knob_redefined_differently_is_refused():
    space = ConfigSpace()
    space.define_knob("k", [1, 2])
    space.define_knob("k", [1, 2])  # (the same: a template run again)
    with pytest.raises(InvalidArgumentError, match="defined twice"):
        space.define_knob("k", [1, 3])


def test_task_errors_are_typed():
    with pytest.raises(InvalidArgumentError):
        po.tune.Task("t", ConfigSpace(), lambda c: None)
    with pytest.raises(InvalidArgumentError, match="defines no knob"):
        po.tune.template_task("t", lambda cfg: (po.create_schedule(
            po.compute((4,), lambda i: i * 1.0)), None))
