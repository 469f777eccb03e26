"""Load an operator library that ``polyopt lib build`` wrote: ``po.load_library(OUT)``.

The manifest records the SHA-256 of ``lib<name>.so`` and every variant's signature; the
library holds each signature's digest (``polyopt_signature_<variant>``).  A library that
does not match its manifest (truncated or replaced, or a manifest edited, stale or from
another build) is refused with :class:`~polyopt.errors.BackendError` before any call;
the library must lie in the folder (the manifest names a file, not a path).  When only
``lib<name>.so`` is damaged and ``lib<name>.a`` matches its hash, the library is linked
again from the archive in a private folder (with a warning; the folder is not changed).
A library some of whose variants compute on AMX tiles says so in its manifest
(``amx_tiles``, per variant and for the library) and defines the C function
``polyopt_<name>_request_amx``; the two must agree (a manifest edited to hide AMX is
refused), and loading it asks Linux for the tile state
(:func:`~polyopt.target.amx_state.request_amx`), raising
:class:`~polyopt.errors.AMXPermissionError` where that is refused, before any call.

>>> import os, tempfile, polyopt as po
>>> po.load_library(tempfile.mkdtemp())
Traceback (most recent call last):
polyopt.errors.InvalidArgumentError: no manifest.json in ...; build the library with ...
"""

from __future__ import annotations

import json
import os
import warnings

from ..errors import (BackendError, DamagedFileError, InvalidArgumentError, PolyoptError,
                      PolyoptWarning, public)
from ..target.amx_state import request_amx
from ..target.integrity import check_trusted, load_relinked, load_verified
from ..target.native import LoadedKernel
from ..target.signature import Signature
from .header import amx_request_symbol

MANIFEST_FORMAT = 3  # 2: hashes of the outputs, signatures bound to the library; 3: AMX
REBUILD = "rebuild the library (polyopt lib build SPEC.py -o FOLDER)"


class Library:
    """The variants of a built library as callables: ``lib.matmul_n64_float32(a, b, c)``
    or ``lib["matmul_n64_float32"]``; ``lib.variants`` lists their names and
    ``lib.manifest`` is the manifest."""

    def __init__(self, folder: str, manifest: dict):
        self.manifest = manifest
        origin = os.path.join(folder, "manifest.json")
        shared = manifest["shared"]
        if not isinstance(shared, str) or shared != f"lib{manifest['library']}.so":
            raise BackendError(f"{origin} names the library {shared!r}, not the "
                               f"lib<name>.so beside it; {REBUILD}")
        path = os.path.join(folder, shared)
        try:
            self._bind(load_verified(path, manifest["shared_sha256"], "library", REBUILD),
                       origin)
        except DamagedFileError as damaged:
            static = f"lib{manifest['library']}.a"
            try:  # the archive holds the same objects and the signature digests
                self._bind(load_relinked(os.path.join(folder, static),
                                         manifest.get("static_sha256"), "static library",
                                         REBUILD), origin)
            except PolyoptError as failed:
                raise damaged from failed
            warnings.warn(f"the library {path} does not match the hash recorded for it; it "
                          f"was relinked from the verified {static} (the folder is unchanged: "
                          f"{REBUILD})", PolyoptWarning, stacklevel=4)

    def _bind(self, library, origin: str) -> None:
        manifest, self._library, self._kernels = self.manifest, library, {}
        for kernel in manifest["kernels"]:
            for variant in kernel["variants"]:
                signature = Signature.from_json(variant["signature"])
                if signature.name != variant["name"]:
                    raise BackendError(f"{origin}: variant {variant['name']!r} has the "
                                       f"signature of {signature.name!r}; {REBUILD}")
                self._kernels[variant["name"]] = LoadedKernel(self._library, signature,
                                                              origin=origin, fix=REBUILD)
        if _uses_amx(manifest, library, origin):
            request_amx()  # AMXPermissionError where Linux refuses: before any call


    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(self._kernels)

    def __getitem__(self, name: str) -> LoadedKernel:
        try:
            return self._kernels[name]
        except (KeyError, TypeError):
            raise InvalidArgumentError(
                f"the library has no variant {name!r}; it has {', '.join(self._kernels)}"
            ) from None

    def __getattr__(self, name: str) -> LoadedKernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __repr__(self) -> str:
        return f"<Library {self.manifest['library']}: {len(self._kernels)} variants>"


def _uses_amx(manifest: dict, library, origin: str) -> bool:
    """Whether the library computes on AMX tiles: its manifest (for the library and per
    variant) and the request function it defines must all say the same."""
    recorded = manifest["amx_tiles"]
    variants = any(v.get("amx_tiles") is True for k in manifest["kernels"]
                   for v in k["variants"])
    try:
        getattr(library, amx_request_symbol(manifest["library"]))
        defined = True
    except AttributeError:
        defined = False
    if recorded is not variants or recorded is not defined:
        raise BackendError(
            f"{origin} says the library {'uses' if recorded is True else 'does not use'} AMX "
            f"tiles, its variants {'do' if variants else 'do not'} and the library "
            f"{'defines' if defined else 'does not define'} "
            f"{amx_request_symbol(manifest['library'])} (edited, or from another build); "
            f"{REBUILD}")
    return defined


@public
def load_library(folder) -> Library:
    """The library ``polyopt lib build`` wrote to ``folder``; nothing is compiled."""
    try:
        folder = os.fspath(folder)
    except TypeError:
        raise InvalidArgumentError(f"load_library takes a folder, got {folder!r}") from None
    path = os.path.join(folder, "manifest.json")
    try:
        check_trusted(path, "library manifest")
        with open(path, encoding="utf-8") as file:
            manifest = json.load(file)
    except InvalidArgumentError as err:
        if not os.path.exists(path):
            raise InvalidArgumentError(f"no manifest.json in {folder}; build the library with "
                                       "polyopt lib build SPEC.py -o FOLDER") from err
        raise
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"cannot read {path}: {err}") from err
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InvalidArgumentError(f"{path} is not a polyopt library manifest of format "
                                   f"{MANIFEST_FORMAT}; {REBUILD}")
    try:
        return Library(folder, manifest)
    except PolyoptError:
        raise
    except (KeyError, TypeError, AttributeError) as err:
        raise BackendError(f"{path} is incomplete ({type(err).__name__}: {err}); {REBUILD}") \
            from err
