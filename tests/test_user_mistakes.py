"""User mistakes are reported as such, never as a bug of polyopt (InternalError)."""

import numpy as np
import pytest

import polyopt as po
from testlib.numeric import assert_numbers
from polyopt import tvm


def test_build_of_what_lower_returns_builds_as_in_tvm():
    """``tvm.build(tvm.lower(s, args))`` is TVM's own spelling (issue 35): it builds;
    ``po.build`` of something that is not a schedule says what to write."""
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2, name="B")
    s = po.create_schedule(B)
    f = tvm.build(tvm.lower(s, [A, B]))
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    f(a, b)
    assert_numbers(b, a * 2, exact=True)
    with pytest.raises(po.InvalidArgumentError, match="build takes a schedule"):
        po.build(42, [A, B])


def test_an_extern_function_that_raises_is_the_user_s_error():
    A = po.placeholder((8,), name="A")

    def broken(a, out):
        raise KeyError("no such row")

    C = po.extern((8,), [A], lambda ins, outs: broken, name="C")
    D = po.compute((8,), lambda i: C[i] + 1, name="D")
    f = po.build(po.create_schedule(D), [A, C, D])
    with pytest.raises(po.ExternCallError, match="'broken' raised KeyError") as info:
        f(np.ones(8, "float32"), np.zeros(8, "float32"), np.zeros(8, "float32"))
    assert isinstance(info.value.__cause__, KeyError)
    assert not isinstance(info.value, po.InternalError)
