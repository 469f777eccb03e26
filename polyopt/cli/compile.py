"""polyopt compile: compile an ONNX model into a C library (no Python at run time).

Writes OUT/libNAME.so, OUT/libNAME.a, OUT/NAME.h (the C API), OUT/NAME.weights and
OUT/manifest.json (see docs/deploy.md).  --shape fixes a symbolic input's shape;
--threads N builds the kernels for N threads (0: chosen at run time, NAME_set_threads);
--target compiles for a named CPU (the library refuses to load on a CPU lacking its
features); --embed-weights puts the weights inside the library.

Examples:

    polyopt compile model.onnx -o deploy/ --name resnet
    polyopt compile model.onnx -o deploy/ --shape input=1,3,224,224 --threads 2
    polyopt compile model.onnx -o deploy/ --target "llvm -mcpu=znver4"
"""

from __future__ import annotations

import sys
import time

from .help import help_text
from ..errors import InvalidArgumentError


def add_parser(commands) -> None:
    parser = commands.add_parser("compile", help="compile an ONNX model into a C library",
                                 **help_text(__doc__))
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("-o", "--out", required=True, help="output folder")
    parser.add_argument("--name", default="model", help="library name (default: model)")
    parser.add_argument("--shape", action="append", default=[], metavar="NAME=D,D,...",
                        help="an input's shape (repeat for several inputs)")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads the kernels are built for (0: chosen at run time)")
    parser.add_argument("--target", default="llvm",
                        help="'llvm' (this CPU) or 'llvm -mcpu=NAME [-mattr=+f,-g]'")
    parser.add_argument("--embed-weights", action="store_true",
                        help="put the weights inside the library (no NAME.weights file)")
    parser.set_defaults(run=run)


def parse_shapes(items: list[str]) -> dict[str, tuple[int, ...]]:
    """``["x=1,3,8,8"]`` -> ``{"x": (1, 3, 8, 8)}``."""
    shapes = {}
    for item in items:
        name, sep, dims = item.partition("=")
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
        except ValueError:
            shape = None
        if not sep or not name or shape is None or any(d < 1 for d in shape):
            raise InvalidArgumentError(f"--shape takes NAME=D,D,... with sizes >= 1 "
                                       f"(input=1,3,224,224), got {item!r}")
        shapes[name] = shape
    return shapes


def run(args) -> int:
    from .. import graph

    if args.threads < 0:
        raise InvalidArgumentError(f"--threads must be >= 0, got {args.threads}")
    g = graph.from_onnx(args.model, shapes=parse_shapes(args.shape) or None)
    started = time.perf_counter()
    model = graph.compile(g, target=args.target, num_threads=args.threads,
                          progress=sys.stderr.isatty())
    manifest = model.export_library(args.out, name=args.name, source=args.model,
                                    weights="embedded" if args.embed_weights else "file")
    kernels = len(manifest["plan"]["kernels"])
    print(f"compiled {len(g.nodes)} operators into {kernels} kernels for {manifest['cpu']} "
          f"in {time.perf_counter() - started:.1f} s; wrote {args.out}: lib{args.name}.so, "
          f"lib{args.name}.a, {args.name}.h, "
          f"{'' if args.embed_weights else args.name + '.weights, '}manifest.json "
          f"(link with {' '.join(manifest['link'])})")
    return 0
