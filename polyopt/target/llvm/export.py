"""Write compiled kernels to disk: object files, shared libraries, static archives.

Objects are emitted by LLVM (position-independent code for the kernel's CPU); the system
C compiler (``cc``, or ``$CC``) links them into a shared library, ``ar`` into a static
one.  A kernel with parallel loops needs polyopt's thread pool (:mod:`.threadpool`),
linked into the file; one calling libmvec's vector ``exp``, ``log`` or ``tanh`` needs
libmvec, which the shared library is linked against.  Every
file is written to a temporary name and renamed, so a reader never sees half a file.
A shared library also holds its kernel's signature digest (:func:`signature_object`),
and the ``.json`` beside it the library's SHA-256: ``po.load_module`` checks both.  A
kernel computing on AMX tiles also defines ``polyopt_request_amx_<name>`` (an ``int32_t
(void)`` asking Linux for the tile state, 0 once granted, else the errno), and its
``.json`` says ``"amx_tiles": true``: the two must agree at load, so the flag cannot be
edited away from the code.
:func:`load_object` loads an object back into this process (no C compiler: LLVM's
JIT links it), as the graph layer does with kernels from the on-disk cache.

>>> import os, tempfile, polyopt as po
>>> A = po.placeholder((3,), name="A"); B = po.compute((3,), lambda i: A[i] * 2.0, name="B")
>>> f = po.build(po.create_schedule(B), [A, B])
>>> out = tempfile.mkdtemp()
>>> f.export_library(os.path.join(out, "k.so")); sorted(os.listdir(out))
['k.so', 'k.so.json']
"""

from __future__ import annotations

import json
import os
import re
import tempfile

from ...errors import BackendError, InvalidArgumentError
from ...private_folder import digest
from ..amx_state import request_function_ir, request_symbol
from ..integrity import signature_table_ir
from ..linker import libraries_needed, link_shared, write_atomically
from ..native import SIGNATURE_SUFFIX, NativeKernel
from .amx import ir_uses_amx
from ..symbols import check_symbol_name
from .jit import CPU, object_code, parse, symbol_address, target_machine
from .threadpool import calls_threadpool, runtime_ir, runtime_objects


def object_for(optimized_ir: str, cpu: CPU, *, with_runtime: bool = False,
               signature=None) -> bytes:
    """The ELF object of an optimized IR module, for ``cpu``; ``with_runtime``: with the
    thread pool's code in it when the module calls it; ``signature``: with its digest
    (``polyopt_signature_<name>``) in it, and its AMX request function where the module
    computes on AMX tiles (:func:`amx_request_ir`)."""
    module = parse(optimized_ir)
    if with_runtime and calls_threadpool(optimized_ir):
        module.link_in(parse(runtime_ir()))
    if signature is not None:
        module.link_in(parse(signature_table_ir([signature])))
        if ir_uses_amx(optimized_ir):
            module.link_in(parse(amx_request_ir(signature.name)))
    return object_code(module, cpu)


def amx_request_ir(name: str) -> str:
    """LLVM IR of kernel ``name``'s ``polyopt_request_amx_<name>``: a kernel on AMX tiles
    defines it (C programs call it before the kernel; loaders check it is there)."""
    return request_function_ir(request_symbol(name))


def signature_object(signatures, cpu: CPU) -> bytes:
    """An ELF object defining ``polyopt_signature_<name>`` for each signature: linked into
    every shared library, it binds the library to the signatures it was built with (see
    :mod:`polyopt.target.integrity`)."""
    return object_code(parse(signature_table_ir(signatures)), cpu)


def export_library(optimized_ir: str, signature, cpu: CPU, path) -> None:
    """Write one kernel as ``path`` (a shared library, or an object when it ends in
    ``.o``) and, as ``path + ".json"``, its signature and the file's SHA-256."""
    try:
        path = os.fspath(path)
    except TypeError:
        path = None
    if not isinstance(path, str) or not path:
        raise InvalidArgumentError(f"export_library takes a file path such as 'k.so', got {path!r}")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InvalidArgumentError(f"the folder {directory} does not exist; create it first")
    for place in (path, path + SIGNATURE_SUFFIX):
        if os.path.isdir(place):
            raise InvalidArgumentError(f"{place} is a folder; export_library takes a file path "
                                       f"such as {os.path.join(path, signature.name + '.so')}")
    check_symbol_name(signature.name)
    if path.endswith(".o"):  # one object: the thread pool's code goes into it
        data = object_for(optimized_ir, cpu, with_runtime=True, signature=signature)
    else:
        code = object_for(optimized_ir, cpu)
        with tempfile.TemporaryDirectory(prefix="polyopt-") as scratch:
            obj = os.path.join(scratch, "kernel.o")
            table = os.path.join(scratch, "signature.o")
            write_atomically(obj, code)
            write_atomically(table, signature_object([signature], cpu))
            extra = []
            if ir_uses_amx(optimized_ir):  # binds the .json's "amx_tiles" to the code
                extra.append(os.path.join(scratch, "request_amx.o"))
                write_atomically(extra[0], object_code(parse(amx_request_ir(signature.name)),
                                                       cpu))
            linked = os.path.join(scratch, "kernel.so")
            link_shared([obj, table] + extra + runtime_objects([code], scratch), linked,
                        libraries_needed([optimized_ir]))
            with open(linked, "rb") as file:
                data = file.read()
    write_atomically(path, data)
    saved = {**signature.to_json(), "library_sha256": digest(data)}
    if ir_uses_amx(optimized_ir):  # po.load_module checks the request function is defined
        saved["amx_tiles"] = True  # and asks for the tile state before the first run
    write_atomically(path + SIGNATURE_SUFFIX, (json.dumps(saved, indent=1) + "\n").encode())


_DECLARED = re.compile(r'^declare [^@]*@"?([\w.$]+)"?\(', re.M)


def imported_symbols(optimized_ir: str) -> list[str]:
    """The functions an optimized module calls but does not define (LLVM intrinsics
    aside): what :func:`load_object` must find in the process."""
    return sorted({name for name in _DECLARED.findall(optimized_ir)
                   if not name.startswith("llvm.")})


class ObjectKernel(NativeKernel):
    """A kernel loaded from object code by :func:`load_object`."""

    def __init__(self, signature, engine, address: int):
        super().__init__(signature, address)
        self._engine = engine  # owns the machine code

    def _free(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def __repr__(self) -> str:
        return f"<ObjectKernel {self.name}>"


def load_object(code: bytes, signature, imports: list[str], cpu: CPU = CPU(), *,
                amx_tiles=False) -> ObjectKernel:
    """The kernel ``signature`` from the ELF object ``code`` (:func:`object_for`), linked
    into this process by LLVM's JIT.  ``imports`` (:func:`imported_symbols`) must all
    resolve (the thread pool and libmvec are loaded for them first): otherwise BackendError,
    before LLVM would abort the process on an unresolved symbol.  ``amx_tiles`` (what the
    object's metadata records) must agree with the object defining the kernel's AMX
    request function (:func:`amx_request_ir`), else BackendError; where it does, the
    kernel asks for the tile state before its first run."""
    import llvmlite.binding as llvm

    from .threadpool import ENTRY_POINTS, load_threadpool
    from .vecmath import host_variants

    if any(name in ENTRY_POINTS for name in imports):
        load_threadpool()
    if any(name.startswith("_ZGV") for name in imports):
        host_variants()
    missing = [name for name in imports if not symbol_address(name)]
    if missing:
        raise BackendError(f"the object of {signature.name} calls {', '.join(missing)}, "
                           "which this process does not have; build the kernel again")
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target_machine(cpu))
    engine.add_object_file(llvm.ObjectFileRef.from_data(code))
    engine.finalize_object()
    address = engine.get_function_address(signature.name)
    if not address:
        engine.close()
        raise BackendError(f"the object has no function '{signature.name}'")
    defined = bool(engine.get_function_address(request_symbol(signature.name)))
    if amx_tiles is not defined:
        engine.close()
        raise BackendError(
            f"the metadata of kernel {signature.name}'s object says amx_tiles={amx_tiles!r} "
            f"but the object {'defines' if defined else 'does not define'} "
            f"{request_symbol(signature.name)} (edited, or from another build); "
            "build the kernel again")
    kernel = ObjectKernel(signature, engine, address)
    if defined:  # computed on AMX tiles: asks for them before the first run
        kernel.require_amx()
    return kernel
