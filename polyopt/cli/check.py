"""``polyopt check FILE --schedule SCHEDULE``: is a hand-written schedule legal?

FILE is a Python file that defines the computation; polyopt runs it (with
``runpy.run_path``, ``__name__`` set to ``"__polyopt_check__"``) and takes, in this order:

1. the variable ``--name`` names, when given;
2. a variable ``schedule`` or ``s`` holding a ``po.Schedule`` (its current schedule is
   what ``--schedule`` replaces, its dependences those of the program as built);
3. the ``@po.kernel`` function it defines (if several, pick one with ``--name``);
4. the tensors of a module-level list ``outputs = [...]``
   (checked as ``po.create_schedule(outputs)``).

SCHEDULE is the schedule itself, given inline as isl text in braces, or a file holding
an isl union map (``{ S0[t, i, j] -> [t, t + i, t + i + j] }``), an isl schedule tree, or
JSON (``.json``: ``{"statements": [{"name": "S0", "schedule": "{ S0[t, i, j] -> [...] }"}]}``);
without it, the computation's own schedule is checked.

The report goes to standard output.  Exit status: 0 legal, 1 illegal, 2 bad input.

Examples:

    polyopt check examples/seidel.py --schedule examples/wavefront.isl
    polyopt check examples/seidel.py --schedule '{ S0[t, i, j] -> [i, t, j] }'

>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "double.py").write_text('''
... import polyopt as po
... A = po.placeholder((8,), name="A")
... outputs = [po.compute((8,), lambda i: A[i] * 2, name="B")]
... ''') and None
>>> (folder / "reversed.isl").write_text("{ B[i] -> [7 - i] }") and None
>>> main([str(folder / "double.py"), "--schedule", str(folder / "reversed.isl")])
legal
loops:
  B: dimension 0 (-i + 7): parallel
0
"""

from __future__ import annotations

import argparse
import runpy
from pathlib import Path

from .help import help_text
from .output import reader_gone
from ..domain.program import Program
from ..errors import InvalidArgumentError, PolyoptError
from ..transform.handwritten import check
from ..transform.schedule import Schedule, create_schedule

HELP = "check a hand-written schedule against a computation's exact dependences"


def add_parser(commands) -> None:
    """Add the ``check`` subcommand to the ``polyopt`` parser's ``commands``."""
    parser = commands.add_parser("check", help=HELP, **help_text(__doc__))
    parser.add_argument("file", help="Python file that defines the computation")
    parser.add_argument("--schedule", help="the schedule: isl text in braces, or a file "
                                           "(isl map, isl schedule tree or .json)")
    parser.add_argument("--name", help="the variable of FILE holding the computation")
    parser.add_argument("--strict-fp", action="store_true",
                        help="reductions accumulate in their written order (by default a "
                             "sum may be reassociated, as the schedule primitives allow, "
                             "unless FILE's schedule was made with strict_fp=True)")
    parser.set_defaults(run=run)


def run(args) -> int:
    report = check(load_computation(Path(args.file), args.name),
                   args.schedule,  # text with braces is the schedule, else a file
                   strict_fp=True if args.strict_fp else None)
    verdict = 0 if report.legal else 1
    try:
        print(report)
    except BrokenPipeError:  # the reader stopped reading: the verdict stands
        return reader_gone(verdict)
    return verdict


def main(argv: list[str]) -> int:
    """``polyopt check`` on its own (errors raise instead of exiting with status 2)."""
    parser = argparse.ArgumentParser(prog="polyopt")
    add_parser(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(["check", *argv]))


def load_computation(path: Path, name: str | None = None):
    """The ``po.Schedule`` or kernel that the Python file ``path`` defines."""
    if not path.is_file():
        raise InvalidArgumentError(f"no such file: '{path}'")
    try:
        namespace = runpy.run_path(str(path), run_name="__polyopt_check__")
    except PolyoptError:
        raise
    except BaseException as err:  # the user's code: SyntaxError, SystemExit, ...
        raise InvalidArgumentError(f"running '{path}' failed: {type(err).__name__}: {err}") \
            from None
    if name is not None:
        if name not in namespace:
            raise InvalidArgumentError(f"'{path}' defines no variable '{name}'")
        return _computation(namespace[name], name, path)
    for candidate in ("schedule", "s"):
        if isinstance(namespace.get(candidate), Schedule):
            return namespace[candidate]
    kernels = [key for key, value in namespace.items()
               if not key.startswith("_") and isinstance(getattr(value, "program", None), Program)
               and not isinstance(value, Schedule)]
    if len(kernels) > 1:
        raise InvalidArgumentError(f"'{path}' defines several kernels ({', '.join(kernels)}); "
                                   "choose one with --name")
    if kernels:
        return namespace[kernels[0]]
    if "outputs" in namespace:
        return _computation(namespace["outputs"], "outputs", path)
    raise InvalidArgumentError(
        f"'{path}' defines no computation: define s = po.create_schedule(...), a @po.kernel "
        "function, or outputs = [tensor, ...] (see polyopt check --help)")


def _computation(value, name: str, path: Path):
    if isinstance(value, Schedule) or isinstance(getattr(value, "program", None), Program):
        return value
    try:
        return create_schedule(value)
    except PolyoptError as err:
        raise InvalidArgumentError(f"'{name}' in '{path}' is not a computation: {err}") \
            from None
