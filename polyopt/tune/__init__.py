"""Autotuning: measured search over legal schedules (``po.tune``).

A :class:`Task` is a kernel with a :class:`ConfigSpace` of schedules (a template's knobs,
:func:`template_task`); a runner (:class:`LocalRunner`) builds and times points in worker
processes and checks their numbers against the untuned schedule.  See docs/tuning.md.
"""

from .compare import mismatch, tolerance
from .errors import RecordsError, TuningError
from .measure import LocalRunner, MeasureInput, MeasureResult, Runner
from .space import (AnnotateEntity, ConfigEntity, ConfigSpace, OtherOptionEntity,
                    ReorderEntity, SplitEntity, knob_features)
from .task import Task, template_task, unscheduled

__all__ = ["AnnotateEntity", "ConfigEntity", "ConfigSpace", "LocalRunner", "MeasureInput",
           "MeasureResult", "OtherOptionEntity", "RecordsError", "ReorderEntity", "Runner",
           "SplitEntity", "Task", "TuningError", "knob_features", "mismatch", "template_task",
           "tolerance", "unscheduled"]
