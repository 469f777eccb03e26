"""The suite's one reference check (testlib.numeric): it fails on a wrong value, passes
within the documented tolerance, names the worst element, compares a schedule with the
default schedule of its program; and no test file defines a comparison of its own."""

import ast
from pathlib import Path

import numpy as np
import pytest

import polyopt as po
from testlib.numeric import (TOLERANCES, assert_matches, assert_numbers,
                             assert_same_as_default, mismatch, tolerance)

TESTS = Path(__file__).resolve().parent


def test_tolerance_is_exact_for_integers_and_strict_order():
    for dtype in ("int8", "uint8", "int32", "int64", "bool"):
        assert tolerance(dtype) == (0.0, 0.0)
    assert tolerance("float64", exact=True) == (0.0, 0.0)
    assert tolerance("float64") == TOLERANCES["float64"] == (1e-12, 1e-12)
    assert tolerance("float32") == (1e-5, 1e-5)
    assert tolerance("bfloat16") == tolerance("bf16") == (1e-2, 1e-2)
    with pytest.raises(ValueError, match="give rtol= and atol="):
        tolerance("complex128")


def test_passes_within_tolerance_and_fails_beyond_it():
    a = np.linspace(1, 2, 7)
    assert_numbers(a * (1 + 5e-13), a)
    with pytest.raises(AssertionError):
        assert_numbers(a * (1 + 5e-12), a)
    with pytest.raises(AssertionError):  # exact: one unit in the last place is too much
        assert_numbers(np.nextafter(a, 3), a, exact=True)
    assert_numbers(np.float32(a) * np.float32(1 + 4e-6), np.float32(a))
    with pytest.raises(AssertionError):  # an explicit bound wins over the documented one
        assert_numbers(np.float32(a) * np.float32(1 + 4e-6), np.float32(a), rtol=1e-6,
                       atol=0)
    with pytest.raises(AssertionError, match="1 of 4 elements differ"):
        assert_numbers(np.int32([1, 2, 3, 4]), np.int32([1, 2, 3, 5]))


def test_nan_inf_shape_and_dtype():
    assert_numbers([np.nan, np.inf, 1.0], [np.nan, np.inf, 1.0], exact=True)
    assert "got nan, expected 1.0" in mismatch([np.nan], [1.0])
    assert "got inf, expected 1.0" in mismatch([np.inf], [1.0])
    assert "got shape (3,), expected (3, 1)" in mismatch(np.zeros(3), np.zeros((3, 1)))
    assert "got dtype float64, expected float32" in mismatch(np.zeros(3), np.zeros(3),
                                                            dtype="float32")
    assert mismatch(np.zeros((2, 2)), 0.0) is None  # a scalar stands for every element


def test_the_message_names_the_worst_element():
    expected = np.arange(12, dtype=np.float64).reshape(3, 4)
    got = expected.copy()
    got[0, 1] += 1e-6
    got[2, 3] += 5e-3  # the worst
    got[1, 0] -= 1e-4
    message = mismatch(got, expected, name="C")
    assert message.startswith("C: 3 of 12 elements differ (float64, rtol=1e-12, atol=1e-12)")
    assert message.endswith("worst at (2, 3): got 11.005, expected 11.0")
    with pytest.raises(AssertionError, match=r"worst at \(2, 3\)"):
        assert_numbers(got, expected)


def test_dicts_are_compared_array_by_array():
    expected = {"n": 3, "A": np.zeros(3), "B": np.ones(2)}
    assert_numbers({"n": 4, "A": np.zeros(3), "B": np.ones(2)}, expected)  # sizes: not
    with pytest.raises(AssertionError, match=r"^C: B: 1 of 2 elements differ"):
        assert_numbers({"A": np.zeros(3), "B": np.float64([1, 2])}, expected, name="C")


def test_matches_a_reference_and_the_default_schedule():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2 + 1, name="B")
    s = po.create_schedule(B)
    s[B].split(B.op.axis[0], factor=4)
    a = np.random.default_rng(0).standard_normal(10).astype("float32")
    got = assert_same_as_default(s, [a, np.empty_like(a)], build_args=[A, B], exact=True)
    np.testing.assert_array_equal(got[1], a * 2 + 1)
    assert_matches(s, [a, np.empty_like(a)], lambda a, b: a * 2 + 1, build_args=[A, B])
    with pytest.raises(AssertionError, match="argument 1: 10 of 10 elements differ"):
        assert_matches(s, [a, np.empty_like(a)], lambda a, b: a * 2, build_args=[A, B])


# -- the duplication does not come back ---------------------------------------------------

COMPARISONS = {"assert_allclose", "assert_array_equal", "assert_equal", "allclose",
               "array_equal", "array_equiv", "isclose", "assert_array_almost_equal",
               "assert_almost_equal", "assert_array_max_ulp", "assert_array_almost_equal_nulp"}


# tests/property/harness.py and onnx_check.py are pasted into standalone reproducer
# scripts that import only NumPy, onnx/onnxruntime and polyopt (not testlib): their
# comparisons (bits, values or rounding; the onnx family's outcome classes) stay their own.
SELF_CONTAINED = {"property/harness.py", "property/onnx_check.py",
                  # TVM's AutoTVM tutorial as written (its own tvm.testing.assert_allclose)
                  "tvm_compat/test_tvm_autotvm_tutorial.py"}
# TVM's own tests, ported with only their imports changed (tests/tvm_compat/ported/):
# their comparisons are TVM's, kept as written.
PORTED = "tvm_compat/ported/"


def comparison_helpers(path: Path, root: Path = TESTS) -> list[str]:
    """Functions of ``path`` other than tests (``test_*``) that compare numbers with
    NumPy's or TVM's comparisons: each would be a reference check of its own."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or node.name.startswith("test"):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and call.func.attr in COMPARISONS:
                found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} "
                             f"({call.func.attr})")
                break
    return found


def test_no_test_file_defines_its_own_numeric_comparison():
    found = [h for path in sorted(TESTS.rglob("*.py")) if "testlib" not in path.parts
             and str(path.relative_to(TESTS)) not in SELF_CONTAINED
             and not str(path.relative_to(TESTS)).startswith(PORTED)
             for h in comparison_helpers(path)]
    assert not found, ("compare with testlib.numeric (assert_numbers, assert_matches, "
                       "assert_same_as_default, mismatch) instead of: " + "; ".join(found))


def test_the_scan_finds_a_helper(tmp_path):
    (tmp_path / "probe.py").write_text(
        "import numpy as np\n"
        "def _close(a, b):\n    np.testing.assert_allclose(a, b)\n"
        "def test_x():\n    np.testing.assert_array_equal(1, 1)\n")
    assert comparison_helpers(tmp_path / "probe.py", tmp_path) == [
        "probe.py:2 _close (assert_allclose)"]
