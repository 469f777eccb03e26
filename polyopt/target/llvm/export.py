"""Write compiled kernels to disk: object files, shared libraries, static archives.

Objects are emitted by LLVM (position-independent code for the kernel's CPU); the system
C compiler (``cc``, or ``$CC``) links them into a shared library, ``ar`` into a static
one.  A kernel with parallel loops needs libgomp, one calling libmvec's vector ``exp``,
``log`` or ``tanh`` needs libmvec: the shared library is linked against them.  Every
file is written to a temporary name and renamed, so a reader never sees half a file.

>>> import os, tempfile, polyopt as po
>>> A = po.placeholder((3,), name="A"); B = po.compute((3,), lambda i: A[i] * 2.0, name="B")
>>> f = po.build(po.create_schedule(B), [A, B])
>>> out = tempfile.mkdtemp()
>>> f.export_library(os.path.join(out, "k.so")); sorted(os.listdir(out))
['k.so', 'k.so.json']
"""

from __future__ import annotations

import ctypes.util
import json
import os
import shutil
import subprocess
import tempfile
import uuid

from ...errors import BackendError, InvalidArgumentError, MissingBackendError
from .jit import CPU, object_code, parse


def object_for(optimized_ir: str, cpu: CPU) -> bytes:
    """The ELF object of an optimized IR module, for ``cpu``."""
    return object_code(parse(optimized_ir), cpu)


def libraries_needed(ir_texts) -> list[str]:
    """The linker flags for the runtime libraries these modules call."""
    text = "\n".join(ir_texts)
    flags = []
    for marker, library in (("GOMP_", "gomp"), ("_ZGV", "mvec")):
        if marker in text:
            found = ctypes.util.find_library(library)
            flags.append(f"-l:{found}" if found else f"-l{library}")
    return flags + ["-lm"]


def export_library(optimized_ir: str, signature, cpu: CPU, path) -> None:
    """Write one kernel as ``path`` (a shared library, or an object when it ends in
    ``.o``) and its signature as ``path + ".json"``."""
    path = os.fspath(path)
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"export_library takes a file path such as 'k.so', got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InvalidArgumentError(f"the folder {directory} does not exist; create it first")
    code = object_for(optimized_ir, cpu)
    if path.endswith(".o"):
        write_atomically(path, code)
    else:
        with tempfile.TemporaryDirectory(prefix="polyopt-") as scratch:
            obj = os.path.join(scratch, f"{signature.name}.o")
            write_atomically(obj, code)
            link_shared([obj], path, libraries_needed([optimized_ir]))
    write_atomically(path + ".json",
                     (json.dumps(signature.to_json(), indent=1) + "\n").encode())


def link_shared(objects: list[str], path: str, flags: list[str]) -> None:
    """Link ``objects`` into the shared library ``path`` with the system C compiler."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise MissingBackendError(
            "writing a shared library needs a C compiler to link it (cc), which was not "
            "found; install one (Debian: apt-get install gcc) or write an object file "
            "(a path ending in .o)")
    temporary = _temporary_name(path)
    command = [compiler, "-shared", "-o", temporary, *objects, *flags]
    _run(command, temporary, path)


def archive(objects: list[str], path: str) -> None:
    """A static library ``path`` holding ``objects`` (deterministic: no timestamps)."""
    tool = os.environ.get("AR") or shutil.which("ar")
    if tool is None:
        raise MissingBackendError("writing a static library needs ar (Debian: apt-get "
                                  "install binutils)")
    temporary = _temporary_name(path)
    _run([tool, "rcsD", temporary, *objects], temporary, path)


def _run(command: list[str], temporary: str, path: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as err:
        raise MissingBackendError(f"cannot run {command[0]}: {err}") from err
    if done.returncode != 0:
        _remove(temporary)
        raise BackendError(f"{os.path.basename(command[0])} failed writing {path}:\n"
                           f"{done.stderr.strip()}")
    os.replace(temporary, path)


def write_atomically(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder."""
    temporary = _temporary_name(path)
    try:
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)
    except OSError as err:
        _remove(temporary)
        raise BackendError(f"cannot write {path}: {err}") from err


def _temporary_name(path: str) -> str:
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
