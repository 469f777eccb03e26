"""Graph compilation: fusion on graphs with branches and residuals computes what the
unfused graph computes, the memory plan never overlaps two live tensors, planning does
not change results, batch-norm folding, import errors, and small models against
onnxruntime."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.memory import live_together, overlapping_pairs, plan_memory  # noqa: E402
from testlib.onnx_models import (ModelBuilder, bert_layer, lstm, mobilenet_v2,  # noqa: E402
                                 ort_run, random_inputs, resnet18, single_op)

RNG = np.random.default_rng(9)


def branchy_model():
    """conv -> (relu -> conv -> bn) + residual -> relu, a second branch through a
    sigmoid gate, a transpose and a shared input read twice."""
    m = ModelBuilder(3)
    x = m.input("x", (1, 4, 9, 9))
    a = m.add("Conv", [x, m.weight(8, 4, 3, 3), m.const(RNG.standard_normal(8).astype("f4"))],
              pads=[1, 1, 1, 1])
    r = m.add("Relu", [a])
    b = m.add("Conv", [r, m.weight(8, 8, 3, 3)], pads=[1, 1, 1, 1])
    c = m.const(np.float32(1.5))
    bn = m.add("BatchNormalization", [b, m.const(np.ones(8, "f4")), m.const(np.zeros(8, "f4")),
                                      m.const(np.full(8, 0.1, "f4")), m.const(np.ones(8, "f4"))])
    s = m.add("Add", [bn, a])                      # residual: a is read by two nodes
    gate = m.add("Sigmoid", [m.add("Mul", [a, c])])
    y = m.add("Relu", [m.add("Mul", [s, gate])])
    t = m.add("Transpose", [y], perm=[0, 1, 3, 2])
    z = m.add("Add", [t, m.add("Tanh", [y])])      # y read by two branches
    return m.model([z, gate])


def test_fusion_equals_unfused_and_onnxruntime():
    model = branchy_model()
    g = po.graph.from_onnx(model)
    feeds = random_inputs(model)
    fused = po.graph.compile(g, num_threads=1)
    unfused = po.graph.compile(g, num_threads=1, fuse_ops=False, passes=False)
    assert len([s for s in fused.steps if s.kernel]) < len([s for s in unfused.steps if s.kernel])
    kinds = [(grp.kind, grp.op_types) for grp in fused.groups]
    assert ("complex", ["Conv", "Add", "Mul", "Relu"]) in kinds  # bn folded, epilogue fused
    expected = ort_run(model, feeds)
    got, plain = fused.run(feeds), unfused.run(feeds)
    for name in expected:
        np.testing.assert_allclose(got[name], plain[name], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-4, atol=1e-4)


def test_fused_groups_are_checked_programs():
    """Each fused group is one polyopt program: its templated schedule passes the exact
    dependence check, computes what the program's default schedule computes, and an
    illegal change to it (the conv's reduction loop in parallel) is refused."""
    from polyopt.graph.lowering import build_group, lower_group, schedule_group
    from polyopt.transform.nn_templates import producers

    g = po.graph.optimize(po.graph.from_onnx(branchy_model()))
    rng = np.random.default_rng(4)
    fused = [grp for grp in po.graph.fuse(g) if len(grp.nodes) > 1]
    assert fused
    for grp in fused:
        lowered = lower_group(g, grp.nodes, grp.output)
        s = schedule_group(lowered, grp.kind, grp.nodes)
        s.check()
        args = [rng.standard_normal(shape).astype("float32") for shape in lowered.kernel_shapes]
        expected = args[-1].copy()
        po.build(po.create_schedule(lowered.output),
                 [*lowered.placeholders, lowered.output])(*args[:-1], expected)
        build_group(lowered, s, num_threads=1)(*args)
        np.testing.assert_allclose(args[-1], expected, rtol=1e-5, atol=1e-5)
        if grp.kind == "complex":
            conv = next(t for t in [*producers(lowered.output), lowered.output]
                        if t.op.reduce_axis)
            fresh = po.create_schedule(lowered.output)
            with pytest.raises(po.IllegalScheduleError, match="carries a dependence"):
                fresh[conv].parallel(conv.op.reduce_axis[0])


def test_batch_norm_folded_into_conv():
    model = branchy_model()
    g = po.graph.optimize(po.graph.from_onnx(model))
    assert "BatchNormalization" not in [n.op_type for n in g.nodes]


def test_memory_plan_never_overlaps_live_tensors():
    rng = np.random.default_rng(0)
    for _ in range(50):
        buffers = []
        for k in range(int(rng.integers(1, 30))):
            first = int(rng.integers(0, 20))
            buffers.append((f"t{k}", first, first + int(rng.integers(0, 6)),
                            int(rng.integers(1, 5000))))
        plan = plan_memory(buffers)
        assert overlapping_pairs(plan) == []
        assert plan.lower_bound <= plan.arena_bytes <= plan.naive_bytes
        steps = range(0, 30)
        assert plan.lower_bound == max(sum(plan.sizes[n] for n in plan.sizes
                                           if live_together(plan.intervals[n], (s, s)))
                                       for s in steps)


def test_planned_and_unplanned_runs_agree_on_a_model():
    model = resnet18(width=4, resolution=16, classes=5)
    g = po.graph.from_onnx(model)
    feeds = random_inputs(model)
    planned = po.graph.compile(g, num_threads=1)
    naive = po.graph.compile(g, num_threads=1, plan=False)
    plan = planned.plan
    assert overlapping_pairs(plan) == []
    assert plan.arena_bytes < plan.naive_bytes
    # the arrays the kernels get: live together (by the execution order) -> disjoint
    steps = planned.steps
    for name, (first, last) in plan.intervals.items():
        assert steps[first].group.output == name
        # (a view -- Flatten -- reads its input's buffer: the buffer lives until the view's reader)
        assert name in [planned.root.get(n, n) for n in steps[last].inputs] or last == first
        for other, span in plan.intervals.items():
            if other != name and live_together((first, last), span):
                assert not np.shares_memory(planned._buffers[name], planned._buffers[other])
    assert any(np.shares_memory(planned._buffers[a], planned._buffers[b])
               for a in plan.offsets for b in plan.offsets if a != b)  # memory is reused
    a, b = planned.run(feeds), naive.run(feeds)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
    expected = ort_run(model, feeds)
    for name in expected:
        np.testing.assert_allclose(a[name], expected[name], rtol=1e-4, atol=1e-4)
    rows = planned.profile(feeds, repeat=2)
    assert {r["group"] for r in rows} == {grp.name for grp in planned.groups}


@pytest.mark.parametrize("build", [
    pytest.param(lambda: mobilenet_v2(width=0.25, resolution=32, classes=7),
                 marks=pytest.mark.slow),  # 52 distinct kernels: 15-30 s
    lambda: bert_layer(hidden=32, heads=2, seq=8, ffn=64),
    lambda: lstm(layers=2, seq=5, width=6, hidden=8),
], ids=["mobilenet_v2", "bert_layer", "lstm"])
def test_small_models_against_onnxruntime(build):
    model = build()
    feeds = random_inputs(model)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=2).run(feeds)
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_allclose(got[name], value, rtol=2e-4, atol=2e-4)


@pytest.mark.slow
@pytest.mark.parametrize("build", [resnet18, mobilenet_v2, bert_layer, lstm],
                         ids=["resnet18", "mobilenet_v2", "bert_layer", "lstm"])
def test_full_size_models_against_onnxruntime(build):
    model = build()
    feeds = random_inputs(model)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=2).run(feeds)
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_allclose(got[name], value, rtol=1e-3, atol=1e-3)


# -- import errors --------------------------------------------------------------------------

def test_unsupported_operator_is_refused_with_its_node():
    model = single_op("HardSwish", [(2, 3)])
    with pytest.raises(po.graph.UnsupportedOperatorError, match=r"n1_HardSwish.*HardSwish"):
        po.graph.from_onnx(model)


def test_unsupported_attribute_is_refused():
    model = single_op("MaxPool", [(1, 1, 5, 5)], kernel_shape=[2, 2], ceil_mode=1)
    with pytest.raises(po.graph.UnsupportedOperatorError, match="ceil_mode"):
        po.graph.from_onnx(model)
    model = single_op("Softmax", [(2, 3, 4)], axis=1)
    with pytest.raises(po.graph.UnsupportedOperatorError, match=r"n1_Softmax.*axis=1"):
        po.graph.from_onnx(model)


def test_int8_operators_wait_for_int8_support():
    model = single_op("QuantizeLinear", [(2, 3)], consts=[np.float32(0.1)])
    with pytest.raises(po.PolyoptError, match="int8 support"):
        po.graph.from_onnx(model)


def test_lstm_options_that_are_not_supported_are_refused():
    m = ModelBuilder(0)
    x = m.input("x", (3, 1, 4))
    w, r = m.weight(1, 8, 4), m.weight(1, 8, 2)
    m.add("LSTM", [x, w, r], hidden_size=2, direction="bidirectional")
    with pytest.raises(po.graph.UnsupportedOperatorError, match="direction='bidirectional'"):
        po.graph.from_onnx(m.model([m.nodes[-1].output[0]]))
    m = ModelBuilder(0)
    x = m.input("x", (3, 1, 4))
    outs = m.add("LSTM", [x, m.weight(1, 8, 4), m.weight(1, 8, 2)], outputs=2, hidden_size=2)
    with pytest.raises(po.graph.UnsupportedOperatorError, match="asks for 2 outputs"):
        po.graph.from_onnx(m.model(outs))


def test_import_without_onnx_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(po.MissingBackendError, match="pip install onnx"):
        po.graph.from_onnx("model.onnx")


def test_old_opset_and_symbolic_shapes_are_refused():
    with pytest.raises(po.PolyoptError, match="opset 11"):
        po.graph.from_onnx(single_op("Relu", [(2, 3)], opset=11))
    model = single_op("Relu", [(2, 3)])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    with pytest.raises(po.PolyoptError, match="shapes="):
        po.graph.from_onnx(model)
    g = po.graph.from_onnx(model, shapes={"x0": (4, 3)})
    assert g.tensors["x0"].shape == (4, 3)


def test_bad_path_and_bad_feeds(tmp_path):
    with pytest.raises(po.PolyoptError, match="cannot read"):
        po.graph.from_onnx(tmp_path / "missing.onnx")
    m = po.graph.compile(po.graph.from_onnx(single_op("Relu", [(2, 3)])), num_threads=1)
    with pytest.raises(po.InvalidArgumentError, match="missing"):
        m.run({})
    with pytest.raises(po.InvalidArgumentError, match=r"float32\[2, 3\]"):
        m.run({"x0": np.zeros((3, 2), "float32")})


def test_printer_and_builder():
    b = po.graph.GraphBuilder()
    x = b.input("x", (1, 3, 8, 8))
    y = b.op("Conv", [x, b.constant("w", np.ones((4, 3, 3, 3), "float32"))], pads=[1, 1, 1, 1])
    y = b.op("Relu", [y])
    g = b.build([y])
    text = str(g)
    assert "Conv_0 = Conv(x, w, pads=[1, 1, 1, 1]) -> float32[1, 4, 8, 8]" in text
    assert g.nx.edges["Conv_0", "Relu_1"]["shape"] == (1, 4, 8, 8)
    with pytest.raises(po.InvalidArgumentError, match="'nope'"):
        b.op("Relu", ["nope"])
