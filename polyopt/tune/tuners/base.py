"""The tuning loop every tuner shares: pick a batch, measure it, record it, learn.

``tuner.tune(n_trial, runner, db=None, callbacks=())`` measures up to ``n_trial`` points
of the task's space, ``batch_size`` at a time (:meth:`Tuner.next_batch`, which each
tuner defines), and hands each batch's results to :meth:`Tuner.update`.  With a records
database every trial is appended as soon as it is measured, and a run that was killed
resumes: the points it recorded count towards ``n_trial``, are given to ``update`` and
are never measured again.  Two points that build the same program (the same structural
hash of the lowered function) are measured once.  ``callbacks`` are called as
``callback(tuner, inputs, results)`` after each batch (TVM's convention).

>>> from polyopt.tune.tuners import RandomTuner
>>> RandomTuner.__mro__[1].__name__
'Tuner'
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np

from ...errors import InvalidArgumentError, PolyoptError, PolyoptWarning, public_methods
from ...kernels.key import structural_hash
from ...lower import lower
from ..errors import TuningError
from ..features import nest_features
from ..measure import LocalRunner, MeasureInput, MeasureResult, Runner
from ..records import RecordsDB, config_key
from ..space import knob_features
from ..task import Task

__all__ = ["TuneSummary", "Tuner"]


class TuneSummary(dict):
    """What a run found: ``best_cost``, ``best_config``, ``baseline_cost``, ``trials``
    (points measured, earlier runs' included), ``refused``, ``failed``, ``speedup``."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


@public_methods
class Tuner:
    """The base of the tuners (see the module docstring)."""

    def __init__(self, task: Task, *, batch_size: int = 8, seed: int = 0):
        if not isinstance(task, Task):
            raise InvalidArgumentError(f"a tuner takes a po.tune.Task, got "
                                       f"{type(task).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgumentError(f"batch_size must be an int >= 1, got {batch_size!r}")
        self.task, self.space, self.batch_size = task, task.space, batch_size
        self.rng = np.random.default_rng(seed)
        self.visited: set[int] = set()
        self.measured: dict[int, MeasureResult] = {}  # index -> result (this task)
        self.features: dict[int, np.ndarray] = {}     # index -> loop-nest features
        self.programs: dict[str, MeasureResult] = {}  # lowered program's hash -> result
        self.best_cost, self.best_config = math.inf, None
        self.trials = self.refused = self.failed = 0
        self.db: RecordsDB | None = None

    # -- what a tuner defines --------------------------------------------------------
    def next_batch(self, count: int) -> list[int]:  # pragma: no cover  (the protocol)
        """Up to ``count`` unvisited points to measure next."""
        raise NotImplementedError

    def update(self, indices: list[int], results: list[MeasureResult]) -> None:
        """Learn from measured points (the base keeps them)."""

    def has_next(self) -> bool:
        return len(self.visited) < len(self.space)

    # -- the loop -----------------------------------------------------------------------
    def tune(self, n_trial: int, runner: Runner | None = None, db: RecordsDB | None = None,
             callbacks=(), *, early_stopping: int | None = None) -> TuneSummary:
        """Measure up to ``n_trial`` points; the summary of what was found."""
        if isinstance(n_trial, bool) or not isinstance(n_trial, int) or n_trial < 0:
            raise InvalidArgumentError(f"n_trial must be an int >= 0, got {n_trial!r}")
        if db is not None and not isinstance(db, RecordsDB):
            raise InvalidArgumentError(f"db must be a po.tune.RecordsDB, got "
                                       f"{type(db).__name__}")
        runner = runner if runner is not None else LocalRunner()
        if not hasattr(runner, "run"):
            raise InvalidArgumentError("runner must have a run(inputs) method (LocalRunner)")
        callbacks = tuple(callbacks) if isinstance(callbacks, (list, tuple)) else (callbacks,)
        self.db = db
        if db is not None:
            self._resume(db)
        since_best = 0
        while self.trials < n_trial and self.has_next():
            if early_stopping is not None and since_best >= early_stopping:
                break
            wanted = min(self.batch_size, n_trial - self.trials)
            indices = [i for i in self.next_batch(wanted) if i not in self.visited][:wanted]
            if 0 not in self.visited and 0 not in indices:  # (point 0: the knobs' first
                indices = [0] + indices[:wanted - 1]        # values, the untuned choices)
            if not indices:
                break
            self.visited.update(indices)
            before = self.best_cost
            inputs, results = self._measure(indices, runner, db)
            self.update(indices, results)
            since_best = 0 if self.best_cost < before else since_best + len(indices)
            for callback in callbacks:
                callback(self, inputs, results)
        return self.summary(runner)

    def summary(self, runner=None) -> TuneSummary:
        baseline = math.inf
        if runner is not None and hasattr(runner, "baseline"):
            try:
                baseline = runner.baseline(self.task).cost
            except PolyoptError:
                baseline = math.inf
        speedup = baseline / self.best_cost if math.isfinite(baseline) and \
            math.isfinite(self.best_cost) else math.nan
        return TuneSummary(best_cost=self.best_cost, best_config=self.best_config,
                           baseline_cost=baseline, trials=self.trials, refused=self.refused,
                           failed=self.failed, speedup=speedup)

    def _measure(self, indices, runner, db):
        """Measure the points of a batch whose schedule is new; record each trial as
        soon as its result is known (a killed run loses at most the trials in flight)."""
        configs = {i: self.space.get(i) for i in indices}
        scripts, features, keys, fresh, first = {}, {}, {}, [], {}
        for index in indices:
            try:
                schedule, tensors = self.task.instantiate(configs[index])
                scripts[index] = schedule.script()
                lowered = lower(schedule, tensors)
                keys[index] = structural_hash(lowered)  # (what is built, not how it is told)
                features[index] = nest_features(lowered, self.task.sizes)
            except PolyoptError:
                keys[index] = None  # (the runner reports why: refused or an error)
            key = keys[index]
            if key is None or (key not in self.programs and key not in first):
                fresh.append(index)
                if key is not None:
                    first[key] = index  # (the batch's first point building this program)
        found: dict[int, MeasureResult] = {}

        def settle(index, result):  # (counted and recorded at once)
            found[index] = result
            key = keys[index]
            if key is not None:
                self.programs.setdefault(key, result)
            self._count(index, configs[index], result, features.get(index))
            if db is not None:
                db.add(self.task, configs[index], result, script=scripts.get(index),
                       features=features.get(index), program=key)

        def arrived(index, result):  # a fresh point, and the batch's points sharing it
            if index in found or index not in fresh:
                return
            settle(index, result)
            for other in indices:
                if other not in found and other not in fresh and keys[other] is not None \
                        and first.get(keys[other]) == index:
                    settle(other, result)

        for index in indices:  # (programs measured earlier: known now)
            if index not in fresh and keys[index] in self.programs:
                settle(index, self.programs[keys[index]])
        items = [MeasureInput(self.task, configs[i]) for i in fresh]
        if items and _takes_on_result(runner):
            results = runner.run(items, on_result=lambda item, result: arrived(
                item.config.index, result))
            for index, result in zip(fresh, results):  # (a runner that did not call it)
                if index not in found and result is not None:
                    arrived(index, result)
        else:
            for item, index in zip(items, fresh):  # (one at a time: each recorded)
                arrived(index, runner.run([item])[0])
        missing = [i for i in fresh if i not in found]
        if missing:
            raise TuningError(f"the runner returned no result for point(s) "
                              f"{', '.join(map(str, missing))} of task {self.task.name!r}; "
                              f"a runner returns one MeasureResult per input")
        return ([MeasureInput(self.task, configs[i]) for i in indices],
                [found[i] for i in indices])

    def _count(self, index, config, result: MeasureResult, features) -> None:
        self.trials += 1
        self.measured[index] = result
        if features is not None:
            self.features[index] = features
        if result.status == "refused":
            self.refused += 1
        elif not result.ok:
            self.failed += 1
        elif result.cost < self.best_cost:
            self.best_cost, self.best_config = result.cost, config

    def _resume(self, db: RecordsDB) -> None:
        """Take in the points an earlier run recorded for this task (never measured
        again)."""
        indices, results = [], []
        for record in db.records(self.task.signature, self.task.target_key):
            try:
                config = self.space.from_json(record["config"])
            except PolyoptError:
                warnings.warn(f"a record of task {self.task.name!r} does not fit its space "
                              f"(another template version?): ignored", PolyoptWarning,
                              stacklevel=3)
                continue
            if config.index in self.visited:
                continue
            result = MeasureResult.from_json(record["result"])
            self.visited.add(config.index)
            if record.get("program"):
                self.programs.setdefault(record["program"], result)
            features = record.get("features")
            self._count(config.index, config,
                        result, np.asarray(features) if features else None)
            indices.append(config.index)
            results.append(result)
        if indices:
            self.update(indices, results)

    def knob_matrix(self, indices) -> np.ndarray:
        return np.array([knob_features(self.space.get(i)) for i in indices])

    @staticmethod
    def config_key(config) -> str:
        return config_key(config.to_json())


def _takes_on_result(runner) -> bool:
    """Whether ``runner.run`` hands each result over as it arrives (``on_result=``)."""
    try:
        parameters = inspect.signature(runner.run).parameters
    except (TypeError, ValueError):
        return False
    return "on_result" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
