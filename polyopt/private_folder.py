"""Folders only the current user can write, for code polyopt compiles and then loads.

A shared library found in a folder another user can write could be theirs: loading it
runs their code as us.  :func:`private_folder` returns ``<cache>/<name>`` (the cache is
``$POLYOPT_CACHE``, else ``$XDG_CACHE_HOME/polyopt``, else ``~/.cache/polyopt``), made
with mode 0700 and checked: a real folder (not a symbolic link), owned by us, writable
by nobody else.  When that fails (no home, a folder that does not pass) it falls back
to a fresh :func:`tempfile.mkdtemp` folder of this process, never to a predictable name
in the shared temporary folder.  :func:`verified_file` checks a file's content against
the SHA-256 written beside it (``<file>.sha256``) before it is used.

>>> import os, stat, tempfile
>>> os.environ["POLYOPT_CACHE"] = tempfile.mkdtemp()
>>> folder = private_folder("c")
>>> stat.S_IMODE(os.stat(folder).st_mode) == 0o700
True
>>> del os.environ["POLYOPT_CACHE"]
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import stat
import tempfile
import uuid

from .errors import BackendError

_FALLBACK: dict[str, str] = {}


def private_folder(name: str) -> str:
    """``<cache>/<name>``, private to this user (see the module docstring)."""
    configured = os.environ.get("POLYOPT_CACHE")
    base = configured or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "polyopt")
    folder = os.path.join(base, name)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.lstat(folder)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
            os.chmod(folder, 0o700)  # ours, made by an older polyopt: close it
        if _is_private(folder) and _is_private_or_ours(base):
            return folder
    except OSError:
        pass
    return _process_folder(name)


def make_private(path: str) -> str | None:
    """Make ``path`` (and its parents) a folder only this user can use (mode 0700): None
    when it is one, else why it cannot be (not a real folder, another user's, not
    writable).  For folders a user names (``polyopt lib build --cache DIR``)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError as err:
        return f"cannot create the folder {path}: {err.strerror or err}"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a folder (a symbolic link or a file)"
    if info.st_uid != os.geteuid():
        return f"the folder {path} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o077:
        try:  # ours: close it to other users
            os.chmod(path, 0o700)
        except OSError as err:
            return f"the folder {path} is open to other users and chmod failed: {err}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"the folder {path} is not writable"
    return None


def _is_private(folder: str) -> bool:
    """A real folder, owned by us, that nobody else may write or enter."""
    info = os.lstat(folder)
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o077)


def _is_private_or_ours(folder: str) -> bool:
    """The parent: ours and not writable by others (it may be readable)."""
    info = os.lstat(folder)
    return (stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()
            and not info.st_mode & 0o022)


def _process_folder(name: str) -> str:
    folder = _FALLBACK.get(name)
    if folder is None or not os.path.isdir(folder):
        folder = tempfile.mkdtemp(prefix=f"polyopt-{name}-")
        _FALLBACK[name] = folder
        atexit.register(shutil.rmtree, folder, True)
    return folder


def write_atomically(path: str, data: bytes) -> None:
    """Write ``path`` through a temporary file beside it, renamed over it: readers see the
    whole file or none, and a symbolic link planted at ``path`` is replaced, not
    followed."""
    folder, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(temporary, "xb") as handle:
            handle.write(data)
        os.replace(temporary, path)
    except OSError as err:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise BackendError(f"cannot write {path}: {err}") from err


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_verified(path: str, data: bytes) -> None:
    """Write ``path`` and its ``.sha256`` atomically (the content first)."""
    write_atomically(path, data)
    write_atomically(path + ".sha256", digest(data).encode())


def verified_file(path: str) -> bool:
    """Whether ``path`` exists, is a regular file of ours and matches its ``.sha256``."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return False
        with open(path + ".sha256", encoding="ascii") as handle:
            expected = handle.read().strip()
        with open(path, "rb") as handle:
            return digest(handle.read()) == expected
    except (OSError, UnicodeDecodeError):
        return False


__all__ = ["digest", "make_private", "private_folder", "verified_file", "write_atomically",
           "write_verified"]
