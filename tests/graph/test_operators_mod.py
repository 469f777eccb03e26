"""Mod (operators_math): fmod=0 (the divisor's sign, NumPy's ``%``) and fmod=1 (the
dividend's sign, C's ``fmod``) of integers and floats, against onnxruntime and NumPy,
including signed zeros, infinities, NaN, division by 0 and ``MIN % -1``."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.errors import InvalidArgumentError  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ort_run  # noqa: E402


def mod_model(dtype, a_shape, b_shape, fmod):
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    node = helper.make_node("Mod", ["a", "b"], ["y"], name="mod", fmod=fmod)
    graph = helper.make_graph([node], "mod", [
        helper.make_tensor_value_info("a", elem, list(a_shape)),
        helper.make_tensor_value_info("b", elem, list(b_shape))],
        [helper.make_tensor_value_info("y", elem, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def run(model, feeds):
    return po.graph.compile(po.graph.from_onnx(model), num_threads=1).run(feeds)["y"]


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
def test_integer_mod_has_onnx_signs(dtype, fmod):
    rng = np.random.default_rng(11)
    low = 0 if dtype == "uint8" else -50
    a = rng.integers(low, 51, (4, 6)).astype(dtype)
    b = rng.integers(low, 8, (6,)).astype(dtype)
    b[b == 0] = 3  # (onnxruntime's process dies of SIGFPE on 0)
    m = mod_model(dtype, a.shape, b.shape, fmod)
    got = run(m, {"a": a, "b": b})
    assert_numbers(got, ort_run(m, {"a": a, "b": b})["y"])
    np.testing.assert_array_equal(got, np.fmod(a, b) if fmod else np.mod(a, b))


@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_by_zero_and_min_by_minus_one_do_not_trap(fmod):
    a = np.array([7, -7, np.iinfo(np.int32).min, np.iinfo(np.int32).min, 5], np.int32)
    b = np.array([0, 0, -1, 3, -1], np.int32)
    got = run(mod_model("int32", (5,), (5,), fmod), {"a": a, "b": b})
    with np.errstate(divide="ignore"):  # NumPy: a remainder by 0 is 0, as here
        expected = np.fmod(a, b) if fmod else np.mod(a, b)
    np.testing.assert_array_equal(got, expected)


EDGES_A = [0.0, -0.0, 0.0, -0.0, -3.0, 3.0, -1.0, 1.0, np.inf, -np.inf, 1.0, 1.0, np.nan,
           1.0, 5.5, -5.5, 5.5, -5.5]
EDGES_B = [-2.0, 2.0, 2.0, -2.0, np.inf, np.inf, -np.inf, -np.inf, 2.0, 2.0, 0.0, -0.0, 2.0,
           np.nan, 2.0, 2.0, -2.0, -2.0]


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_float_mod_matches_numpy_with_signed_zeros_and_infinities(dtype, fmod):
    a, b = np.array(EDGES_A, dtype), np.array(EDGES_B, dtype)
    got = run(mod_model(dtype, a.shape, b.shape, fmod), {"a": a, "b": b})
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = np.fmod(a, b) if fmod else np.mod(a, b)
    np.testing.assert_array_equal(got, expected)  # (NaN where NaN)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


def test_float_mod_of_random_values_against_onnxruntime():
    rng = np.random.default_rng(12)
    a = (rng.standard_normal((3, 5)) * 10).astype(np.float32)
    b = (rng.standard_normal((3, 1)) * 3).astype(np.float32)
    m = mod_model("float32", a.shape, b.shape, 1)  # (onnxruntime: floats need fmod=1)
    assert_numbers(run(m, {"a": a, "b": b}), ort_run(m, {"a": a, "b": b})["y"])


def test_mod_refuses_a_bad_fmod_by_name():
    m = mod_model("int32", (3,), (3,), 2)
    with pytest.raises(InvalidArgumentError, match=r"node 'mod' \(Mod\): fmod=2 must be 0 or 1"):
        po.graph.from_onnx(m)
