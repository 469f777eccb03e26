"""The model-based tuner: a cost model ranks the space, simulated annealing searches it.

Each round (after a first random batch) :class:`ModelTuner` fits two rank models on the
points measured so far (score: minus the log of the time; a failed point ranks below
all): one on the knob values (:func:`polyopt.tune.knob_features`), cheap enough to
guide simulated annealing over the whole space, and one on the loop-nest features of
the lowered schedules (:mod:`polyopt.tune.features`), trained also on the records of
other shapes of the same operator (transfer), which re-ranks the annealing's best
candidates.  The batch takes the best of them, each differing from the others chosen,
and a share of random points (``random_share``).  ``XGBTuner`` is the same with
gradient-boosted trees (``xgboost``; a ridge model with a warning without it).

>>> import polyopt as po
>>> space = po.tune.ConfigSpace(); space.define_knob("x", list(range(30)))
>>> tuner = ModelTuner(po.tune.Task("t", space, lambda c: None), model="ridge", seed=0)
>>> len(tuner.next_batch(4))  # (nothing measured yet: random points)
4
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import InvalidArgumentError, PolyoptError, public_methods
from ...lower import lower
from ..features import nest_features
from .base import Tuner
from .models import make_model
from .simple import random_unvisited

__all__ = ["ModelTuner", "XGBTuner"]


@public_methods
class ModelTuner(Tuner):
    """See the module docstring."""

    def __init__(self, task, model: str = "xgb", *, random_share: float = 0.15,
                 anneal_steps: int = 40, anneal_walkers: int = 64, rerank: int = 3,
                 **options):
        super().__init__(task, **options)
        if model not in ("xgb", "ridge"):
            raise InvalidArgumentError(f"ModelTuner: model is 'xgb' or 'ridge', got {model!r}")
        if not 0 <= random_share <= 1:
            raise InvalidArgumentError(f"random_share is a fraction in [0, 1], got "
                                       f"{random_share!r}")
        self.model_kind, self.random_share = model, float(random_share)
        self.anneal_steps, self.anneal_walkers, self.rerank = anneal_steps, anneal_walkers, rerank
        self.knob_model = self.nest_model = None

    # -- learning ---------------------------------------------------------------------
    def _scores(self, indices) -> np.ndarray:
        results = [self.measured[i] for i in indices]
        good = [-math.log(r.cost) for r in results if r.ok]
        floor = (min(good) - 1.0) if good else 0.0
        return np.array([-math.log(r.cost) if r.ok else floor for r in results])

    def update(self, indices, results) -> None:
        measured = sorted(self.measured)
        if sum(r.ok for r in self.measured.values()) < 4:
            return
        y = self._scores(measured)
        self.knob_model = make_model(self.model_kind, seed=0).fit(
            self.knob_matrix(measured), y)
        with_features = [i for i in measured if i in self.features]
        X = [self.features[i] for i in with_features]
        Y = list(self._scores(with_features) - max(self._scores(with_features), default=0))
        for group in self._related_groups():  # other shapes of this operator
            X += group[0]
            Y += group[1]
        if len(X) >= 8:
            self.nest_model = make_model(self.model_kind, seed=0).fit(np.array(X),
                                                                     np.array(Y))

    def _related_groups(self):
        """Records of other shapes: (features, scores relative to their best) per shape."""
        if self.db is None:
            return []
        groups: dict = {}
        for record in self.db.related(self.task):
            costs = record["result"]["costs"]
            if costs:
                groups.setdefault(record["signature"], []).append(
                    (record["features"], -math.log(float(np.median(costs)))))
        found = []
        for rows in groups.values():
            top = max(score for _, score in rows)
            found.append(([list(f) for f, _ in rows], [s - top for _, s in rows]))
        return found

    # -- choosing -----------------------------------------------------------------------
    def next_batch(self, count: int) -> list[int]:
        if self.knob_model is None:
            return random_unvisited(self, count)
        randoms = int(round(count * self.random_share))
        pool = self._anneal(max(count * self.rerank, count))
        scored = self._rerank(pool)
        chosen = self._diverse(scored, count - randoms)
        chosen += random_unvisited(self, count - len(chosen), chosen)
        return chosen

    def _anneal(self, keep: int) -> list[int]:
        """Simulated annealing over the knob model: the ``keep`` best unvisited points
        its walkers met."""
        size = len(self.space)
        walkers = [int(self.rng.integers(size)) for _ in range(self.anneal_walkers)]
        scores = self.knob_model.predict(self.knob_matrix(walkers))
        spread = float(np.std(scores)) or 1.0
        seen: dict[int, float] = {}
        for index, score in zip(walkers, scores):
            if index not in self.visited:
                seen[index] = float(score)
        for step in range(self.anneal_steps):
            temperature = max(1.0 - step / max(self.anneal_steps, 1), 0.02) * spread
            moves = []
            for index in walkers:
                options = self.space.neighbors(index, self.rng)
                moves.append(options[int(self.rng.integers(len(options)))] if options
                             else index)
            new_scores = self.knob_model.predict(self.knob_matrix(moves))
            for k, (index, score) in enumerate(zip(moves, new_scores)):
                if index not in self.visited:
                    seen[index] = float(score)
                gain = float(score - scores[k])
                if gain >= 0 or self.rng.random() < math.exp(gain / temperature):
                    walkers[k], scores[k] = index, score
        return [i for i, _ in sorted(seen.items(), key=lambda kv: -kv[1])[:keep]]

    def _rerank(self, pool: list[int]) -> list[int]:
        """The pool ordered by the loop-nest model (when it is trained); points whose
        schedule the check refuses go last."""
        if self.nest_model is None or not pool:
            return pool
        rows, usable, refused = [], [], []
        for index in pool:
            try:
                schedule, tensors = self.task.instantiate(self.space.get(index))
                rows.append(nest_features(lower(schedule, tensors), self.task.sizes))
                usable.append(index)
            except PolyoptError:
                refused.append(index)
        if not usable:
            return refused
        knob_scores = self.knob_model.predict(self.knob_matrix(usable))
        nest_scores = self.nest_model.predict(np.array(rows))
        total = _ranks(knob_scores) + _ranks(nest_scores)
        return [usable[k] for k in np.argsort(-total)] + refused

    def _diverse(self, ordered: list[int], count: int) -> list[int]:
        """The first ``count`` of ``ordered``, each differing from those chosen in at
        least two knobs while that is possible."""
        chosen: list[int] = []
        digits = {}
        for need in (min(2, len(self.space.dims)), 1):
            for index in ordered:
                if len(chosen) >= count:
                    return chosen
                if index in chosen:
                    continue
                mine = digits.setdefault(index, self.space.digits(index))
                if all(sum(a != b for a, b in zip(mine, digits[other])) >= need
                       for other in chosen):
                    chosen.append(index)
        return chosen


def _ranks(values) -> np.ndarray:
    return np.argsort(np.argsort(np.asarray(values))).astype(float)


@public_methods
class XGBTuner(ModelTuner):
    """:class:`ModelTuner` with gradient-boosted trees (TVM's name; ``loss_type`` and
    ``feature_type`` are accepted: the loss is always the pairwise rank)."""

    def __init__(self, task, loss_type: str = "rank", feature_type: str = "itervar",
                 **options):
        options.setdefault("model", "xgb")
        super().__init__(task, **options)
