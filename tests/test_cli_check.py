"""``polyopt check FILE --schedule SCHEDULE``, run as a command: report and exit status."""

import json
import subprocess
import sys
import textwrap

import pytest


MATMUL = """
import polyopt as po
M, N, K = po.var("M"), po.var("N"), po.var("K")
A = po.placeholder((M, K), name="A")
B = po.placeholder((K, N), name="B")
k = po.reduce_axis((0, K), name="k")
C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
outputs = [C]
"""

BLUR = """
import polyopt as po
N = po.var("N")
A = po.placeholder((N + 4,), name="A")
B = po.compute((N + 2,), lambda i: A[i] + A[i + 1] + A[i + 2], name="B")
C = po.compute((N,), lambda i: B[i] + B[i + 1] + B[i + 2], name="C")
s = po.create_schedule(C)
"""

SEIDEL = """
import polyopt as po
T, N = po.var("T"), po.var("N")

@po.kernel
def seidel(A: po.f64[N, N]):
    for t in range(T):
        for i in range(1, N - 1):
            for j in range(1, N - 1):
                A[i, j] = (A[i - 1, j - 1] + A[i - 1, j] + A[i - 1, j + 1]
                           + A[i, j - 1] + A[i, j] + A[i, j + 1]
                           + A[i + 1, j - 1] + A[i + 1, j] + A[i + 1, j + 1]) / 9.0
"""


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "polyopt.cli", "check", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def _write(folder, name, text):
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def test_legal_matmul_interchange_exits_0(tmp_path):
    program = _write(tmp_path, "matmul.py", MATMUL)
    schedule = _write(tmp_path, "interchange.isl",
                      "{ C_init[i, j] -> [j, i, 0, 0]; C_update[i, j, k] -> [j, i, 1, k] }\n")
    result = _run(program, "--schedule", schedule)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "legal"
    assert "  C_update: dimension 0 (j): parallel; dimension 1 (i): parallel;" in result.stdout


def test_reversed_reduction_in_json_exits_1_with_counterexamples(tmp_path):
    program = _write(tmp_path, "matmul.py", MATMUL)
    schedule = tmp_path / "reversed.json"
    schedule.write_text(json.dumps({"statements": [
        {"name": "C_init", "schedule": "{ C_init[i, j] -> [i, j, 0, 0] }"},
        {"name": "C_update", "schedule": "[K] -> { C_update[i, j, k] -> [i, j, 1, K - 1 - k] }"},
    ]}, indent=2))
    result = _run(program, "--schedule", schedule)  # a sum may be reassociated
    assert result.returncode == 0 and result.stdout.startswith("legal\n"), result.stderr
    result = _run(program, "--schedule", schedule, "--strict-fp")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "illegal: 3 dependences violated"
    assert lines[1].startswith("  - C_update[i=0, j=0, k=0] writes C[0, 0] that "
                               "C_update[i=0, j=0, k=1] reads, but the new schedule runs the "
                               "reader first (when M=1, K=2, N=1) [flow dependence")
    assert "C_update[i=0, j=0, k=1] overwrites it" in lines[2]
    assert "write C[0, 0], but the new schedule runs them in the other order" in lines[3]


def test_stencil_schedule_variable_legal_and_illegal(tmp_path):
    program = _write(tmp_path, "blur.py", BLUR)
    good = _write(tmp_path, "good.isl", "{ B[i] -> [i, 0]; C[i] -> [i + 2, 1] }")
    bad = _write(tmp_path, "bad.isl", "{ B[i] -> [i, 0]; C[i] -> [i + 1, 1] }")
    result = _run(program, "--schedule", good)
    assert result.returncode == 0 and result.stdout.startswith("legal\n")
    result = _run(program, "--schedule", bad)
    assert result.returncode == 1
    assert ("B[i=2] writes B[2] that C[i=0] reads, but the new schedule runs the reader first"
            in result.stdout)


def test_without_schedule_the_computation_s_own_is_checked(tmp_path):
    result = _run(_write(tmp_path, "blur.py", BLUR))
    assert result.returncode == 0
    assert "  B: dimension 0: static 0; dimension 1: static 0; dimension 2 (loop i: i): parallel" \
        in result.stdout


def test_seidel_kernel_interchange_refused_and_wavefront_accepted(tmp_path):
    program = _write(tmp_path, "seidel.py", SEIDEL)
    result = _run(program, "--schedule", _write(tmp_path, "swap.isl",
                                                "{ S0[t, i, j] -> [i, t, j] }"))
    assert result.returncode == 1
    assert ("S0[t=0, i=2, j=1] writes A[2, 1] that S0[t=1, i=1, j=1] reads, but the new "
            "schedule runs the reader first (when N=4, T=2)") in result.stdout
    tree = ('{ domain: "[N, T] -> { S0[t, i, j] : 0 <= t < T and 0 < i < N - 1 and '
            '0 < j < N - 1 }", child: { schedule: "[{ S0[t, i, j] -> [(4t + 2i + j)] }, '
            '{ S0[t, i, j] -> [(t)] }, { S0[t, i, j] -> [(i)] }]" } }')
    result = _run(program, "--schedule", _write(tmp_path, "wavefront.isl", tree))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2] == (
        "  S0: dimension 0 (4*t + 2*i + j): sequential (carries flow, anti, output S0 -> S0); "
        "dimension 1 (t): parallel; dimension 2 (i): parallel")


BAD_INPUT = [
    # (python file text or None for a missing file, schedule text or None, stderr message)
    (None, "{ S0[i] -> [i] }", "no such file: '"),
    (MATMUL, None, "schedule file '"),
    (MATMUL, '{"statements": [}',
     "malformed JSON in '"),
    (MATMUL, "{ C_init[i, j] -> [i, j, 0, 0]; C_upd[i, j, k] -> [i, j, 1, k] }",
     "the schedule maps unknown statement C_upd; the program's statements are: "
     "C_init, C_update"),
    (MATMUL, "{ C_init[i, j] -> [i, j, 0, 0]; C_update[i, j, k] -> [i, j, 1, k) }",
     "malformed isl text in '"),
    ("import polyopt as po\nx = 1\n", "{ S0[i] -> [i] }",
     "defines no computation: define s = po.create_schedule(...), a @po.kernel function, "
     "or outputs = [tensor, ...]"),
    ("raise RuntimeError('boom')\n", "{ S0[i] -> [i] }",
     "failed: RuntimeError: boom"),
    ("outputs = [1, 2]\n", "{ S0[i] -> [i] }", "'outputs' in '"),
]


@pytest.mark.parametrize("source, schedule, message", BAD_INPUT, ids=range(len(BAD_INPUT)))
def test_bad_input_exits_2_with_one_line(tmp_path, source, schedule, message):
    program = tmp_path / "program.py"
    if source is not None:
        program.write_text(source)
    schedule_path = tmp_path / ("schedule.json" if schedule and '"' in schedule else "s.isl")
    if schedule is not None:
        schedule_path.write_text(schedule)
    result = _run(program, "--schedule", schedule_path)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("polyopt: error: ")
    assert message in lines[0]


def test_help_documents_the_convention():
    result = subprocess.run([sys.executable, "-m", "polyopt.cli", "check", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0
    for text in ("schedule or s holding a po.Schedule", "@po.kernel", "outputs = [...]",
                 "Exit status: 0 legal, 1 illegal, 2 bad input", "--schedule SCHEDULE"):
        assert text in result.stdout
