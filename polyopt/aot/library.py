"""Build an operator library from a spec, and load it back.

``build_library("ops.py", "out/")`` writes ``out/libops.so``, ``out/libops.a``,
``out/ops.h`` (one C prototype per variant) and ``out/manifest.json`` (kernels, variants,
content hashes, target, versions, build times, failures, whether a variant computes on
AMX tiles (``amx_tiles``), and the SHA-256 of each file).
The four are written to a staging folder first and moved in together, the old manifest
removed first and the new one moved in last: a failed or killed rebuild leaves the old
library, or no manifest, never a manifest beside a library it does not describe.  A
kernel cache that cannot be used or written is reported as a warning and the library is
built without it.  Variants already in the disk
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

import contextlib
import json
import os
import shutil
import tempfile
import warnings

from ..errors import BackendError, InvalidArgumentError, PolyoptError, PolyoptWarning
from ..target.amx_state import request_function_ir
from ..target.base import get_target, target_key
from ..private_folder import digest
from ..target.linker import archive, libraries_needed, link_shared, write_atomically
from ..target.signature import Signature, versions, versions_text
from .cache import DiskCache, default_cache_dir
from .header import amx_request_symbol, header_text
from .loaded import MANIFEST_FORMAT, Library, load_library
from .runner import progress_bar, run_builds
from .spec import load_spec, request_key

__all__ = ["Library", "build_library", "load_library"]


def build_library(spec_path: str, out: str, *, name: str | None = None, jobs: int = 1,
                  dask: str | None = None, target: str = "llvm",
                  cache_root: str | None = None, progress: bool = True) -> dict:
    """Build every variant of ``spec_path``'s ``kernels()`` into ``out`` and return the
    manifest; ``manifest["failures"]`` lists the variants that did not build and
    ``manifest["warnings"]`` what else went wrong (an unwritable cache)."""
    spec = load_spec(os.fspath(spec_path))
    name = name or os.path.splitext(os.path.basename(spec.path))[0]
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidArgumentError(f"the library name must be an identifier, got {name!r}; "
                                   "pass --name")
    backend = get_target(target)
    if backend.name != "llvm":
        raise InvalidArgumentError(f"libraries are built for the llvm target, not {target!r}")
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise InvalidArgumentError(f"jobs must be an integer >= 1, got {jobs!r}")
    out = os.fspath(out)
    _make_output_folder(out)
    cache = DiskCache(cache_root or default_cache_dir())
    problems = []
    if cache.problem:
        problems.append(f"the kernel cache cannot be used ({cache.problem}): building "
                        "without it; set POLYOPT_CACHE to a folder of yours")
    usable = cache if not cache.problem else None
    key = target_key(backend)
    results, pending = {}, []
    for variant in spec.variants:  # a warm variant: found by its request, nothing lowered
        digest = usable.lookup(request_key(spec, variant, key, versions_text())) \
            if usable else None
        found = usable.get(digest) if digest else None
        if found is None:
            pending.append(variant.name)
        else:
            results[variant.name] = {"name": variant.name, "hash": digest, "object": found[0],
                                     "signature": found[1]["signature"],
                                     "seconds": found[1]["seconds"], "cached": True,
                                     "amx_tiles": bool(found[1].get("amx_tiles"))}
    advance, close = progress_bar(len(pending), enabled=progress and bool(pending))
    try:
        for result in run_builds(spec, pending, target, usable.root if usable else None,
                                 jobs=jobs, dask=dask, progress=advance):
            results[result["name"]] = result
            _keep(usable, result, problems)
    finally:
        close()
    ordered = [results[v.name] for v in spec.variants]
    built = [r for r in ordered if "error" not in r]
    manifest = _manifest(spec, name, key, ordered)
    _install(out, name, built, manifest, backend.cpu)
    manifest["cache_hits"] = sum(bool(r.get("cached")) for r in ordered)
    manifest["warnings"] = list(dict.fromkeys(problems))
    for problem in manifest["warnings"]:
        warnings.warn(problem, PolyoptWarning, stacklevel=2)
    return manifest


def _make_output_folder(out: str) -> None:
    if os.path.exists(out) and not os.path.isdir(out):
        raise InvalidArgumentError(f"the output {out} is a file, not a folder; name a folder "
                                   "(it is created when missing)")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as err:
        raise InvalidArgumentError(f"cannot create the output folder {out}: "
                                   f"{err.strerror or err}; name a folder you can write") \
            from err
    if not os.access(out, os.W_OK | os.X_OK):
        raise InvalidArgumentError(f"the output folder {out} is not writable")


def _keep(cache: DiskCache | None, result: dict, problems: list) -> None:
    """Cache a result here too (a remote Dask worker cached it on its own disk), and
    note when the cache could not keep it."""
    if result.get("cache_error"):
        problems.append(f"the kernel cache could not keep {result['name']} "
                        f"({result['cache_error']}); the library is complete, but the next "
                        "build compiles it again")
    if cache is None or "hash" not in result or cache.has(result["hash"]):
        return
    try:
        cache.put(result["hash"], result["object"],
                  {"signature": result["signature"], "seconds": result["seconds"],
                   **({"amx_tiles": True} if result.get("amx_tiles") else {})})
        cache.remember(result["request"], result["hash"])
    except (OSError, PolyoptError) as err:
        problems.append(f"the kernel cache could not keep {result['name']} ({err}); the "
                        "library is complete, but the next build compiles it again")


def _install(out: str, name: str, built: list[dict], manifest: dict, cpu) -> None:
    """Write the outputs to a staging folder in ``out``, then move them in: the old
    manifest removed first, the new one moved in last (under a lock on ``out``, so
    concurrent builders replace the set one after the other)."""
    try:
        staging = tempfile.mkdtemp(prefix=".polyopt-staging-", dir=out)
    except OSError as err:
        raise BackendError(f"cannot write into {out}: {err}") from err
    try:
        files = _write_outputs(staging, name, built, cpu)
        for role, file_name in files.items():
            with open(os.path.join(staging, file_name), "rb") as file:
                manifest[f"{role}_sha256"] = digest(file.read())
        write_atomically(os.path.join(staging, "manifest.json"),
                         (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
        with _locked(out):
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(out, "manifest.json"))
                for file_name in list(files.values()) + ["manifest.json"]:
                    os.replace(os.path.join(staging, file_name), os.path.join(out, file_name))
            except OSError as err:
                raise BackendError(f"cannot move the library into {out}: {err}; the folder "
                                   "holds no valid library until a build succeeds") from err
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def _locked(folder: str):
    try:
        import fcntl
    except ImportError:  # not POSIX: the hashes still catch a mixed set at load
        yield
        return
    handle = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def _write_outputs(folder: str, name: str, built: list[dict], cpu) -> dict[str, str]:
    """Write the header, shared and static library into ``folder``; their file names."""
    from ..target.llvm.export import signature_object  # llvmlite: only here
    from ..target.llvm.jit import object_code, parse
    from ..target.llvm.threadpool import runtime_objects

    files = {"header": f"{name}.h", "shared": f"lib{name}.so", "static": f"lib{name}.a"}
    signatures = [Signature.from_json(r["signature"]) for r in built]
    amx = any(r.get("amx_tiles") for r in built)
    write_atomically(os.path.join(folder, files["header"]),
                     header_text(name, signatures, amx=amx).encode())
    with tempfile.TemporaryDirectory(prefix="polyopt-lib-") as scratch:
        objects = []
        for result in built:  # named by variant: the archive's member names are stable
            path = os.path.join(scratch, f"{result['name']}.o")
            with open(path, "wb") as file:
                file.write(result["object"])
            objects.append(path)
        objects += runtime_objects([r["object"] for r in built], scratch)
        table = os.path.join(scratch, "polyopt_signatures.o")
        with open(table, "wb") as file:
            file.write(signature_object(signatures, cpu))
        if amx:  # C programs call it once before the first variant (see .header)
            objects.append(os.path.join(scratch, "polyopt_request_amx.o"))
            with open(objects[-1], "wb") as file:
                file.write(object_code(parse(request_function_ir(amx_request_symbol(name))),
                                       cpu))
        flags = libraries_needed(_undefined_markers(r["object"]) for r in built)
        link_shared(objects + [table], os.path.join(folder, files["shared"]), flags)
        archive(objects + [table], os.path.join(folder, files["static"]))
    return files


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
        if result.get("amx_tiles"):
            entry["amx_tiles"] = True
        by_kernel.setdefault(variant.kernel, []).append(entry)
    return {"format": MANIFEST_FORMAT, "library": name, "shared": f"lib{name}.so",
            "static": f"lib{name}.a", "header": f"{name}.h", "target": key,
            "versions": versions(), "amx_tiles": any(
                v.get("amx_tiles") for variants in by_kernel.values() for v in variants),
            "kernels": [{"name": k, "variants": v} for k, v in by_kernel.items()],
            "failures": failures}
