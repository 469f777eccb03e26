"""polyopt demo: build matmul and conv2d, show their loop nests and dependences, check
the numbers against NumPy and time both sides on the same number of threads.

The CPU is named (polyopt's machine model) and so are the threads of each side: polyopt's
parallel loops run on --threads threads, and NumPy's BLAS is limited to as many
(threadpoolctl when it is installed; otherwise the BLAS's thread variables are set and,
from the `polyopt` command, the process restarts with them, since BLAS reads them when
NumPy is imported). Each step that takes time says what it is doing first.

Example:

    polyopt demo --size 512 --threads 1
"""

from __future__ import annotations

import contextlib
import os
import sys
import time

import numpy as np

import polyopt as po
from .help import help_text
from ..errors import InvalidArgumentError

DEMO_SIZES = (1, 4096)  # matmul sizes the demo takes (4096: three 64 MiB arrays)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_RESTARTED = "POLYOPT_DEMO_THREADS_SET"
TIMING_SECONDS = 2.0  # the timed runs of one side stop after this long (at least one)


def add_parser(commands) -> None:
    """Add ``demo`` to the ``polyopt`` parser's ``commands``."""
    parser = commands.add_parser("demo", help="build, show and run matmul and conv2d",
                                 **help_text(__doc__))
    parser.add_argument("--size", type=int, default=256,
                        help=f"matmul size, {DEMO_SIZES[0]} to {DEMO_SIZES[1]} (default 256)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of each side, polyopt's and NumPy's "
                             "(default: the CPUs this process may use)")
    parser.set_defaults(run=demo)


def available_cpus() -> int:
    """The CPUs this process may run on.

    >>> available_cpus() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def numpy_threads_limited(threads: int):
    """A context in which NumPy's BLAS uses ``threads`` threads, and what it says about
    them: ``(context, note)``.  With threadpoolctl the limit is exact; without it, the
    BLAS thread variables must have been set before NumPy was imported (see
    :func:`restart_with_blas_threads`), and the note says whether they were."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        pinned = all(os.environ.get(v) == str(threads) for v in BLAS_THREAD_VARIABLES)
        note = ("set by OPENBLAS_NUM_THREADS/OMP_NUM_THREADS" if pinned else
                "NOT limited: set OPENBLAS_NUM_THREADS, or pip install threadpoolctl")
        return contextlib.nullcontext(), note
    return threadpool_limits(limits=threads), "limited by threadpoolctl"


def restart_with_blas_threads(argv: list[str]) -> None:
    """Without threadpoolctl, run ``polyopt demo`` again with the BLAS thread variables
    set to its thread count (BLAS reads them when NumPy is imported); a no-op when they
    are set already or threadpoolctl is installed.  Only for the ``polyopt`` command
    itself (``argv`` from the command line), never from a caller's process."""
    import importlib.util

    if importlib.util.find_spec("threadpoolctl") is not None or os.environ.get(_RESTARTED):
        return
    threads = _threads_argument(argv)
    if threads is None:
        return
    if all(os.environ.get(v) == str(threads) for v in BLAS_THREAD_VARIABLES):
        return
    env = dict(os.environ, **{v: str(threads) for v in BLAS_THREAD_VARIABLES})
    env[_RESTARTED] = "1"
    sys.stdout.flush()
    try:
        os.execve(sys.executable, [sys.executable, "-m", "polyopt.cli", *argv], env)
    except OSError:
        return  # (the demo then says that NumPy's threads are not limited)


def _threads_argument(argv: list[str]) -> int | None:
    if not argv or argv[0] != "demo":
        return None
    threads = available_cpus()
    for k, word in enumerate(argv):
        value = None
        if word == "--threads" and k + 1 < len(argv):
            value = argv[k + 1]
        elif word.startswith("--threads="):
            value = word.split("=", 1)[1]
        if value is not None:
            try:
                threads = int(value)
            except ValueError:
                return None  # argparse says what is wrong
    return threads if threads >= 1 else None


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


def median_time(fn, repeat: int = 5, budget: float = TIMING_SECONDS) -> tuple[float, int]:
    """The median of up to ``repeat`` timed calls of ``fn``, stopping once ``budget``
    seconds are spent (at least one call): ``(seconds, calls)``.

    >>> seconds, calls = median_time(lambda: None, repeat=3)
    >>> calls, seconds >= 0
    (3, True)
    """
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < repeat and (not times or time.perf_counter() - started < budget):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)), len(times)


def _step(text: str) -> None:
    """Say what the next (possibly long) step does, before it starts."""
    print(f"  ... {text}", flush=True)


def demo(args) -> int:
    low, high = DEMO_SIZES
    if not low <= args.size <= high:
        raise InvalidArgumentError(f"demo --size takes a matmul size from {low} to "
                                   f"{high}, got {args.size}")
    threads = available_cpus() if args.threads is None else args.threads
    if threads < 1:
        raise InvalidArgumentError(f"demo --threads takes a number of threads of 1 or more, "
                                   f"got {threads}")
    limit, note = numpy_threads_limited(threads)
    print(f"CPU: {po.TargetInfo.host().describe()}")
    print(f"threads: polyopt {threads} (its parallel loops; the default schedules have "
          f"none), NumPy {threads} ({note})\n")
    examples = [("matmul", lambda: _matmul(args.size)), ("conv2d", lambda: _conv2d(16, 32))]
    failures = 0
    with limit:
        for title, make in examples:
            print(f"=== {title} ===", flush=True)
            output, tensors, arrays, reference = make()
            schedule = po.create_schedule(output)
            if title == "matmul":
                print("dependences:")
                print(po.deps(schedule), "\n")
            failures += _run(title, "default schedule", schedule, tensors, arrays, reference,
                             threads=threads)
            if title == "matmul":
                _show_refusal(schedule, output)
                tuned = po.create_schedule(output)
                po.templates.matmul_template(tuned, output)
                print("a register-blocked, packed, parallel schedule "
                      "(po.templates.matmul_template):")
                print(tuned.script(), "\n")
                failures += _run(title, "tiled schedule", tuned, tensors, arrays, reference,
                                 threads=threads, show_source=False)
    return 1 if failures else 0


def _run(title, label, schedule, tensors, arrays, reference, *, threads: int,
         show_source=True) -> int:
    """Build, check against NumPy and time one schedule; 1 if the numbers are wrong."""
    _step(f"compiling the {label}")
    start = time.perf_counter()
    kernel = po.build(schedule, tensors, num_threads=threads)
    compile_time = time.perf_counter() - start
    if show_source:
        print(kernel.source)
    _step("running it once and comparing with NumPy")
    start = time.perf_counter()
    kernel(*arrays)
    first = time.perf_counter() - start
    ok = np.allclose(arrays[-1], reference(), rtol=1e-3, atol=1e-3)
    if first > TIMING_SECONDS:  # a slow kernel: that run is the measurement
        ours, our_runs = first, 1
        _step(f"that run took {first:.1f} s; timing NumPy")
    else:
        _step(f"timing polyopt and NumPy (up to 5 runs or {TIMING_SECONDS:.0f} s each)")
        ours, our_runs = median_time(lambda: kernel(*arrays))
    theirs, their_runs = median_time(reference)
    print(f"{title}, {label}: matches NumPy: {'yes' if ok else 'NO'}; compile "
          f"{compile_time:.3f} s; run {ours * 1e3:.2f} ms (median of {our_runs}) vs NumPy "
          f"{theirs * 1e3:.2f} ms (median of {their_runs}), {threads} thread(s) each\n",
          flush=True)
    return 0 if ok else 1


def _show_refusal(schedule, output) -> None:
    """What polyopt says about an illegal request: the reduction loop made parallel."""
    try:
        schedule[output].parallel(output.op.reduce_axis[0])
    except po.IllegalScheduleError as err:
        print(f"refused, as it should be:\n  {err}\n")
