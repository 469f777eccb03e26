"""po.graph.tune on a small ONNX model: its distinct kernels found (two identical conv
layers are one kernel), the budget shared by run time, every trial recorded, and
po.graph.compile(db=...) building the tuned kernels, whose numbers match onnxruntime."""

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

import polyopt as po  # noqa: E402
from polyopt.graph.tuning import share_budget  # noqa: E402
from polyopt.tune import LocalRunner, RecordsDB  # noqa: E402
from testlib.numeric import assert_numbers  # noqa: E402
from testlib.onnx_models import ModelBuilder, ort_run, random_inputs  # noqa: E402


def small_model():
    """Four conv+relu layers, the middle two the same kernel (blocked input and output,
    other weights), a flatten and a matrix product by an input matrix."""
    m = ModelBuilder(3)
    x = m.input("x", (1, 8, 12, 12))
    c = m.add("Relu", [m.add("Conv", [x, m.weight(16, 8, 3, 3)], pads=[1, 1, 1, 1])])
    for _ in range(3):
        c = m.add("Relu", [m.add("Conv", [c, m.weight(16, 16, 3, 3)], pads=[1, 1, 1, 1])])
    f = m.add("Reshape", [c, m.const(np.array([16, 144], "int64"))])
    y = m.add("MatMul", [f, m.input("w", (144, 64))])
    return m.model([y])


def test_the_budget_is_shared_by_run_time():
    assert share_budget(10, [3.0, 1.0, 1.0]) == [6, 2, 2]
    assert share_budget(7, [1.0, 1.0]) in ([4, 3], [3, 4])
    assert sum(share_budget(5, [0.1, 0.7, 0.2])) == 5
    assert share_budget(4, [0.0, 0.0]) == [0, 0]


@pytest.mark.slow
def test_a_tuned_model_matches_onnxruntime(tmp_path):
    model = small_model()
    g = po.graph.from_onnx(model)
    db = RecordsDB(str(tmp_path / "records"))
    report = po.graph.tune(g, budget=12, db=db, runner=LocalRunner(repeat=3, threads=1),
                           num_threads=1)
    kernels = [r["kernel"] for r in report.rows]
    assert kernels == ["convpacked_0", "convpacked_1,convpacked_2", "convpacked_3",
                       "matmul_5"], str(report)
    assert [r["template"] for r in report.rows] == ["conv2d_blocked"] * 3 + ["matmul"]
    assert sum(r["trials"] for r in report.rows) == 12
    assert len(db) == 12  # every trial recorded, the untuned point of each kernel first
    assert "speedup" in str(report)
    for task in report.tasks.values():  # point 0 is the untuned schedule
        assert task.instantiate(task.space.get(0))[0].script() == \
            task.default_instance()[0].script()
    tuned = po.graph.compile(g, num_threads=1, db=db, cache=False)
    assert any(s.template.endswith("+tuned") for s in tuned.steps), \
        [s.template for s in tuned.steps]
    feeds = random_inputs(model)
    expected = ort_run(model, feeds)
    got = tuned.run(feeds)
    for name in expected:
        assert_numbers(got[name], expected[name], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_a_model_tuned_on_a_dask_cluster(tmp_path):
    """The groups' tasks travel to the workers (each with only its own part of the
    model); every trial recorded; the tuned model still matches onnxruntime."""
    pytest.importorskip("distributed", reason="the dask extra: pip install 'polyopt[dask]'")
    from polyopt.tune.dask_runner import DaskRunner
    model = small_model()
    g = po.graph.from_onnx(model)
    db = RecordsDB(str(tmp_path / "records"))
    with DaskRunner("local", timeout=120, repeat=3, threads=1) as runner:
        report = po.graph.tune(g, budget=6, db=db, runner=runner, num_threads=1)
    assert sum(r["trials"] for r in report.rows) == 6 and len(db) == 6
    tuned = po.graph.compile(g, num_threads=1, db=db, cache=False)
    feeds = random_inputs(model)
    expected = ort_run(model, feeds)
    got = tuned.run(feeds)
    for name in expected:
        assert_numbers(got[name], expected[name], rtol=1e-4, atol=1e-4)


def test_compile_refuses_a_db_of_the_wrong_kind():
    g = po.graph.from_onnx(small_model())
    with pytest.raises(po.InvalidArgumentError, match="RecordsDB"):
        po.graph.compile(g, db="records.jsonl")
    with pytest.raises(po.InvalidArgumentError, match="tuner is one of"):
        po.graph.tune(g, budget=1, tuner="annealing")
