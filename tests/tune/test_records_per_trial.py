"""Every trial is recorded as soon as it is measured, not at the end of its batch: a
tuning process killed (SIGKILL) in the middle of a batch keeps the trials it finished,
and the run resumed from the records measures none of them again."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import polyopt as po
from polyopt.tune import LocalRunner, RandomTuner, RecordsDB, template_task

sys.path.insert(0, os.path.dirname(__file__))
from conftest import matmul_template  # noqa: E402

BATCH = 16  # one batch holds the whole run: records before its end are per trial
HANG_AT = 4  # the measured trial that hangs (its worker sleeps) until the kill

TUNING = textwrap.dedent("""
    import os, sys, time
    sys.path.insert(0, {tests!r})
    import polyopt as po
    from conftest import matmul_template
    started = {started!r}

    def before_run(config):  # (in the forked worker of each measured trial)
        with open(started, "a") as handle:
            handle.write(f"{{config.index}}\\n")
        with open(started) as handle:
            if len(handle.read().split()) >= {hang_at}:
                time.sleep(600)  # (in flight when the process is killed)

    task = po.tune.template_task("matmul", matmul_template, (16,))
    db = po.tune.RecordsDB({folder!r})
    runner = po.tune.LocalRunner(repeat=1, timeout=600, before_run=before_run)
    po.tune.RandomTuner(task, batch_size={batch}, seed=3).tune({batch}, runner, db=db)
    print("finished")
""")


def _records(folder) -> list[dict]:
    files = list(folder.glob("*.jsonl")) if folder.exists() else []
    if not files:
        return []
    lines = files[0].read_text().splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


class CountingRunner(LocalRunner):
    """A LocalRunner that notes the points it is given."""

    def __init__(self, **options):
        super().__init__(**options)
        self.given = []

    def run(self, inputs, on_result=None):
        self.given += [item.config.index for item in inputs]
        return super().run(inputs, on_result=on_result)


@pytest.mark.slow
def test_a_process_killed_mid_batch_keeps_its_finished_trials_and_resumes(tmp_path):
    folder, started = tmp_path / "db", tmp_path / "started"
    script = tmp_path / "tune_it.py"
    script.write_text(TUNING.format(tests=os.path.dirname(__file__), started=str(started),
                                    hang_at=HANG_AT, folder=str(folder), batch=BATCH))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(po.__file__)))
    process = subprocess.Popen([sys.executable, str(script)], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # (a guard against a test that never ends)
        while time.monotonic() < deadline and process.poll() is None:
            # (a trial's record is written before the next trial's worker starts)
            if started.exists() and len(started.read_text().split()) >= HANG_AT:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.communicate()[1][-2000:]
        os.killpg(process.pid, signal.SIGKILL)  # (the tuner and its hanging worker)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    before = [r["config"]["index"] for r in _records(folder)]
    # the batch of 16 never ended, yet the finished trials were written (per batch,
    # none would be); the hanging one was not
    assert HANG_AT - 1 <= len(before) < BATCH
    assert len(set(before)) == len(before)
    assert all(r["result"]["status"] == "ok" for r in _records(folder))

    task = template_task("matmul", matmul_template, (16,))
    runner = CountingRunner(repeat=1, timeout=600)
    summary = RandomTuner(task, batch_size=BATCH, seed=3).tune(BATCH, runner,
                                                               db=RecordsDB(folder))
    after = [r["config"]["index"] for r in _records(folder)]
    assert summary.trials == BATCH
    assert len(after) == BATCH and len(set(after)) == BATCH
    assert runner.given and set(runner.given).isdisjoint(before)


class StoppingRunner:
    """A runner that hands each result over as it is measured (made-up times) and stops
    (as a process that is killed would) before the ``stop_at``-th input of a batch."""

    def __init__(self, stop_at: int | None = None):
        self.stop_at, self.given = stop_at, []

    def run(self, inputs, on_result=None):
        results = []
        for number, item in enumerate(inputs):
            if number == self.stop_at:
                raise KeyboardInterrupt  # (the run ends here, mid-batch)
            self.given.append(item.config.index)
            results.append(po.tune.MeasureResult((1e-3 * (item.config.index + 1),)))
            on_result(item, results[-1])
        return results


class OneAtATimeRunner:
    """A runner whose run takes no on_result: given one point at a time."""

    def __init__(self):
        self.batches = []

    def run(self, inputs):
        self.batches.append(len(inputs))
        return [po.tune.MeasureResult((1e-3,)) for _ in inputs]


def test_trials_are_recorded_before_their_batch_ends(tmp_path, matmul_task):
    db = RecordsDB(tmp_path / "db")
    with pytest.raises(KeyboardInterrupt):
        RandomTuner(matmul_task, batch_size=8, seed=1).tune(8, StoppingRunner(stop_at=5),
                                                             db=db)
    key = (matmul_task.signature, matmul_task.target_key)
    recorded = [r["config"]["index"] for r in db.records(*key)]
    assert 5 <= len(recorded) < 8  # (the 5 measured, and points sharing their programs)
    runner = StoppingRunner()
    summary = RandomTuner(matmul_task, batch_size=8, seed=1).tune(8, runner, db=db)
    assert summary.trials == 8 and set(runner.given).isdisjoint(recorded)
    assert len({r["config"]["index"] for r in db.records(*key)}) == 8 == len(db)


def test_a_runner_without_on_result_is_given_one_point_at_a_time(tmp_path, matmul_task):
    db = RecordsDB(tmp_path / "db")
    runner = OneAtATimeRunner()
    summary = RandomTuner(matmul_task, batch_size=8, seed=2).tune(8, runner, db=db)
    assert summary.trials == 8 == len(db)
    assert runner.batches and set(runner.batches) == {1}
