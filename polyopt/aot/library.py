"""Build an operator library from a spec, and load it back.

``build_library("ops.py", "out/")`` writes ``out/libops.so``, ``out/libops.a``,
``out/ops.h`` (one C prototype per variant) and ``out/manifest.json`` (kernels, variants,
content hashes, target, versions, build times, failures).  Variants already in the disk
cache are not built again (a warm rebuild lowers nothing); the outputs depend only on
the objects, so a rebuild with nothing changed writes the same bytes.
``po.load_library("out/")`` gives the variants as callables.

>>> import os, tempfile, numpy as np, polyopt as po
>>> spec = os.path.join(tempfile.mkdtemp(), "ops.py")
>>> _ = open(spec, "w").write('''
... import polyopt as po
... from polyopt.aot import Kernel, grid
... def add_one(n):
...     A = po.placeholder((n,), name="A"); B = po.compute((n,), lambda i: A[i] + 1.0, name="B")
...     return po.create_schedule(B), [A, B]
... def kernels():
...     yield Kernel("add_one", add_one, grid(n=[4, 8]))
... ''')
>>> out = tempfile.mkdtemp()
>>> manifest = build_library(spec, out, cache_root=tempfile.mkdtemp(), progress=False)
>>> sorted(os.listdir(out))
['libops.a', 'libops.so', 'manifest.json', 'ops.h']
>>> lib = po.load_library(out); b = np.zeros(4, "float32"); lib.add_one_n4(np.ones(4, "float32"), b); b
array([2., 2., 2., 2.], dtype=float32)
"""

from __future__ import annotations

import json
import os
import tempfile

from ..errors import BackendError, InvalidArgumentError, public
from ..target.base import get_target, target_key
from ..target.linker import archive, libraries_needed, link_shared, write_atomically
from ..target.native import LoadedKernel, open_library
from ..target.signature import Signature, versions, versions_text
from .cache import DiskCache, default_cache_dir
from .header import header_text
from .runner import progress_bar, run_builds
from .spec import load_spec, request_key

MANIFEST_FORMAT = 1


def build_library(spec_path: str, out: str, *, name: str | None = None, jobs: int = 1,
                  dask: str | None = None, target: str = "llvm",
                  cache_root: str | None = None, progress: bool = True) -> dict:
    """Build every variant of ``spec_path``'s ``kernels()`` into ``out`` and return the
    manifest; ``manifest["failures"]`` lists the variants that did not build."""
    spec = load_spec(os.fspath(spec_path))
    name = name or os.path.splitext(os.path.basename(spec.path))[0]
    if not name.isidentifier():
        raise InvalidArgumentError(f"the library name must be an identifier, got {name!r}; "
                                   "pass --name")
    backend = get_target(target)
    if backend.name != "llvm":
        raise InvalidArgumentError(f"libraries are built for the llvm target, not {target!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgumentError(f"jobs must be an integer >= 1, got {jobs!r}")
    os.makedirs(out, exist_ok=True)
    cache = DiskCache(cache_root or default_cache_dir())
    key = target_key(backend)
    results, pending = {}, []
    for variant in spec.variants:  # a warm variant: found by its request, nothing lowered
        digest = cache.lookup(request_key(spec, variant, key, versions_text()))
        found = cache.get(digest) if digest else None
        if found is None:
            pending.append(variant.name)
        else:
            results[variant.name] = {"name": variant.name, "hash": digest, "object": found[0],
                                     "signature": found[1]["signature"],
                                     "seconds": found[1]["seconds"], "cached": True}
    advance, close = progress_bar(len(pending), enabled=progress and bool(pending))
    try:
        for result in run_builds(spec, pending, target, cache.root, jobs=jobs, dask=dask,
                                 progress=advance):
            results[result["name"]] = result
            _keep(cache, result)
    finally:
        close()
    ordered = [results[v.name] for v in spec.variants]
    built = [r for r in ordered if "error" not in r]
    _write_outputs(out, name, built)
    manifest = _manifest(spec, name, key, ordered)
    write_atomically(os.path.join(out, "manifest.json"),
                     (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
    manifest["cache_hits"] = sum(bool(r.get("cached")) for r in ordered)
    return manifest


def _keep(cache: DiskCache, result: dict) -> None:
    """Cache a result here too (a remote Dask worker cached it on its own disk)."""
    if "hash" in result and not cache.has(result["hash"]):
        cache.put(result["hash"], result["object"],
                  {"signature": result["signature"], "seconds": result["seconds"]})
        cache.remember(result["request"], result["hash"])


def _write_outputs(out: str, name: str, built: list[dict]) -> None:
    signatures = [Signature.from_json(r["signature"]) for r in built]
    write_atomically(os.path.join(out, f"{name}.h"), header_text(name, signatures).encode())
    with tempfile.TemporaryDirectory(prefix="polyopt-lib-") as scratch:
        objects = []
        for result in built:  # named by variant: the archive's member names are stable
            path = os.path.join(scratch, f"{result['name']}.o")
            with open(path, "wb") as file:
                file.write(result["object"])
            objects.append(path)
        from ..target.llvm.threadpool import runtime_objects  # llvmlite: only here

        objects += runtime_objects([r["object"] for r in built], scratch)
        flags = libraries_needed(_undefined_markers(r["object"]) for r in built)
        link_shared(objects, os.path.join(out, f"lib{name}.so"), flags)
        archive(objects, os.path.join(out, f"lib{name}.a"))


def _undefined_markers(code: bytes) -> str:
    """The runtime symbols an object calls, as text :func:`libraries_needed` reads."""
    return " ".join(m for m in ("polyopt_parallel", "_ZGV") if m.encode() in code)


def _manifest(spec, name: str, key: str, ordered: list[dict]) -> dict:
    by_kernel: dict[str, list] = {}
    failures = []
    for variant, result in zip(spec.variants, ordered):
        entry = {"name": variant.name, "params": variant.param_dict}
        if "error" in result:
            failures.append({**entry, "kernel": variant.kernel, "error": result["error"]})
            continue
        entry.update(hash=result["hash"], seconds=result["seconds"],
                     signature=result["signature"])
        by_kernel.setdefault(variant.kernel, []).append(entry)
    return {"format": MANIFEST_FORMAT, "library": name, "shared": f"lib{name}.so",
            "static": f"lib{name}.a", "header": f"{name}.h", "target": key,
            "versions": versions(),
            "kernels": [{"name": k, "variants": v} for k, v in by_kernel.items()],
            "failures": failures}


class Library:
    """The variants of a built library as callables: ``lib.matmul_n64_float32(a, b, c)``
    or ``lib["matmul_n64_float32"]``; ``lib.variants`` lists their names and
    ``lib.manifest`` is the manifest."""

    def __init__(self, folder: str, manifest: dict):
        self.manifest = manifest
        self._library = open_library(os.path.join(folder, manifest["shared"]))
        self._kernels = {}
        for kernel in manifest["kernels"]:
            for variant in kernel["variants"]:
                signature = Signature.from_json(variant["signature"])
                self._kernels[variant["name"]] = LoadedKernel(self._library, signature)

    @property
    def variants(self) -> tuple[str, ...]:
        return tuple(self._kernels)

    def __getitem__(self, name: str) -> LoadedKernel:
        try:
            return self._kernels[name]
        except KeyError:
            raise InvalidArgumentError(
                f"the library has no variant {name!r}; it has {', '.join(self._kernels)}"
            ) from None

    def __getattr__(self, name: str) -> LoadedKernel:
        if name.startswith("_"):
            raise AttributeError(name)
        return self[name]

    def __repr__(self) -> str:
        return f"<Library {self.manifest['library']}: {len(self._kernels)} variants>"


@public
def load_library(folder) -> Library:
    """The library ``polyopt lib build`` wrote to ``folder``; nothing is compiled."""
    folder = os.fspath(folder)
    try:
        with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as file:
            manifest = json.load(file)
    except FileNotFoundError as err:
        raise InvalidArgumentError(f"no manifest.json in {folder}; build the library with "
                                   "polyopt lib build SPEC.py -o FOLDER") from err
    except (OSError, ValueError) as err:
        raise InvalidArgumentError(f"cannot read {folder}/manifest.json: {err}") from err
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise InvalidArgumentError(f"{folder}/manifest.json is not a polyopt library manifest "
                                   f"of format {MANIFEST_FORMAT}; rebuild the library")
    try:
        return Library(folder, manifest)
    except (KeyError, TypeError) as err:
        raise BackendError(f"{folder}/manifest.json is incomplete ({err}); rebuild the library") \
            from err
