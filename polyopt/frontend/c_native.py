"""Run a C kernel as gcc compiles it, next to polyopt's build of the same kernel.

:func:`compile_c` builds C source into a shared library with the system compiler and
:class:`NativeFunction` calls one function of it on NumPy arrays; :func:`arguments`
makes random inputs for a :class:`~polyopt.frontend.c.CKernel` at given sizes, and
:func:`call_polyopt` calls a built kernel with them.  ``polyopt opt --check``, the tests
and the PolyBench benchmark use these to compare numbers.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ..errors import BackendError, InvalidArgumentError, MissingBackendError
from ..private_folder import private_folder, verified_file, write_verified
from ..te.evaluate import evaluate

_CTYPES = {"double": ctypes.c_double, "float": ctypes.c_float, "int": ctypes.c_int,
           "signed int": ctypes.c_int, "long": ctypes.c_long, "long int": ctypes.c_long,
           "long long": ctypes.c_longlong, "long long int": ctypes.c_longlong,
           "unsigned": ctypes.c_uint, "unsigned int": ctypes.c_uint,
           "size_t": ctypes.c_size_t}
_DTYPES = {"double": np.float64, "float": np.float32, "int": np.int32, "long": np.int64,
           "char": np.int8, "unsigned char": np.uint8}
# Floating point rounds as written (no contraction into FMA), as polyopt's kernels do.
DEFAULT_FLAGS = ("-O3", "-march=native", "-ffp-contract=off")


def compile_c(text: str, flags=DEFAULT_FLAGS, *, openmp: bool = False) -> str:
    """The path of a shared library built from C ``text``, cached by content, flags and
    compiler in a folder private to the user (:mod:`polyopt.private_folder`) and
    checked against its SHA-256 before it is handed out."""
    compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        raise MissingBackendError("compiling C needs gcc: apt-get install gcc (or set CC)")
    flags = list(flags) + (["-fopenmp"] if openmp else [])
    key = hashlib.sha256((text + "\0" + " ".join(flags) + "\0" + compiler).encode()
                         ).hexdigest()[:32]
    folder = private_folder("c")
    library = os.path.join(folder, f"k{key}.so")
    if verified_file(library):
        return library
    with tempfile.TemporaryDirectory(dir=folder) as work:
        source, partial = os.path.join(work, "k.c"), os.path.join(work, "k.so")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            result = subprocess.run([compiler, *flags, "-fPIC", "-shared", "-o", partial,
                                     source, "-lm"], capture_output=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise BackendError(f"running {compiler} failed: {err}") from None
        if result.returncode != 0:
            message = result.stderr.decode("utf-8", errors="replace").strip()[:2000]
            raise BackendError(f"{compiler} could not compile the C code:\n{message}")
        with open(partial, "rb") as handle:
            write_verified(library, handle.read())
    return library


class NativeFunction:
    """``f(values)`` calls a C function with the parameters ``params`` (CParam list);
    ``values`` maps each parameter name to a number (sizes, scalars) or an array."""

    def __init__(self, library: str, name: str, params):
        self.params = list(params)
        self._library = ctypes.CDLL(library)
        self._function = getattr(self._library, name)
        self._function.restype = None
        argtypes = []
        for p in self.params:
            if p.kind == "array":
                argtypes.append(ctypes.c_void_p)
            else:
                argtypes.append(_CTYPES.get(p.ctype, ctypes.c_double))
        self._function.argtypes = argtypes

    def __call__(self, values: dict) -> None:
        args = []
        for p in self.params:
            value = values[p.name]
            if p.kind == "array":
                if not (isinstance(value, np.ndarray) and value.flags.c_contiguous):
                    raise InvalidArgumentError(f"'{p.name}' must be a C-contiguous array")
                args.append(value.ctypes.data)
            else:
                args.append(value.item() if isinstance(value, np.ndarray) else value)
        self._function(*args)


def arguments(kernel, sizes: dict, seed: int = 0) -> dict:
    """Random values for every parameter of a C kernel: arrays shaped by ``sizes``."""
    rng = np.random.default_rng(seed)
    values: dict = {}
    by_name = {t.name: t for t in kernel.args}
    for p in kernel.c_params:
        if p.kind == "size":
            if p.name not in sizes:
                raise InvalidArgumentError(f"give the size '{p.name}'")
            values[p.name] = int(sizes[p.name])
            continue
        tensor = by_name[p.name]
        dtype = np.dtype(tensor.dtype)
        shape = tuple(int(evaluate(e, sizes)) for e in tensor.shape)
        if dtype.kind == "f":
            data = rng.uniform(0.5, 1.5, shape).astype(dtype)  # away from 0: divisions
        else:
            data = rng.integers(0, 8, shape).astype(dtype)
        values[p.name] = data if p.kind == "array" else data.reshape(())
    return values


def call_polyopt(kernel, built, values: dict) -> None:
    """Call polyopt's build of ``kernel`` with :func:`arguments`-style values (in place)."""
    arrays = [values[t.name] for t in kernel.args]
    built(*arrays, **{name: values[name] for name in _keyword_sizes(kernel)})


@functools.lru_cache(maxsize=64)
def _keyword_sizes(kernel) -> tuple[str, ...]:
    """The sizes of ``kernel`` that no array's shape determines (passed by keyword)."""
    shaped = {v for t in kernel.args for v in _shape_vars(t)}
    params = {v.name for v in kernel.program.params}
    return tuple(p.name for p in kernel.c_params
                 if p.kind == "size" and p.name not in shaped and p.name in params)


def _shape_vars(tensor) -> set[str]:
    from ..te.expr import Var
    from ..te.tensor import walk
    return {node.name for e in tensor.shape for node in walk(e) if isinstance(node, Var)}
