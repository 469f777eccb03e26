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

import json
import os
import tempfile

from ...errors import InvalidArgumentError
from ..linker import libraries_needed, link_shared, write_atomically
from .jit import CPU, object_code, parse


def object_for(optimized_ir: str, cpu: CPU) -> bytes:
    """The ELF object of an optimized IR module, for ``cpu``."""
    return object_code(parse(optimized_ir), cpu)


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
