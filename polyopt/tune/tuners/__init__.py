"""The tuners: :class:`Tuner` (the loop), :class:`RandomTuner`, :class:`GridSearchTuner`,
:class:`GATuner`, :class:`ModelTuner` and :class:`XGBTuner` (a learned rank model with
simulated annealing)."""

from .base import TuneSummary, Tuner
from .model_based import ModelTuner, XGBTuner
from .models import RidgeRankModel, XGBRankModel, make_model, xgboost_available
from .simple import GATuner, GridSearchTuner, RandomTuner

__all__ = ["GATuner", "GridSearchTuner", "ModelTuner", "RandomTuner", "RidgeRankModel",
           "TuneSummary", "Tuner", "XGBRankModel", "XGBTuner", "make_model",
           "xgboost_available"]

TUNERS = {"random": RandomTuner, "grid": GridSearchTuner, "ga": GATuner, "xgb": XGBTuner,
          "model": ModelTuner}
