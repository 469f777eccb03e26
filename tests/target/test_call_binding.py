"""Calls of a kernel whose sizes are all fixed skip the general binding of arguments:
the fast check must pass the same addresses and fall back on anything unusual."""

import numpy as np
import pytest

import polyopt as po
from polyopt.target.args import fixed_binder


def _scale(n):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    return po.lower(po.create_schedule(B), [A, B])


def test_fixed_binder_passes_the_data_addresses():
    bind = fixed_binder(_scale(6))
    a, b = np.arange(6, dtype="float32"), np.zeros(6, "float32")
    assert bind((a, b)) == [a.ctypes.data, b.ctypes.data]
    a.flags.writeable = False  # a read-only input: its address all the same
    assert bind((a, b)) == [a.ctypes.data, b.ctypes.data]


def test_fixed_binder_declines_what_the_general_path_must_judge():
    bind = fixed_binder(_scale(6))
    a, b = np.arange(6, dtype="float32"), np.zeros(6, "float32")
    assert bind((a.astype("float64"), b)) is None
    assert bind((a, np.zeros(12, "float32")[::2])) is None  # not contiguous
    assert bind((a, a)) is None                               # output overlaps the input
    assert bind((a.tolist(), b)) is None
    assert bind((a,)) is None


def test_kernels_with_vars_take_the_general_path():
    assert fixed_binder(_scale(po.var("n"))) is None


def test_fixed_size_kernel_computes_through_the_fast_path():
    A = po.placeholder((6,), name="A")
    B = po.compute((6,), lambda i: A[i] * 2.0, name="B")
    kernel = po.build(po.create_schedule(B), [A, B])
    a, b = np.arange(6, dtype="float32"), np.zeros(6, "float32")
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)


def _prefix_scale():
    """A kernel with a var that no shape determines (passed by keyword)."""
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: po.if_then_else(i < m, A[i] * 2.0, 0.0), name="B")
    return po.build(po.create_schedule(B), [A, B])


def test_remembered_layouts_compute_with_each_calls_own_vars():
    kernel = _prefix_scale()
    a, b = np.arange(6, dtype="float32"), np.full(6, -1.0, "float32")
    for m in (2, 2, 5, 2):  # the second call of a layout takes the remembered path
        kernel(a, b, m=m)
        np.testing.assert_array_equal(b, np.where(np.arange(6) < m, a * 2, 0))
    assert len(kernel._layouts.known) == 2
    kernel(a[:4].copy(), b[:4], m=3)  # another shape: bound and checked again
    np.testing.assert_array_equal(b[:4], [0, 2, 4, 0])


def test_remembered_layouts_still_refuse_bad_calls():
    kernel = _prefix_scale()
    a, b = np.arange(6, dtype="float32"), np.zeros(6, "float32")
    kernel(a, b, m=3)
    with pytest.raises(po.InvalidArgumentError, match="shares memory"):
        kernel(a, a, m=3)  # same layout as a remembered call, but the output overlaps
    with pytest.raises(po.InvalidArgumentError, match="dtype"):
        kernel(a.astype("float64"), b, m=3)
    with pytest.raises(po.InvalidArgumentError, match="integer"):
        kernel(a, b, m=3.0)
    with pytest.raises(po.InvalidArgumentError, match="not one of its vars"):
        kernel(a, b, m=3, k=1)
