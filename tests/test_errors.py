"""Bad input gets the right PolyoptError subclass and a message that says what to fix."""

import numpy as np
import pytest

import polyopt as po


def _matmul_kernel(fixed=False):
    """C = A @ B with vars for its sizes, or (``fixed``) for 4x3 @ 3x5 (calls of a
    kernel without vars take a fast path, which must refuse the same arguments)."""
    M, N, K = (4, 5, 3) if fixed else (po.var("M"), po.var("N"), po.var("K"))
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    k = po.reduce_axis((0, K), name="k")
    C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return po.build(po.create_schedule(C), [A, B, C])


def _arrays(m=4, k=3, n=5, dtype="float32"):
    return (np.ones((m, k), dtype), np.ones((k, n), dtype), np.zeros((m, n), dtype))


# -- calling a kernel -------------------------------------------------------------------

@pytest.mark.parametrize("fixed", [False, True])
def test_wrong_dtype(fixed):
    a, b, c = _arrays()
    with pytest.raises(po.InvalidArgumentError, match=r"'A' must have dtype float32, got float64.*astype"):
        _matmul_kernel(fixed)(a.astype("float64"), b, c)


@pytest.mark.parametrize("fixed", [False, True])
def test_wrong_rank(fixed):
    a, b, c = _arrays()
    with pytest.raises(po.InvalidArgumentError, match=r"'B' must have 2 dimension\(s\), got an array of shape \(15,\)"):
        _matmul_kernel(fixed)(a, b.reshape(-1), c)


@pytest.mark.parametrize("fixed", [False, True])
def test_mismatched_shapes_name_tensor_and_dimension(fixed):
    a, _, c = _arrays()
    b = np.ones((4, 5), "float32")  # K is 3 from A
    with pytest.raises(po.InvalidArgumentError, match=r"dimension 0 of 'B' has size 4, but its shape says (K = )?3[ ;]"):
        _matmul_kernel(fixed)(a, b, c)


@pytest.mark.parametrize("fixed", [False, True])
def test_non_contiguous_array(fixed):
    a, b, c = _arrays(m=3, k=3)
    with pytest.raises(po.InvalidArgumentError, match=r"'A' is not C-contiguous.*ascontiguousarray"):
        _matmul_kernel(fixed)(a.T, b, c)


@pytest.mark.parametrize("fixed", [False, True])
def test_not_an_array(fixed):
    _, b, c = _arrays()
    with pytest.raises(po.InvalidArgumentError, match=r"'A' must be a numpy.ndarray, got list"):
        _matmul_kernel(fixed)([[1.0] * 3] * 4, b, c)


@pytest.mark.parametrize("fixed", [False, True])
def test_wrong_argument_count(fixed):
    a, b, _ = _arrays()
    with pytest.raises(po.InvalidArgumentError, match=r"takes 3 argument\(s\) \(A, B, C\), got 2"):
        _matmul_kernel(fixed)(a, b)


@pytest.mark.parametrize("fixed", [False, True])
def test_output_aliasing_an_input_is_refused(fixed):
    buffer = np.ones(32, "float32")
    a, c = buffer[:12].reshape(4, 3), buffer[11:31].reshape(4, 5)  # one float shared
    with pytest.raises(po.InvalidArgumentError, match=r"output 'C' shares memory with argument 'A'"):
        _matmul_kernel(fixed)(a, np.ones((3, 5), "float32"), c)
    a, c = buffer[:12].reshape(4, 3), buffer[12:].reshape(4, 5)  # adjacent: accepted
    a[:] = np.arange(12).reshape(4, 3)
    _matmul_kernel(fixed)(a, np.ones((3, 5), "float32"), c)
    np.testing.assert_array_equal(c, a @ np.ones((3, 5), "float32"))


@pytest.mark.parametrize("fixed", [False, True])
def test_read_only_inputs_are_accepted(fixed):
    a, b, c = _arrays()
    a[:] = np.arange(12).reshape(4, 3)
    a.flags.writeable = b.flags.writeable = False
    _matmul_kernel(fixed)(a, b, c)
    np.testing.assert_array_equal(c, a @ b)


@pytest.mark.parametrize("fixed", [False, True])
def test_read_only_output(fixed):
    a, b, c = _arrays()
    c.flags.writeable = False
    with pytest.raises(po.InvalidArgumentError, match=r"output 'C' is read-only"):
        _matmul_kernel(fixed)(a, b, c)


def test_undetermined_var_must_be_passed_by_keyword():
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * m, name="B")
    f = po.build(po.create_schedule(B), [A, B])
    a, b = np.arange(4, dtype="float32"), np.zeros(4, "float32")
    with pytest.raises(po.InvalidArgumentError, match=r"var\(s\) m .* pass them by keyword, e.g. f\(..., m=10\)"):
        f(a, b)
    f(a, b, m=3)
    np.testing.assert_array_equal(b, a * 3)
    with pytest.raises(po.InvalidArgumentError, match=r"keyword 'q', which is not one of its vars"):
        f(a, b, m=3, q=1)
    with pytest.raises(po.InvalidArgumentError, match=r"var 'm' is a size and must be >= 0"):
        f(a, b, m=-1)


# -- describing a computation -----------------------------------------------------------

def test_non_affine_index_product():
    n = po.var("n")
    A = po.placeholder((n * 0 + 100,), name="A")
    B = po.compute((n, n), lambda i, j: A[i * j], name="B")
    with pytest.raises(po.NonAffineError, match=r"'i \* j' in compute 'B' is not affine: 'i' times 'j'"):
        po.create_schedule(B)


def test_data_dependent_index_is_not_affine():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    idx = po.placeholder((n,), name="idx", dtype="int32")
    B = po.compute((n,), lambda i: A[idx[i]], name="B")
    with pytest.raises(po.NonAffineError, match=r"'idx\[i\]' in compute 'B' is not affine: it reads tensor 'idx'"):
        po.create_schedule(B)


def test_non_affine_shape():
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n * m,), name="A")
    B = po.compute((n,), lambda i: A[i], name="B")
    with pytest.raises(po.NonAffineError, match=r"'n \* m' in the shape of 'A' is not affine"):
        po.create_schedule(B)


def test_index_out_of_bounds_is_found_at_construction():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i + 1], name="B")
    with pytest.raises(po.OutOfBoundsError,
                       match=r"compute 'B' reads A\[(\d+)\] at B\[i=\d+\] when n=\1, outside the shape \(n\)"):
        po.create_schedule(B)


def test_out_of_bounds_between_different_vars():
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((m,), name="A")
    B = po.compute((n,), lambda i: A[i], name="B")
    with pytest.raises(po.OutOfBoundsError, match="use the same po.var for sizes that must agree"):
        po.create_schedule(B)


def test_guarded_read_is_in_bounds():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: po.if_then_else(i + 1 < n, A[i + 1], 0.0), name="B")
    po.create_schedule(B)  # no error: the read only happens where i + 1 < n


def test_reading_a_placeholder_not_in_the_arguments():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    X = po.placeholder((n,), name="X")
    B = po.compute((n,), lambda i: A[i] + X[i], name="B")
    with pytest.raises(po.UndefinedTensorError, match=r"compute 'B' reads placeholder 'X', which is not in the argument list"):
        po.build(po.create_schedule(B), [A, B])


def test_compute_function_using_a_non_tensor():
    table = np.arange(10.0)
    with pytest.raises(po.UserCodeError,
                       match=r"function of compute 'B' \(.*<lambda>, test_errors.py:\d+\) raised "
                             r"IndexError.*index only polyopt tensors"):
        po.compute((10,), lambda i: table[i], name="B")


def test_python_if_on_expression_is_refused():
    A = po.placeholder((4,), name="A")
    with pytest.raises(po.InvalidArgumentError, match=r"no truth value.*po.if_then_else"):
        po.compute((4,), lambda i: A[i] if A[i] > 0 else 0.0, name="B")


def test_reduce_axis_outside_reduction():
    A = po.placeholder((4, 4), name="A")
    k = po.reduce_axis((0, 4), name="k")
    with pytest.raises(po.InvalidArgumentError, match=r"uses reduce_axis 'k' outside a reduction"):
        po.compute((4,), lambda i: A[i, k], name="B")


def test_reduction_inside_expression_becomes_its_own_compute():
    A = po.placeholder((4, 4), name="A")
    k = po.reduce_axis((0, 4), name="k")
    B = po.compute((4,), lambda i: po.sum(A[i, k], axis=k) / 4, name="B")
    assert str(B.op.body) == "B_sum[i] / 4"


def test_wrong_index_count_and_slices():
    A = po.placeholder((4, 4), name="A")
    with pytest.raises(po.InvalidArgumentError, match=r"'A' has 2 dimension\(s\) but is indexed with 1"):
        po.compute((4,), lambda i: A[i], name="B")
    with pytest.raises(po.InvalidArgumentError, match=r"indexed with a slice"):
        po.compute((4,), lambda i: A[i, :], name="B")


def test_float_index_and_unsupported_dtype():
    A = po.placeholder((4,), name="A")
    with pytest.raises(po.InvalidArgumentError, match=r"indices must be integers"):
        po.compute((4,), lambda i: A[A[i]], name="B")
    with pytest.raises(po.DTypeError, match=r"unsupported dtype 'complex64'"):
        po.placeholder((4,), dtype="complex64")


def test_bad_shapes():
    with pytest.raises(po.InvalidArgumentError, match=r"dimension 0 of placeholder 'A' is '2.5'"):
        po.placeholder((2.5,), name="A")
    with pytest.raises(po.InvalidArgumentError, match=r"dimension 0 of placeholder 'A' is negative"):
        po.placeholder((-1,), name="A")


def test_two_vars_with_the_same_name():
    A = po.placeholder((po.var("n"),), name="A")
    B = po.compute((po.var("n"),), lambda i: 1.0, name="B")
    D = po.compute(A.shape, lambda i: A[i], name="D")
    with pytest.raises(po.InvalidArgumentError, match=r"two different po.var are named 'n'"):
        po.create_schedule([B, D])


def test_unknown_target_and_missing_outputs():
    A = po.placeholder((4,), name="A")
    B = po.compute((4,), lambda i: A[i], name="B")
    s = po.create_schedule(B)
    with pytest.raises(po.InvalidArgumentError, match=r"unknown target 'foo'; available targets: llvm"):
        po.build(s, [A, B], target="foo")
    with pytest.raises(po.InvalidArgumentError, match=r"no computed tensor is in the argument list"):
        po.build(s, [A])
    with pytest.raises(po.InvalidArgumentError, match=r"appears twice"):
        po.build(s, [A, B, B])


def test_every_error_is_a_polyopt_error():
    for name in ("InvalidArgumentError", "DTypeError", "NonAffineError", "OutOfBoundsError",
                 "UndefinedTensorError", "ScheduleError", "IllegalScheduleError",
                 "TensorizeError", "BackendError", "MissingBackendError", "InternalError",
                 "CheckEffortError"):
        assert issubclass(getattr(po, name), po.PolyoptError)
    # one class per way a primitive or a lowering pass fails (tests/test_typed_errors.py)
    from polyopt import lowering_errors, schedule_errors, tensorize_errors
    for name in schedule_errors.__all__ + tensorize_errors.__all__ + lowering_errors.__all__:
        assert issubclass(getattr(po, name), (po.ScheduleError, po.InvalidArgumentError)), name


def test_run_deep_raises_the_recursion_limit_for_its_call_only():
    import sys
    import threading
    from polyopt.errors import DEEP_RECURSION_LIMIT, run_deep

    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)

    before = sys.getrecursionlimit()
    seen = []

    def deep_and_look(n):
        seen.append(sys.getrecursionlimit())
        return depth(n)

    assert run_deep(deep_and_look, 20_000) == 20_000
    assert seen == [DEEP_RECURSION_LIMIT] and sys.getrecursionlimit() == before

    def fails():
        depth(10_000)
        raise KeyError("inside")

    with pytest.raises(KeyError, match="inside"):  # handed to the caller as it is
        run_deep(fails)
    assert sys.getrecursionlimit() == before

    # two overlapping deep calls (threads): raised while either runs, restored after both
    results, gate, started = [], threading.Event(), threading.Event()

    def slow_deep():
        started.set()
        gate.wait(5)
        return depth(15_000)

    other = threading.Thread(target=lambda: results.append(run_deep(slow_deep)))
    other.start()
    started.wait(5)
    results.append(run_deep(depth, 15_000))
    assert sys.getrecursionlimit() == DEEP_RECURSION_LIMIT  # the other call still runs
    gate.set()
    other.join()
    assert results == [15_000, 15_000] and sys.getrecursionlimit() == before

    # a limit the program sets during the deep call is kept
    def sets_its_own():
        sys.setrecursionlimit(before + 123)
        return depth(10)

    try:
        assert run_deep(sets_its_own) == 10
        assert sys.getrecursionlimit() == before + 123
    finally:
        sys.setrecursionlimit(before)


def test_polyopt_error_is_a_runtime_error_as_tvm_error_is():
    # TVM code catches TVMError (a RuntimeError) with pytest.raises(RuntimeError)
    from polyopt import tvm
    assert issubclass(po.PolyoptError, RuntimeError)
    assert tvm.TVMError is po.PolyoptError and tvm.error.TVMError is po.PolyoptError
    A = po.placeholder((4,), name="A")
    with pytest.raises(RuntimeError) as info:
        po.compute((4,), lambda i: A[i, i], name="B")
    assert isinstance(info.value, po.PolyoptError)
    with pytest.raises(tvm.TVMError):
        po.compute((4,), lambda i: A[i, i], name="B")
