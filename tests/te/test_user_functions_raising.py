"""An exception raised inside a function the user gives polyopt (a compute's lambda, an
extern's fcompute, an intrinsic's fimpl (TVM's intrin_func), a reducer's fcombine or
fidentity) is the user's error: UserCodeError (an InvalidArgumentError) naming the
function and chained to the original, never InternalError."""

import pytest

import polyopt as po
import polyopt.tvm as tvm
from polyopt.errors import InternalError, InvalidArgumentError, UserCodeError


class Broken(Exception):
    pass


def failing_function(*args):
    raise Broken("the user's mistake")


def _raised(call) -> UserCodeError:
    with pytest.raises(UserCodeError) as caught:
        call()
    err = caught.value
    assert isinstance(err, InvalidArgumentError) and not isinstance(err, InternalError)
    assert isinstance(err.__cause__, Broken)
    assert "Broken: the user's mistake" in str(err)
    return err


def test_compute_lambda():
    A = po.placeholder((4,), name="A")

    def body(i):
        return A[i] / 0 if failing_function() else A[i]
    err = _raised(lambda: po.compute((4,), body, name="B"))
    assert "compute 'B'" in str(err) and "body" in str(err)


def test_extern_fcompute():
    A = po.placeholder((4,), name="A")
    err = _raised(lambda: po.extern((4,), [A], failing_function, name="E"))
    assert "fcompute of extern 'E'" in str(err) and "failing_function" in str(err)


def test_extern_fcompute_through_tvm():
    A = tvm.te.placeholder((4,), name="A")
    err = _raised(lambda: tvm.te.extern((4,), [A], lambda ins, outs: failing_function(),
                                        name="E"))
    assert "<lambda>" in str(err) and "test_user_functions_raising.py" in str(err)


def test_tensor_intrinsic_fimpl():
    a = po.placeholder((4,), name="a")
    b = po.compute((4,), lambda i: a[i] * 2.0, name="b")
    err = _raised(lambda: po.decl_tensor_intrin(b.op, failing_function))
    assert "fimpl of intrinsic 'b'" in str(err) and "failing_function" in str(err)


def test_tvm_intrin_func():
    a = tvm.te.placeholder((4,), name="a")
    b = tvm.te.compute((4,), lambda i: a[i] * 2.0, name="b")

    def intrin_func(ins, outs):
        failing_function()
    err = _raised(lambda: tvm.te.decl_tensor_intrin(b.op, intrin_func))
    assert "intrin_func" in str(err)


@pytest.mark.parametrize("which", ["fcombine", "fidentity"])
def test_reducer_functions(which):
    A = po.placeholder((4,), name="A")
    combine = failing_function if which == "fcombine" else (lambda x, y: x + y)
    identity = failing_function if which == "fidentity" else (lambda dtype: po.const(0, dtype))
    total = po.comm_reducer(combine, identity, name="total")
    k = po.reduce_axis((0, 4), name="k")
    err = _raised(lambda: po.compute((1,), lambda i: total(A[k], axis=k), name="S"))
    assert f"{which} of reducer 'total'" in str(err)


def test_a_polyopt_error_inside_the_function_stays_as_it_is():
    A = po.placeholder((4,), name="A")
    with pytest.raises(po.errors.DTypeError):
        po.compute((4,), lambda i: A[i] + object(), name="B")
