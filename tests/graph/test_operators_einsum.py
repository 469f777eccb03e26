"""Einsum without diagonals (operators_einsum): products, transposes, reductions, outer
products, ``...`` broadcasting, implicit outputs, against onnxruntime and NumPy; the
equations it refuses, by name."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.graph.operators_einsum import EinsumEquationError  # noqa: E402
from testlib.errors import refused  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402


def einsum_model(equation, shapes, dtype="float32"):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    names = [f"x{k}" for k in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], name="es", equation=equation)
    graph = helper.make_graph([node], "einsum", [
        helper.make_tensor_value_info(n, elem, list(s)) for n, s in zip(names, shapes)],
        [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),            # matmul
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]),  # batch matmul (spaces)
    ("ij->ji", [(3, 4)]),                       # transpose
    ("ijk->kij", [(2, 3, 4)]),
    ("ij->i", [(3, 4)]), ("ij->", [(3, 4)]),    # reductions
    ("i,j->ij", [(3,), (4,)]),                  # outer
    ("i,i", [(5,)] * 2),                        # implicit output: a scalar
    ("ij,jk", [(3, 4), (4, 2)]),                # implicit: 'ik'
    ("ba,ca", [(3, 4), (2, 4)]),                # implicit, alphabetical: 'bc'
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (1, 5, 4, 2)]),  # broadcast batch dims
    ("...i,i", [(2, 3, 4), (4,)]),              # implicit with '...'
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),  # three operands
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)])])  # attention scores
def test_einsum_matches_onnxruntime_and_numpy(equation, shapes):
    rng = np.random.default_rng(13)
    feeds = {f"x{k}": rng.standard_normal(s).astype(np.float32) for k, s in enumerate(shapes)}
    m = einsum_model(equation, shapes)
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1).run(feeds)["y"]
    assert_numbers(got, ort_run(m, feeds)["y"], rtol=1e-5, atol=1e-5)
    assert_numbers(got, np.einsum(equation.replace(" ", ""), *feeds.values()).astype(np.float32),
                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float64"])
def test_einsum_of_other_dtypes(dtype):
    rng = np.random.default_rng(14)
    feeds = {"x0": rng.integers(-9, 10, (3, 4)).astype(dtype),
             "x1": rng.integers(-9, 10, (4, 2)).astype(dtype)}
    m = einsum_model("ij,jk->ki", [(3, 4), (4, 2)], dtype)
    got = po.graph.compile(po.graph.from_onnx(m), num_threads=1).run(feeds)["y"]
    assert got.dtype == np.dtype(dtype)
    assert_numbers(got, ort_run(m, feeds)["y"])


@pytest.mark.parametrize("equation, shapes, problem, details", [
    ("ii->i", [(3, 3)], "malformed", {"faults": (("diagonal", "ii"),)}),
    ("...ii->...i", [(2, 3, 3)], "malformed", {"faults": (("diagonal", "...ii"),)}),
    ("ij,jk->ik", [(3, 4), (5, 2)], "letter_sizes", {"letter": "j", "sizes": (4, 5)}),
    ("ij,jk->iz", [(3, 4), (4, 2)], "unknown_letters", {"letters": "z"}),
    ("ij->ij", [(3, 4), (3, 4)], "malformed", {"faults": (("operands", (1, 2)),)}),
    ("ijk->ij", [(3, 4)], "term_shape", {"term": "ijk", "input": "x0", "shape": [3, 4]}),
    ("...i->i", [(2, 3)], "sums_ellipsis", {})])
def test_unsupported_equations_are_refused_by_name(equation, shapes, problem, details):
    err = refused(EinsumEquationError,
                  lambda: po.graph.from_onnx(einsum_model(equation, shapes)))
    assert (err.node, err.op_type, err.equation, err.problem, err.details) == \
        ("es", "Einsum", equation, problem, details)
