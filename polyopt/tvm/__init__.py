"""``from polyopt import tvm``: classic TVM code's ``tvm`` namespace, on polyopt.

With ``import polyopt as te`` this runs tensor-expression programs written for TVM's
classic API as they are: ``tvm.build``, ``tvm.lower``, ``tvm.nd.array``, ``tvm.cpu()``,
``tvm.device(...)``, ``tvm.tir``, ``tvm.testing.assert_allclose``, ``tvm.te``.

>>> import numpy as np
>>> import polyopt as te
>>> from polyopt import tvm
>>> n = te.var("n")
>>> A = te.placeholder((n,), name="A"); B = te.placeholder((n,), name="B")
>>> C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
>>> s = te.create_schedule(C.op)
>>> fadd = tvm.build(s, [A, B, C], "llvm", name="myadd")
>>> dev = tvm.cpu(0)
>>> a = tvm.nd.array(np.arange(4, dtype="float32"), dev)
>>> c = tvm.nd.array(np.zeros(4, dtype="float32"), dev)
>>> fadd(a, a, c)
>>> tvm.testing.assert_allclose(c.numpy(), 2 * a.numpy())
"""

import types as _types

import polyopt as te  # noqa: F401  (tvm.te is polyopt's own namespace)

from .. import build as _po_build, lower as _po_lower
from ..errors import public as _public
from ..te.extern import get_global_func, register_func  # noqa: F401
from . import contrib, testing, tir, topi  # noqa: F401
from ..target.devices import Device, cpu, cuda, device, gpu, opencl  # noqa: F401
from .unsupported import NotYet as _NotYet
from . import ir_json as _ir_json
from . import tir_view as _tir_view
from . import current_target as _entered
from ..target.devices import NDArray as _NDArray, array as _array, empty as _empty
from ..target.native import load_module as _load_module
from ..errors import PolyoptError as TVMError  # a RuntimeError, as TVM's TVMError is

error = _types.SimpleNamespace(TVMError=TVMError)

nd = _types.SimpleNamespace(array=_array, empty=_empty, NDArray=_NDArray)


def _convert(value):
    """``tvm.runtime.convert``: a number becomes a constant expression (an int a size),
    a list or tuple is converted item by item; expressions and tensors stay."""
    import numbers

    from ..te.expr import as_expr
    if isinstance(value, (list, tuple)):
        return type(value)(_convert(v) for v in value)
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return as_expr(value)
    return value


def _enabled(target) -> bool:
    """``tvm.runtime.enabled(target)``: whether polyopt builds for ``target`` here."""
    return testing.device_enabled(target)


@_public
def _load_module_or_model(path, fmt: str = ""):
    """``tvm.runtime.load_module``: a kernel that ``f.export_library("k.so")`` saved, or
    a model that ``m.export_library(folder)`` (``polyopt compile``) exported, given as
    its folder or its ``lib<name>.so``: then a :class:`polyopt.graph.LoadedModel`, which
    ``tvm.contrib.graph_executor.GraphModule(lib["default"](dev))`` runs."""
    import os

    from ..deploy.loader import load as _load_model

    try:
        place = os.fspath(path)
    except TypeError:
        return _load_module(path)
    folder = os.path.dirname(os.path.abspath(place))
    if isinstance(place, str) and os.path.isdir(place):
        return _load_model(place)
    if isinstance(place, str) and place.endswith(".so") and not os.path.exists(
            place + ".json") and os.path.exists(os.path.join(folder, "manifest.json")):
        return _load_model(folder)
    return _load_module(path)


runtime = _types.SimpleNamespace(ndarray=nd, NDArray=_NDArray, Device=Device,
                                 load_module=_load_module_or_model, convert=_convert,
                                 enabled=_enabled)


class _PassContext:
    """``with tvm.transform.PassContext(opt_level=3):`` (polyopt always optimizes)."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def current():
        return _PassContext()


class _Target:
    """``tvm.target.Target("llvm -mcpu=...")``: the string, parsed when building."""

    def __init__(self, target, host=None):
        from ..target.spec import parse_target

        self.target_string = target if isinstance(target, str) else target.target_string
        self.kind_name, self.attrs = parse_target(self.target_string)
        self.host = host

    @property
    def kind(self):
        return _types.SimpleNamespace(name=self.kind_name)

    @property
    def keys(self) -> tuple[str, ...]:
        """TVM's target keys: ``("cpu",)`` for llvm/c, ``(kind, "gpu")`` for devices."""
        return ("cpu",) if self.kind_name in ("llvm", "c") else (self.kind_name, "gpu")

    def __str__(self) -> str:
        return self.target_string

    def __enter__(self):  # ``with tvm.target.Target("llvm"):`` (tvm.build names the target)
        _entered.ENTERED.append(self.target_string)  # (autotvm templates look it up)
        return self

    def __exit__(self, *exc):
        _entered.ENTERED.pop()
        return False


transform = _types.SimpleNamespace(PassContext=_PassContext)
target = _types.SimpleNamespace(Target=_Target, create=_Target)


class _IR(_NotYet):
    """``tvm.ir``: ``save_json``/``load_json`` (:mod:`.ir_json`); the rest refused."""

    save_json = staticmethod(_ir_json.save_json)
    load_json = staticmethod(_ir_json.load_json)


ir = _IR("tvm.ir", "polyopt has no custom intrinsic lowering rules "
         "(register_intrin_lowering, register_op_attr); call C math functions by name "
         "with tvm.tir.call_pure_extern(dtype, 'expf', x), or write the function out")
# what tvm.lower made, so that tvm.build(tvm.lower(s, args)) builds it (TVM's module)
_LOWERED: dict = {}


@_public
def lower(schedule, args=None, *, name=None, **options):
    """``tvm.lower(s, [A, B])``: polyopt's :func:`polyopt.lower` (print it; its loops as
    TVM's statements: ``["main"].body``, see :mod:`.tir_view`); the result can be given
    to ``tvm.build`` as TVM's lowered module can."""
    lowered = _tir_view.IRModule(_po_lower(schedule, args, name=name, **options))
    if len(_LOWERED) >= 64:
        _LOWERED.pop(next(iter(_LOWERED)))
    _LOWERED[id(lowered)] = (lowered, schedule, args, name)
    return lowered


@_public
def build(schedule, args=None, target="llvm", name=None, **options):
    """``tvm.build(s, [A, B], "llvm")``, or ``tvm.build(tvm.lower(s, [A, B]), target=...)``:
    polyopt's :func:`polyopt.build`."""
    made = _LOWERED.get(id(schedule))
    if made is not None and made[0] is schedule:
        _, schedule, lowered_args, lowered_name = made
        args = lowered_args if args is None else args
        name = name or lowered_name
    return _po_build(schedule, args, target, name, **options)


driver = _types.SimpleNamespace(build=build, lower=lower)
_ffi = _types.SimpleNamespace(base=_types.SimpleNamespace(TVMError=TVMError))


@_public
def schedule_to_module(*args, **kwargs):
    """TVM's IRModule of a schedule: polyopt has no TIR modules (refused)."""
    from ..errors import PolyoptError
    raise PolyoptError("schedule_to_module is not available in polyopt (it has no TIR "
                       "modules); print tvm.lower(s, args) to see the loops, or build with "
                       "tvm.build(s, args, target)")


from . import autotvm  # noqa: E402,F401  (TVM's tunable templates, on polyopt.tune)

relay = _NotYet("tvm.relay", "polyopt has no Relay front end; import a model with "
                "po.graph.from_onnx(path) and compile it with po.graph.compile(g), or build "
                "each operator as a tensor expression (po.ops)")
