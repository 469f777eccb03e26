"""``from polyopt.tvm import autotvm``: TVM's AutoTVM on polyopt's autotuning
(:mod:`polyopt.tune`), so TVM's tutorial "Optimizing Operators with Schedule Templates
and AutoTVM" runs with its imports changed (``tests/tvm_compat``).

``@autotvm.template(name)`` and ``autotvm.get_config()`` write a tunable template;
``autotvm.task.create(name, args, target)`` makes its task (``task.config_space``);
``autotvm.tuner.RandomTuner`` / ``GridSearchTuner`` / ``GATuner`` / ``XGBTuner`` tune
it with ``measure_option(builder=LocalBuilder(), runner=LocalRunner(...))`` and the
callbacks ``autotvm.callback.log_to_file(path)`` and ``progress_bar(n)``;
``with autotvm.apply_history_best(path):`` the template, called directly, builds with
its best record.  Every point is a checked schedule: one the check refuses is recorded
as refused and never measured.
"""

import types as _types

from ...errors import public as _public
from ...tune import ConfigEntity, ConfigSpace  # noqa: F401
from ...tune.records import applying_best as _applying_best
from . import callback, measure, task, tuner  # noqa: F401
from .callback import records_at as _records_at
from .measure import LocalBuilder, LocalRunner, measure_option  # noqa: F401
from .task import get_config, template  # noqa: F401

task.ConfigSpace, task.ConfigEntity = ConfigSpace, ConfigEntity  # autotvm.task.ConfigSpace


@_public
def apply_history_best(records):
    """``with autotvm.apply_history_best("matmul.log"):``: templates called inside build
    with the best record of their task (the untuned point when there is none)."""
    return _applying_best(_records_at(records))


env = _types.SimpleNamespace(GLOBAL_SCOPE=_types.SimpleNamespace(in_tuning=False))
