"""polyopt lib build and polyopt cache info|clear.

polyopt lib build SPEC.py -o OUT/ builds the kernels that SPEC.py's kernels() yields,
every variant of each, into OUT/: libNAME.so, libNAME.a, NAME.h and manifest.json (see
polyopt.aot.library).  The exit status is 0 when every variant built, 1 when some failed
(the manifest lists them), 2 on errors.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

from .help import help_text
from ..errors import PolyoptWarning
from ..aot.cache import DiskCache
from ..aot.library import build_library


LIB_DOC = """Operator libraries built ahead of time: polyopt lib build SPEC.py -o OUT/
(see polyopt lib build --help).

Example:

    polyopt lib build examples/ops_spec.py -o build/ops
"""

BUILD_DOC = """Build SPEC.py's kernels() into a library in OUT/: libNAME.so, libNAME.a,
NAME.h (a C prototype per variant) and manifest.json (variants, content hashes, the
files' SHA-256).  Work runs on -j worker processes, or on a Dask cluster; kernels are
cached on disk ($POLYOPT_CACHE), so an interrupted build continues where it stopped and
a rebuild with nothing changed compiles nothing.  A progress bar shows when standard
error is a terminal.  Exit status: 0 every variant built, 1 some failed (listed in the
manifest; the rest is built), 2 bad input, 130 interrupted.

SPEC.py defines kernels(), yielding polyopt.aot.Kernel(name, build, variants):
build(**params) returns (schedule, arguments), variants is e.g.
grid(n=[64, 256], dtype=["float32", "float64"]); each variant is the C function
<name>_<params> (scale_n64_float32).

Examples:

    polyopt lib build examples/ops_spec.py -o build/ops
    polyopt lib build examples/ops_spec.py -o build/ops -j 8 --target znver4
    polyopt lib build examples/ops_spec.py -o build/ops --dask tcp://scheduler:8786
"""

CACHE_DOC = """The on-disk kernel cache: $POLYOPT_CACHE, else ~/.cache/polyopt (a folder of
mode 0700, used only when it is yours).  Operator libraries and compiled ONNX models keep
their kernels there by content hash.

Examples:

    polyopt cache info
    polyopt cache clear
"""


def add_parsers(commands) -> None:
    """Add ``lib build`` and ``cache info|clear`` to the ``polyopt`` parser's ``commands``."""
    lib = commands.add_parser("lib", help="build operator libraries ahead of time",
                              **help_text(LIB_DOC))
    lib_commands = lib.add_subparsers(dest="lib_command", required=True, metavar="COMMAND")
    build = lib_commands.add_parser("build", help="build SPEC.py's kernels() into a library",
                                    **help_text(BUILD_DOC))
    build.add_argument("spec", help="a Python file defining kernels()")
    build.add_argument("-o", "--out", required=True, help="output folder")
    build.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                       help="worker processes (default: the CPU count)")
    build.add_argument("--dask", metavar="local|tcp://HOST:PORT",
                       help="build on a Dask cluster: 'local' starts a LocalCluster of -j "
                            "workers")
    build.add_argument("--target", metavar="CPU",
                       help="the LLVM CPU to compile for, e.g. znver4 (default: this CPU); "
                            "or a full target such as 'llvm -mcpu=znver4 -mattr=+avx2'")
    build.add_argument("--name", help="library name (default: the spec file's name)")
    build.add_argument("--quiet", action="store_true",
                       help="no progress bar (there is none when standard error is not a "
                            "terminal)")
    build.set_defaults(run=_lib_build)
    cache = commands.add_parser("cache", help="show or empty the on-disk kernel cache "
                                              "($POLYOPT_CACHE)", **help_text(CACHE_DOC))
    actions = cache.add_subparsers(dest="action", required=True, metavar="COMMAND")
    info = actions.add_parser("info", help="where the cache is, its kernels and bytes",
                              **help_text("Print where the kernel cache is, how many kernels "
                                          "it holds and their size.\n\nExample:\n\n"
                                          "    POLYOPT_CACHE=/tmp/k polyopt cache info\n"))
    info.set_defaults(run=_cache)
    clear = actions.add_parser("clear", help="remove every kernel from the cache",
                               **help_text("Remove every kernel from the kernel cache. Run "
                                           "it after changing a module that a\nlibrary "
                                           "spec imports: the cache's index sees the spec "
                                           "file's own text only.\n\nExample:\n\n"
                                           "    polyopt cache clear\n"))
    clear.set_defaults(run=_cache)


def _target(text: str | None) -> str:
    if not text:
        return "llvm"
    return text if text.startswith("llvm") else f"llvm -mcpu={text}"


def _lib_build(args) -> int:
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():  # printed below, once each
            warnings.simplefilter("ignore", PolyoptWarning)
            manifest = build_library(args.spec, args.out, name=args.name, jobs=args.jobs,
                                     dask=args.dask, target=_target(args.target),
                                     progress=not args.quiet and sys.stderr.isatty())
    except KeyboardInterrupt:
        print("interrupted: the kernels built so far are cached; run the same command "
              "again to continue", file=sys.stderr)
        return 130
    built = sum(len(k["variants"]) for k in manifest["kernels"])
    failures = manifest["failures"]
    print(f"{manifest['library']}: {built} variant(s) in {args.out} "
          f"({manifest['cache_hits']} from the cache) in {time.perf_counter() - start:.1f} s")
    for problem in manifest.get("warnings", ()):
        print(f"warning: {problem}", file=sys.stderr)
    for failure in failures:
        print(f"FAILED {failure['name']}: {failure['error']}")
    return 1 if failures else 0


def _cache(args) -> int:
    cache = DiskCache()
    if args.action == "clear":
        print(f"removed {cache.clear()} kernel(s) from {cache.root}")
    else:
        info = cache.info()
        print(f"{info['path']}: {info['kernels']} kernel(s), {info['bytes'] / 1e6:.1f} MB")
    return 0
