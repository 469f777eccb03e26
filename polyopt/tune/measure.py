"""Measuring candidates: each built and timed in a worker process under a time limit.

A :class:`MeasureInput` is a task and a point of its space; a runner's ``run(inputs)``
returns one :class:`MeasureResult` per input.  :class:`LocalRunner` instantiates each
point here (the primitives are checked: a refused point is never built, its status is
``"refused"``), then builds it with ``po.build`` (the one build path,
:mod:`polyopt.kernels`) and times it in a forked worker that is killed after
``timeout`` seconds: a crash or a hang costs that trial, not the run.  The worker calls
the kernel on seeded random arrays, compares the written arrays once with the untuned
schedule's (:func:`polyopt.tune.compare.mismatch`; status ``"wrong"`` when they differ,
and such a point never wins), then calls it ``warmup`` more times and for ``min_repeat_ms`` more, and times
``repeat`` runs of at least ``min_repeat_ms`` each; the cost is their median.  Threads: the machine model's cores
(``TargetInfo.cores``) unless ``threads`` says otherwise.

>>> import polyopt as po
>>> from polyopt.tune.task import template_task
>>> def scale(cfg):
...     A = po.placeholder((256,), name="A")
...     B = po.compute((256,), lambda i: A[i] * 2.0, name="B")
...     s = po.create_schedule(B)
...     cfg.define_knob("vec", [False, True])
...     if cfg["vec"].val:
...         s[B].vectorize(B.op.axis[0])
...     return s, [A, B]
>>> task = template_task("scale", scale)
>>> results = LocalRunner(repeat=2).run([MeasureInput(task, task.space.get(1))])
>>> results[0].status, len(results[0].costs)
('ok', 2)
"""

from __future__ import annotations

import faulthandler
import math
import os
import pickle
import select
import signal
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import (IllegalScheduleError, InvalidArgumentError, PolyoptError, ScheduleError,
                      public_methods)
from ..machine import TargetInfo
from ..te.evaluate import evaluate
from ..te.expr import Var
from .compare import mismatch
from .errors import TuningError
from .space import ConfigEntity
from .task import Task

__all__ = ["LocalRunner", "MeasureInput", "MeasureResult", "Runner", "STATUSES"]

# what became of a trial: measured; refused by the schedule check; failed to build or to
# run (a PolyoptError); killed by a signal; over its time limit; numbers that differ
STATUSES = ("ok", "refused", "error", "crash", "timeout", "wrong")


@dataclass(frozen=True)
class MeasureInput:
    """A point ``config`` of ``task``'s space, to measure."""

    task: Task
    config: ConfigEntity

    def __post_init__(self):
        if not isinstance(self.task, Task) or not isinstance(self.config, ConfigEntity):
            raise InvalidArgumentError("MeasureInput(task, config) takes a Task and a point "
                                       "of its space (task.space.get(i))")


@public_methods
@dataclass(frozen=True)
class MeasureResult:
    """Seconds per run of each repeat (``costs``; empty unless ``status == "ok"``), what
    went wrong (``error``: None or a message), the build time, when it was measured, and
    the status (one of :data:`STATUSES`)."""

    costs: tuple = ()
    error: str | None = None
    build_seconds: float = 0.0
    timestamp: float = field(default_factory=time.time)
    status: str = "ok"

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.costs)

    @property
    def cost(self) -> float:
        """The median of the repeats' times (infinite when not measured)."""
        return statistics.median(self.costs) if self.ok else math.inf

    def to_json(self) -> dict:
        return {"costs": list(self.costs), "error": self.error,
                "build_seconds": self.build_seconds, "timestamp": self.timestamp,
                "status": self.status}

    @staticmethod
    def from_json(data: dict) -> "MeasureResult":
        return MeasureResult(tuple(float(c) for c in data.get("costs", ())), data.get("error"),
                             float(data.get("build_seconds", 0.0)),
                             float(data.get("timestamp", 0.0)), str(data.get("status", "ok")))


@public_methods
class Runner:
    """What measures: ``run(inputs, on_result=None) -> list[MeasureResult]`` (one per
    input, in order; ``on_result(input, result)``, if given, is called as each result is
    known, so a tuner records it at once); ``baseline(task)`` times the untuned
    schedule.  A runner whose ``run`` takes no ``on_result`` is given one input at a
    time."""

    def run(self, inputs, on_result=None) -> list:  # pragma: no cover  (the protocol)
        raise NotImplementedError

    def baseline(self, task: Task) -> MeasureResult:  # pragma: no cover
        raise NotImplementedError


@public_methods
class LocalRunner(Runner):
    """Measures on this machine, one candidate at a time (see the module docstring).
    ``before_run(config)``, if given, runs in the worker before the build (a test's
    way to make a worker crash or hang)."""

    def __init__(self, timeout: float = 30.0, repeat: int = 5, warmup: int = 1,
                 threads: int | None = None, *, min_repeat_ms: float = 1.0, seed: int = 0,
                 before_run=None):
        for label, value, low in (("repeat", repeat, 1), ("warmup", warmup, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidArgumentError(f"LocalRunner: {label} must be an int >= {low}, "
                                           f"got {value!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidArgumentError(f"LocalRunner: timeout is seconds > 0, got {timeout!r}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or threads < 1):
            raise InvalidArgumentError(f"LocalRunner: threads must be an int >= 1 or None "
                                       f"(the machine model's cores), got {threads!r}")
        if not hasattr(os, "fork"):
            raise TuningError("LocalRunner measures in forked worker processes, which this "
                              "system lacks (Linux and macOS have them)")
        if before_run is not None and not callable(before_run):
            raise InvalidArgumentError("LocalRunner: before_run must be a callable")
        self.timeout, self.repeat, self.warmup = float(timeout), repeat, warmup
        self.threads, self.min_repeat_ms, self.seed = threads, float(min_repeat_ms), seed
        self.before_run = before_run
        self._references: dict[str, tuple] = {}

    def threads_for(self, task: Task) -> int:
        return self.threads or TargetInfo.for_target(task.target).cores or 1

    def baseline(self, task: Task) -> MeasureResult:
        """The untuned schedule's time (measured once per task, with its outputs)."""
        return self._reference(task)[1]

    def run(self, inputs, on_result=None) -> list:
        inputs = list(inputs)
        if not all(isinstance(i, MeasureInput) for i in inputs):
            raise InvalidArgumentError("LocalRunner.run takes a list of MeasureInput")
        if on_result is not None and not callable(on_result):
            raise InvalidArgumentError("LocalRunner.run: on_result must be a callable "
                                       "(input, result) -> None")
        results = []
        for item in inputs:
            results.append(self._measure(item))
            if on_result is not None:
                on_result(item, results[-1])
        return results

    # -- one candidate ---------------------------------------------------------------
    def _measure(self, item: MeasureInput, checked: bool = False) -> MeasureResult:
        """One candidate's result; ``checked``: its schedule was checked already (by a
        Dask check task), so it is not checked again here."""
        task, config = item.task, item.config
        try:
            schedule, tensors = task.instantiate(config)
            if not checked:
                schedule.check()
        except (IllegalScheduleError, ScheduleError) as err:
            return MeasureResult(error=f"{type(err).__name__}: {err}", status="refused")
        except PolyoptError as err:
            return MeasureResult(error=f"{type(err).__name__}: {err}", status="error")
        reference = self._reference(task)[0]
        return self._in_worker(task, schedule, tensors, reference, config)

    def _reference(self, task: Task):
        found = self._references.get(task.signature)
        if found is None:
            schedule, tensors = task.default_instance()
            result, outputs = self._in_worker(task, schedule, tensors, None, None,
                                              keep_outputs=True)
            if not result.ok:
                raise TuningError(f"the untuned schedule of task {task.name!r} did not run "
                                  f"({result.status}: {result.error}); fix the kernel first")
            found = self._references[task.signature] = (outputs, result)
        return found

    def _in_worker(self, task, schedule, tensors, reference, config, keep_outputs=False):
        """The result of measuring in a forked worker (and, with ``keep_outputs``,
        the arrays it wrote: ``(result, outputs)``)."""
        result, outputs = self._fork(task, schedule, tensors, reference, config, keep_outputs)
        return (result, outputs) if keep_outputs else result

    def _fork(self, task, schedule, tensors, reference, config, keep_outputs):
        status, report = in_child(lambda: self._work(task, schedule, tensors, reference,
                                                     config, keep_outputs), self.timeout)
        if status != "ok":
            return MeasureResult(error=report, status=status), None
        result = MeasureResult(tuple(report.get("costs", ())), report.get("error"),
                               report.get("build_seconds", 0.0), time.time(),
                               report.get("status", "error"))
        return result, report.get("outputs")

    def _work(self, task, schedule, tensors, reference, config, keep_outputs) -> dict:
        """In the worker: the report of one build, check and timing."""
        if self.before_run is not None and config is not None:
            self.before_run(config)
        from ..build import build
        start = time.perf_counter()
        kernel = build(schedule, tensors, task.target, num_threads=self.threads_for(task))
        build_seconds = time.perf_counter() - start
        given = task.inputs(self.seed) if task.inputs is not None else None
        args, kwargs, outputs = _arguments(kernel.signature, task.sizes, self.seed, given)
        kernel(*args, **kwargs)
        got = {name: np.array(array) for name, array in outputs.items()}
        if reference is not None:
            for name, expected in reference.items():
                problem = mismatch(got.get(name), expected, exact=schedule.strict_fp)
                if problem:
                    return {"status": "wrong", "build_seconds": build_seconds,
                            "error": f"output {name} differs from the untuned schedule's: "
                                     f"{problem}"}
        for _ in range(self.warmup):
            kernel(*args, **kwargs)
        # warm for min_repeat_ms as well (caches, pages, the thread pool's first wake-up:
        # a first timed call was seen 10-20x slower than the next ones)
        calls, start = 0, time.perf_counter()
        while calls < 10_000 and (calls == 0 or
                                  time.perf_counter() - start < self.min_repeat_ms * 1e-3):
            kernel(*args, **kwargs)
            calls += 1
        once = max((time.perf_counter() - start) / calls, 1e-7)
        number = max(1, min(10_000, math.ceil(self.min_repeat_ms * 1e-3 / once)))
        costs = []
        for _ in range(self.repeat):
            start = time.perf_counter()
            for _ in range(number):
                kernel(*args, **kwargs)
            costs.append((time.perf_counter() - start) / number)
        report = {"status": "ok", "costs": costs, "build_seconds": build_seconds}
        if keep_outputs:
            report["outputs"] = got
        return report


def in_child(work, timeout: float) -> tuple:
    """``work()`` run in a forked child killed after ``timeout`` seconds: ``("ok",
    value)`` (its value, pickled back; an exception it raised becomes ``{"status":
    "error", "error": ...}``), ``("timeout", message)`` or ``("crash", message)``.  A
    hang or a crash of ``work`` costs the child, never the caller."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: work, report, leave without cleanup
        os.close(read)
        _quiet()  # (LLVM's remarks and warnings: what the parent reports is the result)
        try:
            try:
                value = work()
            except BaseException as err:  # noqa: BLE001  (reported to the parent)
                value = {"status": "error", "error": f"{type(err).__name__}: {err}"}
            data = pickle.dumps(value)
            with os.fdopen(write, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write)
    data, deadline, timed_out = b"", time.monotonic() + timeout, False
    with os.fdopen(read, "rb", buffering=0) as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([pipe], [], [], left)
            if ready:
                chunk = pipe.read(1 << 20)
                if not chunk:
                    break
                data += chunk
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return "timeout", f"over the time limit of {timeout:g} s (killed)"
    if os.WIFSIGNALED(status):
        from ..frontend.c_native import signal_cause
        return "crash", f"the worker was killed by {signal_cause(os.WTERMSIG(status))}"
    try:
        return "ok", pickle.loads(data)
    except Exception:  # noqa: BLE001  (a child that died mid-report)
        return "crash", "the worker ended without a report"


def _quiet() -> None:
    faulthandler.disable()  # (the parent reports a crash, in the user's terms)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
    except OSError:
        pass


def _arguments(signature, sizes: dict, seed: int, given: dict | None = None):
    """Seeded random arrays (or the task's own, ``given`` by name) and size values for
    every argument of a kernel; the arrays it writes by name."""
    rng = np.random.default_rng(seed)
    args, outputs = [], {}
    for spec in signature.args:
        if isinstance(spec, Var):
            if spec.name not in sizes:
                raise InvalidArgumentError(f"give the size {spec.name!r}: Task(..., "
                                           f"sizes={{{spec.name!r}: ...}})")
            args.append(int(sizes[spec.name]))
            continue
        shape = tuple(evaluate(e, sizes) for e in spec.shape)
        dtype = np.dtype(spec.dtype)
        if given is not None and spec.name in given:
            array = np.array(given[spec.name], dtype=dtype).reshape(shape)
        elif dtype.kind == "f":
            array = rng.uniform(0.5, 1.5, shape).astype(dtype)
        elif dtype.kind == "b":
            array = rng.integers(0, 2, shape).astype(dtype)
        else:
            array = rng.integers(0, 8, shape).astype(dtype)
        args.append(array)
        if spec.written:
            outputs[spec.name] = array
    positional = {spec.name for spec in signature.args if isinstance(spec, Var)}
    kwargs = {p: int(sizes[p]) for p in signature.params if p in sizes and p not in positional}
    return args, kwargs, outputs
