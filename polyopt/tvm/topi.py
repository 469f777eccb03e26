"""``tvm.topi``: TOPI's basic operators as tensor expressions (:mod:`.topi_nn`) and its
NumPy references (:mod:`.topi_testing`); other TOPI names are refused with a message
naming what exists (and polyopt's own library, ``po.ops``).

>>> import polyopt as te
>>> get_const_tuple(te.placeholder((2, 3), name="A").shape)
(2, 3)
"""

import types as _types

from ..errors import PolyoptError as _PolyoptError
from ..te import tensor as _te
from ..te.tensor import _tensor_op
from . import topi_nn as _nn, topi_testing as _testing


def get_const_tuple(shape) -> tuple:
    """The shape as a tuple of ints (a symbolic extent stays an expression)."""
    out = []
    for extent in shape:
        value = _as_int(extent)
        out.append(extent if value is None else value)
    return tuple(out)


def _as_int(extent):
    if isinstance(extent, int):
        return extent
    value = getattr(extent, "value", None)
    return value if isinstance(value, int) else None


def _refused(name):
    def refuse(*args, **kwargs):
        raise _PolyoptError(
            f"tvm.topi.{name} is not available in polyopt; tvm.topi has nn.conv2d_nchw, "
            "nn.conv2d, nn.pool2d, nn.dense, nn.softmax, nn.relu, sum/max/min and "
            "elementwise maps, and po.ops more (po.ops.layer_norm, po.ops.matmul, ...), "
            "each a tensor-expression function")
    return refuse


class _Refusing(_types.SimpleNamespace):
    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def __getattr__(self, attr):
        if _not_a_topi_name(attr):
            raise AttributeError(attr)
        return _refused(f"{self._prefix}{attr}")


class _NN(_Refusing):
    """``topi.nn``: the operators of :mod:`.topi_nn`; other names are refused."""

    conv2d_nchw = staticmethod(_nn.conv2d_nchw)
    conv2d = staticmethod(_nn.conv2d)
    pool2d = staticmethod(_nn.pool2d)
    dense = staticmethod(_nn.dense)
    softmax = staticmethod(_nn.softmax)
    relu = staticmethod(_nn.relu)


pool2d = _nn.pool2d
nn = _NN("nn.")
sum, max, min = _nn.sum_, _nn.max_, _nn.min_  # noqa: A001 (TOPI's names)
exp, log, sqrt, tanh, sigmoid, abs = (  # noqa: A001
    _nn._elementwise(f, n) for f, n in ((_te.exp, "exp"), (_te.log, "log"),
                                         (_te.sqrt, "sqrt"), (_te.tanh, "tanh"),
                                         (_te.sigmoid, "sigmoid"), (_te.abs_, "abs")))
negative = _nn._elementwise(_nn.negate, "negative")
cuda = _Refusing("cuda.")
def _default_schedule(target=None):
    """TVM's per-target schedule lookup in ``topi.testing``: polyopt's default schedule
    (``te.create_schedule``) of the outputs, for every target."""
    def schedule(outs):
        from ..transform.schedule import create_schedule
        outs = outs if isinstance(outs, (list, tuple)) else [outs]
        return create_schedule(list(outs))
    return schedule


class _Testing(_Refusing):
    get_elemwise_schedule = get_broadcast_schedule = get_injective_schedule = \
        staticmethod(_default_schedule)
    get_reduce_schedule = staticmethod(_default_schedule)
    conv2d_nchw_python = staticmethod(_testing.conv2d_nchw_python)
    softmax_python = staticmethod(_testing.softmax_python)

    @staticmethod
    def get_conv2d_nchw_implement(target=None):
        """``(topi.nn.conv2d_nchw, its schedule)``: polyopt's default schedule."""
        return _nn.conv2d_nchw, _default_schedule(target)


testing = _Testing("testing.")
def add(lhs, rhs):
    """``topi.add``: elementwise sum with NumPy broadcasting (``lhs + rhs``)."""
    return _tensor_op("+", lhs, rhs)


def subtract(lhs, rhs):
    return _tensor_op("-", lhs, rhs)


def multiply(lhs, rhs):
    return _tensor_op("*", lhs, rhs)


def divide(lhs, rhs):
    return _tensor_op("/", lhs, rhs)


tag = _types.SimpleNamespace(ELEMWISE="elemwise", BROADCAST="broadcast",
                             INJECTIVE="injective", COMM_REDUCE="comm_reduce")


def _not_a_topi_name(attr: str) -> bool:
    """Names tools look up on any module (``__wrapped__``, pytest's ``pytest_plugins``,
    unittest's ``setUpModule``): not TVM's, so not refused as one of them."""
    return attr.startswith(("_", "pytest")) or attr in (
        "setup_module", "teardown_module", "setUpModule", "tearDownModule")


def __getattr__(attr):
    if _not_a_topi_name(attr):
        raise AttributeError(attr)
    return _refused(attr)
