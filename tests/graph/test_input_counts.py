"""Nodes with more inputs than their operator takes are refused at import, by name
(registry.check_node); every registered ONNX operator's input counts are ONNX's."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

import polyopt as po  # noqa: E402
from polyopt.graph.registry import OPS, TooManyInputsError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.onnx_models import single_op  # noqa: E402


@pytest.mark.parametrize("op, shapes, consts, allowed", [
    ("Relu", [(2, 3)], [np.float32(1)], 1),
    ("Add", [(2, 3), (2, 3)], [np.ones((2, 3), np.float32)], 2),
    ("Conv", [(1, 2, 5, 5)], [np.ones((3, 2, 3, 3), np.float32), np.zeros(3, np.float32),
                              np.zeros(3, np.float32)], 3)])
def test_extra_inputs_are_refused_at_import_naming_node_operator_and_counts(
        op, shapes, consts, allowed):
    model = single_op(op, shapes, consts=consts)
    given = len(shapes) + len(consts)
    err = refused(TooManyInputsError, lambda: po.graph.from_onnx(model))
    assert (err.node, err.op_type, err.max_inputs, len(err.inputs)) == \
        (model.graph.node[0].name, op, allowed, given)


def test_an_absent_trailing_input_still_counts_as_given():
    b = po.graph.GraphBuilder()
    x = b.input("x", (2, 3), "float32")
    err = refused(TooManyInputsError, lambda: b.op("Relu", [x, ""]))
    assert (err.op_type, err.max_inputs, err.inputs) == ("Relu", 1, ("x", ""))


def test_variadic_operators_take_any_number_of_inputs():
    b = po.graph.GraphBuilder()
    xs = [b.input(f"x{k}", (2,), "float32") for k in range(5)]
    y = b.op("Sum", xs)
    assert b.build([y]).tensors[y].shape == (2,)


def test_registered_input_counts_are_onnx_s():
    for name, spec in OPS.items():
        if spec.internal:
            continue
        schema = onnx.defs.get_schema(name)
        largest = None if schema.max_input > 1000 else schema.max_input
        assert spec.max_inputs == largest, name
        if name != "Pad":  # (opset 2's Pad took its pads as an attribute)
            assert spec.min_inputs == schema.min_input, name
