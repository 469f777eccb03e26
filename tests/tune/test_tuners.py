"""Small tuning runs end to end: space -> tuner -> runner -> records -> apply_best, the
winner's numbers against NumPy; the model tuner with xgboost and with its fallback."""

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError, PolyoptWarning
from polyopt.tune import tuners
from testlib.numeric import assert_numbers

N = 64  # (the matmul of conftest.py)


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((N, N)).astype("float32") for _ in range(2)]


def _check_kernel(kernel):
    a, b = _inputs()
    c = np.zeros((N, N), "float32")
    kernel(a, b, c)
    assert_numbers(c, a @ b)


@pytest.mark.parametrize("tuner_class", [
    po.tune.RandomTuner, *(pytest.param(t, marks=pytest.mark.slow) for t in (
        po.tune.GridSearchTuner, po.tune.GATuner, po.tune.XGBTuner))])
def test_a_template_run_records_every_trial_and_its_winner_computes_the_product(
        tmp_path, matmul_task, tuner_class):
    db = po.tune.RecordsDB(tmp_path)
    tuner = tuner_class(matmul_task, batch_size=3)
    summary = tuner.tune(6, po.tune.LocalRunner(repeat=2, timeout=60), db=db)
    assert summary.trials == 6 and summary.failed == 0
    records = db.records(matmul_task.signature, matmul_task.target_key)
    assert len(records) == 6 and all(r["script"] is not None for r in records)
    best = db.best(matmul_task.signature, matmul_task.target_key)
    assert best["config"] == summary.best_config.to_json()
    assert summary.best_cost == pytest.approx(np.median(best["result"]["costs"]))
    _check_kernel(po.tune.apply_best(db, matmul_task))
    with po.tune.applying_best(db):
        assert po.tune.current_best(matmul_task) == summary.best_config


def test_an_auto_scheduler_space_tunes_a_kernel_without_a_template(tmp_path):
    A = po.placeholder((N, N), name="A")
    B = po.placeholder((N, N), name="B")
    C = po.ops.matmul(A, B)
    task = po.tune.auto_task(C)
    assert len(task.space) > 1000
    db = po.tune.RecordsDB(tmp_path)
    summary = po.tune.RandomTuner(task, batch_size=2, seed=3).tune(
        3, po.tune.LocalRunner(repeat=1, timeout=60), db=db)
    assert summary.trials == 3 and summary.best_config is not None
    assert 0 in {r["config"]["index"] for r in db.records(task.signature, task.target_key)}
    _check_kernel(po.tune.apply_best(db, task))


@pytest.mark.slow
def test_the_model_tuner_learns_after_its_first_batch(tmp_path, matmul_task):
    tuner = po.tune.XGBTuner(matmul_task, batch_size=4)
    tuner.tune(12, po.tune.LocalRunner(repeat=1, timeout=60))
    assert tuner.knob_model is not None and tuner.trials == 12
    assert len(set(tuner.measured)) == 12
    kind = tuners.XGBRankModel if tuners.xgboost_available() else tuners.RidgeRankModel
    assert isinstance(tuner.knob_model, kind)


def test_without_xgboost_the_model_tuner_falls_back_with_a_warning(monkeypatch, matmul_task):
    monkeypatch.setattr(tuners.models, "xgboost_available", lambda: False)
    tuner = po.tune.XGBTuner(matmul_task, batch_size=4)
    with pytest.warns(PolyoptWarning, match="xgboost is not installed"):
        tuner.tune(8, po.tune.LocalRunner(repeat=1, timeout=60))
    assert isinstance(tuner.knob_model, tuners.RidgeRankModel)
    assert len(tuner.measured) == 8


def test_rank_models_order_a_known_ranking():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(60, 3))
    y = 3 * X[:, 0] - X[:, 1]
    models = [tuners.RidgeRankModel()]
    if tuners.xgboost_available():
        models.append(tuners.XGBRankModel())
    for model in models:
        predicted = model.fit(X, y).predict(X)
        agree = np.corrcoef(np.argsort(np.argsort(predicted)), np.argsort(np.argsort(y)))[0, 1]
        assert agree > 0.8, type(model).__name__


def test_tuner_arguments_are_checked(matmul_task):
    with pytest.raises(InvalidArgumentError):
        po.tune.RandomTuner("not a task")
    with pytest.raises(InvalidArgumentError):
        po.tune.RandomTuner(matmul_task, batch_size=0)
    with pytest.raises(InvalidArgumentError):
        po.tune.RandomTuner(matmul_task).tune(-1)
    with pytest.raises(InvalidArgumentError):
        po.tune.RandomTuner(matmul_task).tune(2, db="records.jsonl")
    with pytest.raises(InvalidArgumentError):
        po.tune.ModelTuner(matmul_task, model="forest")


@pytest.mark.slow
def test_records_of_another_shape_train_the_loop_nest_model(tmp_path):
    from conftest import matmul_template
    db = po.tune.RecordsDB(tmp_path)
    small = po.tune.template_task("matmul", matmul_template, (16,))
    po.tune.RandomTuner(small, batch_size=4).tune(6, po.tune.LocalRunner(repeat=1), db=db)
    large = po.tune.template_task("matmul", matmul_template, (32,))
    assert large.signature != small.signature
    related = db.related(large)
    assert len(related) == 6 and all(len(r["features"]) == po.tune.features.LENGTH
                                     for r in related)
    tuner = po.tune.ModelTuner(large, model="ridge", batch_size=4)
    tuner.tune(4, po.tune.LocalRunner(repeat=1), db=db)
    assert tuner.nest_model is not None  # (4 own points alone are too few: 6 + 4 >= 8)


class CountingRunner(po.tune.Runner):
    """Times nothing: a cost per point from its index, every input remembered."""

    def __init__(self):
        self.seen = []

    def run(self, inputs):
        self.seen += [item.config.index for item in inputs]
        return [po.tune.MeasureResult((1e-3 / (1 + item.config.index),)) for item in inputs]


def test_points_with_the_same_schedule_are_measured_once():
    A = po.placeholder((16,), name="A")
    B = po.compute((16,), lambda i: A[i] * 2.0, name="B")

    def template(cfg):
        s = po.create_schedule(B)
        cfg.define_knob("split", [2, 4])
        cfg.define_knob("unused", [0, 1, 2])  # (changes nothing: the same schedule)
        s[B].split(B.op.axis[0], factor=cfg["split"].val)
        return s, [A, B]

    task = po.tune.template_task("double", template)
    runner = CountingRunner()
    summary = po.tune.GridSearchTuner(task, batch_size=6).tune(6, runner)
    assert sorted(runner.seen) == [0, 1] and summary.trials == 6
    assert summary.best_config.index == 1  # (the cost the runner gave point 1)
