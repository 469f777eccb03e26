"""``tvm.contrib.cblas``: the BLAS matrix product as an extern (through NumPy's BLAS)."""

import types

import numpy as np

from ..te.extern import call_packed, extern, register_func
from .unsupported import NotYet as _NotYet


@register_func("tvm.contrib.cblas.matmul", override=True)
def _cblas_matmul(a, b, c, transa=False, transb=False):
    np.matmul(a.T if transa else a, b.T if transb else b, out=c)


def _matmul(lhs, rhs, transa=False, transb=False, **_ignored):
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs], lambda ins, outs: call_packed(
        "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb), name="C")


cblas = types.SimpleNamespace(matmul=_matmul)

clang = _NotYet("tvm.contrib.clang", "give C code to the intrinsic that calls it: "
                "po.decl_tensor_intrin(..., imports=[po.tensorize.import_c(c_code)]) (compiled "
                "with the system C compiler when building)")
