"""``polyopt tune``: a kernel tuned from a file, the final table, resuming, refusals."""

import json
import textwrap

import pytest

from polyopt.cli import main

SCALE = textwrap.dedent("""
    import polyopt as po
    A = po.placeholder((256,), name="A")
    outputs = [po.compute((256,), lambda i: A[i] * 3.0, name="B")]
""")

TEMPLATE = textwrap.dedent("""
    import polyopt as po

    def scale(cfg):
        A = po.placeholder((256,), name="A")
        B = po.compute((256,), lambda i: A[i] * 3.0, name="B")
        s = po.create_schedule(B)
        cfg.define_split("split", 256, num_outputs=2, policy="power2", max_factor=64)
        outer, inner = cfg["split"].apply(s, B, B.op.axis[0])
        cfg.define_knob("vectorize", [False, True])
        if cfg["vectorize"].val:
            s[B].vectorize(inner)
        return s, [A, B]

    task = po.tune.template_task("scale", scale)
""")


def _lines(db):
    (path,) = db.glob("*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_python_computation_is_tuned_and_a_second_run_resumes(tmp_path, capsys):
    source = tmp_path / "scale.py"
    source.write_text(SCALE)
    db = tmp_path / "db"
    args = [str(source), "--trials", "2", "--db", str(db), "--tuner", "random",
            "--batch", "2", "--repeat", "1"]
    assert main(["tune", *args]) == 0
    out = capsys.readouterr().out
    header, row = out.splitlines()[:2]
    assert header.split() == ["kernel", "trials", "refused", "failed", "untuned", "best",
                              "speedup"]
    assert row.split()[:4] == ["B", "2", "0", "0"] and row.endswith("x")  # (its output)
    assert "records:" in out
    args[2] = "4"
    assert main(["tune", *args]) == 0
    indices = [line["config"]["index"] for line in _lines(db)]
    assert len(indices) == 4 and len(set(indices)) == 4


def test_a_task_defined_in_the_file_is_tuned_as_it_is(tmp_path, capsys):
    source = tmp_path / "template.py"
    source.write_text(TEMPLATE)
    assert main(["tune", str(source), "--trials", "3", "--db", str(tmp_path / "db"),
                 "--tuner", "grid", "--repeat", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:2] == ["scale", "3"]
    assert {line["task"] for line in _lines(tmp_path / "db")} == {"scale"}


@pytest.mark.parametrize("args, message", [
    (["missing.py"], "no such file"),
    (["model.txt"], "takes a .c, .py or .onnx"),
    (["scale.py", "--sizes", "n=x"], "NAME=INTEGER"),
    (["scale.py", "--trials", "0"], "--trials"),
])
def test_bad_input_is_refused_with_status_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scale.py").write_text(SCALE)
    (tmp_path / "model.txt").write_text("")
    assert main(["tune", *args, "--db", str(tmp_path / "db")]) == 2
    assert message in capsys.readouterr().err


def test_a_model_is_handed_to_graph_tune_or_refused_clearly(tmp_path, capsys):
    import polyopt.graph as graph
    (tmp_path / "m.onnx").write_bytes(b"")
    code = main(["tune", str(tmp_path / "m.onnx"), "--db", str(tmp_path / "db")])
    assert code == 2  # (an empty file is no model either)
    if not callable(getattr(graph, "tune", None)):
        assert "polyopt.graph.tune" in capsys.readouterr().err
