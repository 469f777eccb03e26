"""polyopt tune: measure schedules of a kernel and keep the fastest (autotuning).

FILE is a C file (its function is tuned through the automatic scheduler's choices,
``po.tune.auto_task``), a Python file (a variable ``task`` holding a ``po.tune.Task``
is tuned as it is; otherwise the computation ``polyopt check`` would take: a schedule,
a ``@po.kernel`` or ``outputs = [...]``, through the automatic scheduler's choices), or
an ONNX model (``polyopt.graph.tune``).  Every trial goes to the records folder
``--db`` (one file per machine); running the same command again resumes, measuring no
point twice.  ``--dask ADDRESS`` measures on a Dask cluster.  A progress bar shows on
standard error when it is a terminal (``--progress``: always); the table at the end
gives the best time, the speedup over the untuned schedule, the trials and the points
the schedule check refused.

Examples:

    polyopt tune examples/gemm.c --trials 40 --db ~/tune-records
    polyopt tune kernel.py --trials 200 --tuner xgb --db records --sizes n=1024
"""

from __future__ import annotations

import math
import runpy
import sys
from pathlib import Path

from .help import help_text
from ..errors import InvalidArgumentError, MissingBackendError, PolyoptError

TUNERS = ("xgb", "random", "grid", "ga")


def add_parser(commands) -> None:
    parser = commands.add_parser("tune", help="measure schedules of a kernel, keep the best",
                                 **help_text(__doc__))
    parser.add_argument("file", help="a .c, .py or .onnx file")
    parser.add_argument("--trials", type=int, default=64, help="points to measure (64)")
    parser.add_argument("--db", required=True, metavar="FOLDER",
                        help="the records folder (made private: mode 0700)")
    parser.add_argument("--tuner", choices=TUNERS, default="xgb",
                        help="xgb (a learned model; the default), random, grid or ga")
    parser.add_argument("--dask", metavar="ADDRESS", help="a Dask scheduler to measure on")
    parser.add_argument("--function", help="the C function (default: the file's only one)")
    parser.add_argument("--name", help="the Python variable holding the computation")
    parser.add_argument("--sizes", help="values of symbolic sizes, e.g. n=1024,m=512")
    parser.add_argument("-D", dest="defines", action="append", default=[],
                        metavar="NAME[=VALUE]", help="a preprocessor definition (C files)")
    parser.add_argument("--target", default="llvm", help="the target (default: llvm)")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per trial, build included (30)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per trial (5)")
    parser.add_argument("--batch", type=int, default=8, help="points per round (8)")
    parser.add_argument("--progress", action="store_true",
                        help="show the progress bar even when standard error is no terminal")
    parser.set_defaults(run=run)


def _sizes(text: str | None) -> dict:
    sizes = {}
    for item in (text.split(",") if text else []):
        name, _, value = item.partition("=")
        try:
            sizes[name.strip()] = int(value)
        except ValueError:
            raise InvalidArgumentError(f"--sizes {item!r}: give NAME=INTEGER, e.g. n=1024") \
                from None
    return sizes


def _task(args, sizes: dict):
    from .. import tune
    path = Path(args.file)
    if not path.is_file():
        raise InvalidArgumentError(f"no such file: '{path}'")
    if path.suffix == ".c":
        from ..frontend.c import from_c
        kernel = from_c(str(path), args.function, defines=list(args.defines))
        return tune.auto_task(kernel, name=kernel.name if hasattr(kernel, "name") else
                              path.stem, target=args.target, sizes=sizes)
    if path.suffix == ".py":
        from .check import load_computation
        try:
            namespace = runpy.run_path(str(path), run_name="__polyopt_tune__")
        except PolyoptError:
            raise
        except BaseException as err:  # the user's code
            raise InvalidArgumentError(f"running '{path}' failed: {type(err).__name__}: "
                                       f"{err}") from None
        found = namespace.get(args.name or "task")
        if isinstance(found, tune.Task):
            return found
        computation = load_computation(path, args.name)
        return tune.auto_task(computation, name=args.name, target=args.target,
                              sizes=sizes)
    raise InvalidArgumentError(f"polyopt tune takes a .c, .py or .onnx file, got '{path}'")


def _runner(args):
    from .. import tune
    if args.dask:
        try:
            from ..tune.dask_runner import DaskRunner
        except ImportError as err:
            raise MissingBackendError(f"--dask needs polyopt's Dask runner and the dask "
                                      f"package (pip install 'polyopt[dask]'): {err}") from None
        return DaskRunner(args.dask, timeout=args.timeout, repeat=args.repeat)
    return tune.LocalRunner(timeout=args.timeout, repeat=args.repeat)


def _model(args) -> int:
    try:
        from ..graph import tune as graph_tune
    except ImportError:
        graph_tune = None
    if not callable(graph_tune):
        raise InvalidArgumentError("tuning a whole ONNX model (polyopt.graph.tune) is not "
                                   "available in this polyopt; tune its kernels one by one "
                                   "(polyopt tune kernel.py) meanwhile")
    from .. import tune
    result = graph_tune(args.file, budget=args.trials, db=tune.RecordsDB(args.db),
                        runner=_runner(args))
    print(result)
    return 0


class ProgressBar:
    """A callback drawing ``[#####.....] 12/40 best 1.23 ms`` on a stream."""

    def __init__(self, total: int, stream=sys.stderr):
        self.total, self.stream = max(total, 1), stream

    def __call__(self, tuner, inputs, results) -> None:
        done = min(tuner.trials, self.total)
        filled = int(30 * done / self.total)
        best = _time(tuner.best_cost)
        self.stream.write(f"\r[{'#' * filled}{'.' * (30 - filled)}] {done}/{self.total} "
                          f"best {best}  ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _time(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def run(args) -> int:
    from .. import tune
    from ..tune.tuners import TUNERS as TUNER_CLASSES
    if args.trials < 1 or args.repeat < 1 or args.batch < 1 or args.timeout <= 0:
        raise InvalidArgumentError("--trials, --repeat and --batch must be >= 1, --timeout > 0")
    if Path(args.file).suffix == ".onnx":
        return _model(args)
    task = _task(args, _sizes(args.sizes))
    db = tune.RecordsDB(args.db)
    runner = _runner(args)
    tuner = TUNER_CLASSES[args.tuner](task, batch_size=args.batch)
    callbacks = []
    bar = ProgressBar(args.trials) if args.progress or sys.stderr.isatty() else None
    if bar is not None:
        callbacks.append(bar)
    try:
        summary = tuner.tune(args.trials, runner, db=db, callbacks=callbacks)
    finally:
        if bar is not None:
            bar.close()
    speedup = f"{summary.speedup:.2f}x" if math.isfinite(summary.speedup) else "-"
    rows = [("kernel", "trials", "refused", "failed", "untuned", "best", "speedup"),
            (task.name, str(summary.trials), str(summary.refused), str(summary.failed),
             _time(summary.baseline_cost), _time(summary.best_cost), speedup)]
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if summary.best_config is not None:
        schedule, _ = task.instantiate(summary.best_config)
        print(f"best point: {summary.best_config.to_json()['knobs']}")
        print("best schedule:")
        print(schedule.script() or "  (the program's own order)")
    print(f"records: {db.path}")
    return 0
