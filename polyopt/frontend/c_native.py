"""Run a C kernel as gcc compiles it, next to polyopt's build of the same kernel.

:func:`compile_c` builds C source into a shared library with the system compiler and
:class:`NativeFunction` calls one function of it on NumPy arrays; :func:`arguments`
makes random inputs for a :class:`~polyopt.frontend.c.CKernel` at given sizes, and
:func:`call_polyopt` calls a built kernel with them.  ``polyopt opt --check``, the tests
and the PolyBench benchmark use these to compare numbers; :func:`run_apart` runs one
single-threaded call in a forked copy of the process, so that a program with undefined
behaviour (a division by zero traps with SIGFPE) ends in an answer, not in the end of
polyopt.
"""

from __future__ import annotations

import ctypes
import faulthandler
import functools
import hashlib
import mmap
import os
import pickle
import shutil
import signal
import subprocess
import tempfile

import numpy as np

from ..errors import (BackendError, InternalError, InvalidArgumentError, MissingBackendError,
                      PolyoptError)
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


# what a signal that kills a kernel means, in the user's terms
_SIGNAL_CAUSES = {
    "SIGFPE": "an arithmetic trap: an integer division or remainder by zero, or INT_MIN "
              "divided by -1",
    "SIGSEGV": "an access to memory outside the arrays",
    "SIGBUS": "an access to memory outside the arrays",
    "SIGILL": "an illegal instruction (a trap the compiler put where the program has "
              "undefined behaviour, or an instruction this CPU lacks)",
    "SIGABRT": "an abort",
}


def signal_cause(number: int) -> str:
    """``"SIGFPE (an arithmetic trap: ...)"`` for a signal number.

    >>> signal_cause(signal.SIGFPE).split(" (")[0]
    'SIGFPE'
    """
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    cause = _SIGNAL_CAUSES.get(name)
    return f"{name} ({cause})" if cause else name


def run_apart(call, values: dict) -> int | None:
    """``call(values)`` in a forked copy of this process, the arrays of ``values`` in
    memory shared with it (their new contents are copied back); returns ``None``, or the
    number of the signal that killed the copy (the arrays are then as they were).  A
    :class:`PolyoptError` the call raises is raised here.  Where there is no ``fork``,
    the call runs in this process.  Only for single-threaded code (gcc's build of the
    user's C without OpenMP): a thread pool this process started (libgomp's, polyopt's)
    is not in the copy, and a parallel region there would wait for it forever.

    >>> values = {"A": np.zeros(3)}
    >>> run_apart(lambda v: v["A"].__setitem__(1, 7.0), values), values["A"].tolist()
    (None, [0.0, 7.0, 0.0])
    >>> run_apart(lambda v: os.kill(os.getpid(), signal.SIGFPE), values) == signal.SIGFPE
    True
    """
    if not hasattr(os, "fork"):
        call(values)
        return None
    shared = {name: _shared_copy(value) if isinstance(value, np.ndarray) else value
              for name, value in values.items()}
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: call, report an error, leave without Python's exit code
        try:
            os.close(read)
            faulthandler.disable()  # the parent reports the signal, in the user's terms
            try:
                call(shared)
            except BaseException as err:  # noqa: BLE001  (sent to the parent)
                os.write(write, _pickled(err))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        report = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return os.WTERMSIG(status)
    if report:
        raise pickle.loads(report)
    for name, value in values.items():
        if isinstance(value, np.ndarray):
            value[...] = shared[name]
    return None


def _shared_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``array`` in anonymous shared memory (seen by a fork)."""
    memory = mmap.mmap(-1, max(array.nbytes, 1))
    copy = np.frombuffer(memory, dtype=array.dtype, count=array.size).reshape(array.shape)
    copy[...] = array
    return copy


def _pickled(err: BaseException) -> bytes:
    if not isinstance(err, PolyoptError):
        err = InternalError(f"a check's run failed inside polyopt ({type(err).__name__}: "
                            f"{err})")
    try:
        return pickle.dumps(err)
    except Exception:  # noqa: BLE001  (an error that does not pickle: its text)
        return pickle.dumps(PolyoptError(f"{type(err).__name__}: {err}"))
