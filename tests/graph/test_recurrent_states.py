"""LSTM, GRU and RNN in every form (polyopt.graph.recurrent_states, the activations of
polyopt.graph.recurrent_activations, LSTM peepholes) against onnxruntime: reverse and
bidirectional directions, sequence_lens, initial states, Y_h and Y_c, every activation
with alpha/beta, clip; layout=1 (which onnxruntime's CPU kernels refuse) against
onnxruntime on the layout-0 model with transposed tensors, and against onnx.reference;
the typed refusals."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.deploy.plan import ExportError  # noqa: E402
from polyopt.errors import InvalidArgumentError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def model(op, seq=5, batch=3, width=4, hidden=3, direction="forward", layout=0,
          lens=False, initial=False, peepholes=False, outputs=("Y", "Y_h", "Y_c"), **attrs):
    """A one-node model; W, R, B (and P) are initializers, the rest graph inputs."""
    rng = np.random.default_rng(0)
    gates, dirs = GATES[op], 2 if direction == "bidirectional" else 1
    weights = {"W": rng.standard_normal((dirs, gates * hidden, width)) * 0.4,
               "R": rng.standard_normal((dirs, gates * hidden, hidden)) * 0.4,
               "B": rng.standard_normal((dirs, 2 * gates * hidden)) * 0.3}
    if peepholes:
        weights["P"] = rng.standard_normal((dirs, 3 * hidden)) * 0.5
    x_shape = [seq, batch, width] if layout == 0 else [batch, seq, width]
    state = [dirs, batch, hidden] if layout == 0 else [batch, dirs, hidden]
    inputs = ["x", "W", "R", "B", "lens" if lens else "", "h0" if initial else "",
              "c0" if initial and op == "LSTM" else "", "P" if peepholes else ""]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)]
    if lens:
        graph_inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [batch]))
    for name in inputs[5:7]:
        if name:
            graph_inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, state))
    while not inputs[-1]:
        inputs.pop()
    outputs = list(outputs if op == "LSTM" else outputs[:2])
    node = helper.make_node(op, inputs, outputs, name="rec", hidden_size=hidden,
                            direction=direction, layout=layout, **attrs)
    graph = helper.make_graph(
        [node], "recurrent", graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds_of(m, seed=1, lengths=None):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in m.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    if "lens" in feeds:
        feeds["lens"] = np.array(lengths, np.int32)
    return feeds


def polyopt_run(m, feeds):
    return po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False).run(feeds)


def check(m, feeds, expected):
    got = polyopt_run(m, feeds)
    assert set(got) == set(expected)
    for name, value in expected.items():
        assert got[name].shape == value.shape, name
        assert_numbers(got[name], value, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["reverse", "bidirectional"])
@pytest.mark.parametrize("lens, initial", [(False, False), (True, True)])
def test_directions_lengths_and_initial_states_match_onnxruntime(op, direction, lens,
                                                                 initial):
    m = model(op, direction=direction, lens=lens, initial=initial)
    feeds = feeds_of(m, lengths=[5, 2, 4])
    check(m, feeds, ort_run(m, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_forward_sequence_lens_zeroes_the_tail_and_takes_the_last_valid_state(op):
    m = model(op, seq=6, lens=True)
    feeds = feeds_of(m, lengths=[1, 6, 3])
    expected = ort_run(m, feeds)
    assert not expected["Y"][1:, :, 0].any()  # (the case tested: the tail is 0)
    check(m, feeds, expected)


def test_gru_linear_before_reset_reverse_with_lengths():
    m = model("GRU", direction="reverse", lens=True, initial=True, linear_before_reset=1)
    feeds = feeds_of(m, lengths=[3, 5, 1])
    check(m, feeds, ort_run(m, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_layout_1_matches_onnxruntime_on_the_transposed_model(op, direction):
    """onnxruntime's CPU kernels refuse layout=1: its numbers on the layout-0 model,
    transposed; and onnx.reference's on the layout-1 model itself."""
    m = model(op, direction=direction, layout=1, initial=True)
    feeds = feeds_of(m)
    m0 = model(op, direction=direction, layout=0, initial=True)
    feeds0 = {"x": feeds["x"].transpose(1, 0, 2), **{
        k: v.transpose(1, 0, 2) for k, v in feeds.items() if k in ("h0", "c0")}}
    ort = ort_run(m0, feeds0)
    expected = {"Y": ort["Y"].transpose(2, 0, 1, 3),
                **{k: v.transpose(1, 0, 2) for k, v in ort.items() if k != "Y"}}
    reference = dict(zip([o.name for o in m.graph.output],
                         ReferenceEvaluator(m).run(None, feeds)))
    for name, value in reference.items():
        assert_numbers(value, expected[name], rtol=1e-5, atol=1e-5)
    check(m, feeds, expected)


@pytest.mark.parametrize("activation, alpha, beta", [
    ("Relu", None, None), ("Sigmoid", None, None), ("Softsign", None, None),
    ("Softplus", None, None), ("LeakyRelu", 0.2, None), ("LeakyRelu", None, None),
    ("ThresholdedRelu", 0.3, None), ("Elu", 0.7, None), ("HardSigmoid", 0.3, 0.4),
    ("HardSigmoid", None, None), ("Affine", 0.8, 0.1), ("ScaledTanh", 0.9, 1.2)])
def test_every_rnn_activation_matches_onnxruntime(activation, alpha, beta):
    attrs = {"activations": [activation]}
    if alpha is not None:
        attrs["activation_alpha"] = [alpha]
    if beta is not None:
        attrs["activation_beta"] = [beta]
    m = model("RNN", outputs=("Y", "Y_h"), **attrs)
    feeds = feeds_of(m)
    check(m, feeds, ort_run(m, feeds))


@pytest.mark.parametrize("op, attrs", [
    ("LSTM", {"activations": ["HardSigmoid", "LeakyRelu", "Elu"],
              "activation_alpha": [0.3, 0.1], "activation_beta": [0.6], "clip": 1.5}),
    ("GRU", {"direction": "bidirectional", "clip": 0.8,
             "activations": ["Relu", "Softsign", "Sigmoid", "ScaledTanh"],
             "activation_alpha": [0.7], "activation_beta": [1.3]}),
    ("GRU", {"linear_before_reset": 1, "activations": ["HardSigmoid", "Tanh"]}),
    ("RNN", {"clip": 0.5}),
])
def test_activations_per_direction_and_clip_match_onnxruntime(op, attrs):
    m = model(op, **attrs)
    feeds = feeds_of(m)
    check(m, feeds, ort_run(m, feeds))


@pytest.mark.parametrize("direction, seq", [("forward", 4), ("forward", 5),
                                            ("bidirectional", 4)])
def test_lstm_peepholes_match_onnxruntime(direction, seq):
    """An even sequence runs the recurrence two steps per iteration, an odd one not."""
    m = model("LSTM", seq=seq, direction=direction, peepholes=True, initial=True,
              outputs=("Y", "Y_h"))
    feeds = feeds_of(m)
    check(m, feeds, ort_run(m, feeds))


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_an_empty_sequence_gives_zero_outputs_and_states(op):
    """As onnxruntime: Y, Y_h (and Y_c) of a sequence of length 0 are 0, not the
    initial state."""
    m = model(op, lens=True, initial=True, direction="bidirectional")
    feeds = feeds_of(m, lengths=[0, 2, 5])
    expected = ort_run(m, feeds)
    assert not expected["Y_h"][:, 0].any() and feeds["h0"][:, 0].all()
    check(m, feeds, expected)


@pytest.mark.parametrize("lengths", [[-1, 2, 3], [6, 2, 3]])
def test_sequence_lens_out_of_range_is_refused_at_run(lengths):
    m = model("GRU", lens=True)
    compiled = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False)
    with pytest.raises(InvalidArgumentError, match=r"sequence_lens .* must be between 0 and "
                                                   r"the sequence length 5"):
        compiled.run(feeds_of(m, lengths=lengths))


@pytest.mark.parametrize("op, attrs, problem, details", [
    ("RNN", {"activations": ["Gelu"]}, "unknown_activation", {"name": "Gelu"}),
    ("GRU", {"activations": ["Sigmoid"]}, "activation_count",
     {"names": ["Sigmoid"], "count": 2, "total": 2, "directions": 1}),
    ("GRU", {"direction": "bidirectional", "activations": ["Sigmoid", "Tanh"]},
     "activation_count", {"names": ["Sigmoid", "Tanh"], "count": 2, "total": 4,
                          "directions": 2}),
    ("RNN", {"clip": -1.0}, "clip", {"clip": -1.0}),
    ("LSTM", {"direction": "sideways"}, "direction", {"direction": "sideways"}),
    ("GRU", {"layout": 2}, "layout", {"layout": 2})])
def test_unsupported_forms_are_refused_by_attribute(op, attrs, problem, details):
    err = refused(po.graph.RecurrenceAttributeError,
                  lambda: po.graph.from_onnx(model(op, **attrs)))
    assert (err.node, err.op_type, err.problem) == ("rec", op, problem)
    assert {k: err.details[k] for k in details} == details
    assert err.attribute in attrs


def test_coupled_input_and_forget_gates_are_refused_by_attribute():
    err = refused(po.graph.UnsupportedAttributeValueError,
                  lambda: po.graph.from_onnx(model("LSTM", input_forget=1)))
    assert (err.node, err.op_type, err.attribute, err.value, err.supported) == \
        ("rec", "LSTM", "input_forget", 1, (0,))


def test_export_refuses_a_recurrence_the_c_runtime_does_not_run(tmp_path):
    m = model("GRU", direction="bidirectional")
    compiled = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False)
    err = refused(ExportError, lambda: compiled.export_library(tmp_path, name="bidi"))
    assert (err.problem, err.nodes) == ("recurrence", ("node 'rec' (GRU)",))
