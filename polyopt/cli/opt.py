"""``polyopt opt kernel.c``: optimize the scop of a C function automatically.

Prints the optimized loop nest and what the automatic scheduler chose; ``--emit c``
writes the file back as C with OpenMP pragmas (the scop replaced, as Pluto's polycc
does), ``--emit so`` compiles that C into a shared library with gcc, and ``--check``
runs the optimized kernel against gcc's build of the original on small sizes
(exit status 0 when every array matches, 1 otherwise, 2 for bad input -- a program whose
reference run traps, e.g. on a division by zero, is bad input).  The reference run is
made in a forked copy of polyopt: its crash is reported, it does not end polyopt (the
optimized builds run here: their thread pools, OpenMP's and polyopt's, do not survive a
fork; they run only after the reference ran to its end on the same inputs).

Examples:

    polyopt opt examples/gemm.c
    polyopt opt examples/gemm.c --emit c -o gemm.opt.c --tile-size 32
    polyopt opt examples/gemm.c --emit so -o gemm.so
    polyopt opt examples/gemm.c --check --sizes ni=9,nj=11,nk=13 -D NI=9 -D NJ=11 -D NK=13
    polyopt opt -I utilities linear-algebra/blas/gemm/gemm.c -D MINI_DATASET --emit c
"""

from __future__ import annotations

import os

import islpy as isl

import numpy as np

from .help import help_text
from ..emit_c import replace_scop, scop_c
from ..errors import BackendError, FrontendError, InvalidArgumentError, UserProgramCrashError
from ..frontend.c import from_c
from ..frontend.c_native import (DEFAULT_FLAGS, NativeFunction, arguments, call_polyopt,
                                 compile_c, run_apart, signal_cause)
from ..frontend.c_preprocess import CPPOptions
from ..build import build
from ..lower import lower
from ..target.linker import write_atomically
from ..te.evaluate import evaluate
from ..schedules.auto import auto_schedule
from ..transform.schedule import create_schedule

HELP = "optimize the #pragma scop region of a C function automatically"
_SMALL_SIZES = (7, 13, 5, 11, 9)


def add_parser(commands) -> None:
    """Add the ``opt`` subcommand to the ``polyopt`` parser's ``commands``."""
    parser = commands.add_parser("opt", help=HELP, **help_text(__doc__))
    parser.add_argument("file", help="C file with the kernel")
    parser.add_argument("--function", help="the function to optimize (default: the one "
                                           "with #pragma scop)")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME[=VALUE]", help="define a macro, as a C compiler does "
                                                     "(repeatable)")
    parser.add_argument("-U", dest="undefines", action="append", default=[], metavar="NAME",
                        help="undefine a macro (repeatable)")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[],
                        metavar="DIR", help="a folder searched for headers, for <...> and "
                                            "\"...\" includes (repeatable)")
    parser.add_argument("-include", dest="includes", action="append", default=[],
                        metavar="FILE", help="include FILE first (repeatable)")
    parser.add_argument("--emit", choices=("loops", "c", "so"), default="loops",
                        help="loops: print the loop nest (default); c: C with OpenMP; "
                             "so: a shared library built with gcc")
    parser.add_argument("-o", "--output", help="where --emit c/so writes (default: stdout "
                                               "for c, FILE.so for so)")
    parser.add_argument("--check", action="store_true",
                        help="run the optimized kernel against the original on small sizes")
    parser.add_argument("--sizes", help="sizes for --check, e.g. n=9,m=13 (default: small "
                                        "ones that keep every access inside its array)")
    parser.add_argument("--tile-size", type=int, help="tile size (default: cache model)")
    parser.add_argument("--fusion", choices=("max", "min", "smart"), default="max")
    parser.add_argument("--no-parallel", action="store_true", help="no parallel loops")
    parser.add_argument("--default", action="store_true",
                        help="keep the source order (no automatic schedule)")
    parser.set_defaults(run=run)


def run(args) -> int:
    defines = _preprocessor(args)
    kernel = from_c(args.file, args.function, defines=list(args.defines),
                    include_dirs=list(args.include_dirs), undefines=list(args.undefines),
                    includes=list(args.includes))
    schedule = create_schedule(kernel)
    if not args.default:
        options = {"fusion": args.fusion, "parallel": not args.no_parallel}
        if args.tile_size:
            options["tile_sizes"] = args.tile_size
        schedule = auto_schedule(schedule, **options)
    original = _read(args.file)
    if args.emit == "loops":
        print(lower(schedule))
        if not args.default:
            print()
            print(schedule.auto_report)
            print("schedule:\n" + (schedule.script() or "(the source order)"))
    elif args.emit == "c":
        text = replace_scop(original, scop_c(schedule, indent=1))
        _write(args.output, text)
    else:
        text = replace_scop(original, scop_c(schedule, indent=1))
        target = args.output or os.path.splitext(args.file)[0] + ".so"
        library = compile_c(_with_defines(text, defines), _flags(defines), openmp=True)
        with open(library, "rb") as src:
            _write_bytes(target, src.read())
        print(f"wrote {target}")
    if args.check:
        return _check(kernel, schedule, original, defines, args)
    return 0


def _check(kernel, schedule, original: str, defines: CPPOptions, args) -> int:
    """Compare the optimized kernel (polyopt's build and, with --emit c/so, the emitted
    C) against gcc's build of the original, on small sizes."""
    given = _pairs(args.sizes.split(",") if args.sizes else [], "--sizes")
    sizes = _checked_sizes(kernel, given) if given else _small_sizes(kernel)
    reference = arguments(kernel, sizes)
    native = NativeFunction(compile_c(_with_defines(original, defines),
                                      ("-O1", *_flags(defines)[len(DEFAULT_FLAGS):])),
                            kernel.name, kernel.c_params)
    shown = ", ".join(f"{k}={v}" for k, v in sizes.items()) or "the file's sizes"
    killed = run_apart(native, reference)
    if killed is not None:
        raise UserProgramCrashError(
            f"--check: the reference run (gcc -O1's build of {args.file} as written, sizes "
            f"{shown}) was killed by {signal_cause(killed)}: undefined behaviour in the "
            "program on these inputs, not a result to compare (--check fills integer "
            "arrays with 0..7 and floating-point arrays with 0.5..1.5). Guard that "
            "operation in the C code, or check other sizes with --sizes")
    built = build(schedule)
    candidates = {"polyopt (LLVM)": lambda values: call_polyopt(kernel, built, values)}
    if args.emit in ("c", "so"):
        emitted = replace_scop(original, scop_c(schedule, indent=1))
        function = NativeFunction(compile_c(_with_defines(emitted, defines), _flags(defines),
                                            openmp=True),
                                  kernel.name, kernel.c_params)
        candidates["emitted C (gcc -fopenmp)"] = function
    failures = 0
    for label, call in candidates.items():  # (threads: not in a forked copy)
        values = arguments(kernel, sizes)
        call(values)
        worst = max((float(np.max(np.abs(values[p.name] - reference[p.name]),
                                  initial=0.0)) for p in kernel.c_params
                     if p.kind == "array"), default=0.0)
        same = all(np.allclose(values[p.name], reference[p.name], rtol=1e-10, atol=1e-10)
                   for p in kernel.c_params if p.kind == "array")
        failures += not same
        print(f"check {label} against gcc -O1 on the original ({shown}): "
              f"{'same numbers' if same else 'DIFFERENT'} (largest difference {worst:.3g})")
    return 1 if failures else 0


_MAX_CHECK_BYTES = 1 << 30  # --check allocates every array twice or thrice


def _checked_sizes(kernel, given: dict) -> dict:
    """``--sizes`` as integers, refused unless the kernel is valid for them (inside its
    arrays: C and polyopt would both write past them) and its arrays fit in memory."""
    sizes = {}
    for name, text in given.items():
        try:
            sizes[name] = int(text)
        except ValueError:
            raise InvalidArgumentError(f"--sizes {name}={text}: a size is an integer, e.g. "
                                       f"{name}=9") from None
        if not 0 <= sizes[name] < 2 ** 31:
            raise InvalidArgumentError(f"--sizes {name}={text}: a size is at least 0 and "
                                       "fits a C int")
    known = {p.name for p in kernel.c_params if p.kind == "size"}
    unknown = sorted(set(sizes) - known)
    if unknown:
        raise InvalidArgumentError(f"--sizes names {', '.join(unknown)}, which the kernel "
                                   f"has not; its sizes are {', '.join(sorted(known)) or 'none'}")
    context = kernel.program.context
    for position, param in enumerate(kernel.program.params):
        if param.name not in sizes:
            raise InvalidArgumentError(f"--sizes needs every size the loops use; give "
                                       f"{param.name}=...")
        context = context.fix_val(isl.dim_type.param, position,
                                  isl.Val(str(sizes[param.name])))
    if context.is_empty():
        raise InvalidArgumentError(
            f"the kernel is valid for {kernel.program.context} (every access inside its "
            f"arrays), not for --sizes {args_text(sizes)}; pick sizes in that range")
    for p in kernel.c_params:
        if p.kind == "size":
            sizes.setdefault(p.name, _SMALL_SIZES[0])
    by_name = {t.name: t for t in kernel.args}
    total = 0
    for p in kernel.c_params:
        if p.kind != "size":
            tensor = by_name[p.name]
            count = 1
            for extent in tensor.shape:
                count *= max(int(evaluate(extent, sizes)), 0)
            total += count * np.dtype(tensor.dtype).itemsize
    if total > _MAX_CHECK_BYTES:
        raise InvalidArgumentError(f"--sizes {args_text(sizes)} make arrays of {total} bytes; "
                                   "--check compares on small sizes (below 1 GiB of arrays)")
    return sizes


def args_text(sizes: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in sizes.items())


def _small_sizes(kernel) -> dict:
    """Small sizes inside the kernel's valid range, chosen one size at a time."""
    context = kernel.program.context
    names = [v.name for v in kernel.program.params]
    sizes = {}
    for position, name in enumerate(names):
        for value in _SMALL_SIZES[position % len(_SMALL_SIZES):] + _SMALL_SIZES + (3, 2, 1, 0):
            trial = context.fix_val(isl.dim_type.param, position, isl.Val(value))
            if not trial.is_empty():
                context, sizes[name] = trial, value
                break
        else:
            raise InvalidArgumentError("no small sizes fit the kernel's arrays; give them "
                                       "with --sizes n=...,m=...")
    for p in kernel.c_params:  # sizes the loops never use: any value
        if p.kind == "size":
            sizes.setdefault(p.name, _SMALL_SIZES[0])
    return sizes


def _pairs(items, flag: str) -> dict:
    result: dict = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise InvalidArgumentError(f"{flag} takes NAME=VALUE, got {item!r}")
        result[name.strip()] = value.strip()
    return result


def _preprocessor(args) -> CPPOptions:
    """-D, -U, -I and -include as checked preprocessor options (with the file's folder,
    where the compiler finds its quoted includes, as an include folder for gcc later)."""
    try:
        return CPPOptions.make(defines=list(args.defines), undefines=list(args.undefines),
                               include_dirs=[*args.include_dirs,
                                             os.path.dirname(os.path.abspath(args.file))],
                               includes=list(args.includes))
    except FrontendError as err:
        text = str(err)
        for keyword, flag in (("undefines=", "-U"), ("include_dirs=", "-I"),
                              ("includes=", "-include"), ("defines=", "-D")):
            text = text.replace(keyword, flag)
        raise InvalidArgumentError(text) from None


def _flags(options: CPPOptions) -> tuple:
    """gcc's flags for C text of the file compiled elsewhere: its include folders."""
    return (*DEFAULT_FLAGS, *[f"-I{os.path.abspath(d)}" for d in options.include_dirs])


def _with_defines(text: str, options: CPPOptions) -> str:
    return options.macro_lines() + text


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError as err:
        raise InvalidArgumentError(f"cannot read {path}: {err}") from err


def _write(path: str | None, text: str) -> None:
    if path is None:
        print(text, end="")
        return
    _write_bytes(path, text.encode("utf-8"))
    print(f"wrote {path}")


def _write_bytes(path: str, data: bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file beside it, then renamed)."""
    if os.path.isdir(path):
        raise InvalidArgumentError(f"-o {path} is a folder; give a file name, e.g. "
                                   f"-o {os.path.join(path, 'kernel.opt.c')}")
    try:
        write_atomically(path, data)
    except BackendError as err:
        raise InvalidArgumentError(f"-o {path}: {err}; give a file in a folder you can "
                                   "write") from None


__all__ = ["add_parser", "run"]
