"""``polyopt lib build`` and ``polyopt cache info|clear``.

``polyopt lib build SPEC.py -o OUT/ [-j N] [--dask local | --dask tcp://HOST:PORT]
[--target CPU] [--name NAME]`` builds a library (see :mod:`.library`); the exit status is
0 when every variant built, 1 when some failed (the manifest lists them), 2 on errors.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

from ..errors import PolyoptWarning
from ..aot.cache import DiskCache
from ..aot.library import build_library


def add_parsers(commands) -> None:
    lib = commands.add_parser("lib", help="build operator libraries ahead of time")
    lib_commands = lib.add_subparsers(dest="lib_command", required=True)
    build = lib_commands.add_parser("build", help="build SPEC.py's kernels() into a library")
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
    build.add_argument("--quiet", action="store_true", help="no progress bar")
    build.set_defaults(run=_lib_build)
    cache = commands.add_parser("cache", help="the on-disk kernel cache ($POLYOPT_CACHE)")
    cache.add_argument("action", choices=["info", "clear"])
    cache.set_defaults(run=_cache)


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
                                     progress=not args.quiet)
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
