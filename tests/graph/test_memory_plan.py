"""Memory planning (polyopt.graph.memory): the indexed planner places every buffer where
the plain best-fit placement (each buffer against every placed one) does, and its work
grows near-linearly with the number of buffers, not with its square."""

import numpy as np
import pytest

pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from polyopt.graph import memory  # noqa: E402
from polyopt.graph.memory import live_together, overlapping_pairs, plan_memory  # noqa: E402


def reference_offsets(buffers) -> dict:
    """Largest first, best fit among every placed buffer whose lifetime meets its own
    (the definition, quadratic)."""
    sizes = {name: memory._aligned(size) for name, _, _, size in buffers}
    spans = {name: (first, last) for name, first, last, _ in buffers}
    offsets = {}
    for name in sorted(sizes, key=lambda n: (-sizes[n], spans[n][0], n)):
        busy = sorted((offsets[o], offsets[o] + sizes[o]) for o in offsets
                      if live_together(spans[o], spans[name]))
        offsets[name] = memory._best_fit(busy, sizes[name])
    return offsets


def random_buffers(rng, count: int, steps: int, longest: int):
    result = []
    for k in range(count):
        first = int(rng.integers(0, steps))
        result.append((f"t{k}", first, first + int(rng.integers(0, longest)),
                       int(rng.integers(1, 50_000))))
    return result


def test_indexed_placement_is_the_best_fit_placement():
    rng = np.random.default_rng(7)
    for trial in range(200):
        buffers = random_buffers(rng, int(rng.integers(1, 60)), int(rng.integers(1, 40)),
                                 int(rng.integers(1, 12)))
        plan = plan_memory(buffers)
        assert plan.offsets == reference_offsets(buffers), trial
        assert overlapping_pairs(plan) == []
        steps = {s for _, first, last, _ in buffers for s in range(first, last + 1)}
        assert plan.lower_bound == max(
            sum(plan.sizes[n] for n in plan.sizes if live_together(plan.intervals[n], (s, s)))
            for s in steps)
        assert plan.lower_bound <= plan.arena_bytes <= plan.naive_bytes


def test_overlapping_pairs_finds_a_shared_byte():
    plan = memory.MemoryPlan(offsets={"a": 0, "b": 64, "c": 0}, sizes={"a": 128, "b": 64,
                             "c": 64}, intervals={"a": (0, 2), "b": (2, 3), "c": (3, 4)},
                             arena_bytes=128, lower_bound=128, naive_bytes=256)
    assert overlapping_pairs(plan) == [("a", "b")]


def test_empty_plan():
    plan = plan_memory([])
    assert (plan.arena_bytes, plan.lower_bound, plan.offsets) == (0, 0, {})


class CountingLifetimes(memory._Lifetimes):
    made: list = []

    def __init__(self, steps):
        super().__init__(steps)
        CountingLifetimes.made.append(self)


def planning_work(monkeypatch, buffers) -> int:
    CountingLifetimes.made = []
    monkeypatch.setattr(memory, "_Lifetimes", CountingLifetimes)
    plan_memory(buffers)
    (index,) = CountingLifetimes.made
    return index.work


def chain(count: int):
    """A chain of operators: each output is read by the next step only."""
    return [(f"t{k}", k, k + 1, 1024 * (1 + k % 3)) for k in range(count)]


def test_planning_work_grows_near_linearly_in_the_buffers(monkeypatch):
    small = planning_work(monkeypatch, chain(5_000))
    large = planning_work(monkeypatch, chain(20_000))
    # n log n: 4 x (log 20,000 / log 5,000) = 4.65; quadratic would be 16
    assert large < 5 * small, (small, large)
    # and with some long-lived buffers (weights-like), it stays near-linear too
    rng = np.random.default_rng(1)
    mixed_small = planning_work(monkeypatch, random_buffers(rng, 5_000, 5_000, 8))
    mixed_large = planning_work(monkeypatch, random_buffers(rng, 20_000, 20_000, 8))
    assert mixed_large < 5 * mixed_small, (mixed_small, mixed_large)


def matmul_relu_chain(count: int):
    """``count`` MatMul/Relu pairs on a 4x4 matrix (each MatMul a kernel of its own)."""
    rng = np.random.default_rng(0)
    nodes, inits, name = [], [], "x"
    weights = []
    for k in range(count):
        w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
        weights.append(w)
        inits.append(helper.make_tensor(f"w{k}", TensorProto.FLOAT, [4, 4], w.ravel()))
        last = k == count - 1
        nodes.append(helper.make_node("MatMul", [name, f"w{k}"], [f"m{k}"]))
        nodes.append(helper.make_node("Relu", [f"m{k}"], ["y" if last else f"r{k}"]))
        name = f"r{k}"
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [4, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [4, 4])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), weights


def compiled_planning_work(monkeypatch, count: int):
    model, weights = matmul_relu_chain(count)
    CountingLifetimes.made = []
    monkeypatch.setattr(memory, "_Lifetimes", CountingLifetimes)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    x = np.random.default_rng(2).standard_normal((4, 4)).astype(np.float32)
    expected = x
    for w in weights:
        expected = np.maximum(expected @ w, 0)
    assert_numbers(compiled.run({"x": x})["y"], expected, rtol=1e-4, atol=1e-5)
    return sum(index.work for index in CountingLifetimes.made), len(compiled.plan.offsets)


@pytest.mark.slow
def test_a_long_operator_chain_compiles_with_near_linear_planning(monkeypatch):
    small, small_buffers = compiled_planning_work(monkeypatch, 250)
    large, large_buffers = compiled_planning_work(monkeypatch, 1_000)
    assert large_buffers >= 3 * small_buffers > 0
    assert large < 5 * small, (small, large)  # quadratic: 16x


@pytest.mark.slow
def test_a_20000_node_elementwise_chain_compiles():
    count = 20_000
    nodes = [helper.make_node("Relu" if k % 2 else "Neg", [f"t{k}" if k else "x"],
                              [f"t{k + 1}" if k < count - 1 else "y"]) for k in range(count)]
    model = helper.make_model(helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])]),
        opset_imports=[helper.make_opsetid("", 17)])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    x = np.array([-2.0, -0.5, 0.5, 3.0], np.float32)
    expected = x.copy()
    for k in range(count):
        expected = np.maximum(expected, 0) if k % 2 else -expected
    np.testing.assert_array_equal(compiled.run({"x": x})["y"], expected)
