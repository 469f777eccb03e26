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
from testlib.errors import refused  # noqa: E402
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
    from polyopt.schedules.nn_templates import producers

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
            axis = conv.op.reduce_axis[0]
            err = refused(po.LoopCarriesDependenceError, lambda: fresh[conv].parallel(axis))
            assert (err.transform, err.loop) == \
                (f's["{conv.op.name}"].parallel("{axis.name}")', axis.name)


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
    model = single_op("Trilu", [(2, 3)])
    err = refused(po.graph.UnknownOperatorError, lambda: po.graph.from_onnx(model))
    assert (err.node, err.op_type, err.problem) == ("n1_Trilu", "Trilu", "unknown")


def test_unsupported_attribute_is_refused():
    model = single_op("AveragePool", [(1, 1, 6, 6)], kernel_shape=[3, 3], strides=[2, 2],
                      ceil_mode=1, count_include_pad=1)
    err = refused(po.graph.UnsupportedCombinationError, lambda: po.graph.from_onnx(model))
    assert (err.op_type, err.problem, err.attributes) == \
        ("AveragePool", "partial_window", {"ceil_mode": 1, "count_include_pad": 1})
    model = single_op("Pad", [(2, 3)], consts=[np.zeros(4, np.int64)], mode="median")
    err = refused(po.graph.UnsupportedAttributeValueError, lambda: po.graph.from_onnx(model))
    assert (err.node, err.op_type, err.attribute, err.value) == \
        ("n2_Pad", "Pad", "mode", "median")


@pytest.mark.parametrize("kernel", [[0, 0], [3, 0], [2]])
def test_a_pool_window_of_no_size_is_refused(kernel):
    model = single_op("MaxPool", [(1, 1, 5, 5)], kernel_shape=kernel)
    with pytest.raises(po.InvalidArgumentError, match="kernel_shape must be two sizes >= 1"):
        po.graph.from_onnx(model)


def test_int8_operators_wait_for_int8_support():
    model = single_op("ConvInteger", [(1, 1, 3, 3)], consts=[np.ones((1, 1, 1, 1), np.uint8)])
    err = refused(po.graph.UnknownOperatorError, lambda: po.graph.from_onnx(model))
    assert (err.op_type, err.problem) == ("ConvInteger", "int8")


def test_lstm_options_that_are_not_supported_are_refused():
    """input_forget=1 is refused by name (every direction, layout=1, sequence_lens and
    Y_c are computed: tests/graph/test_recurrent_states.py)."""
    m = ModelBuilder(0)
    x = m.input("x", (3, 1, 4))
    w, r = m.weight(2, 8, 4), m.weight(2, 8, 2)
    m.add("LSTM", [x, w, r], hidden_size=2, direction="bidirectional", input_forget=1)
    err = refused(po.graph.UnsupportedAttributeValueError,
                  lambda: po.graph.from_onnx(m.model([m.nodes[-1].output[0]])))
    assert (err.op_type, err.attribute, err.value, err.supported) == \
        ("LSTM", "input_forget", 1, (0,))
    m = ModelBuilder(0)
    x = m.input("x", (3, 1, 4))
    outs = m.add("LSTM", [x, m.weight(1, 8, 4), m.weight(1, 8, 2)], outputs=3, hidden_size=2)
    g = po.graph.from_onnx(m.model(outs))  # Y, Y_h and Y_c, sliced from LSTMStates
    assert [g.tensors[o].shape for o in g.outputs] == [(3, 1, 1, 2), (1, 1, 2), (1, 1, 2)]


def test_import_without_onnx_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(po.MissingBackendError, match="pip install onnx"):
        po.graph.from_onnx("model.onnx")


def test_old_opset_is_converted_and_symbolic_shapes_are_refused():
    g = po.graph.from_onnx(single_op("Relu", [(2, 3)], opset=11))
    assert [n.op_type for n in g.nodes] == ["Relu"]
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
    with pytest.raises(po.InvalidArgumentError, match=r"missing \[\], unknown \['y'\]"):
        m.run({"x0": np.zeros((2, 3), "float32"), "y": np.zeros(1)})
    with pytest.raises(po.InvalidArgumentError, match=r"got float64\[2, 3\]"):
        m.run({"x0": np.zeros((2, 3))})
    with pytest.raises(po.InvalidArgumentError, match="run needs a dict"):
        m.run([np.zeros((2, 3), "float32")])


@pytest.mark.parametrize("threads", [1, 2])
def test_run_takes_any_array_like_input(threads):
    """``run``'s fast path (a contiguous array of the input's dtype, taken as is) and its
    other inputs (a transposed view, a read-only copy of it), on one thread
    and on two (the pool's session opened and closed around every run)."""
    m = po.graph.compile(po.graph.from_onnx(single_op("Relu", [(2, 3)])), num_threads=threads)
    x = np.arange(-3, 3, dtype="float32").reshape(3, 2).T  # not contiguous
    out = m.graph.outputs[0]
    frozen = np.asfortranarray(x)
    frozen.flags.writeable = False
    for feed in (np.ascontiguousarray(x), x, frozen):
        for _ in range(2):
            np.testing.assert_array_equal(m.run({"x0": feed})[out], np.maximum(x, 0))


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


# -- in-place outputs --------------------------------------------------------------------------

def test_overwritable_inputs_follow_the_exact_accesses():
    """An output may take an input's buffer only where each element of the input is read
    by the instance writing the same output element: an elementwise epilogue (also when
    scheduled vectorized and parallel) yes; a shifted read, a convolution's input, the
    input of a row reduction no."""
    from polyopt.graph.inplace import overwritable_inputs
    from polyopt.graph.lowering import lower_group, schedule_group

    def positions(build, scheduled=False):
        A = po.placeholder((6, 16), name="in0")
        B = po.placeholder((6, 16), name="in1")
        out = build(A, B)
        s = po.create_schedule(out)
        if scheduled:
            outer, inner = s[out].split(out.op.axis[1], factor=8)
            s[out].vectorize(inner)
            s[out].parallel(out.op.axis[0])
        return overwritable_inputs([A, B], out, s)

    assert positions(lambda A, B: po.compute((6, 16), lambda i, j: po.maximum(A[i, j] + B[i, j], 0.0),
                                             name="out")) == (0, 1)
    assert positions(lambda A, B: po.compute((6, 16), lambda i, j: A[i, j] * B[i, j],
                                             name="out"), scheduled=True) == (0, 1)
    assert positions(lambda A, B: po.compute((6, 16), lambda i, j: A[i, j] + B[(i + 1) % 6, j],
                                             name="out")) == (0,)
    k = po.reduce_axis((0, 16), name="k")
    assert positions(lambda A, B: po.compute(
        (6, 16), lambda i, j: A[i, j] + po.sum(B[i, k], axis=k), name="out")) == (0,)
    # a fused conv + residual add + relu of a model: the residual, not the conv input
    g = po.graph.optimize(po.graph.from_onnx(branchy_model()))
    grp = next(grp for grp in po.graph.fuse(g) if grp.op_types == ["Conv", "Add", "Mul", "Relu"])
    lowered = lower_group(g, grp.nodes, grp.output)
    s = schedule_group(lowered, grp.kind, grp.nodes)
    found = overwritable_inputs(lowered.placeholders, lowered.output, s)
    conv_input = lowered.inputs.index(grp.nodes[0].inputs[0])
    assert found and conv_input not in found
    # the kernel run with its output over such an input computes what it computes apart
    from polyopt.graph.lowering import build_group
    from polyopt.target.args import data_pointer

    kernel = build_group(lowered, s, num_threads=2)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(shape).astype("float32") for shape in lowered.kernel_shapes]
    expected = args[-1].copy()
    kernel(*args[:-1], expected)
    shared = list(args)
    shared[-1] = shared[found[0]]  # the same memory
    kernel.call_pointers([data_pointer(a) for a in shared])
    np.testing.assert_array_equal(shared[found[0]], expected)


def test_in_place_outputs_take_dead_inputs_only():
    """On a ResNet, residual epilogues write over their residual input; a tensor shares
    memory with another only when one's last reader is the step computing the other,
    and results equal those without planning (no in-place) and onnxruntime's."""
    model = resnet18(width=4, resolution=16, classes=5)
    g = po.graph.from_onnx(model)
    planned = po.graph.compile(g, num_threads=1)
    naive = po.graph.compile(g, num_threads=1, plan=False)
    assert planned.in_place and not naive.in_place
    assert planned.plan.in_place == planned.in_place
    assert f"{len(planned.in_place)} tensors written in place" in planned.memory_report()
    steps = planned.steps
    defined = {s.group.output: k for k, s in enumerate(steps) if s.kernel is not None}
    last_read = {}
    for k, s in enumerate(steps):
        for name in s.inputs:
            last_read[planned.root.get(name, name) if name not in defined else name] = k
    views = {s.group.output: s.inputs[0] for s in steps if s.kernel is None and s.inputs}
    for view, source in views.items():  # a view's readers read its source
        last_read[source] = max(last_read.get(source, 0), last_read.get(view, 0))
    buffers = planned._buffers
    names = [n for n in defined if n in buffers]
    for a in names:
        for b in names:
            if a >= b or not np.shares_memory(buffers[a], buffers[b]):
                continue
            first, second = sorted((a, b), key=defined.get)
            assert last_read.get(first, defined[first]) <= defined[second], (first, second)
            if last_read.get(first) == defined[second]:  # the handover step: in place only
                assert planned.in_place.get(second) == first \
                    or planned.root[second] == planned.root[first]
    feeds = random_inputs(model)
    a, b = planned.run(feeds), naive.run(feeds)
    expected = ort_run(model, feeds)
    for name in expected:
        np.testing.assert_array_equal(a[name], b[name])
        np.testing.assert_allclose(a[name], expected[name], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("seq, batch, width, hidden, initial", [
    (1, 1, 3, 5, False), (4, 3, 7, 5, True), (6, 2, 4, 17, True)])
def test_lstm_is_one_scan_kernel_and_matches_onnxruntime(seq, batch, width, hidden, initial):
    """The recurrence runs as one po.scan kernel (the gate matmul a reduction cell in the
    time loop): odd sizes, batches, initial states given as graph inputs."""
    m = ModelBuilder(5)
    x = m.input("x", (seq, batch, width))
    w, r = m.weight(1, 4 * hidden, width), m.weight(1, 4 * hidden, hidden)
    b = m.const(RNG.standard_normal((1, 8 * hidden)).astype("f4"))
    inputs = [x, w, r, b]
    if initial:
        inputs += ["", m.input("init_h", (1, batch, hidden)), m.input("init_c", (1, batch, hidden))]
    out = m.add("LSTM", inputs, hidden_size=hidden)
    model = m.model([out])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=2)
    (step,) = [s for s in compiled.steps if s.template == "lstm"]
    steps = seq // 2 if step.kernel.in_pairs else seq  # (two steps per iteration)
    assert step.kernel.recurrence.signature.arrays[-1].shape[0].value == steps + 1
    feeds = random_inputs(model)
    got = compiled.run(feeds)
    for name, value in ort_run(model, feeds).items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5)


def test_runs_with_new_inputs_and_outputs_read_later():
    """``run`` takes the addresses of constants and arena buffers once; run-time tensors
    (the inputs, a view of one, an output that a later kernel also reads, a view
    returned as an output, a constant output) are found again on every run."""
    m = ModelBuilder(4)
    x = m.input("x", (2, 12))
    flat = m.add("Reshape", [x, m.const(np.array([4, 6], np.int64))])    # view of an input
    first = m.add("Relu", [m.add("Add", [flat, m.const(np.ones(6, np.float32))])])  # output
    second = m.add("Mul", [first, first])                               # reads an output
    hidden = m.add("Sigmoid", [second])                                  # in the arena
    out = m.add("Reshape", [m.add("Tanh", [hidden]), m.const(np.array([24], np.int64))])
    model = m.model([first, out])
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
    for seed in range(3):
        feeds = {"x": np.random.default_rng(seed).standard_normal((2, 12)).astype("f4")}
        got, expected = compiled.run(feeds), ort_run(model, feeds)
        for name in (first, out):
            np.testing.assert_allclose(got[name], expected[name], rtol=1e-5, atol=1e-6)
        profiled = compiled._run(feeds, None)
        np.testing.assert_allclose(profiled[out], expected[out], rtol=1e-5, atol=1e-6)
