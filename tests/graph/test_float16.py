"""float16 tensors in polyopt.graph: stored as float16, computed in float32 and rounded to
float16 after each operator, bit for bit as onnxruntime's CPU kernels (onnx.reference
where onnxruntime has none); operators that do not take float16 refuse it by name."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.graph.contracts import UnsupportedDTypeError  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402

H, F, D = TensorProto.FLOAT16, TensorProto.FLOAT, TensorProto.DOUBLE
NUMPY = {H: np.float16, F: np.float32, D: np.float64}


def graph_model(nodes, inputs, output_type):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, [3, 5]) for n, t in inputs],
        [helper.make_tensor_value_info("y", output_type, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def expected_of(m, feeds):
    try:
        return ort_run(m, feeds)["y"]
    except Exception as err:  # onnxruntime's own exception types
        if "NOT_IMPLEMENTED" not in str(err):
            raise
        return ReferenceEvaluator(m).run(None, feeds)[0]


def check_bits(m, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in m.graph.input:
        x = (rng.standard_normal((3, 5)) * 40).astype(NUMPY[value.type.tensor_type.elem_type])
        x[0, :2] = [65504, -1e-7]  # float16's largest, a value that rounds to a subnormal
        feeds[value.name] = x
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1, cache=False).run(feeds)["y"]
    expected = expected_of(m, feeds)
    assert_numbers(got, expected, dtype=expected.dtype, rtol=0, atol=0)  # (NaN equals NaN)


@pytest.mark.parametrize("source, target", [(F, H), (H, F), (H, D), (D, H)])
def test_casts_to_and_from_float16_are_exact(source, target):
    check_bits(graph_model([helper.make_node("Cast", ["a"], ["y"], to=target)],
                           [("a", source)], target))


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_operators_round_like_onnxruntime(op):
    check_bits(graph_model([helper.make_node(op, ["a", "b"], ["y"])], [("a", H), ("b", H)], H))


def test_a_fused_chain_rounds_after_each_operator():
    """Add, Relu, Mul, Neg in one kernel: each result rounded to float16 as onnxruntime
    stores it (in float32 throughout, the sums would differ in their last bits)."""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["r"]),
             helper.make_node("Mul", ["r", "b"], ["m"]), helper.make_node("Neg", ["m"], ["y"])]
    m = graph_model(nodes, [("a", H), ("b", H)], H)
    groups = po.graph.fuse(po.graph.from_onnx(m))
    assert [len(g.nodes) for g in groups if g.kind != "view"] == [4]
    check_bits(m)


def test_comparisons_and_where_of_float16():
    nodes = [helper.make_node("Less", ["a", "b"], ["c"]),
             helper.make_node("Where", ["c", "a", "b"], ["y"])]
    check_bits(graph_model(nodes, [("a", H), ("b", H)], H))


def test_transpose_and_concat_keep_float16():
    nodes = [helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]),
             helper.make_node("Transpose", ["b"], ["u"], perm=[1, 0]),
             helper.make_node("Concat", ["t", "u"], ["y"], axis=0)]
    check_bits(graph_model(nodes, [("a", H), ("b", H)], H))


@pytest.mark.parametrize("op", ["Sigmoid", "Softmax", "ReduceSum", "MatMul"])
def test_operators_without_float16_refuse_it_by_name(op):
    inputs = [("a", H), ("b", H)] if op == "MatMul" else [("a", H)]
    m = graph_model([helper.make_node(op, [n for n, _ in inputs], ["y"], name="n")], inputs, H)
    err = refused(UnsupportedDTypeError, lambda: po.graph.from_onnx(m))
    assert (err.node, err.op_type, err.input, err.dtype) == ("n", op, "a", "float16")
    assert "float16" not in err.supported
