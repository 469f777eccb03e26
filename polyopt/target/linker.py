"""Files of compiled kernels: written atomically, linked by the system C compiler.

Every file is written to a temporary name in its folder and renamed, so a reader never
sees half a file and concurrent writers of the same bytes do not disturb each other.
``link_shared`` runs ``cc`` (or ``$CC``), ``archive`` runs ``ar`` (or ``$AR``).

>>> libraries_needed(["call @polyopt_parallel"])[0].startswith("-l")
True
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import uuid

from ..errors import BackendError, MissingBackendError


def libraries_needed(ir_texts) -> list[str]:
    """The linker flags for the runtime libraries these modules call."""
    text = "\n".join(ir_texts)
    flags = []
    for marker, library in (("polyopt_parallel", "pthread"), ("_ZGV", "mvec")):
        if marker in text:
            found = ctypes.util.find_library(library)
            flags.append(f"-l:{found}" if found else f"-l{library}")
    return flags + ["-lm"]


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


def link_archive(static: str, path: str, flags: list[str]) -> None:
    """Link every member of the static library ``static`` into the shared library ``path``."""
    link_shared(["-Wl,--whole-archive", static, "-Wl,--no-whole-archive"], path, flags)


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
    try:
        os.replace(temporary, path)
    except OSError as err:
        _remove(temporary)
        raise BackendError(f"cannot write {path}: {err}") from err


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
