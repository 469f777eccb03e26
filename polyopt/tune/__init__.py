"""Autotuning: measured search over legal schedules (``po.tune``).

A :class:`Task` is a kernel with a :class:`ConfigSpace` of schedules: a template's knobs
(:func:`template_task`), the automatic scheduler's choices (:func:`auto_task`), or a
library template's parameters (:func:`matmul_task`, :func:`conv2d_task`).  A tuner
(:class:`RandomTuner`, :class:`GridSearchTuner`, :class:`GATuner`, :class:`XGBTuner`)
picks points, a runner (:class:`LocalRunner`) builds and times them in worker processes
and checks their numbers against the untuned schedule, a :class:`RecordsDB` keeps every
trial, and :func:`apply_best` builds the best one.  See docs/tuning.md.
"""

from .compare import mismatch, tolerance
from .errors import RecordsError, TuningError
from .features import nest_features
from .measure import LocalRunner, MeasureInput, MeasureResult, Runner
from .records import (RecordsDB, applying_best, apply_best, best_config, current_best,
                      machine_fingerprint)
from .space import (AnnotateEntity, ConfigEntity, ConfigSpace, OtherOptionEntity,
                    ReorderEntity, SplitEntity, knob_features)
from .spaces import auto_options, auto_space, auto_task, conv2d_task, matmul_task
from .task import Task, template_task, unscheduled
from .tuners import (GATuner, GridSearchTuner, ModelTuner, RandomTuner, TuneSummary, Tuner,
                     XGBTuner)

__all__ = ["AnnotateEntity", "ConfigEntity", "ConfigSpace", "GATuner", "GridSearchTuner",
           "LocalRunner", "MeasureInput", "MeasureResult", "ModelTuner", "OtherOptionEntity",
           "RandomTuner", "RecordsDB", "RecordsError", "ReorderEntity", "Runner",
           "SplitEntity", "Task", "TuneSummary", "Tuner", "TuningError", "XGBTuner",
           "apply_best", "applying_best", "auto_options", "auto_space", "auto_task", "conv2d_task", "matmul_task", "best_config", "current_best", "knob_features",
           "machine_fingerprint", "mismatch", "nest_features", "template_task", "tolerance",
           "unscheduled"]
