"""The ``polyopt`` command line.

``polyopt demo`` builds matmul and conv2d, prints their loop nests and dependences,
runs them against NumPy and prints timings.  ``polyopt check`` checks a hand-written
schedule (see ``polyopt check --help`` and :mod:`polyopt.cli.check`).  ``polyopt opt
kernel.c`` optimizes a C kernel automatically (:mod:`polyopt.cli.opt`); ``polyopt run``
compiles and runs an ONNX model (:mod:`polyopt.cli.run`); ``polyopt lib build`` builds an
operator library, ``polyopt cache info|clear`` shows or empties the kernel cache
(:mod:`polyopt.cli.lib`).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import polyopt as po
from . import check as cli_check, lib as aot_cli, opt as cli_opt, run as cli_run
from .output import reader_gone


def _matmul(n: int):
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A = po.placeholder((M, K), name="A")
    B = po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    return C, [A, B, C], [a, b, np.empty((n, n), np.float32)], lambda: a @ b


def _conv2d(channels: int, size: int):
    """NCHW conv2d, 3x3, stride 1, zero padding 1 (as an if_then_else compute)."""
    data = po.placeholder((1, channels, size, size), name="data")
    weight = po.placeholder((channels, channels, 3, 3), name="weight")
    out = po.ops.conv2d_nchw(data, weight, padding=1)
    rng = np.random.default_rng(2)
    d = rng.standard_normal((1, channels, size, size), dtype=np.float32)
    w = rng.standard_normal((channels, channels, 3, 3), dtype=np.float32)

    def reference():
        p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
        windows = np.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(2, 3))
        return np.einsum("nchwyx,fcyx->nfhw", windows, w, optimize=True)

    return out, [data, weight, out], [d, w, np.empty((1, channels, size, size), np.float32)], \
        reference


def _median_time(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


DEMO_SIZES = (1, 4096)  # matmul sizes the demo takes (4096: three 64 MiB arrays)


def demo(args) -> int:
    low, high = DEMO_SIZES
    if not low <= args.size <= high:
        raise po.InvalidArgumentError(f"demo --size takes a matmul size from {low} to "
                                      f"{high}, got {args.size}")
    examples = [("matmul", _matmul(args.size)), ("conv2d", _conv2d(16, 32))]
    failures = 0
    for title, (output, tensors, arrays, reference) in examples:
        print(f"=== {title} ===")
        schedule = po.create_schedule(output)
        if title == "matmul":
            print("dependences:")
            print(po.deps(schedule), "\n")
        failures += _run(title, "default schedule", schedule, tensors, arrays, reference)
        if title == "matmul":
            _show_refusal(schedule, output)
            tuned = po.create_schedule(output)
            po.templates.matmul_template(tuned, output)
            print("a register-blocked, packed, parallel schedule (po.templates.matmul_template):")
            print(tuned.script(), "\n")
            failures += _run(title, "tiled schedule", tuned, tensors, arrays, reference,
                             show_source=False)
    return 1 if failures else 0


def _run(title, label, schedule, tensors, arrays, reference, *, show_source=True) -> int:
    """Build, check against NumPy and time one schedule; 1 if the numbers are wrong."""
    start = time.perf_counter()
    kernel = po.build(schedule, tensors)
    compile_time = time.perf_counter() - start
    if show_source:
        print(kernel.source)
    kernel(*arrays)
    ok = np.allclose(arrays[-1], reference(), rtol=1e-3, atol=1e-3)
    ours = _median_time(lambda: kernel(*arrays))
    theirs = _median_time(reference)
    print(f"{title}, {label}: matches NumPy: {'yes' if ok else 'NO'}; compile "
          f"{compile_time:.3f} s; run {ours * 1e3:.2f} ms vs NumPy {theirs * 1e3:.2f} ms\n")
    return 0 if ok else 1


def _show_refusal(schedule, output) -> None:
    """What polyopt says about an illegal request: the reduction loop made parallel."""
    try:
        schedule[output].parallel(output.op.reduce_axis[0])
    except po.IllegalScheduleError as err:
        print(f"refused, as it should be:\n  {err}\n")


def main(argv: list[str] | None = None) -> int:
    """Run one command; the exit status is the command's (2 for bad input).  A reader
    that stops reading (``polyopt demo | head -3``) ends the command quietly, as Unix
    tools end on a closed pipe: ``polyopt check`` still exits with its verdict, the
    other commands with 0."""
    try:
        return _main(argv)
    except BrokenPipeError:  # (argparse's --help or usage, or the error line)
        return reader_gone(0)


def _main(argv: list[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="polyopt", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser("demo", help="build, show and run matmul and conv2d")
    demo_parser.add_argument("--size", type=int, default=256, help="matmul size (default 256)")
    demo_parser.set_defaults(run=demo)
    cli_check.add_parser(commands)
    cli_opt.add_parser(commands)
    cli_run.add_parser(commands)
    aot_cli.add_parsers(commands)
    args = parser.parse_args(argv)
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
