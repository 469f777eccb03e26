"""Benchmark process environment: OpenBLAS's own kernel, pinned thread counts; and what
the benchmarks share: the median timers and the writing of their results.

This machine's environment sets ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``, which
slow OpenBLAS a lot; a benchmark restarts itself without them (before NumPy is
imported) and with the thread counts pinned.  Tests and CI keep the environment as is.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import statistics
import sys
import time

SLOW_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PINNED_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MARKER = "POLYOPT_BENCH_CLEAN_ENV"
RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The CPU's model name and how many CPUs this process sees (figures from different
    machines do not compare: the machine kind changes between runs).

    >>> "CPUs visible" in cpu_model() or cpu_model() != ""
    True
    """
    import platform

    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} CPUs visible)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def require_threadpoolctl(script: str) -> None:
    if importlib.util.find_spec("threadpoolctl") is None:
        sys.exit(f"{script} needs the package 'threadpoolctl' to report the OpenBLAS "
                 "kernel NumPy uses; install it with `pip install threadpoolctl` "
                 "(or `pip install -e '.[bench]'`).")


def restart_with_clean_environment(threads: int) -> None:
    """Restart this script without the OpenBLAS slow-down variables, ``threads`` pinned."""
    env = dict(os.environ)
    dirty = any(v in env for v in SLOW_OPENBLAS_VARS)
    unpinned = any(env.get(v) != str(threads) for v in PINNED_VARS)
    if not (dirty or unpinned) or env.get(_MARKER):
        return
    for name in SLOW_OPENBLAS_VARS:
        env.pop(name, None)
    for name in PINNED_VARS:
        env[name] = str(threads)
    env[_MARKER] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def median_seconds(call, repeat: int) -> float:
    """The median time of ``repeat`` calls of ``call()``, after one untimed call."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


MIN_BLOCK_SECONDS = 0.05  # a timed block at least this long (see alternating_samples)
WARM_UP_SECONDS = 0.01


def alternating_samples(calls, repeat: int, rounds: int = 5) -> list[list[float]]:
    """The times of each call, measured in ``rounds`` alternating blocks (both sides
    see the same load).  Each block starts after a pause: OpenBLAS's idle threads spin
    for tens of milliseconds after a call and would keep a core from the other side's
    threads.  After the pause the call runs untimed for ``WARM_UP_SECONDS``, then a
    block times ``repeat`` calls, or more to last ``MIN_BLOCK_SECONDS``: an idle core
    takes milliseconds to reach its full clock, longer than five calls of a 0.1 ms
    kernel, which then measured a different clock in every block."""
    times = [[] for _ in calls]
    for _ in range(rounds):
        for call, spent in zip(calls, times):
            time.sleep(0.3)
            last = _warm_up(call)
            for _ in range(max(repeat, math.ceil(MIN_BLOCK_SECONDS / max(last, 1e-9)))):
                start = time.perf_counter()
                call()
                spent.append(time.perf_counter() - start)
    return times


def alternating_medians(calls, repeat: int, rounds: int = 5) -> list[float]:
    """The median time of each call (see :func:`alternating_samples`)."""
    return [statistics.median(t) for t in alternating_samples(calls, repeat, rounds)]


def _warm_up(call) -> float:
    """Call ``call`` for ``WARM_UP_SECONDS`` (at least once); the last call's time."""
    begin = time.perf_counter()
    while True:
        start = time.perf_counter()
        call()
        end = time.perf_counter()
        if end - begin >= WARM_UP_SECONDS:
            return end - start


def write_results(name: str, text: str, data) -> None:
    """``results/<name>.md`` (the report) and ``results/<name>.json`` (``data``)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text(text)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
