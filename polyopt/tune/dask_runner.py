"""Measuring candidates on a Dask cluster (``DaskRunner``): the ``dask`` extra.

``DaskRunner(client_or_address, timeout=, repeat=, warmup=, threads=)`` is a runner
(``run(inputs) -> list[MeasureResult]``, one per input, in order) that sends each
candidate through two Dask tasks:

* a *check* task, on any worker: the point is instantiated and its primitives checked
  (a point the check refuses ends there, status ``"refused"``, and never occupies a
  measuring worker), and its kernel compiled to object code: the builds are spread over
  the cluster.  This work runs in a forked child under ``check_timeout`` seconds (the
  ``timeout`` by default): a check or build that hangs costs that trial (status
  ``"timeout"``), not the worker;
* then, for a legal point, a *measure* task, only on workers that have the Dask worker
  resource ``measure`` (``dask worker ADDRESS --resources measure=1``, or
  ``LocalCluster(resources={"measure": 1})``), one task at a time per unit: two
  candidates never share the cores being measured.  There the object code is linked
  into the worker's build cache and a :class:`~polyopt.tune.measure.LocalRunner`
  builds the kernel (lowering it again: the same key finds the linked code), checks
  its numbers against the untuned schedule (once per task and worker) and times it in
  a forked child under ``timeout``: a crash or a hang costs that trial, not the worker.

Results are handed to ``on_result(input, result)`` (the runner's, and ``run``'s own
argument) in the client as each arrives (a tuner writes its records there), so a worker that dies loses no finished trial.  A task
lost with its worker is run again by Dask (``retries`` times); one lost every time
becomes a failed trial (status ``"crash"``), never a missing one.

Connecting (``client_or_address``): a ``dask.distributed.Client``, a scheduler address
(``"tcp://host:8786"``) or ``"local"`` (a ``LocalCluster`` of one measuring worker).
Dask is imported only here: the core imports without it.

.. code-block:: python

    runner = DaskRunner("tcp://scheduler:8786", timeout=10, repeat=5)
    tuner.tune(200, runner, db=RecordsDB("records"))
"""

from __future__ import annotations

import time
from dataclasses import replace

from ..errors import BackendError, InvalidArgumentError, MissingBackendError, public_methods
from .measure import LocalRunner, MeasureInput, MeasureResult, Runner, in_child

__all__ = ["DaskRunner", "MEASURE_RESOURCE"]

MEASURE_RESOURCE = "measure"  # the Dask worker resource of a measuring worker
# per worker process: LocalRunners by their settings (each keeps the untuned outputs
# of the tasks it measured, so the reference is computed once per task and worker)
_WORKER_RUNNERS: dict[tuple, LocalRunner] = {}


def _distributed():
    try:
        import distributed
    except ImportError as err:
        raise MissingBackendError(
            "DaskRunner needs Dask distributed, which is not installed; install it with: "
            "pip install 'dask[distributed]' (or pip install 'polyopt[dask]')") from err
    return distributed


def _connect(client_or_address):
    """``(client, cluster or None, owned)`` for a Client, an address or ``"local"``."""
    distributed = _distributed()
    if isinstance(client_or_address, distributed.Client):
        return client_or_address, None, False
    if client_or_address == "local":
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                           dashboard_address=None,
                                           resources={MEASURE_RESOURCE: 1})
        return distributed.Client(cluster), cluster, True
    if isinstance(client_or_address, str) and client_or_address.startswith(
            ("tcp://", "tls://", "ucx://", "inproc://")):
        try:
            return distributed.Client(client_or_address, timeout=30), None, True
        except (OSError, TimeoutError) as err:
            raise BackendError(f"cannot reach the Dask scheduler at {client_or_address} "
                               f"({err}); start one (dask scheduler) and workers with "
                               f"--resources {MEASURE_RESOURCE}=1") from err
    raise InvalidArgumentError(f"DaskRunner takes a dask.distributed.Client, a scheduler "
                               f"address such as 'tcp://host:8786' or 'local', got "
                               f"{client_or_address!r}")


def _settings(runner: LocalRunner) -> tuple:
    return (runner.timeout, runner.repeat, runner.warmup, runner.threads,
            runner.min_repeat_ms, runner.seed)


def check_candidate(item: MeasureInput, threads: int | None, timeout: float = 30.0,
                    before_check=None):
    """The check task (any worker): the final result when the point is refused, fails
    or is not checked and compiled within ``timeout`` seconds (the work runs in a forked
    child that is then killed: status ``"timeout"``, the worker lives on), else its
    kernel compiled here for ``threads`` threads (``(key, object code, metadata)``; None
    when it cannot be compiled ahead, e.g. for another target than LLVM: the measuring
    worker builds it).  ``before_check(config)``, if given, runs first in the child (a
    test's way to make a check hang)."""
    start = time.perf_counter()
    status, value = in_child(lambda: _check_and_compile(item, threads, before_check),
                             timeout)
    if status != "ok":
        return MeasureResult(error=f"checking and compiling it: {value}", status=status,
                             build_seconds=time.perf_counter() - start)
    if isinstance(value, dict):  # (an exception the child reported)
        return MeasureResult(error=value.get("error"), status="error",
                             build_seconds=time.perf_counter() - start)
    if isinstance(value, MeasureResult):
        return replace(value, build_seconds=time.perf_counter() - start)
    return value


def _check_and_compile(item: MeasureInput, threads: int | None, before_check):
    """(In the check task's child) a refused or failed point's result, or its kernel
    compiled (see :func:`check_candidate`)."""
    from ..errors import PolyoptError, ScheduleError
    if before_check is not None:
        before_check(item.config)
    try:
        schedule, tensors = item.task.instantiate(item.config)
        schedule.check()
    except ScheduleError as err:
        return MeasureResult(error=f"{type(err).__name__}: {err}", status="refused")
    except PolyoptError as err:
        return MeasureResult(error=f"{type(err).__name__}: {err}", status="error")
    try:
        return _compiled(item.task, schedule, tensors, threads)
    except PolyoptError:
        return None


def _compiled(task, schedule, tensors, threads: int | None) -> tuple:
    """``(key, code, meta)`` of the kernel ``po.build(schedule, tensors, task.target,
    num_threads=...)`` would make (the same program and options: the same key)."""
    import hashlib

    from ..kernels.builder import build_kernel
    from ..kernels.key import kernel_key
    from ..lower import lower
    from ..machine import TargetInfo
    from ..target.base import get_target, target_key
    backend = get_target(task.target)
    options = {"num_threads": threads or TargetInfo.for_target(task.target).cores or 1}
    func = lower(schedule, tensors, target=backend)
    key = kernel_key(func, target_key(backend), options)
    built = build_kernel(func, backend, options, form="object", key=key)
    return key, built.code, dict(built.meta, sha256=hashlib.sha256(built.code).hexdigest())


def measure_candidate(item: MeasureInput, settings: tuple, compiled=None) -> MeasureResult:
    """The measure task (a worker with the ``measure`` resource): the kernel a check
    task ``compiled`` is linked into this worker's build cache (so the forked child's
    ``po.build`` finds it: no compiling here), then ``item`` is built, compared and
    timed in this worker's :class:`LocalRunner` (a forked child under its time limit)."""
    from ..errors import PolyoptError
    from ..kernels.builder import adopt_object
    if compiled is not None:
        try:
            adopt_object(*compiled, item.task.target)
        except PolyoptError:
            pass  # (not linkable here: the child builds it)
    # (its check task checked the point: not checked again here)
    return _worker_runner(settings)._measure(item, checked=True)


def _worker_baseline(task, settings: tuple) -> MeasureResult:
    return _worker_runner(settings).baseline(task)


def _worker_runner(settings: tuple) -> LocalRunner:
    """This worker's LocalRunner with ``settings`` (made once)."""
    runner = _WORKER_RUNNERS.get(settings)
    if runner is None:
        timeout, repeat, warmup, threads, min_repeat_ms, seed = settings
        runner = _WORKER_RUNNERS[settings] = LocalRunner(
            timeout=timeout, repeat=repeat, warmup=warmup, threads=threads,
            min_repeat_ms=min_repeat_ms, seed=seed)
    return runner


@public_methods
class DaskRunner(Runner):
    """See the module docstring.  ``wait_for_workers``: seconds to wait for a measuring
    worker to join before refusing to run.  ``close()`` (or ``with DaskRunner(...) as
    runner:``) closes the client and cluster it opened itself (never a Client it was
    given)."""

    def __init__(self, client_or_address, timeout: float = 30.0, repeat: int = 5,
                 warmup: int = 1, threads: int | None = None, *, min_repeat_ms: float = 1.0,
                 seed: int = 0, retries: int = 2, on_result=None,
                 wait_for_workers: float = 30.0, check_timeout: float | None = None,
                 before_check=None):
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise InvalidArgumentError(f"DaskRunner: retries must be an int >= 0, got "
                                       f"{retries!r}")
        if on_result is not None and not callable(on_result):
            raise InvalidArgumentError("DaskRunner: on_result must be a callable "
                                       "(input, result) -> None")
        # (the same checks of timeout, repeat, ... as a LocalRunner's; also the one that
        # times the untuned schedules for baseline())
        self._local = LocalRunner(timeout=timeout, repeat=repeat, warmup=warmup,
                                  threads=threads, min_repeat_ms=min_repeat_ms, seed=seed)
        if check_timeout is not None and (isinstance(check_timeout, bool) or not isinstance(
                check_timeout, (int, float)) or check_timeout <= 0):
            raise InvalidArgumentError(f"DaskRunner: check_timeout is seconds > 0 or None "
                                       f"(the timeout), got {check_timeout!r}")
        if before_check is not None and not callable(before_check):
            raise InvalidArgumentError("DaskRunner: before_check must be a callable")
        self.retries, self.on_result = retries, on_result
        self.check_timeout = float(check_timeout if check_timeout is not None else timeout)
        self.before_check = before_check
        self.wait_for_workers = float(wait_for_workers)
        self.client, self._cluster, self._owned = _connect(client_or_address)

    @property
    def timeout(self) -> float:
        return self._local.timeout

    def measuring_workers(self) -> list[str]:
        """The addresses of the workers with the ``measure`` resource."""
        workers = self.client.scheduler_info().get("workers", {})
        return sorted(address for address, info in workers.items()
                      if (info.get("resources") or {}).get(MEASURE_RESOURCE, 0) >= 1)

    def _wait_for_measuring_worker(self) -> None:
        deadline = time.monotonic() + self.wait_for_workers
        while not self.measuring_workers():
            if time.monotonic() > deadline:
                raise BackendError(
                    f"no worker of the Dask cluster has the resource {MEASURE_RESOURCE!r}, "
                    f"so no candidate could be timed; start a measuring worker with "
                    f"dask worker ADDRESS --resources {MEASURE_RESOURCE}=1 (one per "
                    f"machine), or LocalCluster(resources={{'{MEASURE_RESOURCE}': 1}})")
            time.sleep(0.2)

    def baseline(self, task) -> MeasureResult:
        """The untuned schedule's time, measured on a measuring worker."""
        self._wait_for_measuring_worker()
        future = self.client.submit(_worker_baseline, task, _settings(self._local),
                                    resources={MEASURE_RESOURCE: 1}, pure=False,
                                    retries=self.retries)
        return future.result()

    def run(self, inputs, on_result=None) -> list:
        inputs = list(inputs)
        if not all(isinstance(item, MeasureInput) for item in inputs):
            raise InvalidArgumentError("DaskRunner.run takes a list of MeasureInput")
        if on_result is not None and not callable(on_result):
            raise InvalidArgumentError("DaskRunner.run: on_result must be a callable "
                                       "(input, result) -> None")
        if not inputs:
            return []
        distributed = _distributed()
        self._wait_for_measuring_worker()
        settings = _settings(self._local)
        position = {}  # a future's key -> (index of its input, is it the measure task)
        pending = distributed.as_completed()
        for index, item in enumerate(inputs):
            checked = self.client.submit(check_candidate, item, self._local.threads,
                                         self.check_timeout, self.before_check,
                                         pure=False, retries=self.retries)
            position[checked.key] = (index, False)
            pending.add(checked)
        results: list = [None] * len(inputs)
        for future in pending:
            index, measured = position[future.key]
            try:
                result = future.result()
            except Exception as err:  # noqa: BLE001  (KilledWorker: lost every try)
                result = MeasureResult(
                    error=f"the Dask task {'measuring' if measured else 'checking'} it was "
                          f"lost ({type(err).__name__}: {err}) after {self.retries} "
                          f"retries", status="crash")
            if not isinstance(result, MeasureResult):  # legal: to a measuring worker
                following = self.client.submit(measure_candidate, inputs[index], settings,
                                               result, resources={MEASURE_RESOURCE: 1},
                                               pure=False, retries=self.retries)
                position[following.key] = (index, True)
                pending.add(following)
                continue
            results[index] = result
            for hand_over in (self.on_result, on_result):
                if hand_over is not None:
                    hand_over(inputs[index], result)
        return results

    def close(self) -> None:
        if self._owned:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()
            self._owned = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self) -> str:
        return (f"DaskRunner({self.client.scheduler.address!r}, timeout={self.timeout:g}, "
                f"{len(self.measuring_workers())} measuring workers)")

