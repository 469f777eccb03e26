"""Run an exported model from Python: ``po.graph.load("deploy/")``.

The manifest is read from a folder only this user (or root) can write; ``lib<name>.so``
is loaded only when its bytes have the SHA-256 the manifest records (a private copy is
loaded, so nothing changes between the check and the load), and the library's
``build_id`` must be the manifest's.  The C runtime then checks the CPU and the weights'
size and SHA-256; what it refuses is raised as a typed error with its message.  Arrays
are checked (dtype, shape; made C-contiguous) before their addresses are passed.

>>> import tempfile, numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder(); x = b.input("x", (2, 3))
>>> out = tempfile.mkdtemp()
>>> _ = po.graph.compile(b.build([b.op("Relu", [x])]), num_threads=1).export_library(out)
>>> model = po.graph.load(out)
>>> model.run({"x": np.float32([[-1, 0, 2], [3, -4, 5]])})["Relu_0"].tolist()
[[0.0, 0.0, 2.0], [3.0, 0.0, 5.0]]
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import threading

import numpy as np

from ..errors import (AMXPermissionError, BackendError, DamagedFileError, InvalidArgumentError, public,
                      public_methods)
from ..target.amx_state import request_amx
from ..target.integrity import check_trusted, load_verified, read_verified
from .export import FORMAT, MANIFEST

FIX = "export the model again (m.export_library, polyopt compile) and copy the whole folder"
ERRORS = {1: InvalidArgumentError, 2: InvalidArgumentError, 3: DamagedFileError}


class WrongCPUError(BackendError):
    """An exported model whose kernels use instructions this CPU lacks."""


class OldExportError(DamagedFileError):
    """An export of an older manifest format (1: the weights hashed whole), which this
    polyopt does not load: export the model again."""


ERRORS[4] = WrongCPUError
ERRORS[6] = AMXPermissionError  # (with the errno: see LoadedModel._check)


@public_methods
class LoadedModel:
    """An exported model: ``run({name: array}) -> {name: array}``; TVM's graph-executor
    style ``set_input(name, array)``, ``run()``, ``get_output(i)``; ``inputs`` and
    ``outputs`` describe the tensors; ``manifest`` is the manifest.  Runs of one model
    take turns (a lock); load it once per thread to run in parallel."""

    def __init__(self, folder: str, manifest: dict):
        self.folder, self.manifest = folder, manifest
        name = manifest["name"]
        if not isinstance(name, str) or not name.isidentifier():
            raise DamagedFileError(f"{folder}/{MANIFEST} names the model {name!r}; {FIX}")
        library = load_verified(os.path.join(folder, f"lib{name}.so"),
                                manifest.get("shared_sha256"), "model library", FIX)
        self._api = _bind(library, name)
        if self._api.build_id().decode() != manifest.get("build_id"):
            raise DamagedFileError(f"lib{name}.so in {folder} is not the library its "
                                   f"manifest describes (another export's); {FIX}")
        handle = ctypes.c_void_p()
        weights = os.path.join(folder, manifest["weights"]) if manifest["weights"] else folder
        status = self._api.create(weights.encode(), ctypes.byref(handle))
        self._check(status)
        self._handle = handle
        self._lock = threading.Lock()
        self.inputs = self._tensors(False)
        self.outputs = self._tensors(True)
        plan = manifest["plan"]
        if [t["name"] for t in self.inputs] != [t["name"] for t in plan["inputs"]] or \
                [t["name"] for t in self.outputs] != [t["name"] for t in plan["outputs"]]:
            raise DamagedFileError(f"the manifest in {folder} lists other tensors than the "
                                   f"library; {FIX}")
        self._pending: dict[int, np.ndarray] = {}
        self._results: dict[int, np.ndarray] = {}

    def _check(self, status: int) -> None:
        if status != 0:
            message = self._api.error_message().decode(errors="replace")
            if ERRORS.get(status) is AMXPermissionError:  # the same request, for its errno
                try:
                    request_amx()
                except AMXPermissionError as refused:
                    raise AMXPermissionError(message, errno=refused.errno) from None
            raise ERRORS.get(status, BackendError)(message)

    def _tensors(self, output: bool) -> list[dict]:
        kind = "output" if output else "input"
        api = self._api
        found = []
        for index in range(getattr(api, f"{kind}_count")()):
            ndim = getattr(api, f"{kind}_ndim")(index)
            shape = getattr(api, f"{kind}_shape")(index)
            found.append({"name": getattr(api, f"{kind}_name")(index).decode(),
                          "dtype": np.dtype(getattr(api, f"{kind}_dtype")(index).decode()),
                          "shape": tuple(shape[k] for k in range(ndim))})
        return found

    def _index(self, key, tensors: list[dict], kind: str) -> int:
        names = [t["name"] for t in tensors]
        if isinstance(key, str) and key in names:
            return names.index(key)
        if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(names):
            return key
        raise InvalidArgumentError(f"the model's {kind}s are {names}; got {key!r}")

    def set_input(self, key, value) -> None:
        """Set input ``key`` (a name or an index) for the next ``run()``."""
        index = self._index(key, self.inputs, "input")
        info = self.inputs[index]
        array = np.asarray(value)
        if array.dtype != info["dtype"] or array.shape != info["shape"]:
            raise InvalidArgumentError(
                f"input '{info['name']}' must be {info['dtype']}{list(info['shape'])}, got "
                f"{array.dtype}{list(array.shape)}")
        self._pending[index] = np.ascontiguousarray(array)

    def run(self, feeds: dict | None = None):
        """With ``feeds`` ({name: array}): the outputs {name: array}; without: run on the
        inputs set and keep the outputs for ``get_output``."""
        with self._lock:
            if feeds is not None:
                if not isinstance(feeds, dict) or set(feeds) != {t["name"] for t in self.inputs}:
                    raise InvalidArgumentError(
                        f"run needs a dict with the inputs {[t['name'] for t in self.inputs]}, "
                        f"got {list(feeds) if isinstance(feeds, dict) else type(feeds).__name__}")
                self._pending = {}
                for name, value in feeds.items():
                    self.set_input(name, value)
            missing = [t["name"] for k, t in enumerate(self.inputs) if k not in self._pending]
            if missing:
                raise InvalidArgumentError(f"inputs {missing} were not set (set_input)")
            results = {k: np.empty(t["shape"], t["dtype"]) for k, t in enumerate(self.outputs)}
            for index, array in self._pending.items():
                self._check(self._api.set_input(self._handle, index,
                                                array.ctypes.data_as(ctypes.c_void_p),
                                                array.nbytes))
            for index, array in results.items():
                self._check(self._api.set_output(self._handle, index,
                                                 array.ctypes.data_as(ctypes.c_void_p),
                                                 array.nbytes))
            self._check(self._api.run(self._handle))
            self._results = results
        if feeds is not None:
            return {t["name"]: results[k] for k, t in enumerate(self.outputs)}
        return None

    def get_output(self, key) -> np.ndarray:
        """Output ``key`` (a name or an index) of the last ``run()``."""
        index = self._index(key, self.outputs, "output")
        if index not in self._results:
            raise InvalidArgumentError("no output yet: call run() first")
        return self._results[index]

    def set_threads(self, threads: int) -> None:
        """The threads the kernels run on (a model exported with ``threads=0`` only;
        the count is the process's pool's, shared by such models)."""
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise InvalidArgumentError(f"threads must be an integer >= 1, got {threads!r}")
        with self._lock:
            self._check(self._api.set_threads(self._handle, threads))

    @property
    def threads(self) -> int:
        """The threads the kernels run on."""
        return self._api.threads(self._handle)

    def __getitem__(self, key):
        """``lib["default"](device)``: this model (TVM's graph-executor factory)."""
        if key != "default":
            raise InvalidArgumentError(f"an exported model has one module, 'default'; got "
                                       f"{key!r}")
        return lambda *device: self

    def get_num_outputs(self) -> int:
        return len(self.outputs)

    def get_num_inputs(self) -> int:
        return len(self.inputs)

    def export_library(self, folder) -> None:
        """Copy the verified export into ``folder`` (TVM's ``lib.export_library``)."""
        try:
            folder = os.fspath(folder)
        except TypeError:
            raise InvalidArgumentError(f"export_library takes a folder, got {folder!r}") \
                from None
        os.makedirs(folder, exist_ok=True)
        for role in ("shared", "static", "header", "weights"):
            name = self.manifest[role]
            if name is None:  # (weights embedded in the library)
                continue
            read_verified(os.path.join(self.folder, name), self.manifest[f"{role}_sha256"],
                          f"model {role} file", FIX)
            shutil.copyfile(os.path.join(self.folder, name), os.path.join(folder, name))
        shutil.copyfile(os.path.join(self.folder, MANIFEST), os.path.join(folder, MANIFEST))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None and handle.value:
            self._api.destroy(handle)
            self._handle = None

    def __repr__(self) -> str:
        return (f"<LoadedModel {self.manifest['name']} from {self.folder}: "
                f"{len(self.inputs)} inputs, {len(self.outputs)} outputs>")


def _bind(library: ctypes.CDLL, name: str):
    """The C API's functions with their argument and result types."""
    c_int, c_size, ptr, text = ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p
    types = {"create": (c_int, [text, ctypes.POINTER(ptr)]), "destroy": (None, [ptr]),
             "error_message": (text, []), "build_id": (text, []), "run": (c_int, [ptr]),
             "set_input": (c_int, [ptr, c_int, ptr, c_size]),
             "set_output": (c_int, [ptr, c_int, ptr, c_size]),
             "set_threads": (c_int, [ptr, c_int]), "threads": (c_int, [ptr])}
    for kind in ("input", "output"):
        types.update({f"{kind}_count": (c_int, []), f"{kind}_name": (text, [c_int]),
                      f"{kind}_dtype": (text, [c_int]), f"{kind}_ndim": (c_int, [c_int]),
                      f"{kind}_shape": (ctypes.POINTER(ctypes.c_int64), [c_int])})
    api = type("API", (), {})()
    for function, (result, args) in types.items():
        try:
            bound = getattr(library, f"{name}_{function}")
        except AttributeError as err:
            raise DamagedFileError(f"lib{name}.so has no {name}_{function}; {FIX}") from err
        bound.restype, bound.argtypes = result, args
        setattr(api, function, bound)
    return api


@public
def load(folder) -> LoadedModel:
    """The model that ``m.export_library(folder)`` or ``polyopt compile -o folder``
    wrote, runnable from Python; nothing is compiled."""
    try:
        folder = os.fspath(folder)
    except TypeError:
        raise InvalidArgumentError(f"load takes the export's folder, got {folder!r}") from None
    if not isinstance(folder, str) or not os.path.isdir(folder):
        raise InvalidArgumentError(f"no export folder at {folder!r}; write one with "
                                   "m.export_library(folder) or polyopt compile -o folder")
    path = os.path.join(folder, MANIFEST)
    if not os.path.exists(path):
        raise InvalidArgumentError(f"no {MANIFEST} in {folder}; {FIX}")
    check_trusted(path, "model manifest")
    try:
        with open(path, encoding="utf-8") as file:
            manifest = json.load(file)
    except (OSError, ValueError) as err:
        raise DamagedFileError(f"cannot read {path}: {err}; {FIX}") from err
    if isinstance(manifest, dict) and isinstance(manifest.get("format"), int) and \
            not isinstance(manifest["format"], bool) and manifest["format"] < FORMAT:
        raise OldExportError(
            f"{path} is of format {manifest['format']}, written by an older polyopt (its "
            f"weights hashed whole); this polyopt loads format {FORMAT} (hashed per chunk, "
            f"checked in parallel); {FIX}")
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DamagedFileError(f"{path} is not a polyopt model manifest of format {FORMAT}; "
                               f"{FIX}")
    try:
        return LoadedModel(folder, manifest)
    except (KeyError, TypeError, AttributeError, ValueError) as err:
        raise DamagedFileError(f"{path} is incomplete ({type(err).__name__}: {err}); {FIX}") \
            from err
