"""``tvm.tir``: the scalar expression functions classic TE code calls through it."""

import types as _types

from .. import (abs, all, any, exp, if_then_else, log, max_value, min_value,  # noqa
                sigmoid, sqrt, tanh)
from ..errors import PolyoptError as _PolyoptError
from ..tensorize import call_extern, decl_buffer  # noqa: F401  (the tensorize tutorial)
from ..te.compat import Select, const, indexdiv, indexmod, popcount  # noqa: F401
from ..te.compat import indexdiv as floordiv, indexmod as floormod  # noqa: F401
from ..te.tensor import maximum as max, minimum as min  # noqa: F401,A004
from ..te.tensor import var as Var  # noqa: F401
from ..te.extern import call_packed, call_pure_extern  # noqa: F401
from ..te.expr import Expr as PrimExpr  # noqa: F401
from .tir_view import (BufferStore, Evaluate, For, IfThenElse, SeqStmt, Stmt,  # noqa: F401
                       stmt, stmt_functor)


def IntImm(dtype, value):  # noqa: N802 (TVM's name)
    """``tvm.tir.IntImm("int32", 3)``: an integer constant of ``dtype``."""
    from .. import dtypes as _dtypes
    if not _dtypes.is_int(_dtypes.normalize(dtype)):
        raise _PolyoptError(f"tvm.tir.IntImm needs an integer dtype, got {dtype!r}; use "
                            "tvm.tir.const(value, dtype) for others")
    return const(int(value), dtype)


def FloatImm(dtype, value):  # noqa: N802 (TVM's name)
    """``tvm.tir.FloatImm("float32", 0.5)``: a float constant of ``dtype``."""
    return const(float(value), dtype)


class _IRBuilder:
    """``tvm.tir.ir_builder.create()`` as a tensor intrinsic's body uses it: ``emit`` the
    ``call_extern`` calls, ``get()`` them (polyopt's intrinsic bodies are such calls)."""

    def __init__(self):
        self._calls = []

    def emit(self, call) -> None:
        self._calls.append(call)

    def get(self):
        return self._calls[0] if len(self._calls) == 1 else list(self._calls)


ir_builder = _types.SimpleNamespace(create=_IRBuilder)


def call_intrin(dtype, name, *args):
    """TVM's calls of intrinsics with custom lowering rules: not in polyopt."""
    raise _PolyoptError(
        f"tvm.tir.call_intrin('{name}') is not available in polyopt (it has no custom "
        "intrinsic lowering rules); call a C math function by name with "
        "tvm.tir.call_pure_extern(dtype, 'logf', x), or write the function out with "
        "te.exp, te.log, te.sqrt, te.tanh, te.sigmoid")
