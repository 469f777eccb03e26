"""``tvm.contrib``: ``cblas`` (the BLAS matrix product as an extern, through NumPy's
BLAS), ``clang`` (C++ source to LLVM IR for ``pragma import_llvm``, see :mod:`.clang`)
and ``utils.tempdir()``."""

import os
import shutil
import tempfile
import types
import weakref

import numpy as np

from ..te.extern import call_packed, extern, register_func
from . import clang as _clang


@register_func("tvm.contrib.cblas.matmul", override=True)
def _cblas_matmul(a, b, c, transa=False, transb=False):
    np.matmul(a.T if transa else a, b.T if transb else b, out=c)


def _matmul(lhs, rhs, transa=False, transb=False, **_ignored):
    n = lhs.shape[1] if transa else lhs.shape[0]
    m = rhs.shape[0] if transb else rhs.shape[1]
    return extern((n, m), [lhs, rhs], lambda ins, outs: call_packed(
        "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], transa, transb), name="C")


cblas = types.SimpleNamespace(matmul=_matmul)

clang = types.SimpleNamespace(create_llvm=_clang.create_llvm, find_clang=_clang.find_clang)


class TempDirectory:
    """A temporary folder, removed when the object is collected (or by ``remove()``).

    >>> temp = utils.tempdir()
    >>> os.path.basename(temp.relpath("temp.ll")), os.path.isdir(temp.path)
    ('temp.ll', True)
    """

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="polyopt-")
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.path, True)

    def relpath(self, name: str) -> str:
        """The path of ``name`` inside the folder."""
        return os.path.join(self.path, name)

    def listdir(self) -> list[str]:
        return os.listdir(self.path)

    def remove(self) -> None:
        self._cleanup()


utils = types.SimpleNamespace(tempdir=TempDirectory)


def _graph_module(module):
    """``graph_executor.GraphModule(lib["default"](dev))``: the loaded model itself
    (``set_input``, ``run``, ``get_output``, ``get_num_outputs``)."""
    return module


graph_executor = types.SimpleNamespace(GraphModule=_graph_module)


def _compile_cuda(*args, **kwargs):
    from ..errors import MissingBackendError
    raise MissingBackendError("tvm.contrib.nvcc is not available in polyopt (no CUDA "
                              "backend); build for GPUs with target='opencl'")


nvcc = types.SimpleNamespace(compile_cuda=_compile_cuda, have_fp16=lambda *a: False,
                             have_int8=lambda *a: False)
