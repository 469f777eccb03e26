"""LocalRunner: candidates built and timed in a worker; a crash, a hang, a refused point
or wrong numbers cost one trial each."""

import os
import time

import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError
from polyopt.tune import LocalRunner, MeasureInput


def test_a_point_is_measured_and_checked(matmul_task):
    runner = LocalRunner(repeat=3, timeout=60)
    result, = runner.run([MeasureInput(matmul_task, matmul_task.space.get(5))])
    assert result.status == "ok", result.error
    assert len(result.costs) == 3 and result.cost > 0 and result.build_seconds > 0
    assert runner.baseline(matmul_task).ok


def test_crash_and_hang_cost_one_trial_each(matmul_task):
    def hook(config):
        if config.index == 1:
            os.abort()
        if config.index == 2:
            time.sleep(600)

    runner = LocalRunner(repeat=1, timeout=8, before_run=hook)
    points = [MeasureInput(matmul_task, matmul_task.space.get(k)) for k in (1, 2, 3)]
    results = runner.run(points)
    assert [r.status for r in results] == ["crash", "timeout", "ok"]
    assert "SIGABRT" in results[0].error


def test_a_point_the_check_refuses_is_never_built_and_c_kernels_are_measured():
    kernel = po.from_c("void prefix(float A[16]) "
                       "{ for (int i = 1; i < 16; i++) A[i] = A[i-1] + A[i]; }")
    space = po.tune.ConfigSpace()
    space.define_knob("parallel", [False, True])

    def instantiate(cfg):
        s = po.create_schedule(kernel)
        if cfg["parallel"].val:
            s["S0"].parallel("i")  # (carries the prefix sum's dependence)
        return s, None

    task = po.tune.Task("prefix", space, instantiate)
    runner = LocalRunner(repeat=1)
    results = runner.run([MeasureInput(task, space.get(k)) for k in (1, 0)])
    assert [r.status for r in results] == ["refused", "ok"]
    assert "carries a dependence" in results[0].error


def test_runner_arguments_are_checked():
    for bad in ({"repeat": 0}, {"timeout": -1}, {"threads": 0}, {"before_run": 3}):
        with pytest.raises(InvalidArgumentError):
            LocalRunner(**bad)


def test_a_task_gives_its_own_inputs_to_the_kernel(tmp_path):
    import numpy as np
    kernel = po.from_c("void halve(float A[64], float B[64]) "
                       "{ for (int i = 0; i < 64; i++) A[i] = A[i] / B[i]; }")
    space = po.tune.ConfigSpace()
    space.define_knob("split", [2, 4])

    def instantiate(cfg):
        s = po.create_schedule(kernel)
        s["S0"].split("i", factor=cfg["split"].val)
        return s, None

    def task(divisors):
        return po.tune.Task("halve", space, instantiate,
                            inputs=lambda seed: {"B": divisors})

    with pytest.raises(po.tune.TuningError, match="did not run"):  # (7 values for 64)
        LocalRunner(repeat=1).run([MeasureInput(task(np.full(7, 2.0)), space.get(1))])
    result, = LocalRunner(repeat=1).run([MeasureInput(task(np.full(64, 2.0)),
                                                      space.get(1))])
    assert result.status == "ok", result.error


def test_a_point_computing_other_numbers_is_wrong_and_never_wins(tmp_path):
    def template(cfg):
        A = po.placeholder((64,), name="A")
        cfg.define_knob("factor", [2.0, 3.0])  # (a template bug: the knob changes the maths)
        B = po.compute((64,), lambda i: A[i] * cfg["factor"].val, name="B")
        return po.create_schedule(B), [A, B]

    task = po.tune.template_task("scale", template)
    runner = LocalRunner(repeat=1)
    wrong, = runner.run([MeasureInput(task, task.space.get(1))])
    assert wrong.status == "wrong" and "differs from the untuned schedule" in wrong.error
    assert not wrong.ok and wrong.cost == float("inf")
    db = po.tune.RecordsDB(tmp_path)
    summary = po.tune.GridSearchTuner(task).tune(2, runner, db=db)
    assert summary.best_config.index == 0 and summary.failed == 1
    assert db.best(task.signature, task.target_key)["config"]["index"] == 0
