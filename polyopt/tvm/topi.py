"""``tvm.topi``: polyopt's operator library is :mod:`polyopt.ops` (``po.ops``); TOPI's
functions are refused with a message naming it, except the helpers tests use.

>>> import polyopt as te
>>> get_const_tuple(te.placeholder((2, 3), name="A").shape)
(2, 3)
"""

import types as _types

from ..errors import PolyoptError as _PolyoptError
from ..te.tensor import _tensor_op


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
            f"tvm.topi.{name} is not available in polyopt; its operators are in po.ops "
            "(po.ops.pool2d, po.ops.softmax, po.ops.conv2d, po.ops.dense, ...), each a "
            "tensor-expression function")
    return refuse


class _Refusing(_types.SimpleNamespace):
    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def __getattr__(self, attr):
        if _not_a_topi_name(attr):
            raise AttributeError(attr)
        return _refused(f"{self._prefix}{attr}")


pool2d = _refused("nn.pool2d")
nn = _Refusing("nn.")
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
