"""Benchmark process environment: OpenBLAS's own kernel, pinned thread counts; and what
the benchmarks share: the median timers and the writing of their results.

This machine's environment sets ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``, which
slow OpenBLAS a lot; a benchmark restarts itself without them (before NumPy is
imported) and with the thread counts pinned.  Tests and CI keep the environment as is.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import statistics
import sys
import time

SLOW_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PINNED_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MARKER = "POLYOPT_BENCH_CLEAN_ENV"
RESULTS = pathlib.Path(__file__).resolve().parent / "results"


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


def alternating_medians(calls, repeat: int, rounds: int = 5) -> list[float]:
    """The median time of each call, measured in ``rounds`` alternating blocks of
    ``repeat`` calls (both sides see the same load).  Each block starts after a pause:
    OpenBLAS's idle threads spin for tens of milliseconds after a call and would keep a
    core from the other side's threads."""
    times = [[] for _ in calls]
    for _ in range(rounds):
        for call, spent in zip(calls, times):
            time.sleep(0.3)
            call()
            for _ in range(repeat):
                start = time.perf_counter()
                call()
                spent.append(time.perf_counter() - start)
    return [statistics.median(t) for t in times]


def repetitions(call, least: int, block_seconds: float = 0.02, most: int = 1000) -> int:
    """How many calls of ``call()`` make a block of at least ``block_seconds`` (at least
    ``least``, at most ``most``): a 0.1 ms kernel timed in blocks of 5 calls after a
    pause measured mostly the waking of idle threads (its 2-thread median was 16 ms, a
    time slice of the process that held the other core, on both sides)."""
    call()
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-7)
    return max(least, min(most, int(block_seconds / once) + 1))


def write_results(name: str, text: str, data) -> None:
    """``results/<name>.md`` (the report) and ``results/<name>.json`` (``data``)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text(text)
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n")
