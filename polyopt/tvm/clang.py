"""``tvm.contrib.clang.create_llvm``: C or C++ source compiled to LLVM IR text by clang,
for ``s[C].pragma(axis, "import_llvm", ll_code)`` (TVM's tensorize tutorial).

Sources are compiled as C++ (write ``extern "C"`` to keep a function's name), at ``-O2``
unless ``options`` give another ``-O`` level (TVM's function passes clang's default,
``-O0``, whose ``optnone`` functions LLVM cannot inline).  Any clang works: IR from an
older clang (for example Debian 12's clang 14, typed pointers) is upgraded when
polyopt's LLVM parses it.

>>> ll_code = create_llvm('extern "C" int twice(int x) { return 2 * x; }')
>>> "define" in ll_code and "@twice(" in ll_code
True
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from ..errors import BackendError, InvalidArgumentError, MissingBackendError

_SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".C")
_NAMES = ("clang++", "clang")


def find_clang(required: bool = True) -> list[str]:
    """The clang executables on the PATH (``clang++``, ``clang``, then versioned names
    such as ``clang-14``), newest version first among the versioned ones."""
    found = [shutil.which(name) for name in _NAMES]
    versioned = set()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        versioned.update(os.path.join(folder, n) for n in names
                         if re.fullmatch(r"clang(\+\+)?-\d+", n))
    ordered = sorted(versioned, key=lambda p: -int(p.rsplit("-", 1)[1]))
    found = [p for p in found if p] + ordered
    if required and not found:
        raise MissingBackendError("clang was not found on the PATH; install it (Debian or "
                                  "Ubuntu: apt-get install clang) or pass cc='/path/to/clang'")
    return found


def create_llvm(inputs, output: str | None = None, options=None, cc: str | None = None) -> str:
    """LLVM IR text of ``inputs`` (source code, a path to a source file, or a list of
    them) compiled by clang as C++; written to ``output`` too when given.  A source that
    does not compile raises :class:`BackendError` with clang's message."""
    sources = [inputs] if isinstance(inputs, str) else inputs
    if not isinstance(sources, (list, tuple)) or not sources or \
            not all(isinstance(s, str) for s in sources):
        raise InvalidArgumentError(f"create_llvm takes source code or a path (a str), or a "
                                   f"list of them; got {inputs!r}")
    options = list(options or [])
    if not all(isinstance(o, str) for o in options):
        raise InvalidArgumentError(f"create_llvm's options are strings, got {options!r}")
    if not any(o.startswith("-O") for o in options):
        options.append("-O2")
    compiler = cc or find_clang()[0]
    with tempfile.TemporaryDirectory(prefix="polyopt-clang-") as folder:
        files = []
        for number, source in enumerate(sources):
            if source.endswith(_SOURCE_SUFFIXES) and "\n" not in source and \
                    os.path.isfile(source):
                files.append(source)
                continue
            path = os.path.join(folder, f"input{number}.cc")
            with open(path, "w") as handle:
                handle.write(source)
            files.append(path)
        target = output or os.path.join(folder, "output.ll")
        command = [compiler, "-S", "-emit-llvm", *options, "-o", target, *files]
        try:
            subprocess.run(command, check=True, capture_output=True, text=True)
        except FileNotFoundError:
            raise MissingBackendError(f"clang was not found at '{compiler}'; install it "
                                      "(Debian or Ubuntu: apt-get install clang) or pass "
                                      "cc='/path/to/clang'") from None
        except subprocess.CalledProcessError as err:
            raise BackendError(f"clang could not compile the source to LLVM IR "
                               f"({' '.join(command[:-len(files)])} ...):\n{err.stderr}") \
                from None
        with open(target) as handle:
            return handle.read()
