"""DaskRunner on a real LocalCluster (2 worker processes, one of them measuring): the
same statuses and numbers as a LocalRunner, measurement only on the measuring worker,
and a worker killed mid-run loses no trial."""

import copy
import os
import signal
import sys
import threading

import pytest

import polyopt as po
from polyopt.errors import BackendError, InvalidArgumentError
from polyopt.kernels.key import kernel_key
from polyopt.target.base import get_target, target_key
from polyopt.tune import MeasureInput, RandomTuner, RecordsDB, template_task

distributed = pytest.importorskip("distributed",
                                  reason="the dask extra: pip install 'polyopt[dask]'")
cloudpickle = pytest.importorskip("cloudpickle")
from polyopt.tune.dask_runner import MEASURE_RESOURCE, DaskRunner  # noqa: E402

# the workers cannot import this test module: its templates travel by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def scaled_sum(cfg, n=64):
    """A template with a split knob (every point legal)."""
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 3.0 + 1.0, name="B")
    s = po.create_schedule(B)
    cfg.define_split("split", n, num_outputs=2)
    cfg["split"].apply(s, B, B.op.axis[0])
    return s, [A, B]


def row_sums(cfg, n=32):
    """Row sums with a knob making the reduction loop parallel: refused."""
    A = po.placeholder((n, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    B = po.compute((n,), lambda i: po.sum(A[i, k], axis=k), name="B")
    s = po.create_schedule(B)
    cfg.define_knob("parallel", [False, True])
    if cfg["parallel"].val:
        s[B].parallel(k)
    return s, [A, B]


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes: one measuring (the resource), one only checking."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None,
                                  resources={MEASURE_RESOURCE: 1}) as local:
        local.new_spec = copy.deepcopy(local.new_spec)  # the next worker: no resource
        local.new_spec["options"].pop("resources")
        local.scale(2)
        with distributed.Client(local) as client:
            client.wait_for_workers(2, timeout=120)
            yield local, client


def _sources(keys):
    """(On a worker) where the build cache's kernel of each key came from."""
    from polyopt.kernels.memory import build_cache
    return [getattr(build_cache.get(key), "source", None) for key in keys]


def _measuring(client):
    return [a for a, w in client.scheduler_info()["workers"].items()
            if (w.get("resources") or {}).get(MEASURE_RESOURCE)]


@pytest.mark.slow
def test_candidates_measured_on_the_cluster_have_the_local_statuses(cluster):
    _, client = cluster
    task = template_task("scaled_sum", scaled_sum, (64,))
    inputs = [MeasureInput(task, task.space.get(i)) for i in range(len(task.space))]
    seen = []
    runner = DaskRunner(client, timeout=60, repeat=2, threads=1,
                        on_result=lambda item, result: seen.append((item.config.index,
                                                                    result.status)))
    results = runner.run(inputs)
    assert [r.status for r in results] == ["ok"] * len(inputs)
    assert all(len(r.costs) == 2 and min(r.costs) > 0 for r in results)
    assert sorted(seen) == [(i, "ok") for i in range(len(inputs))]
    # each kernel was compiled by a check task and linked into the measuring worker's
    # build cache under the key po.build computes there (so it did not compile it)
    keys = [kernel_key(po.lower(*item.task.instantiate(item.config), target="llvm"),
                       target_key(get_target("llvm")), {"num_threads": 1})
            for item in inputs]
    found = client.run(_sources, keys, workers=_measuring(client))
    assert list(found.values()) == [["adopted"] * len(inputs)]
    assert runner.baseline(task).ok
    runner.close()  # (a Client it was given stays open)
    assert client.status == "running"


@pytest.mark.slow
def test_a_refused_point_is_a_refused_trial(cluster):
    _, client = cluster
    task = template_task("row_sums", row_sums, ())
    runner = DaskRunner(client, timeout=60, repeat=1)
    legal, illegal = runner.run([MeasureInput(task, task.space.get(0)),
                                 MeasureInput(task, task.space.get(1))])
    assert legal.status == "ok"
    assert illegal.status == "refused" and "LoopCarriesDependenceError" in illegal.error


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_no_trial(cluster):
    """The measuring worker's process is killed while candidates are in flight; its
    nanny starts it again and Dask runs the lost tasks again: every input gets a result
    (measured, or counted as failed), each handed to on_result once."""
    _, client = cluster
    task = template_task("scaled_sum", scaled_sum, (4096,))
    inputs = [MeasureInput(task, task.space.get(i)) for i in range(len(task.space))]
    arrived = []
    killed = threading.Event()
    pids = client.run(os.getpid, workers=_measuring(client))

    def on_result(item, result):
        arrived.append(item.config.index)
        if len(arrived) == 2 and not killed.is_set():
            killed.set()
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)

    runner = DaskRunner(client, timeout=60, repeat=2, retries=3, on_result=on_result)
    results = runner.run(inputs)
    assert killed.is_set()
    assert len(results) == len(inputs) and all(r is not None for r in results)
    assert sorted(arrived) == list(range(len(inputs)))
    assert {r.status for r in results} <= {"ok", "crash"}
    assert sum(r.ok for r in results) >= len(inputs) - 1
    assert set(client.run(os.getpid).values()).isdisjoint(pids.values())  # it was killed


@pytest.mark.slow
def test_a_tuning_run_with_a_killed_worker_records_every_trial(cluster, tmp_path):
    """A tuner measuring on the cluster while the measuring worker is killed: every
    trial is in the records, and a second run resumes without measuring any again."""
    _, client = cluster
    task = template_task("scaled_sum", scaled_sum, (2048,))
    pids = client.run(os.getpid, workers=_measuring(client))
    arrived = []

    def on_result(item, result):
        arrived.append(item)
        if len(arrived) == 3:
            for pid in pids.values():
                os.kill(pid, signal.SIGKILL)

    db = RecordsDB(str(tmp_path / "records"))
    runner = DaskRunner(client, timeout=60, repeat=2, retries=3, on_result=on_result)
    summary = RandomTuner(task, batch_size=4).tune(8, runner, db=db)
    assert summary.trials == 8 and len(db) == 8
    again = []
    runner = DaskRunner(client, timeout=60, repeat=2,
                        on_result=lambda item, result: again.append(item))
    assert RandomTuner(task, batch_size=4).tune(8, runner, db=db).trials == 8
    assert again == [] and len(db) == 8


def hang_at_point_one(config):
    """(A test hook, in the check task's child) the check of point 1 never ends."""
    import time
    if config.index == 1:
        time.sleep(600)


@pytest.mark.slow
def test_a_hanging_check_costs_one_trial_not_the_worker(cluster):
    """The check of one point hangs on a worker: it is killed at check_timeout (status
    "timeout"), the other points are measured and the workers live on."""
    _, client = cluster
    task = template_task("scaled_sum", scaled_sum, (64,))
    pids = client.run(os.getpid)
    runner = DaskRunner(client, timeout=60, check_timeout=5, repeat=1,
                        before_check=hang_at_point_one)
    results = runner.run([MeasureInput(task, task.space.get(i)) for i in range(3)])
    assert [r.status for r in results] == ["ok", "timeout", "ok"]
    assert "over the time limit of 5 s" in results[1].error and results[1].costs == ()
    assert client.run(os.getpid) == pids  # (no worker was lost or restarted)
    assert [r.status for r in runner.run([MeasureInput(task, task.space.get(1))])] == \
        ["timeout"]  # (and the next check of it on the same workers ends the same way)


def test_the_runner_says_how_to_connect():
    with pytest.raises(InvalidArgumentError, match="scheduler address"):
        DaskRunner(42)
    with pytest.raises(InvalidArgumentError, match="retries"):
        DaskRunner("local", retries=-1)
    with pytest.raises(InvalidArgumentError, match="check_timeout"):
        DaskRunner("local", check_timeout=0)
    with pytest.raises(InvalidArgumentError, match="before_check"):
        DaskRunner("local", before_check=3)


def test_a_cluster_without_a_measuring_worker_is_refused():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as local, \
            distributed.Client(local) as client:
        runner = DaskRunner(client, wait_for_workers=0.5)
        assert runner.measuring_workers() == []
        task = template_task("scaled_sum", scaled_sum, (64,))
        with pytest.raises(BackendError, match="--resources measure=1"):
            runner.run([MeasureInput(task, task.space.get(0))])
