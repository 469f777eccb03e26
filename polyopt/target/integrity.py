"""Saved and cached kernels are bound to their content, and loaded only from safe places.

* A kernel's :class:`~.signature.Signature` has a digest (:func:`signature_digest`); a
  shared library holding kernels also holds, for each, the constant
  ``polyopt_signature_<name>``: that digest (:func:`signature_table_ir`).  A signature
  read from a ``.json`` file or a manifest is used only when the library says the same
  (:func:`bind_function`), and the function must be defined by the library itself (not
  by libc, which ``dlsym`` also searches).
* The file's SHA-256 is recorded beside it; :func:`load_verified` hashes the bytes, and
  loads exactly those bytes (copied to a private folder): a truncated, swapped or edited
  library is refused before the dynamic loader maps it.
* A library whose own hash fails may be linked again from its static archive, when that
  archive matches its hash (:func:`load_relinked`): the verified bytes, linked in a private
  folder; the signature digests it embeds are checked as usual.
* Files are loaded only when no other user can have written them (:func:`check_trusted`),
  and caches live in per-user folders of mode 0700 (``polyopt.private_folder.make_private``).

>>> from polyopt.target.signature import ArraySpec, Signature
>>> from polyopt.te.expr import Const
>>> sig = Signature("k", (ArraySpec("A", (Const(4, "int64"),), "float32", True),))
>>> len(signature_digest(sig)), signature_symbol("k")
(64, 'polyopt_signature_k')
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import stat
import tempfile

from ..errors import BackendError, DamagedFileError, InvalidArgumentError
from ..private_folder import digest, private_folder
from .linker import libraries_needed, link_archive
from .symbols import check_symbol_name

SIGNATURE_PREFIX = "polyopt_signature_"


def signature_digest(signature) -> str:
    """A SHA-256 of everything a signature says (its canonical JSON)."""
    text = json.dumps(signature.to_json(), sort_keys=True, separators=(",", ":"))
    return digest(text.encode())


def signature_symbol(name: str) -> str:
    return SIGNATURE_PREFIX + name


def signature_table_ir(signatures) -> str:
    """LLVM IR defining ``polyopt_signature_<name>`` (64 hex characters) per signature."""
    lines = []
    for signature in signatures:
        digest = signature_digest(signature)
        lines.append(f'@{signature_symbol(signature.name)} = constant [64 x i8] c"{digest}", '
                     "align 1")
    return "\n".join(lines) + "\n"


# -- where files may come from -------------------------------------------------------------

def check_trusted(path: str, what: str) -> None:
    """Refuse ``path`` when another user may have written it: the file owned by someone
    other than this user or root, or writable by everyone; or its folder so."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    if uid is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    for place, kind in ((path, "file"), (folder, "folder")):
        try:
            info = os.stat(place)
        except OSError as err:
            raise InvalidArgumentError(f"cannot read the {what} {path}: {err}") from err
        sticky = kind == "folder" and info.st_mode & stat.S_ISVTX
        if info.st_uid not in (uid, 0) and not (kind == "folder" and sticky):
            raise BackendError(
                f"the {what} {path} is not loaded: its {kind} {place} belongs to another user "
                f"(uid {info.st_uid}), who could have changed it; copy it to a folder of yours")
        if info.st_mode & stat.S_IWOTH and not sticky:
            raise BackendError(
                f"the {what} {path} is not loaded: its {kind} {place} is writable by every "
                f"user (mode {stat.S_IMODE(info.st_mode):o}); run chmod o-w on it")


# -- loading --------------------------------------------------------------------------------

def read_verified(path: str, sha256: str, what: str, fix: str) -> bytes:
    """``path``'s bytes when their SHA-256 is ``sha256``, else :class:`DamagedFileError`."""
    check_trusted(path, what)
    try:
        with open(path, "rb") as file:
            data = file.read()
    except OSError as err:
        raise InvalidArgumentError(f"cannot read the {what} {path}: {err}") from err
    if not isinstance(sha256, str) or digest(data) != sha256:
        raise DamagedFileError(f"the {what} {path} does not match the hash recorded for it "
                               f"(truncated, replaced or edited); {fix}")
    return data


_LOADED: dict[str, ctypes.CDLL] = {}


def load_verified(path: str, sha256: str, what: str, fix: str) -> ctypes.CDLL:
    """The shared library ``path`` as ``ctypes.CDLL``, from exactly the bytes whose
    SHA-256 is ``sha256`` (copied to a private folder, so nothing can change them between
    the check and the load)."""
    data = read_verified(path, sha256, what, fix)
    loaded = _LOADED.get(sha256)
    if loaded is not None:  # the same bytes: one copy (ctypes never unloads a library)
        return loaded
    folder = tempfile.mkdtemp(prefix="polyopt-load-")  # mode 0700, ours
    try:
        copy = os.path.join(folder, os.path.basename(path))
        with open(copy, "wb") as file:
            file.write(data)
        try:
            loaded = ctypes.CDLL(copy)
        except OSError as err:
            raise BackendError(f"cannot load the {what} {path}: {err}; {fix}") from err
        _LOADED[sha256] = loaded
        return loaded
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the mapping stays


def load_relinked(archive: str, sha256: str, what: str, fix: str) -> ctypes.CDLL:
    """A shared library linked by the system linker from the static library ``archive``
    (all its members), from exactly the bytes whose SHA-256 is ``sha256``, in a private
    folder of this user."""
    data = read_verified(archive, sha256, what, fix)
    loaded = _LOADED.get("archive:" + sha256)
    if loaded is not None:
        return loaded
    folder = tempfile.mkdtemp(prefix="relink-", dir=private_folder("relinked"))
    try:
        copy = os.path.join(folder, os.path.basename(archive))
        with open(copy, "wb") as file:
            file.write(data)
        shared = os.path.splitext(copy)[0] + ".so"
        link_archive(copy, shared, libraries_needed([data.decode("latin-1")]))
        try:
            loaded = ctypes.CDLL(shared)
        except OSError as err:
            raise BackendError(f"cannot load the library linked from {archive}: {err}; "
                               f"{fix}") from err
        _LOADED["archive:" + sha256] = loaded
        return loaded
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # the mapping stays


class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


def _object_base(address: int) -> int | None:
    """The load address of the shared object holding ``address`` (dladdr), if known."""
    try:
        dladdr = ctypes.CDLL(None).dladdr
    except (OSError, AttributeError):
        return None
    dladdr.argtypes = (ctypes.c_void_p, ctypes.POINTER(_DlInfo))
    dladdr.restype = ctypes.c_int
    info = _DlInfo()
    if not dladdr(ctypes.c_void_p(address), ctypes.byref(info)):
        return None
    return info.dli_fbase


def bind_function(library: ctypes.CDLL, signature, origin: str, fix: str) -> int:
    """The address of ``signature``'s function in ``library``, once the library's
    ``polyopt_signature_<name>`` says it has exactly this signature and the function is
    the library's own."""
    name = signature.name
    check_symbol_name(name, "kernel name in the signature")
    try:
        recorded = (ctypes.c_char * 64).in_dll(library, signature_symbol(name)).raw
        function = getattr(library, name)
    except (ValueError, AttributeError) as err:
        raise BackendError(f"{origin} names the function '{name}', which the library does not "
                           f"define as a polyopt kernel; {fix}") from err
    if recorded.decode("latin-1") != signature_digest(signature):
        raise BackendError(f"the signature of '{name}' in {origin} is not the one the library "
                           f"was built with (edited, or from another build); {fix}")
    address = ctypes.cast(function, ctypes.c_void_p).value
    table = ctypes.addressof(ctypes.c_char.in_dll(library, signature_symbol(name)))
    base = _object_base(table)
    if base is not None and _object_base(address) != base:
        raise BackendError(f"'{name}' named by {origin} is not defined by the library itself "
                           f"(it resolves to another shared object); {fix}")
    return address
