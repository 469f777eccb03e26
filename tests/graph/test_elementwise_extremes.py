"""Elementwise operators at extreme magnitudes (issue 32): float64 computes in double,
each formula is sound where its terms cancel or absorb one another, and the results
are onnxruntime's (or, where onnxruntime's own formula loses the value, the exact one).

A float64 chain Reciprocal, Softplus, Transpose, Div was 9% off near 1e15: Softplus was
``max(x, 0) + log(1 + exp(-|x|))``, and ``1 + exp(-34)`` keeps one binary digit of
``exp(-34)``; the Div then made the error visible.
"""

import math

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402

MAGNITUDES = (1e-300, 1e-30, 1e-8, 1e-4, 0.3, 1.0, 2.5, 3.0, 10.0, 20.0, 30.0, 36.0, 40.0,
              90.0, 300.0, 710.0, 800.0, 1e15, 1e300)
EXTREMES = np.array(sorted({s * m for m in MAGNITUDES for s in (1, -1)} | {0.0}))
# relative tolerance: a few units in the last place (libm's functions, polyopt's and
# onnxruntime's, may round apart)
RTOL = {"float64": 1e-13, "float32": 2e-6}
ATOL = {"float64": 1e-300, "float32": 1e-37}  # (below: subnormals, flushed by some)


def _model(op, dtype, shape, inputs=1, opset=18, **attrs):
    from onnx import helper
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    names = [f"x{k}" for k in range(inputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **attrs)], "g",
        [helper.make_tensor_value_info(n, elem, list(shape)) for n in names],
        [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _ours(model, feeds):
    return po.graph.compile(po.graph.from_onnx(model), cache=False).run(feeds)["y"]


def _oracle(model, feeds):
    """onnxruntime's result, or ``onnx.reference``'s where onnxruntime has no kernel for
    the dtype (float64 Acos, Asin, Atan, Cosh, Sinh, Tan)."""
    from onnx.reference import ReferenceEvaluator
    from onnxruntime.capi.onnxruntime_pybind11_state import NotImplemented as Missing
    try:
        return ort_run(model, feeds)["y"]
    except Missing:
        return ReferenceEvaluator(model).run(None, feeds)[0]


def _inputs(op, dtype):
    with np.errstate(over="ignore"):
        x = EXTREMES.astype(dtype)
    if op in ("Acos", "Asin"):
        x = np.clip(x, -1, 1)
    if op in ("Log", "Sqrt"):
        x = np.abs(x)
    return np.concatenate([x, np.array([np.inf, -np.inf], dtype)])


# operators whose onnxruntime kernel is within rounding of the exact value everywhere
SOUND_IN_ONNXRUNTIME = ["Abs", "Acos", "Asin", "Atan", "Ceil", "Cos", "Cosh", "Exp", "Floor",
                        "HardSigmoid", "LeakyRelu", "Log", "Neg", "Reciprocal", "Relu", "Round",
                        "Sign", "Sin", "Sinh", "Softsign", "Sqrt", "Tan", "Tanh",
                        "ThresholdedRelu"]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", SOUND_IN_ONNXRUNTIME)
def test_unary_operator_at_extreme_magnitudes_matches_onnxruntime(op, dtype):
    """Float attribute defaults are float32 as ONNX's (LeakyRelu's 0.01 in a float64
    product), Round keeps infinities (was NaN), ThresholdedRelu of -inf is 0 (was NaN)."""
    x = _inputs(op, dtype)
    model = _model(op, dtype, x.shape)
    with np.errstate(all="ignore"):
        expected = _oracle(model, {"x0": x})
    got = _ours(model, {"x0": x})
    assert got.dtype == np.dtype(dtype)
    assert_numbers(got, expected, rtol=RTOL[dtype], atol=ATOL[dtype], name=op)


def _softplus(x):
    return np.logaddexp(0.0, x)


EXACT = {  # float64 references by other formulas (NumPy's and the C library's)
    "Softplus": _softplus,
    "Sigmoid": lambda x: np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                                  np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))),
    "Mish": lambda x: x * np.tanh(_softplus(x)),
    "Elu": lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x),
    "Celu": lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x),
    "Selu": lambda x: np.where(x > 0, float(np.float32(1.0507009873554805)) * x,
                               float(np.float32(1.0507009873554805))
                               * float(np.float32(1.6732632423543772))
                               * np.expm1(np.minimum(x, 0))),
    "Erf": np.vectorize(math.erf),
    # ONNX's definition as written, with the C library's erf (1 + erf(x) is 0 below
    # x = -8.3, as in onnxruntime and onnx.reference)
    "Gelu": lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0))),
}
# onnxruntime's formulas that lose the value: Softplus, Sigmoid and Mish of a large
# negative x (0 or 5% off), exp(x) - 1 of a tiny x (Elu, Selu, Celu: 0), float64 Erf
# (onnx.reference: float32's); polyopt's float32 Erf is an approximation to 1.5e-7
# absolute, which Gelu's 1 + erf(x) magnifies near x = -3
LOOSE = {("Erf", "float32"): (3e-7, 0.0), ("Gelu", "float32"): (1e-4, 1e-6)}  # rtol, atol


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("op", sorted(EXACT))
def test_unary_operator_at_extreme_magnitudes_is_exact(op, dtype):
    x = _inputs(op, dtype)
    x = x[np.abs(x.astype(np.float64)) < (1e300 if dtype == "float64" else 3e38)]
    model = _model(op, dtype, x.shape, opset=20 if op == "Gelu" else 18)
    with np.errstate(all="ignore"):
        expected = EXACT[op](x.astype(np.float64))
    got = _ours(model, {"x0": x})
    assert got.dtype == np.dtype(dtype)
    tiny = np.finfo(dtype).tiny  # (a float32 result below it may be flushed or rounded)
    with np.errstate(over="ignore"):
        expected = expected.astype(dtype).astype(np.float64)
    rtol, atol = LOOSE.get((op, dtype), (RTOL[dtype], 0.0))
    atol = max(atol, ATOL[dtype], tiny)
    assert_numbers(got.astype(np.float64), expected, rtol=rtol, atol=atol, name=op)


def test_softplus_chain_of_issue_32_matches_the_reference():
    """The reproducer's chain: 1/x of a small negative x, Softplus (about 1e-15), then a
    division by it (about 1e15): the relative error of Softplus becomes the result's."""
    from onnx import helper
    from onnx.reference import ReferenceEvaluator
    elem = helper.np_dtype_to_tensor_dtype(np.dtype("float64"))
    nodes = [helper.make_node("Reciprocal", ["x"], ["r"]),
             helper.make_node("Softplus", ["r"], ["s"]),
             helper.make_node("Div", ["b", "s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, elem, [6])
                                           for n in ("x", "b")],
                              [helper.make_tensor_value_info("y", elem, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": np.array([-1 / 34, -1 / 30, -1 / 40, -0.01, 0.5, -2.0]),
             "b": np.array([0.58, -1.3, 2.0, 1e-3, 1.0, -0.25])}
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    exact = feeds["b"] / _softplus(1 / feeds["x"])
    got = po.graph.compile(po.graph.from_onnx(model), cache=False).run(feeds)["y"]
    assert_numbers(got, exact, rtol=1e-13, atol=0)
    assert_numbers(got, expected, rtol=1e-12, atol=0)
