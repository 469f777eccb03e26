"""Cost models that rank schedules: gradient-boosted trees with a pairwise rank loss
(``xgboost``, the ``tune`` extra: ``pip install polyopt[tune]``), or, without it, a small
ridge regression in NumPy.  Both learn a score (higher: faster) from feature vectors.

>>> import numpy as np
>>> X = np.arange(20.0).reshape(10, 2); y = -X[:, 0]
>>> model = RidgeRankModel().fit(X, y)
>>> bool(model.predict(X[:1])[0] > model.predict(X[-1:])[0])
True
"""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import InvalidArgumentError, PolyoptWarning, public, public_methods

__all__ = ["RidgeRankModel", "XGBRankModel", "make_model", "xgboost_available"]


def xgboost_available() -> bool:
    try:
        import xgboost  # noqa: F401
    except ImportError:
        return False
    return True


@public_methods
class RidgeRankModel:
    """A ridge regression of the scores on standardized features (the fallback)."""

    def __init__(self, alpha: float = 1.0):
        self.alpha, self._weights = float(alpha), None

    def fit(self, X, y) -> "RidgeRankModel":
        X, y = np.asarray(X, float), np.asarray(y, float)
        self._mean, self._scale = X.mean(axis=0), X.std(axis=0) + 1e-9
        Z = np.hstack([(X - self._mean) / self._scale, np.ones((len(X), 1))])
        gram = Z.T @ Z + self.alpha * np.eye(Z.shape[1])
        self._weights = np.linalg.solve(gram, Z.T @ (y - y.mean()))
        return self

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, float)
        if self._weights is None:
            return np.zeros(len(X))
        Z = np.hstack([(X - self._mean) / self._scale, np.ones((len(X), 1))])
        return Z @ self._weights


@public_methods
class XGBRankModel:
    """Gradient-boosted trees, objective ``rank:pairwise`` over one group."""

    def __init__(self, rounds: int = 60, seed: int = 0):
        import xgboost
        self._xgb, self.rounds, self.seed, self._booster = xgboost, rounds, seed, None

    def fit(self, X, y) -> "XGBRankModel":
        X, y = np.asarray(X, float), np.asarray(y, float)
        # pairwise ranking wants relevance labels: the scores' ranks, in a few levels
        order = np.argsort(np.argsort(y))
        labels = np.floor(order * 8 / max(len(y), 1)).astype(float)
        matrix = self._xgb.DMatrix(X, label=labels)
        matrix.set_group([len(y)])
        params = {"objective": "rank:pairwise", "max_depth": 6, "eta": 0.3, "gamma": 1e-4,
                  "min_child_weight": 1, "subsample": 1.0, "seed": self.seed,
                  "nthread": 1, "verbosity": 0}
        self._booster = self._xgb.train(params, matrix, num_boost_round=self.rounds)
        return self

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, float)
        if self._booster is None:
            return np.zeros(len(X))
        return self._booster.predict(self._xgb.DMatrix(X))


@public
def make_model(kind: str = "xgb", seed: int = 0):
    """A rank model: ``"xgb"`` (gradient-boosted trees; the ridge model, with a warning,
    when ``xgboost`` is not installed) or ``"ridge"``."""
    if kind == "ridge":
        return RidgeRankModel()
    if kind != "xgb":
        raise InvalidArgumentError(f"a cost model is 'xgb' or 'ridge', got {kind!r}")
    if xgboost_available():
        return XGBRankModel(seed=seed)
    warnings.warn("xgboost is not installed: the model-based tuner ranks candidates with "
                  "a ridge regression instead of gradient-boosted trees (pip install "
                  "'polyopt[tune]' or xgboost-cpu for the real model)", PolyoptWarning,
                  stacklevel=3)
    return RidgeRankModel()
