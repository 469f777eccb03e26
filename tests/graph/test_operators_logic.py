"""Comparisons, boolean operators, Where and Cast to/from bool (operators_logic; bool
tensors stored as one byte 0/1) against onnxruntime and NumPy; their typed refusals."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.errors import InvalidArgumentError  # noqa: E402
from polyopt.graph import UnsupportedDTypeError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402


def elem(dtype):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def model(nodes, inputs, outputs):
    """``inputs``/``outputs``: [(name, dtype, shape or None)]."""
    def infos(pairs):
        return [helper.make_tensor_value_info(n, elem(d), None if s is None else list(s))
                for n, d, s in pairs]
    graph = helper.make_graph(nodes, "logic", infos(inputs), infos(outputs))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run_both(m, feeds):
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1).run(feeds)
    expected = ort_run(m, feeds)
    for name, value in expected.items():
        assert got[name].dtype == value.dtype, name
        assert_numbers(got[name], value)
    return got


def values(rng, dtype, shape):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        low = 0 if dtype == "uint8" else -3
        return rng.integers(low, 4, shape).astype(dtype)
    out = rng.integers(-3, 4, shape).astype(dtype)  # equal values happen
    out.flat[::5] = np.nan
    return out


COMPARISONS = {"Equal": np.equal, "Less": np.less, "LessOrEqual": np.less_equal,
               "Greater": np.greater, "GreaterOrEqual": np.greater_equal}


@pytest.mark.parametrize("op", sorted(COMPARISONS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int32", "int64"])
def test_comparisons_broadcast_and_give_bool(op, dtype):
    rng = np.random.default_rng(5)
    feeds = {"a": values(rng, dtype, (3, 1, 5)), "b": values(rng, dtype, (4, 5))}
    m = model([helper.make_node(op, ["a", "b"], ["y"])],
              [("a", dtype, (3, 1, 5)), ("b", dtype, (4, 5))], [("y", "bool", None)])
    got = run_both(m, feeds)
    np.testing.assert_array_equal(got["y"], COMPARISONS[op](feeds["a"], feeds["b"]))


@pytest.mark.parametrize("op, reference", [("And", np.logical_and), ("Or", np.logical_or),
                                           ("Xor", np.logical_xor)])
def test_boolean_operators(op, reference):
    rng = np.random.default_rng(6)
    feeds = {"a": values(rng, "bool", (2, 3, 4)), "b": values(rng, "bool", (3, 1))}
    m = model([helper.make_node(op, ["a", "b"], ["y"])],
              [("a", "bool", (2, 3, 4)), ("b", "bool", (3, 1))], [("y", "bool", None)])
    got = run_both(m, feeds)
    np.testing.assert_array_equal(got["y"], reference(feeds["a"], feeds["b"]))


def test_not_of_a_comparison_fused_with_where():
    """Less -> Not -> Where in one group: the bool tensor between them stays 0/1."""
    rng = np.random.default_rng(7)
    feeds = {"x": rng.standard_normal((4, 6)).astype(np.float32),
             "t": rng.standard_normal((6,)).astype(np.float32)}
    nodes = [helper.make_node("Less", ["x", "t"], ["c"]),
             helper.make_node("Not", ["c"], ["n"]),
             helper.make_node("Where", ["n", "x", "t"], ["y"])]
    m = model(nodes, [("x", "float32", (4, 6)), ("t", "float32", (6,))],
              [("y", "float32", None), ("n", "bool", None)])
    got = run_both(m, feeds)
    np.testing.assert_array_equal(got["y"], np.where(feeds["x"] >= feeds["t"], feeds["x"],
                                                     feeds["t"]))


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64"])  # (no bool Where in ort)
def test_where_broadcasts_condition_and_values(dtype):
    rng = np.random.default_rng(8)
    feeds = {"c": values(rng, "bool", (3, 1)), "x": values(rng, dtype, (1, 4)),
             "y": values(rng, dtype, (3, 4))}
    m = model([helper.make_node("Where", ["c", "x", "y"], ["z"])],
              [("c", "bool", (3, 1)), ("x", dtype, (1, 4)), ("y", dtype, (3, 4))],
              [("z", dtype, None)])
    got = run_both(m, feeds)
    np.testing.assert_array_equal(got["z"], np.where(feeds["c"], feeds["x"], feeds["y"]))


@pytest.mark.parametrize("source", ["float32", "float64", "int8", "uint8", "int32", "int64"])
def test_cast_to_bool_and_back(source):
    rng = np.random.default_rng(9)
    x = values(rng, source, (5, 4))
    if source.startswith("float"):
        x[0, :3] = [0.5, -0.0, np.inf]  # a fraction is true; -0 false; NaN (row 0) true
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=9),
             helper.make_node("Cast", ["b"], ["y"], to=elem(source))]
    m = model(nodes, [("x", source, (5, 4))], [("b", "bool", None), ("y", source, None)])
    got = run_both(m, {"x": x})
    np.testing.assert_array_equal(got["b"], x.astype(bool))
    np.testing.assert_array_equal(got["y"], x.astype(bool).astype(source))


def test_a_bool_input_and_constant_pass_through_views():
    x = np.array([[True, False, True], [False, False, True]])
    nodes = [helper.make_node("Transpose", ["x"], ["t"]),
             helper.make_node("Reshape", ["t", "s"], ["y"])]
    m = model(nodes, [("x", "bool", (2, 3))], [("y", "bool", None)])
    m.graph.initializer.append(helper.make_tensor("s", 7, [1], [6]))
    got = run_both(m, {"x": x})
    np.testing.assert_array_equal(got["y"], x.T.reshape(6))


def test_where_refuses_a_condition_that_is_not_bool():
    m = model([helper.make_node("Where", ["c", "x", "y"], ["z"], name="w")],
              [("c", "float32", (3,)), ("x", "float32", (3,)), ("y", "float32", (3,))],
              [("z", "float32", None)])
    with pytest.raises(InvalidArgumentError, match=r"node 'w' \(Where\): the condition 'c' "
                                                   r"is float32; it must be bool"):
        po.graph.from_onnx(m)


def test_operand_dtypes_that_differ_are_refused_by_name():
    m = model([helper.make_node("Less", ["a", "b"], ["y"], name="n")],
              [("a", "float32", (3,)), ("b", "int32", (3,))], [("y", "bool", None)])
    with pytest.raises(InvalidArgumentError, match=r"node 'n' \(Less\): its inputs have "
                                                   r"different dtypes \['float32', 'int32'\]"):
        po.graph.from_onnx(m)


@pytest.mark.parametrize("op, dtype, takes", [("Less", "bool", "float32"),
                                              ("And", "float32", "bool")])
def test_operand_dtypes_are_refused_by_name(op, dtype, takes):
    m = model([helper.make_node(op, ["a", "b"], ["y"], name="n")],
              [("a", dtype, (3,)), ("b", dtype, (3,))], [("y", "bool", None)])
    err = refused(UnsupportedDTypeError, lambda: po.graph.from_onnx(m))
    assert (err.node, err.op_type, err.input, err.dtype) == ("n", op, "a", dtype)
    assert dtype not in err.supported and takes in err.supported


@pytest.mark.parametrize("training", [False, True])
def test_dropout_runs_for_inference_and_refuses_training_mode(training):
    """A bool training_mode imports now: True (random masks) is refused by name, False
    is the identity."""
    nodes = [helper.make_node("Dropout", ["x", "ratio", "training"], ["y"], name="drop")]
    m = model(nodes, [("x", "float32", (2, 3))], [("y", "float32", None)])
    m.graph.initializer.extend([helper.make_tensor("ratio", 1, [], [0.5]),
                                helper.make_tensor("training", 9, [], [training])])
    if training:
        err = refused(po.graph.UnsupportedAttributeValueError, lambda: po.graph.from_onnx(m))
        assert (err.node, err.op_type, err.attribute, err.value) == \
            ("drop", "Dropout", "training_mode", True)
        return
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1).run({"x": x})["y"]
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("op, inits, attrs", [
    ("Expand", [("s", [2, 2, 3])], {}), ("Tile", [("r", [2, 1])], {}),
    ("Gather", [("i", [2, 0])], {"axis": 1}), ("Concat", [], {"axis": 0})])
def test_bool_data_movement(op, inits, attrs):
    x = np.array([[True, False, True], [False, False, True]])
    inputs = ["x"] + [n for n, _ in inits] + (["x"] if op == "Concat" else [])
    m = model([helper.make_node(op, inputs, ["y"], **attrs)], [("x", "bool", (2, 3))],
              [("y", "bool", None)])
    m.graph.initializer.extend(helper.make_tensor(n, 7, [len(v)], v) for n, v in inits)
    run_both(m, {"x": x})


@pytest.mark.parametrize("op", ["ReduceSum", "Relu", "Softmax"])
def test_operators_that_do_not_take_bool_refuse_it_by_name(op):
    """(invalid ONNX, but it must not run: a sum of bytes is no bool)"""
    m = model([helper.make_node(op, ["x"], ["y"], name="n")], [("x", "bool", (2, 3))],
              [("y", "bool", None)])
    err = refused(UnsupportedDTypeError, lambda: po.graph.from_onnx(m))
    assert (err.node, err.op_type, err.input, err.dtype) == ("n", op, "x", "bool")
