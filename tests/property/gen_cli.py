"""Bad inputs of every ``polyopt`` command, for the ``cli`` property family.

A case is one command line (every subcommand of ``polyopt --help``: demo, check, opt, run,
compile, lib, cache, tune) with malformed or adversarial arguments and files (empty,
random bytes, nearly parsing, huge or deeply nested, code that raises or exits, a valid
model with wrong inputs).  :data:`CLI_RUNNER` (pasted into the case's script) writes the
files into a fresh folder and runs ``python -m polyopt.cli`` in a subprocess with the
kernel cache in that folder.  The right answer is status 0 or 1, or 2 with one
``error:`` line last on standard error; never a traceback, "this is a bug in polyopt",
another status or a hang.

>>> import random
>>> argv, files = draw_command(random.Random(3))
>>> argv[0] in COMMANDS and all(isinstance(v, str) for v in files.values())
True
"""

from __future__ import annotations

import random

COMMANDS = ("demo", "check", "opt", "run", "compile", "lib", "cache", "tune")

MATMUL = """import polyopt as po
M, N, K = po.var("M"), po.var("N"), po.var("K")
A = po.placeholder((M, K), name="A"); B = po.placeholder((K, N), name="B")
k = po.reduce_axis((0, K), name="k")
C = po.compute((M, N), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
s = po.create_schedule(C)
"""

GEMM_C = """void gemm(int n, double A[n][n], double B[n][n], double C[n][n]) {
#pragma scop
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++)
        C[i][j] += A[i][k] * B[k][j];
#pragma endscop
}
"""

# contents made by the runner: a valid model ``y = x + x`` (x: float32[2, 3]) and arrays
MODEL, GOOD_NPY, BAD_NPY, INT_NPY = "<model>", "<npy float32 2x3>", "<npy float32 7>", \
    "<npy int64 2x3>"


def _garbage(rng: random.Random) -> str:
    """A file's content (latin-1 text of bytes): empty, random bytes, text that nearly
    parses, or huge/deep."""
    choice = rng.randrange(10)
    if choice == 0:
        return ""
    if choice == 1:
        return "".join(chr(rng.randrange(256)) for _ in range(rng.randrange(1, 400)))
    if choice == 2:
        return "{ " + "(" * rng.choice([2000, 300_000]) + " }"
    if choice == 3:
        return ("{ C_update[i, j, k] -> [i, j, 1, " + "9" * rng.choice([200, 5000])
                + " * k] }")
    if choice == 4:
        return '{"statements": [' * rng.choice([50, 5000])
    if choice == 5:
        return "\ufeff{ S0[i] -> [i] }\x00".encode("utf-8").decode("latin-1")
    if choice == 6:
        return "raise SystemExit(3)\n"
    if choice == 7:
        return "import os\nos._exit(0)\n" if rng.random() < 0.1 else "x = 1 / 0\n"
    if choice == 8:
        cut = rng.randrange(len(GEMM_C))
        return GEMM_C[:cut] + rng.choice(["", "}", "#pragma scop\n", "[", "\x00"])
    return MATMUL[:rng.randrange(len(MATMUL))]


def _value(rng: random.Random) -> str:
    return rng.choice(["", "-1", "0", "nan", "1e400", "9" * 30, "x=", "=", "a=b=c", "--",
                       "-", "\u00e9", "n=-5", "n=1e9", "ni=9,nj=", "..", "/", "\\x00x"])


def draw_command(rng: random.Random) -> tuple[list[str], dict[str, str]]:
    """``(argv, files)``: ``{F}`` in argv stands for the case's folder; ``files`` maps a
    name in that folder to its content (or one of the runner's markers)."""
    files: dict[str, str] = {}

    def file(suffix: str, content: str | None = None) -> str:
        if rng.random() < 0.1:
            return rng.choice(["missing" + suffix, "{F}", "/dev/null", ""])
        name = f"f{rng.randrange(10**6)}{suffix}"
        files[name] = _garbage(rng) if content is None else content
        return "{F}/" + name

    def model() -> str:
        return file(".onnx", MODEL if rng.random() < 0.6 else None)

    command = rng.choice(COMMANDS)
    if command == "check":
        argv = ["check", file(".py", MATMUL if rng.random() < 0.6 else None)]
        if rng.random() < 0.8:
            argv += ["--schedule", file(rng.choice([".isl", ".json", ""]))]
        if rng.random() < 0.3:
            argv += ["--name", rng.choice(["s", "C", "nothing", _value(rng)])]
        if rng.random() < 0.2:
            argv.append("--strict-fp")
        return argv, files
    if command == "opt":
        argv = ["opt", file(".c", GEMM_C if rng.random() < 0.5 else None)]
        for _ in range(rng.randrange(3)):
            option = rng.choice(["--function", "-D", "--emit", "-o", "--sizes", "--tile-size",
                                 "--fusion", "--check", "--default", "--no-parallel"])
            if option in ("--check", "--default", "--no-parallel"):
                argv.append(option)
            elif option == "--emit":
                argv += [option, rng.choice(["loops", "c", "so", "exe"])]
            elif option == "-o":
                argv += [option, rng.choice(["{F}/out.c", "{F}/no/such/dir.c", "{F}"])]
            else:
                argv += [option, _value(rng)]
        return argv, files
    if command == "run":
        argv = ["run", model()]
        if rng.random() < 0.7:
            data = file(".npy", rng.choice([GOOD_NPY, BAD_NPY, INT_NPY, None]))
            argv += ["--input", rng.choice(["", "x=", "y=", "=", "x=x="]) + data]
        if rng.random() < 0.3:
            argv += [rng.choice(["--threads", "--output", "--draw", "--offload", "--shape"]),
                     rng.choice([_value(rng), "{F}/no/such/out.npz", "{F}"])]
        return argv, files
    if command == "compile":
        argv = ["compile", model(), "-o", rng.choice(["{F}/out", "{F}/no/such/out", "{F}",
                                                        "/dev/null", ""])]
        if rng.random() < 0.5:
            argv += [rng.choice(["--name", "--shape", "--threads", "--target"]), _value(rng)]
        if rng.random() < 0.2:
            argv.append("--embed-weights")
        return argv, files
    if command == "lib":
        argv = ["lib", "build", file(".py"), "-o", "{F}/lib", "-j",
                rng.choice(["1", "0", "-3", "x"])]
        if rng.random() < 0.3:
            argv += [rng.choice(["--target", "--name"]), _value(rng)]
        return argv + ["--quiet"], files
    if command == "cache":
        return ["cache", rng.choice(["info", "clear", "explode", ""])], files
    if command == "tune":
        source = file(rng.choice([".c", ".py"]), rng.choice([GEMM_C, MATMUL, None]))
        argv = ["tune", source, "--db", rng.choice(["{F}/db", "/dev/null", "{F}/f", ""]),
                "--trials", rng.choice(["1", "0", "-2", "x", "1e9"]), "--timeout", "20"]
        if "{F}/f" in argv:
            files["f"] = "not a folder"
        for _ in range(rng.randrange(3)):
            option = rng.choice(["--tuner", "--sizes", "--function", "--name", "--timeout",
                                 "--repeat", "--batch", "--target", "-D", "--dask"])
            argv += [option, rng.choice([_value(rng), "n=8", "bogus", "tcp://127.0.0.1:1"])]
        return argv, files
    return ["demo", "--size", rng.choice(["0", "-4", "abc", "100000000", "1e3"])], files


CLI_RUNNER = '''
import os, shutil, subprocess, sys, tempfile

TIME_LIMIT = 240  # seconds of the command on the clock (a loaded machine builds slowly)


def materialize(folder, name, content):
    path = os.path.join(folder, name)
    if content == "<model>":
        import onnx
        from onnx import TensorProto, helper
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"])], "g", [x], [y])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    elif content.startswith("<npy "):
        dtype, shape = content[5:-1].split()
        np.save(path, np.ones([int(d) for d in shape.split("x")], dtype))  # (a .npy name)
    else:
        with open(path, "wb") as handle:
            handle.write(content.encode("latin-1"))


def run_cli(argv, files):
    """``polyopt argv`` in a fresh folder holding ``files``: ok-accepted (status 0 or 1),
    ok-refused (status 2 with one error line last), or a Defect."""
    folder = tempfile.mkdtemp(prefix="polyopt-cli-case-")
    try:
        for name, content in files.items():
            materialize(folder, name, content)
        return judge_cli([a.replace("{F}", folder) for a in argv], folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def judge_cli(argv, folder):
    env = dict(os.environ, POLYOPT_CACHE=os.path.join(folder, "cache"))
    try:
        result = subprocess.run([sys.executable, "-m", "polyopt.cli", *argv], cwd=folder,
                                capture_output=True, text=True, timeout=TIME_LIMIT, env=env,
                                stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        raise Defect("timeout", f"polyopt {argv} ran for more than {TIME_LIMIT} s")
    shown = f"polyopt {argv} -> {result.returncode}: {result.stderr[-600:]!r}"
    if "this is a bug in polyopt" in result.stderr:
        raise Defect("internal", shown)
    if "Traceback" in result.stderr or result.returncode not in (0, 1, 2):
        raise Defect("crash", shown)
    if result.returncode != 2:
        return f"ok-accepted polyopt {argv[0]}: status {result.returncode}"
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    if len(errors) != 1 or lines[-1] != errors[0]:
        raise Defect("message", "status 2 needs one error line, last: " + shown)
    return "ok-refused " + errors[0][:200]
'''


def family_cli(rng, script):
    argv, files = draw_command(rng)
    script.run("import numpy as np\n", top=True)
    script.run(CLI_RUNNER)
    script.run(f"OUTCOME = run_cli({argv!r}, {files!r})")
    return script.namespace["OUTCOME"]
