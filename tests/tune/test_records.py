"""RecordsDB: one checksummed JSON line per trial, per machine; damaged lines refused,
other machines' records ignored with a warning, private folders only, resume."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import polyopt as po
from polyopt.errors import PolyoptWarning
from polyopt.tune import MeasureResult, RecordsDB, RecordsError


def _add(db, task, index, cost):
    return db.add(task, task.space.get(index), MeasureResult((cost, cost)),
                  script=f"script {index}", features=[1.0, 2.0])


def test_best_and_measured(tmp_path, matmul_task):
    db = RecordsDB(tmp_path / "db")
    for index, cost in ((3, 2e-3), (5, 1e-3), (7, 4e-3)):
        _add(db, matmul_task, index, cost)
    db.add(matmul_task, matmul_task.space.get(9), MeasureResult(status="refused",
                                                                error="no"))
    key = (matmul_task.signature, matmul_task.target_key)
    assert db.best(*key)["config"]["index"] == 5
    assert len(db.measured(*key)) == 4
    assert po.tune.best_config(db, matmul_task).index == 5
    assert os.stat(tmp_path / "db").st_mode & 0o077 == 0


def test_tampered_and_truncated_lines_are_refused_with_a_warning(tmp_path, matmul_task):
    db = RecordsDB(tmp_path)
    for index in range(4):
        _add(db, matmul_task, index, 1e-3 * (index + 1))
    lines = open(db.path).read().splitlines()
    edited = json.loads(lines[0])
    edited["result"]["costs"] = [1e-9, 1e-9]  # (a faster time written in by hand)
    lines[0] = json.dumps(edited, sort_keys=True)
    lines[2] = lines[2][:len(lines[2]) // 2]  # (a run killed mid-line)
    with open(db.path, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with pytest.warns(PolyoptWarning, match="2 damaged, truncated or edited"):
        kept = RecordsDB(tmp_path).records(matmul_task.signature, matmul_task.target_key)
    assert sorted(r["config"]["index"] for r in kept) == [1, 3]


def test_a_line_appended_after_a_truncated_one_stays_whole(tmp_path, matmul_task):
    db = RecordsDB(tmp_path)
    _add(db, matmul_task, 0, 1e-3)
    with open(db.path, "ab") as handle:
        handle.write(b'{"format": 1, "mach')
    _add(db, matmul_task, 1, 2e-3)
    with pytest.warns(PolyoptWarning, match="1 damaged"):
        kept = RecordsDB(tmp_path).records(matmul_task.signature, matmul_task.target_key)
    assert [r["config"]["index"] for r in kept] == [0, 1]


def test_records_of_another_machine_are_ignored_with_a_warning(tmp_path, matmul_task):
    other = RecordsDB(tmp_path, machine="0123456789abcdef")
    _add(other, matmul_task, 0, 1e-3)
    with pytest.warns(PolyoptWarning, match="other machine"):
        mine = RecordsDB(tmp_path)
        assert mine.records(matmul_task.signature, matmul_task.target_key) == []
    os.replace(other.path, mine.path)  # (a file copied from another machine)
    with pytest.warns(PolyoptWarning, match="of another machine ignored"):
        assert RecordsDB(tmp_path).records(matmul_task.signature, matmul_task.target_key) == []


def test_fingerprints_name_the_cpu_and_its_features():
    info = po.TargetInfo.for_cpu("haswell", "+avx2,+fma")
    assert po.tune.machine_fingerprint(info) == po.tune.machine_fingerprint(
        po.TargetInfo.for_cpu("haswell", "+avx2,+fma"))
    assert po.tune.machine_fingerprint(info) != po.tune.machine_fingerprint(
        po.TargetInfo.for_cpu("haswell", "-fma"))


def test_folders_and_files_others_can_write_are_refused(tmp_path, matmul_task):
    (tmp_path / "afile").write_text("")
    with pytest.raises(RecordsError, match="is a file"):
        RecordsDB(tmp_path / "afile")
    db = RecordsDB(tmp_path / "db")
    _add(db, matmul_task, 0, 1e-3)
    os.chmod(db.path, 0o666)
    with pytest.raises(RecordsError, match="only you may write"):
        RecordsDB(tmp_path / "db").records(matmul_task.signature, matmul_task.target_key)
    os.chmod(db.path, 0o600)
    os.symlink(db.path, tmp_path / "db" / "link")
    os.replace(tmp_path / "db" / "link", db.path + ".tmp")
    os.replace(db.path + ".tmp", db.path)  # (the records file is now a symbolic link)
    with pytest.raises(RecordsError):
        _add(RecordsDB(tmp_path / "db"), matmul_task, 1, 1e-3)


RESUMED = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests!r})
    import polyopt as po
    from conftest import matmul_template
    task = po.tune.template_task("matmul", matmul_template, (16,))
    db = po.tune.RecordsDB({folder!r})
    kill_after = int(sys.argv[1])
    def stop(tuner, inputs, results):
        if kill_after and tuner.trials >= kill_after:
            os.kill(os.getpid(), 9)  # (killed mid-run)
    tuner = po.tune.RandomTuner(task, batch_size=2, seed=int(sys.argv[2]))
    summary = tuner.tune(10, po.tune.LocalRunner(repeat=1, timeout=60), db=db,
                         callbacks=[stop])
    print(summary.trials)
""")


@pytest.mark.slow
def test_a_killed_run_resumes_without_measuring_a_point_twice(tmp_path):
    script = tmp_path / "tune_it.py"
    script.write_text(RESUMED.format(tests=os.path.dirname(__file__),
                                     folder=str(tmp_path / "db")))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(po.__file__)))
    killed = subprocess.run([sys.executable, str(script), "4", "1"], env=env,
                            capture_output=True, text=True)
    assert killed.returncode == -9, killed.stderr
    finished = subprocess.run([sys.executable, str(script), "0", "2"], env=env,
                              capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.split()[-1] == "10"
    lines = [json.loads(line) for line in open(next((tmp_path / "db").glob("*.jsonl")))]
    indices = [line["config"]["index"] for line in lines]
    assert len(indices) == 10 and len(set(indices)) == 10


@pytest.mark.parametrize("call", [
    lambda db, task: RecordsDB(123),
    lambda db, task: RecordsDB(db.folder, machine=5),
    lambda db, task: db.add("task", None, None),
    lambda db, task: po.tune.apply_best("db", task),
    lambda db, task: po.tune.best_config(db, "task"),
    lambda db, task: po.tune.current_best("task"),
    lambda db, task: task.space.neighbors(0, "rng"),
])
def test_bad_input_is_a_typed_error(tmp_path, matmul_task, call):
    from polyopt.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError):
        call(RecordsDB(tmp_path), matmul_task)


def test_apply_best_without_records_warns_and_uses_the_untuned_schedule(tmp_path,
                                                                          matmul_task):
    with pytest.warns(PolyoptWarning, match="untuned schedule is used"):
        schedule, _ = po.tune.apply_best(RecordsDB(tmp_path), matmul_task, build=False)
    assert schedule.script() == ""
