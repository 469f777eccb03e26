"""TVM's tutorial "Optimizing Operators with Schedule Templates and AutoTVM"
(gallery/tutorial/autotvm_matmul_x86.py, TVM v0.12), its code as written with the imports
changed (``import polyopt.tvm as tvm``, ``from polyopt.tvm import te, autotvm``): the
matmul templates, the task and its space, 10 trials of RandomTuner logged to a file, the
best record applied and the result checked against NumPy.  The default suite runs it at
64 x 64 (the tutorial's 512 x 512 is marked slow)."""

import logging
import sys

import numpy as np
import pytest

import polyopt.tvm as tvm
from polyopt.tvm import te
import polyopt.tvm.testing  # noqa: F401  (the tutorial's `import tvm.testing`)

# the module is called `autotvm`
from polyopt.tvm import autotvm


def matmul_basic(N, L, M, dtype):

    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    yo, yi = s[C].split(y, 8)
    xo, xi = s[C].split(x, 8)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


# Matmul V1: List candidate values
@autotvm.template("tutorial/matmul_v1")  # 1. use a decorator
def matmul_v1(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    # 2. get the config object
    cfg = autotvm.get_config()

    # 3. define search space
    cfg.define_knob("tile_y", [1, 2, 4, 8, 16])
    cfg.define_knob("tile_x", [1, 2, 4, 8, 16])

    # 4. schedule according to config
    yo, yi = s[C].split(y, cfg["tile_y"].val)
    xo, xi = s[C].split(x, cfg["tile_x"].val)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


@autotvm.template("tutorial/matmul")
def matmul(N, L, M, dtype):
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)

    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)

    # schedule
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]

    ##### define space begin #####
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    ##### define space end #####

    # schedule according to config
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)

    s[C].reorder(yo, xo, k, yi, xi)

    return s, [A, B, C]


def tutorial(N, L, M):
    """The tutorial's second step, as written (its sizes passed in)."""
    task = autotvm.task.create("tutorial/matmul", args=(N, L, M, "float32"), target="llvm")
    print(task.config_space)

    # logging config (for printing tuning log to the screen)
    logging.getLogger("autotvm").setLevel(logging.DEBUG)
    logging.getLogger("autotvm").addHandler(logging.StreamHandler(sys.stdout))

    measure_option = autotvm.measure_option(builder="local",
                                            runner=autotvm.LocalRunner(number=5))

    # Begin tuning with RandomTuner, log records to file `matmul.log`
    # You can use alternatives like XGBTuner.
    tuner = autotvm.tuner.RandomTuner(task)
    tuner.tune(
        n_trial=10,
        measure_option=measure_option,
        callbacks=[autotvm.callback.log_to_file("matmul.log")],
    )

    # apply history best from log file
    with autotvm.apply_history_best("matmul.log"):
        with tvm.target.Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = tvm.build(s, arg_bufs)

    # check correctness
    a_np = np.random.uniform(size=(N, L)).astype(np.float32)
    b_np = np.random.uniform(size=(L, M)).astype(np.float32)
    c_np = a_np.dot(b_np)

    c_tvm = tvm.nd.empty(c_np.shape)
    func(tvm.nd.array(a_np), tvm.nd.array(b_np), c_tvm)

    tvm.testing.assert_allclose(c_np, c_tvm.numpy(), rtol=1e-4)
    return task, s


def _best_record_applied(task, schedule, log="matmul.log"):
    """The schedule built under apply_history_best is the best logged point's."""
    record = autotvm.callback.records_at(log).best(task.signature, task.target_key)
    assert record is not None and record["result"]["status"] == "ok"
    best = task.space.from_json(record["config"])
    assert schedule.script() == task.instantiate(best)[0].script()
    return best


def test_the_tutorial_at_64(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    task, schedule = tutorial(64, 64, 64)
    printed = capsys.readouterr().out
    assert "ConfigSpace(len=49" in printed  # 7 x 7 ways to split 64 in two
    assert "tile_y" in printed and "tile_x" in printed
    records = autotvm.callback.records_at("matmul.log").records(task.signature,
                                                                task.target_key)
    assert len(records) == 10 and len({r["config"]["index"] for r in records}) == 10
    _best_record_applied(task, schedule)


@pytest.mark.slow
def test_the_tutorial_as_written_at_512(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task, schedule = tutorial(512, 512, 512)
    assert len(task.config_space) == 100  # "the space size is 10x10=100"
    _best_record_applied(task, schedule)


def test_the_first_template_and_the_basic_schedule(tmp_path, monkeypatch):
    """matmul_v1's 5 x 5 knobs; called directly outside a records context, a template
    builds its first point; matmul_basic is a plain schedule."""
    task = autotvm.task.create("tutorial/matmul_v1", args=(32, 32, 32, "float32"),
                               target="llvm")
    assert len(task.config_space) == 25
    a = np.random.uniform(size=(32, 32)).astype("float32")
    for s, args in (matmul_v1(32, 32, 32, "float32"), matmul_basic(32, 32, 32, "float32")):
        c = tvm.nd.empty((32, 32))
        tvm.build(s, args)(tvm.nd.array(a), tvm.nd.array(a), c)
        tvm.testing.assert_allclose(c.numpy(), a @ a, rtol=1e-4)


@pytest.mark.parametrize("name", ["GridSearchTuner", "GATuner", "XGBTuner"])
def test_the_other_tuners_take_the_same_call(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    task = autotvm.task.create("tutorial/matmul_v1", args=(32, 32, 32, "float32"),
                               target="llvm")
    tuner = getattr(autotvm.tuner, name)(task)
    summary = tuner.tune(n_trial=4, measure_option=autotvm.measure_option(
        builder=autotvm.LocalBuilder(), runner=autotvm.LocalRunner(
            number=2, repeat=1, min_repeat_ms=1, timeout=30)),
        callbacks=[autotvm.callback.log_to_file("tuned.log"),
                   autotvm.callback.progress_bar(4)])
    assert summary.trials == 4
    assert len(autotvm.callback.records_at("tuned.log")) == 4


def test_autotvm_mistakes_are_polyopt_errors():
    with pytest.raises(tvm.TVMError, match="no autotvm template is named 'nope'"):
        autotvm.task.create("nope", args=(), target="llvm")
    with pytest.raises(tvm.TVMError, match="inside a function decorated"):
        autotvm.get_config()
    with pytest.raises(tvm.TVMError, match="builder is 'local'"):
        autotvm.measure_option(builder="rpc")
    with pytest.raises(tvm.TVMError, match="positional arguments only"):
        matmul(32, 32, 32, dtype="float32")
