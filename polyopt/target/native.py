"""Native kernels: a C function called through ctypes, checked against its signature.

:class:`NativeKernel` is what JIT-compiled LLVM kernels and kernels loaded from a shared
library have in common: ``f(*arrays, **vars)`` checks the arrays (:mod:`.args`), binds
the sizes and calls the function; ``f.release()`` frees its machine code.
:func:`load_module` loads a kernel that ``f.export_library(path)`` saved, in any process,
without compiling anything.

>>> import os, tempfile, numpy as np, polyopt as po
>>> A = po.placeholder((3,), name="A"); B = po.compute((3,), lambda i: A[i] + 1.0, name="B")
>>> path = os.path.join(tempfile.mkdtemp(), "k.so")
>>> po.build(po.create_schedule(B), [A, B]).export_library(path)
>>> g = po.load_module(path); b = np.zeros(3, "float32"); g(np.ones(3, "float32"), b); b
array([2., 2., 2.], dtype=float32)
"""

from __future__ import annotations

import ctypes
import json
import os

from ..errors import BackendError, InvalidArgumentError, ReleasedKernelError, public, public_methods
from .args import LayoutCache, bind_arguments, data_pointer, fixed_binder
from ..machine import TargetInfo
from .integrity import bind_function, check_trusted, load_verified
from .signature import Signature

SIGNATURE_SUFFIX = ".json"  # export_library("k.so") writes its signature to k.so.json


@public_methods
class NativeKernel:
    """A native function ``int32 f(void *arrays..., int64 sizes...)`` with its signature."""

    def __init__(self, signature: Signature, address: int):
        self.signature = signature
        prototype = ctypes.CFUNCTYPE(ctypes.c_int32,
                                     *([ctypes.c_void_p] * len(signature.arrays)
                                       + [ctypes.c_int64] * len(signature.params)))
        self._cfunc = prototype(address)
        self._fixed = fixed_binder(signature)
        self._layouts = LayoutCache(signature) if self._fixed is None else None
        self._foreign: str | None = None  # why this CPU cannot run the code, if it cannot
        self._needs_amx = False  # AMX tiles: the tile state is asked for before a run

    def require_amx(self) -> None:
        """Ask for the AMX tile state (:func:`~.amx_state.request_amx`) before the first
        run: the code uses AMX tiles."""
        self._needs_amx = True

    def require_features(self, compiled_for: TargetInfo) -> None:
        """Refuse to run where this CPU lacks a feature of ``compiled_for``, the CPU the
        code was compiled for (it would die of an illegal instruction)."""
        missing = compiled_for.missing_on_host()
        if missing:
            self._foreign = (
                f"kernel {self.name} was compiled for {compiled_for.name} and uses "
                f"{', '.join(missing)}, which this CPU ({TargetInfo.host().name}) lacks; "
                "export it with "
                "f.export_library(path) to run it on such a CPU, or build it for the host "
                "(target='llvm')")

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def released(self) -> bool:
        return self._cfunc is None

    def release(self) -> None:
        """Free the machine code; calling the kernel afterwards raises
        :class:`ReleasedKernelError`.  Releasing twice is harmless."""
        self._cfunc = None
        self._fixed = None
        self._layouts = None
        self._free()

    def _free(self) -> None:
        """Subclasses free what holds the machine code."""

    def __call__(self, *args, **kwargs) -> None:
        cfunc = self._cfunc
        if cfunc is None:
            raise ReleasedKernelError(
                f"kernel {self.name} was released (f.release()) and its machine code freed; "
                "build or load it again to call it")
        if self._foreign is not None or self._needs_amx:
            self._check_runnable()
        pointers = None
        if self._fixed is not None:
            pointers = None if kwargs else self._fixed(args)
        elif self._layouts is not None:
            pointers = self._layouts.bind(args, kwargs)
        if pointers is not None:
            status = cfunc(*pointers)
        else:
            arrays, values = bind_arguments(self.signature, args, kwargs)
            status = cfunc(*(data_pointer(a) for a in arrays),
                           *(values[p] for p in self.signature.params))
            if self._layouts is not None:
                self._layouts.remember(args, kwargs, values)
        self._status(status)

    def call_pointers(self, pointers: list[int]) -> None:
        """Call with the arrays' data addresses, unchecked: the caller vouches for their
        dtypes, shapes and layouts, and for any sharing of memory between them (the
        graph layer's in-place outputs, proven safe per kernel)."""
        if self._cfunc is None:
            raise ReleasedKernelError(f"kernel {self.name} was released (f.release())")
        if self._foreign is not None or self._needs_amx:
            self._check_runnable()
        self._status(self._cfunc(*pointers))

    def _check_runnable(self) -> None:
        """Refuse code this CPU cannot run; ask for the AMX state once where it is used."""
        if self._foreign is not None:
            raise BackendError(self._foreign)
        from .amx_state import request_amx

        request_amx()  # raises AMXPermissionError where Linux refuses
        self._needs_amx = False

    def _status(self, status: int) -> None:
        if status != 0:
            raise BackendError(
                f"{self.name} could not allocate its intermediate buffers "
                f"({', '.join(t.name for t in self.signature.temps)}): out of memory")


@public_methods
class LoadedKernel(NativeKernel):
    """A kernel from a shared library (``po.load_module``, ``po.load_library``), bound
    only when the library holds this very signature's digest and defines the function
    itself (:func:`~.integrity.bind_function`; ``origin`` names the file the signature
    came from, ``fix`` what to do when it does not match).

    ``f.signature`` says what it takes; ``f.library`` is the ``ctypes.CDLL``."""

    def __init__(self, library: ctypes.CDLL, signature: Signature, *,
                 origin: str = "the signature", fix: str = "rebuild it"):
        address = bind_function(library, signature, origin, fix)
        self.library = library
        super().__init__(signature, address)

    def _free(self) -> None:
        self.library = None  # the dynamic loader unloads it when nothing else uses it

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.name}>"


@public
def load_module(path: str | os.PathLike) -> LoadedKernel:
    """The kernel ``f.export_library(path)`` saved: ``po.load_module("k.so")``.

    Its signature is read from ``path + ".json"``, which also holds the library's
    SHA-256: a library or signature that does not match (truncated, edited, from another
    export) is refused.  Nothing is compiled."""
    try:
        path = os.fspath(path)
    except TypeError:
        raise InvalidArgumentError(f"load_module takes a file path, got {path!r}") from None
    if not isinstance(path, str):
        raise InvalidArgumentError(f"load_module takes a file path, got {path!r}")
    saved = path + SIGNATURE_SUFFIX
    signature, data = read_signature(saved)
    if path.endswith(".o"):
        raise InvalidArgumentError(f"{path} is an object file, to link into a program; "
                                   "export a shared library (a path ending in .so) to load it")
    fix = ("export the kernel again (f.export_library) and copy both files together")
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"no shared library at {path}")
    if "library_sha256" not in data:
        raise InvalidArgumentError(f"{saved} records no hash of {path} (an export of an older "
                                   f"polyopt, or not an export); {fix}")
    library = load_verified(path, data["library_sha256"], "saved kernel", fix)
    kernel = LoadedKernel(library, signature, origin=saved, fix=fix)
    if _uses_amx(data, library, signature.name, saved, fix):  # ask before the first run
        kernel.require_amx()
    return kernel


def _uses_amx(data: dict, library: ctypes.CDLL, name: str, saved: str, fix: str) -> bool:
    """Whether the exported kernel computes on AMX tiles: its ``.json`` (``amx_tiles``)
    and the request function the library defines (``polyopt_request_amx_<name>``) must
    say the same, so the flag cannot be edited away from the code."""
    from .amx_state import request_symbol

    recorded = data.get("amx_tiles", False)
    if not isinstance(recorded, bool):
        raise BackendError(f"{saved} has amx_tiles={recorded!r}, not true or false (edited); "
                           f"{fix}")
    symbol = request_symbol(name)
    try:
        getattr(library, symbol)
        defined = True
    except AttributeError:
        defined = False
    if recorded is not defined:
        raise BackendError(
            f"{saved} says kernel {name} {'uses' if recorded else 'does not use'} AMX tiles "
            f"but its library {'defines' if defined else 'does not define'} {symbol} "
            f"(edited, or from another export); {fix}")
    return defined


def read_signature(path: str) -> tuple[Signature, dict]:
    """The signature in the JSON file ``path`` and the file's whole content."""
    try:
        check_trusted(path, "kernel signature")
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
    except FileNotFoundError as err:
        raise InvalidArgumentError(
            f"no kernel signature at {path}; export_library writes it beside the "
            "library: copy both files") from err
    except InvalidArgumentError as err:
        if not os.path.exists(path):
            raise InvalidArgumentError(
                f"no kernel signature at {path}; export_library writes it beside the "
                "library: copy both files") from err
        raise
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"cannot read the kernel signature {path}: {err}") from err
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{path} is not a polyopt kernel signature")
    return Signature.from_json(data), data
