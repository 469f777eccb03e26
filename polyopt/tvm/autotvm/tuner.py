"""``autotvm.tuner.RandomTuner``, ``GridSearchTuner``, ``GATuner``, ``XGBTuner``: polyopt's
tuners (:mod:`polyopt.tune.tuners`) with TVM's ``tune(n_trial, measure_option,
early_stopping, callbacks)``.  TVM's tuning options that polyopt does not have
(``plan_size``, ``feature_type``, ``loss_type``...) are accepted.
"""

from __future__ import annotations

from ...errors import InvalidArgumentError
from ...tune import tuners as _tuners
from ...tune.measure import Runner
from . import callback  # noqa: F401  (autotvm.tuner.callback, as in TVM)

__all__ = ["GATuner", "GridSearchTuner", "RandomTuner", "XGBTuner"]


class _TVMTune:
    """TVM's ``tune`` signature over polyopt's."""

    def tune(self, n_trial, measure_option=None, early_stopping=None, callbacks=(),
             si_prefix="G", db=None):
        if isinstance(measure_option, dict):
            runner = measure_option.get("runner")
        elif measure_option is None or isinstance(measure_option, Runner):
            runner = measure_option
        else:
            raise InvalidArgumentError(f"tune takes measure_option=autotvm.measure_option("
                                       f"...) or a po.tune runner, got {measure_option!r}")
        return super().tune(n_trial, runner, db=db, callbacks=callbacks,
                            early_stopping=early_stopping)


_BASE = ("batch_size", "seed")


def _options(given: dict, accepted: tuple) -> dict:
    """The options polyopt's tuner takes (TVM's others are accepted and unused)."""
    return {name: value for name, value in given.items() if name in accepted}


class RandomTuner(_TVMTune, _tuners.RandomTuner):
    """``RandomTuner(task, range_idx=None)``: points in a random order."""

    def __init__(self, task, range_idx=None, **options):
        super().__init__(task, **_options(options, _BASE))


class GridSearchTuner(_TVMTune, _tuners.GridSearchTuner):
    """``GridSearchTuner(task, range_idx=None)``: points in index order."""

    def __init__(self, task, range_idx=None, **options):
        super().__init__(task, **_options(options, _BASE))


class GATuner(_TVMTune, _tuners.GATuner):
    """``GATuner(task, pop_size=, elite_num=, mutation_prob=)``: a genetic search."""

    def __init__(self, task, **options):
        super().__init__(task, **_options(options, _BASE + ("pop_size", "elite_num",
                                                            "mutation_prob")))


class XGBTuner(_TVMTune, _tuners.XGBTuner):
    """``XGBTuner(task, plan_size=64, feature_type="itervar", loss_type="rank")``: the
    model-based tuner (gradient-boosted trees with a rank loss; polyopt.tune.tuners)."""

    def __init__(self, task, **options):
        super().__init__(task, **_options(options, _BASE + ("random_share",)))
