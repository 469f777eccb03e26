"""``po.graph.tune(model, budget=...)``: tune the kernels of a whole model; then
``po.graph.compile(model, db=...)`` builds each kernel with its best record.

The model is compiled untuned and run (``profile``) to time each step.  Steps whose
kernels compute the same thing (the same group signature: operators, attributes,
shapes, constants read at compile time) are one *kernel* to tune, weighed by the time
of all its steps.  A kernel whose template has parameters becomes a
:class:`polyopt.tune.Task` whose points are template parameters (:mod:`.tuned`); its
untuned schedule is the template's own choice, which every candidate is timed and
checked against.  The
``budget`` of trials is shared by the kernels' shares of the run time (the largest
remainders get the leftover trials); each is tuned with the tuner chosen, its trials
appended to the records ``db``.

.. code-block:: python

    db = po.tune.RecordsDB("records")
    report = po.graph.tune(g, budget=200, db=db)       # print(report) for the table
    m = po.graph.compile(g, db=db)                     # the best schedules
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, public
from ..kernels.key import structural_hash
from ..tune.records import RecordsDB
from .ir import Graph
from .tuned import group_task

__all__ = ["TuneReport", "share_budget", "tune"]


@dataclass
class TuneReport:
    """Per kernel: its steps, template, share of the untuned run time, trials, and the
    untuned and best times (ms); ``str(report)`` is the table; ``tasks``: each kernel's
    :class:`~polyopt.tune.Task` by its name in the table."""

    rows: list
    budget: int
    tasks: dict

    def __str__(self) -> str:
        lines = [f"{'kernel':<28} {'template':<22} {'share':>6} {'trials':>6} "
                 f"{'untuned ms':>10} {'best ms':>9} {'speedup':>7}"]
        for r in self.rows:
            lines.append(f"{r['kernel']:<28} {r['template']:<22} {r['share']:6.1%} "
                         f"{r['trials']:6d} {r['untuned_ms']:10.4f} {r['best_ms']:9.4f} "
                         f"{r['speedup']:7.2f}")
        return "\n".join(lines)


def _graph_of(model) -> Graph:
    if isinstance(model, Graph):
        return model
    if isinstance(model, (str, os.PathLike)) or type(model).__name__ == "ModelProto":
        from .onnx_import import from_onnx
        return from_onnx(model)
    raise InvalidArgumentError(f"po.graph.tune takes a po.graph.Graph, an ONNX model or "
                               f"its path, got {type(model).__name__}")


def _feeds(g: Graph, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    feeds = {}
    for name in g.inputs:
        info = g.tensors[name]
        dtype = np.dtype(info.dtype)
        feeds[name] = (rng.uniform(-1, 1, info.shape) if dtype.kind == "f"
                       else rng.integers(0, 4, info.shape)).astype(dtype)
    return feeds


def share_budget(budget: int, times: list[float]) -> list[int]:
    """``budget`` trials shared in proportion to ``times`` (largest remainders first).

    >>> share_budget(10, [3.0, 1.0, 1.0])
    [6, 2, 2]
    """
    total = sum(times)
    if total <= 0 or not times:
        return [0] * len(times)
    exact = [budget * t / total for t in times]
    shares = [math.floor(e) for e in exact]
    order = sorted(range(len(times)), key=lambda k: shares[k] - exact[k])
    for k in order[:budget - sum(shares)]:
        shares[k] += 1
    return shares


def _record_untuned_point(task, runner, db: RecordsDB) -> None:
    """Measure point 0 (the template's own parameters) first, unless recorded already:
    the best record is then never slower than the untuned kernel, as measured."""
    from ..tune import MeasureInput
    from ..tune.records import config_key
    first = task.space.get(0)
    if config_key(first.to_json()) not in db.measured(task.signature, task.target_key):
        db.add(task, first, runner.run([MeasureInput(task, first)])[0],
               script=task.instantiate(first)[0].script())


@public
def tune(model, budget: int = 200, *, db: RecordsDB | None = None, runner=None,
         tuner: str = "random", num_threads: int = 0, target: str = "llvm",
         feeds: dict | None = None, seed: int = 0) -> TuneReport:
    """Tune the distinct kernels of ``model`` (a Graph, an ONNX model or its path) with
    ``budget`` trials in all (see the module docstring).  ``db``: the records (a
    :class:`~polyopt.tune.RecordsDB`; default: polyopt's own folder); ``runner``: a
    LocalRunner (default, ``num_threads`` threads) or DaskRunner; ``tuner``: "random",
    "grid", "ga" or "xgb"; ``feeds``: the inputs the untuned model is timed on (seeded
    random ones by default)."""
    from ..tune import LocalRunner, tuners
    from .executor import compile as compile_graph, group_signature
    choices = {"random": tuners.RandomTuner, "grid": tuners.GridSearchTuner,
               "ga": tuners.GATuner, "xgb": tuners.XGBTuner}
    if tuner not in choices:
        raise InvalidArgumentError(f"tuner is one of {sorted(choices)}, got {tuner!r}")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise InvalidArgumentError(f"budget is a number of trials >= 0, got {budget!r}")
    g = _graph_of(model)
    db = db if db is not None else RecordsDB()
    runner = runner if runner is not None else LocalRunner(threads=num_threads or None)
    untuned = compile_graph(g, target, num_threads=num_threads, cache=False)
    timed = untuned.profile(feeds if feeds is not None else _feeds(g, seed), repeat=5)
    step_ms = {row["group"]: row["ms"] for row in timed}
    kernels: dict = {}  # group signature -> (first step, total ms, step names)
    for step in untuned.steps:
        if step.kernel is None:
            continue
        key = structural_hash(group_signature(untuned.graph, step.group))
        first, ms, names = kernels.get(key, (step, 0.0, []))
        kernels[key] = (first, ms + step_ms.get(step.group.name, 0.0),
                        names + [step.group.name])
    tasks = [(group_task(untuned.graph, first.group, first.template, target=target),
              first, ms, names) for first, ms, names in kernels.values()]
    tasks = [t for t in tasks if t[0] is not None]
    total_ms = sum(row["ms"] for row in timed)
    rows, named = [], {}
    for (task, step, ms, names), trials in zip(
            tasks, share_budget(budget, [t[2] for t in tasks])):
        if trials:
            _record_untuned_point(task, runner, db)
        summary = choices[tuner](task, seed=seed).tune(trials, runner, db=db) if trials \
            else None
        best = summary.best_cost * 1e3 if summary and math.isfinite(summary.best_cost) \
            else math.nan
        base = summary.baseline_cost * 1e3 if summary else math.nan
        named[",".join(names)] = task
        rows.append({"kernel": ",".join(names)[:28], "template": step.template,
                     "share": ms / total_ms if total_ms else 0.0, "trials": trials,
                     "untuned_ms": base, "best_ms": best,
                     "speedup": base / best if best and math.isfinite(best) else math.nan})
    return TuneReport(rows, budget, named)

