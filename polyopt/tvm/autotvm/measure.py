"""``autotvm.measure_option``, ``LocalBuilder``, ``LocalRunner``: TVM's measurement
options, on :class:`polyopt.tune.LocalRunner`.

polyopt builds, checks and times each candidate in one forked worker under one time
limit: ``measure_option`` gives it the builder's and the runner's limits added (10 s
each by default).  ``repeat`` is the number of timed samples (their median is the cost);
each sample calls the kernel as often as it takes to last ``min_repeat_ms`` (1 ms at
least), which stands for TVM's ``number``.

>>> option = measure_option(builder="local", runner=LocalRunner(number=5))
>>> option["runner"].repeat, option["runner"].timeout
(3, 20.0)
"""

from __future__ import annotations

from ...errors import InvalidArgumentError, public
from ...tune import LocalRunner as _PolyoptRunner
from ...tune.measure import Runner

__all__ = ["LocalBuilder", "LocalRunner", "measure_option"]


class LocalBuilder:
    """``autotvm.LocalBuilder(timeout=10, n_parallel=None)``: accepted; polyopt builds
    each candidate in the worker that times it, under the runner's time limit."""

    def __init__(self, timeout: float = 10, n_parallel=None, build_kwargs=None,
                 build_func="default", do_fork=False, runtime=None):
        self.timeout, self.n_parallel = timeout, n_parallel

    def __repr__(self):
        return "LocalBuilder()"


@public
def LocalRunner(timeout: float = 10, number: int = 4, repeat: int = 3,  # noqa: N802
                min_repeat_ms: float = 0, cooldown_interval: float = 0.1,
                enable_cpu_cache_flush: bool = False, module_loader=None,
                **_tvm_only) -> _PolyoptRunner:
    """``autotvm.LocalRunner(number=5, repeat=1, min_repeat_ms=0, timeout=10)``: a
    :class:`polyopt.tune.LocalRunner` (see the module docstring)."""
    for label, value in (("number", number), ("repeat", repeat)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"autotvm.LocalRunner: {label} must be an int >= 1, "
                                       f"got {value!r}")
    runner = _PolyoptRunner(timeout=timeout, repeat=repeat,
                            min_repeat_ms=max(1.0, float(min_repeat_ms)))
    runner.run_timeout = runner.timeout  # (measure_option adds the builder's)
    return runner


@public
def measure_option(builder="local", runner="local", **_tvm_only) -> dict:
    """``autotvm.measure_option(builder=..., runner=...)``: what a tuner's ``tune``
    takes; ``"local"`` means the default of each."""
    if builder == "local":
        builder = LocalBuilder()
    if runner == "local":
        runner = LocalRunner()
    if not isinstance(builder, LocalBuilder):
        raise InvalidArgumentError(f"measure_option: builder is 'local' or "
                                   f"autotvm.LocalBuilder(), got {builder!r}")
    if not isinstance(runner, Runner):
        raise InvalidArgumentError(f"measure_option: runner is 'local', "
                                   f"autotvm.LocalRunner(...) or a po.tune runner "
                                   f"(DaskRunner), got {runner!r}")
    if hasattr(runner, "run_timeout"):  # one of autotvm.LocalRunner: one limit for both
        runner.timeout = runner.run_timeout + float(builder.timeout)
    return {"builder": builder, "runner": runner}
