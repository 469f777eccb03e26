"""polyopt: a polyhedral loop optimizer. One subcommand per job:

  demo    build matmul and conv2d, show their loops and dependences, time them vs NumPy
  check   check a hand-written schedule against a computation's exact dependences
  opt     optimize the #pragma scop region of a C function automatically
  run     compile an ONNX model and run it on .npy inputs
  compile compile an ONNX model into a C library (libNAME.so/.a, NAME.h)
  lib     build an operator library ahead of time (lib build)
  tune    measure schedules of a kernel and keep the fastest (autotuning)
  cache   show or empty the on-disk kernel cache (cache info, cache clear)

`polyopt COMMAND --help` says more about each.

Examples:

    polyopt demo --size 512
    polyopt check examples/seidel.py --schedule examples/wavefront.isl
    polyopt opt examples/gemm.c --emit c -o gemm.opt.c
    polyopt run model.onnx --input x.npy
    polyopt compile model.onnx -o deploy/ --name resnet
    polyopt lib build examples/ops_spec.py -o build/ops
    polyopt tune examples/gemm.c --trials 40 --db ~/tune-records

Exit status: 0 success (check: the schedule is legal; opt --check: every array
matches); 1 a negative answer or a partial failure (check: illegal; opt --check: a
mismatch; lib build: some variants failed, listed in the manifest); 2 bad input or an
error (the message says what to do); 130 interrupted. A reader that stops reading
(`polyopt demo | head`) ends the command quietly with its status so far.
"""

from __future__ import annotations

import argparse
import sys

import polyopt as po
from . import check as cli_check, compile as cli_compile, demo as cli_demo, lib as aot_cli, \
    opt as cli_opt, run as cli_run, tune as cli_tune
from .help import help_text, plain  # noqa: F401 (polyopt.cli.plain, help_text)
from .output import reader_gone

def version() -> str:
    """``polyopt X.Y.Z`` (with islpy's and llvmlite's versions where they are found)."""
    from importlib import metadata

    found = []
    for package in ("islpy", "llvmlite"):
        try:
            found.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            pass
    return f"polyopt {po.__version__}" + (f" ({', '.join(found)})" if found else "")


def parser() -> argparse.ArgumentParser:
    """The whole ``polyopt`` command line (the docs' CLI reference is generated from it)."""
    top = argparse.ArgumentParser(prog="polyopt", **help_text(__doc__))
    top.add_argument("--version", action="version", version=version())
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cli_demo.add_parser(commands)
    cli_check.add_parser(commands)
    cli_opt.add_parser(commands)
    cli_run.add_parser(commands)
    cli_compile.add_parser(commands)
    aot_cli.add_parsers(commands)
    cli_tune.add_parser(commands)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status is the command's (2 for bad input).  A reader
    that stops reading (``polyopt demo | head -3``) ends the command quietly, as Unix
    tools end on a closed pipe: ``polyopt check`` still exits with its verdict, the
    other commands with 0."""
    if argv is None:  # the `polyopt` command itself: NumPy's threads for the demo
        cli_demo.restart_with_blas_threads(sys.argv[1:])
    try:
        return _main(argv)
    except BrokenPipeError:  # (argparse's --help or usage, or the error line)
        return reader_gone(0)
    except KeyboardInterrupt:
        print("polyopt: interrupted", file=sys.stderr)
        return 130


def _main(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    gone: list[int] = []
    try:
        code = po.errors.public(_stopping_when_reader_gone(args.run, gone))(args)
    except po.PolyoptError as err:
        message = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
        print(f"polyopt: error: {message}", file=sys.stderr)
        return 2
    return reader_gone(gone[0]) if gone else code


def _stopping_when_reader_gone(run, gone: list[int]):
    """``run``, ending with status 0 (recorded in ``gone``) when its output's reader
    closed the pipe: that is no error of polyopt's, nor of the input."""
    def command(args) -> int:
        try:
            return run(args)
        except BrokenPipeError:
            gone.append(0)
            return 0
    command.__qualname__ = getattr(run, "__qualname__", "command")
    return command
