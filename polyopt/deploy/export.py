"""Export a compiled model as a C library: ``m.export_library("deploy/", name="resnet")``.

Writes into the folder, all together (staged, then moved in with the manifest last):

- ``lib<name>.a`` and ``lib<name>.so``: every fused kernel (LLVM's object code, each
  renamed ``<name>_kernel_<k>``), the plan's tables and the C runtime
  (``runtime/runtime.c``, compiled here with the system ``cc``) and polyopt's thread
  pool, combined into one object whose only global symbols are the C API (``<name>_*``)
  and the pool's weak entry points; it needs libc, libm, pthreads (and libmvec when a
  kernel calls it: ``manifest["link"]``);
- ``<name>.h``: the C API (:func:`~.csource.header_text`);
- ``<name>.weights``: the constants; the library holds their size and the SHA-256 of
  each 1 MiB chunk (:func:`chunk_digests`), checks every chunk as it reads it (on the
  thread pool) and refuses other bytes;
- ``manifest.json`` (format 2: the chunked weights hash; format 1 exports are refused
  by :func:`~.loader.load`): the source model's SHA-256, polyopt's version, the target CPU and
  the features it checks at load, the opset, the plan, the files' SHA-256 and the
  ``build_id`` the library holds (what ``po.graph.load`` checks).

>>> import os, tempfile, numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder(); x = b.input("x", (2, 4))
>>> m = po.graph.compile(b.build([b.op("Relu", [x])]), num_threads=1)
>>> out = tempfile.mkdtemp(); _ = m.export_library(out, name="tiny")
>>> sorted(os.listdir(out))
['libtiny.a', 'libtiny.so', 'manifest.json', 'tiny.h', 'tiny.weights']
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from ..errors import BackendError, InvalidArgumentError, MissingBackendError, public
from ..private_folder import digest
from ..target.linker import archive, libraries_needed, link_shared, write_atomically
from ..target.signature import versions
from .csource import WEIGHTS_CHUNK_BYTES, header_text, model_source, plan_uses_amx
from .objects import kernel_objects
from .plan import execution_plan, refuse_unsupported

FORMAT = 2  # 2: the weights hashed per chunk (weights_chunks_sha256, weights_tree_sha256)
MANIFEST = "manifest.json"
POOL_SYMBOLS = ("polyopt_parallel", "polyopt_threads", "polyopt_session_begin",
                "polyopt_session_end", "polyopt_set_threads")
API = ("create", "destroy", "check_cpu", "check_amx", "error_message", "input_count", "input_name",
       "input_dtype", "input_ndim", "input_shape", "input_bytes", "input_index",
       "output_count", "output_name", "output_dtype", "output_ndim", "output_shape",
       "output_bytes", "output_index", "set_input", "set_input_by_name", "set_output",
       "get_output", "get_output_by_name", "run", "set_threads", "threads", "build_id")


def export_model(model, folder, *, name: str = "model", source=None,
                 weights: str = "file") -> dict:
    """Write ``model`` (a ``po.graph.compile`` result) into ``folder`` as ``name``;
    ``source``: the ONNX model it came from (a path, bytes or a ``ModelProto``), hashed
    into the manifest; ``weights``: ``"file"`` (``<name>.weights``, size and SHA-256
    checked when a model is created) or ``"embedded"`` (in the library's read-only
    data: nothing to read or hash at load; the library's own hash covers them).
    Returns the manifest."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise InvalidArgumentError(f"the library name must be a C identifier, got {name!r}")
    try:
        folder = os.fspath(folder)
    except TypeError:
        raise InvalidArgumentError(f"export_library takes a folder, got {folder!r}") from None
    if weights not in ("file", "embedded"):
        raise InvalidArgumentError(f"weights is 'file' or 'embedded', got {weights!r}")
    embedded = weights == "embedded"
    _make_folder(folder)
    refuse_unsupported(model)  # (before anything is built)
    objects, runners = kernel_objects(model)
    plan, weights = execution_plan(model, runners)
    unique: dict[str, int] = {}
    order = []
    for code, signature in objects:
        order.append(unique.setdefault(digest(code), len(unique)))
    codes = {unique[digest(code)]: (code, signature) for code, signature in objects}
    kernels = iter(order)
    for step in plan["steps"]:
        if step["kernel"] >= 0:
            step["kernel"] = next(kernels)
    plan["kernels"] = [{"symbol": f"{name}_kernel_{k}", "object_sha256": digest(codes[k][0]),
                        "signature": codes[k][1].to_json()} for k in range(len(codes))]
    info = model.compiled_for
    weights_sha = digest(weights)
    chunks, tree = chunk_digests(weights)
    build_id = hashlib.sha256(json.dumps([plan, weights_sha], sort_keys=True).encode()
                              ).hexdigest()
    manifest = {"format": FORMAT, "name": name, "polyopt": versions(),
                "source_sha256": _source_digest(source), "opset": _opset(source),
                "target": model.target, "cpu": info.name, "features": list(info.features),
                "threads": model.num_threads, "build_id": build_id,
                "weights_sha256": weights_sha, "weights_bytes": len(weights),
                "weights_chunk_bytes": WEIGHTS_CHUNK_BYTES,
                "weights_chunks_sha256": chunks, "weights_tree_sha256": tree,
                "shared": f"lib{name}.so", "static": f"lib{name}.a", "header": f"{name}.h",
                "weights": None if embedded else f"{name}.weights", "plan": plan,
                "amx_tiles": plan_uses_amx(plan)}
    staging = tempfile.mkdtemp(prefix=".polyopt-export-", dir=folder)
    try:
        files = _write(staging, name, plan, codes, weights, manifest)
        for role, file_name in files.items():
            with open(os.path.join(staging, file_name), "rb") as file:
                manifest[f"{role}_sha256"] = digest(file.read())
        write_atomically(os.path.join(staging, MANIFEST),
                         (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode())
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, MANIFEST))
        for file_name in [*files.values(), MANIFEST]:
            os.replace(os.path.join(staging, file_name), os.path.join(folder, file_name))
    except OSError as err:
        raise BackendError(f"cannot write the export into {folder}: {err}") from err
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return manifest


@public
def chunk_digests(data: bytes, chunk: int = WEIGHTS_CHUNK_BYTES) -> tuple[list[str], str]:
    """The SHA-256 (hex) of each ``chunk`` bytes of ``data`` (the last one shorter) and the
    SHA-256 of their 32-byte digests one after the other (the tree's root): what the
    runtime checks a weights file against, chunk by chunk, in parallel.

    >>> chunks, root = chunk_digests(bytes(5), chunk=2)
    >>> len(chunks), root == hashlib.sha256(b"".join(bytes.fromhex(c) for c in chunks)).hexdigest()
    (3, True)
    """
    if not isinstance(data, (bytes, bytearray, memoryview)) or isinstance(chunk, bool) or \
            not isinstance(chunk, int) or chunk < 1:
        raise InvalidArgumentError(f"chunk_digests takes bytes and a chunk size >= 1, got "
                                   f"{type(data).__name__} and {chunk!r}")
    view = memoryview(data).cast("B")
    chunks = [hashlib.sha256(view[at:at + chunk]).hexdigest()
              for at in range(0, len(data), chunk)]
    return chunks, hashlib.sha256(b"".join(bytes.fromhex(c) for c in chunks)).hexdigest()


def _write(folder: str, name: str, plan: dict, codes: dict, weights: bytes,
           manifest: dict) -> dict:
    from ..target.llvm.threadpool import threadpool_object  # llvmlite: only here

    files = {"header": f"{name}.h", "shared": f"lib{name}.so", "static": f"lib{name}.a"}
    header = header_text(name, plan)
    write_atomically(os.path.join(folder, files["header"]), header.encode())
    if manifest["weights"]:
        files["weights"] = manifest["weights"]
        write_atomically(os.path.join(folder, files["weights"]), weights)
    with tempfile.TemporaryDirectory(prefix="polyopt-export-") as scratch:
        objects = []
        for k, (code, signature) in sorted(codes.items()):
            path = os.path.join(scratch, f"kernel_{k}.o")
            write_atomically(path, code)
            _tool("objcopy", "--redefine-sym", f"{signature.name}={name}_kernel_{k}", path)
            objects.append(path)
        pool = os.path.join(scratch, "polyopt_threadpool.o")
        write_atomically(pool, threadpool_object())
        write_atomically(os.path.join(scratch, f"{name}.h"), header.encode())
        source = os.path.join(scratch, f"{name}_runtime.c")
        write_atomically(source, model_source(
            name, plan, [k["symbol"] for k in plan["kernels"]], manifest["weights_chunks_sha256"],
            manifest["features"], manifest["cpu"], manifest["build_id"],
            embedded=not manifest["weights"]).encode())
        runtime = os.path.join(scratch, f"{name}_runtime.o")
        _tool(_compiler(), "-std=gnu11", "-O2", "-fPIC", "-fvisibility=default", "-c",
              "-I", scratch, "-o", runtime, source)
        if not manifest["weights"]:
            objects.append(_weights_object(scratch, name, weights))
        combined = os.path.join(scratch, f"{name}.o")
        _tool("ld", "-r", "-o", combined, runtime, pool, *objects)
        keep = os.path.join(scratch, "keep.txt")
        write_atomically(keep, "\n".join([f"{name}_{f}" for f in API]
                                         + list(POOL_SYMBOLS)).encode())
        _tool("objcopy", f"--keep-global-symbols={keep}", combined)
        markers = " ".join(m for m in ("_ZGV",) if any(m.encode() in c for c, _ in codes.values()))
        flags = libraries_needed(["polyopt_parallel " + markers])
        manifest["link"] = [f"-l{name}", *flags]
        manifest["runtime_object_bytes"] = os.path.getsize(runtime) + os.path.getsize(pool)
        archive([combined], os.path.join(folder, files["static"]))
        link_shared([combined], os.path.join(folder, files["shared"]), flags)
    return files


def _weights_object(scratch: str, name: str, weights: bytes) -> str:
    """An object holding ``weights`` as the read-only, 64-byte aligned
    ``<name>_weights_data``."""
    data = os.path.join(scratch, f"{name}.weights")
    write_atomically(data, weights)
    source = os.path.join(scratch, f"{name}_weights.S")
    write_atomically(source, (
        f'\t.section .rodata.{name}_weights,"a"\n\t.balign 64\n'
        f"\t.globl {name}_weights_data\n{name}_weights_data:\n"
        f'\t.incbin "{data}"\n\t.section .note.GNU-stack,"",@progbits\n').encode())
    path = os.path.join(scratch, f"{name}_weights.o")
    _tool(_compiler(), "-c", "-o", path, source)
    return path


def _compiler() -> str:
    found = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if found is None:
        raise MissingBackendError("exporting a model compiles its runtime with a C compiler "
                                  "(cc), which was not found; install one (Debian: apt-get "
                                  "install gcc)")
    return found


def _tool(*command: str) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as err:
        raise MissingBackendError(f"cannot run {command[0]} ({err}); exporting a model needs "
                                  "binutils (ld, objcopy) and a C compiler") from err
    if done.returncode != 0:
        raise BackendError(f"{os.path.basename(command[0])} failed while exporting:\n"
                           f"{done.stderr.strip()}")


def _make_folder(folder: str) -> None:
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise InvalidArgumentError(f"the output {folder} is a file, not a folder; name a folder "
                                   "(it is created when missing)")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise InvalidArgumentError(f"cannot create the output folder {folder}: {err}") from err


def _source_bytes(source) -> bytes | None:
    if source is None:
        return None
    if isinstance(source, (bytes, bytearray)):
        return bytes(source)
    if hasattr(source, "SerializeToString"):
        return source.SerializeToString()
    try:
        with open(os.fspath(source), "rb") as file:
            return file.read()
    except (OSError, TypeError) as err:
        raise InvalidArgumentError(f"source is the ONNX model (a path, bytes or a "
                                   f"ModelProto); cannot read {source!r}: {err}") from err


def _source_digest(source) -> str | None:
    data = _source_bytes(source)
    return None if data is None else digest(data)


def _opset(source) -> int | None:
    data = _source_bytes(source)
    if data is None:
        return None
    try:
        import onnx

        model = onnx.load_from_string(data)
    except Exception:  # noqa: BLE001 (not an ONNX model: no opset to record)
        return None
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
