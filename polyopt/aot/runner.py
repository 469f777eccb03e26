"""Run variant builds: in this process, on a local process pool, or on a Dask cluster.

Work goes out in batches (a few per worker and round, never one task per kernel), and
results and failures come back as each batch completes, each reported to ``progress``.
A worker process that dies (killed by the OOM killer, crashed by a build function)
fails only the variant it was building: the batches it took down are built again, each
variant in a process of its own.

>>> batches(list(range(10)), workers=2)
[[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import multiprocessing.connection
import os
import signal
from concurrent.futures.process import BrokenProcessPool
from typing import Callable

from ..errors import BackendError, InvalidArgumentError, MissingBackendError
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
    """Batches on a process pool; the batches of a pool that broke (a worker killed by
    the OOM killer, or crashed by a build function) are built again one variant per
    process (:func:`_isolated`), so that only the variant that kills its process fails."""
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    results, lost = [], []

    def report(batch_results):
        for result in batch_results:
            progress(result)
            results.append(result)

    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context) as pool:
        futures = {pool.submit(build_batch, *args, batch, target, cache_root): batch
                   for batch in batches(names, jobs)}
        try:
            for future in concurrent.futures.as_completed(futures):
                try:
                    batch_results = future.result()
                except BrokenProcessPool:
                    lost.extend(futures[future])
                    continue
                except Exception as err:  # the batch itself failed (not one variant)
                    batch_results = [_failure(name, f"{type(err).__name__}: {err}")
                                     for name in futures[future]]
                report(batch_results)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    if lost:
        report(_isolated(context, jobs, args, lost, target, cache_root))
    return results


def _failure(name: str, error: str) -> dict:
    return {"name": name, "error": error}


def _isolated(context, jobs: int, args, names: list[str], target, cache_root):
    """Build each of ``names`` in a process of its own, ``jobs`` at a time; a process
    that dies fails its variant only."""
    pending, running = list(names), {}
    while pending or running:
        while pending and len(running) < jobs:
            name = pending.pop(0)
            receive, send = context.Pipe(duplex=False)
            process = context.Process(target=_build_into, daemon=True,
                                      args=(send, *args, [name], target, cache_root))
            process.start()
            send.close()
            running[receive] = (process, name)
        for receive in multiprocessing.connection.wait(list(running)):
            process, name = running.pop(receive)
            try:
                batch_results = receive.recv()
            except (EOFError, OSError):  # died before sending its result
                batch_results = None
            receive.close()
            process.join()
            if batch_results is None:
                yield _failure(name, f"the process building it died ({_exit_text(process)}): "
                                     "out of memory, or the build function crashed it; the "
                                     "other variants were built")
            else:
                yield from batch_results


def _build_into(connection, *args) -> None:
    connection.send(build_batch(*args))
    connection.close()


def _exit_text(process) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


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
        cluster = None
        try:
            client = Client(address)
        except (OSError, TimeoutError) as err:
            raise BackendError(f"cannot reach the Dask scheduler at {address} ({err}); start "
                               "one (dask scheduler), or build with --dask local or -j N") \
                from err
    else:
        raise InvalidArgumentError(f"--dask takes 'local' or a scheduler address such as "
                                   f"tcp://host:8786, got {address!r}")
    try:
        workers = max(1, len(client.scheduler_info().get("workers", {})) or jobs)
        futures = [client.submit(build_batch, *args, batch, target, cache_root, pure=False)
                   for batch in batches(names, workers)]
        batch_of = {future.key: batch for future, batch in
                    zip(futures, batches(names, workers))}
        results = []
        for future in as_completed(futures):
            try:
                batch_results = future.result()
            except Exception as err:  # e.g. KilledWorker: its workers died every try
                batch_results = [_failure(name, f"the Dask task building it failed "
                                                f"({type(err).__name__}: {err})")
                                 for name in batch_of[future.key]]
            for result in batch_results:
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
