"""GRU and RNN (polyopt.graph.recurrent) and the Y_h output of LSTM, GRU and RNN (sliced
from Y at import) against onnxruntime; their typed refusals."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.graph import UnsupportedAttributeValueError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def recurrent_model(op, seq=5, batch=2, width=6, hidden=7, bias=True, initial=False,
                    outputs=("Y", "Y_h"), seed=0, **attrs):
    rng = np.random.default_rng(seed)
    gates = GATES[op]
    weights = {"W": rng.standard_normal((1, gates * hidden, width)) * 0.4,
               "R": rng.standard_normal((1, gates * hidden, hidden)) * 0.4}
    if bias:
        weights["B"] = rng.standard_normal((1, 2 * gates * hidden)) * 0.3
    inputs = ["x", "W", "R", "B" if bias else ""]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [seq, batch, width])]
    if initial:
        inputs += ["", "h0"]
        graph_inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT,
                                                          [1, batch, hidden]))
    node = helper.make_node(op, inputs, list(outputs), name="rec", hidden_size=hidden,
                            **attrs)
    graph = helper.make_graph(
        [node], "recurrent", graph_inputs,
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def check(model, seed=1):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        shape = [d.dim_value for d in value.type.tensor_type.shape.dim]
        feeds[value.name] = rng.standard_normal(shape).astype(np.float32)
    got = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False).run(feeds)
    expected = ort_run(model, feeds)
    assert set(got) >= set(expected)
    for name, value in expected.items():
        assert got[name].shape == value.shape, name
        assert_numbers(got[name], value, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
@pytest.mark.parametrize("bias, initial", [(True, False), (False, True), (True, True)])
def test_gru_matches_onnxruntime(linear_before_reset, bias, initial):
    check(recurrent_model("GRU", bias=bias, initial=initial,
                          linear_before_reset=linear_before_reset))


@pytest.mark.parametrize("bias, initial", [(True, False), (False, True)])
def test_rnn_matches_onnxruntime(bias, initial):
    check(recurrent_model("RNN", bias=bias, initial=initial))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_only_the_last_state_read(op):
    """``outputs=["", "Y_h"]``, as onnx's node tests ask: Y_h is Y's last step."""
    check(recurrent_model(op, seq=3, outputs=("", "Y_h")))


def test_one_step_and_one_hidden_unit():
    check(recurrent_model("GRU", seq=1, batch=1, width=1, hidden=1))


@pytest.mark.parametrize("op, attrs, problem, details", [
    ("GRU", {"activations": ["Relu", "Cube"]}, "unknown_activation", {"name": "Cube"}),
    ("RNN", {"clip": 0.0}, "clip", {"clip": 0.0})])
def test_undefined_forms_are_refused_by_name(op, attrs, problem, details):
    err = refused(po.graph.RecurrenceAttributeError,
                  lambda: po.graph.from_onnx(recurrent_model(op, outputs=("Y",), **attrs)))
    assert (err.node, err.op_type, err.problem) == ("rec", op, problem)
    assert {k: err.details[k] for k in details} == details


def test_coupled_input_and_forget_gates_are_refused_by_name():
    err = refused(UnsupportedAttributeValueError, lambda: po.graph.from_onnx(
        recurrent_model("LSTM", outputs=("Y",), input_forget=1)))
    assert (err.node, err.op_type, err.attribute, err.value, err.supported) == \
        ("rec", "LSTM", "input_forget", 1, (0,))
