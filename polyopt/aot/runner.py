"""Run variant builds: in this process, on a local process pool, or on a Dask cluster.

Work goes out in batches (a few per worker and round, never one task per kernel), and
results and failures come back as each batch completes, each reported to ``progress``.

>>> batches(list(range(10)), workers=2)
[[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
from typing import Callable

from ..errors import InvalidArgumentError, MissingBackendError
from .worker import build_batch

BATCHES_PER_WORKER = 2  # enough to balance uneven kernels, few enough to start fast
MAX_BATCH = 32  # a batch is at most a few seconds: the last one does not leave a worker idle long


def batches(items: list, workers: int) -> list[list]:
    """``items`` dealt into about ``BATCHES_PER_WORKER`` batches per worker, each
    taking every n-th item: a spec lists its kernels one after another, and contiguous
    batches differed in cost from 1 to 43 s of CPU (1,000 variants)."""
    size = max(1, min(MAX_BATCH, -(-len(items) // max(1, workers * BATCHES_PER_WORKER))))
    count = -(-len(items) // size)
    return [items[i::count] for i in range(count)]


def run_builds(spec, names: list[str], target: str, cache_root: str | None, *,
               jobs: int = 1, dask: str | None = None,
               progress: Callable[[dict], None] = lambda result: None) -> list[dict]:
    """Build ``names`` (variants of ``spec``); every result, in completion order."""
    if not names:
        return []
    args = (spec.path, spec.text)
    if dask:
        return _on_dask(dask, jobs, args, names, target, cache_root, progress)
    if jobs <= 1:
        results = []
        for name in names:
            (result,) = build_batch(*args, [name], target, cache_root)
            progress(result)
            results.append(result)
        return results
    return _on_pool(jobs, args, names, target, cache_root, progress)


def _on_pool(jobs, args, names, target, cache_root, progress) -> list[dict]:
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    results = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = [pool.submit(build_batch, *args, batch, target, cache_root)
                   for batch in batches(names, jobs)]
        try:
            for future in concurrent.futures.as_completed(futures):
                for result in future.result():
                    progress(result)
                    results.append(result)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results


def _on_dask(address: str, jobs: int, args, names, target, cache_root, progress) -> list[dict]:
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError as err:
        raise MissingBackendError(
            "--dask needs Dask distributed, which is not installed; install it with: "
            "pip install 'dask[distributed]' (or pip install 'polyopt[dask]')") from err
    if address == "local":
        import dask
        # Dask's workers trim glibc's heap whenever 64 KiB are free at its top: isl and
        # LLVM allocate and free all the time, and builds ran 10% slower
        with dask.config.set({"distributed.nanny.pre-spawn-environ."
                              "MALLOC_TRIM_THRESHOLD_": None}):
            cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
        client = Client(cluster)
    elif address.startswith(("tcp://", "tls://", "ucx://")):
        cluster, client = None, Client(address)
    else:
        raise InvalidArgumentError(f"--dask takes 'local' or a scheduler address such as "
                                   f"tcp://host:8786, got {address!r}")
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})) or jobs)
        futures = [client.submit(build_batch, *args, batch, target, cache_root, pure=False)
                   for batch in batches(names, workers)]
        results = []
        for future in as_completed(futures):
            for result in future.result():
                progress(result)
                results.append(result)
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def progress_bar(total: int, enabled: bool = True):
    """A callback that advances a progress bar (tqdm when installed, else a line per
    tenth) and a function closing it."""
    counts = {"done": 0, "failed": 0, "cached": 0}
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    bar = tqdm(total=total, unit="kernel", disable=not enabled) if tqdm else None

    def advance(result: dict) -> None:
        counts["done"] += 1
        counts["failed"] += "error" in result
        counts["cached"] += bool(result.get("cached"))
        if bar is not None:
            bar.set_postfix(failed=counts["failed"], cached=counts["cached"], refresh=False)
            bar.update(1)
        elif enabled and (counts["done"] % max(1, total // 10) == 0 or counts["done"] == total):
            print(f"  {counts['done']}/{total} built ({counts['failed']} failed, "
                  f"{counts['cached']} from cache)", flush=True)

    def close() -> None:
        if bar is not None:
            bar.close()

    return advance, close
