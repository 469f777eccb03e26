"""Property test of the command line on bad input: every ``polyopt`` command, given random
malformed or adversarial arguments and files, exits with 0, 1 or 2 and, on 2, a one-line
message, never a traceback nor "this is a bug in polyopt".

Each case runs ``python -m polyopt.cli`` in a subprocess of its own (a crash must not take
the test run with it), in a fresh folder, under a time limit, with the kernel cache in that
folder.  The default suite runs a small seeded sample; the ``slow`` one many more.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

TIME_LIMIT = 300  # seconds per case: a hang fails the case, not the run

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


def _garbage(rng: random.Random) -> bytes:
    """A file's content: empty, random bytes, text that nearly parses, or huge/deep."""
    choice = rng.randrange(10)
    if choice == 0:
        return b""
    if choice == 1:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400)))
    if choice == 2:
        return ("{ " + "(" * rng.choice([2000, 300_000]) + " }").encode()
    if choice == 3:
        return ("{ C_update[i, j, k] -> [i, j, 1, " + "9" * rng.choice([200, 5000])
                + " * k] }").encode()
    if choice == 4:
        return ('{"statements": [' * rng.choice([50, 5000])).encode()
    if choice == 5:
        return "\ufeff{ S0[i] -> [i] }\x00".encode("utf-8", "surrogatepass")
    if choice == 6:
        return b"raise SystemExit(3)\n"
    if choice == 7:
        return b"import os\nos._exit(0)\n" if rng.random() < 0.1 else b"x = 1 / 0\n"
    if choice == 8:
        text = GEMM_C
        cut = rng.randrange(len(text))
        return (text[:cut] + rng.choice(["", "}", "#pragma scop\n", "[", "\x00"])).encode()
    return MATMUL.encode()[:rng.randrange(len(MATMUL))]


def _value(rng: random.Random) -> str:
    return rng.choice(["", "-1", "0", "nan", "1e400", "9" * 30, "x=", "=", "a=b=c", "--",
                       "-", "\u00e9", "n=-5", "n=1e9", "ni=9,nj=", "..", "/", "\\x00x"])


def _case(rng: random.Random, folder: str) -> list[str]:
    """One command line, with the files it names written into ``folder``."""
    def file(suffix: str, content: bytes | None = None) -> str:
        if rng.random() < 0.1:
            return rng.choice(["missing" + suffix, folder, "/dev/null", ""])
        path = os.path.join(folder, f"f{rng.randrange(10**6)}{suffix}")
        with open(path, "wb") as handle:
            handle.write(_garbage(rng) if content is None else content)
        return path

    command = rng.choice(["check", "check", "opt", "opt", "run", "lib", "cache", "demo"])
    if command == "check":
        program = file(".py", MATMUL.encode() if rng.random() < 0.6 else None)
        argv = ["check", program]
        if rng.random() < 0.8:
            argv += ["--schedule", file(rng.choice([".isl", ".json", ""]))]
        if rng.random() < 0.3:
            argv += ["--name", rng.choice(["s", "C", "nothing", _value(rng)])]
        if rng.random() < 0.2:
            argv.append("--strict-fp")
        return argv
    if command == "opt":
        argv = ["opt", file(".c", GEMM_C.encode() if rng.random() < 0.5 else None)]
        for _ in range(rng.randrange(3)):
            option = rng.choice(["--function", "-D", "--emit", "-o", "--sizes", "--tile-size",
                                 "--fusion", "--check", "--default", "--no-parallel"])
            if option in ("--check", "--default", "--no-parallel"):
                argv.append(option)
            elif option == "--emit":
                argv += [option, rng.choice(["loops", "c", "so", "exe"])]
            elif option == "-o":
                argv += [option, rng.choice([os.path.join(folder, "out.c"),
                                             os.path.join(folder, "no", "such", "dir.c"),
                                             folder])]
            else:
                argv += [option, _value(rng)]
        return argv
    if command == "run":
        argv = ["run", file(".onnx")]
        if rng.random() < 0.7:
            argv += ["--input", rng.choice(["", "x=", "=" + file(".npy")]) + file(".npy")]
        if rng.random() < 0.3:
            argv += [rng.choice(["--threads", "--output", "--draw", "--offload"]), _value(rng)]
        return argv
    if command == "lib":
        argv = ["lib", "build", file(".py"), "-o", os.path.join(folder, "lib"), "-j",
                rng.choice(["1", "0", "-3", "x"])]
        if rng.random() < 0.3:
            argv += [rng.choice(["--target", "--name"]), _value(rng)]
        return argv + ["--quiet"]
    if command == "cache":
        return ["cache", rng.choice(["info", "clear", "explode", ""])]
    return ["demo", "--size", rng.choice(["0", "-4", "abc", "100000000", "1e3"])]


def _run_case(seed: int, tmp_path) -> None:
    rng = random.Random(seed)
    folder = str(tmp_path / f"case{seed}")
    os.makedirs(folder)
    argv = _case(rng, folder)
    env = dict(os.environ, POLYOPT_CACHE=os.path.join(folder, "cache"))
    try:
        result = subprocess.run([sys.executable, "-m", "polyopt.cli", *argv], cwd=folder,
                                capture_output=True, text=True, timeout=TIME_LIMIT, env=env,
                                stdin=subprocess.DEVNULL, errors="replace")
    except subprocess.TimeoutExpired:
        pytest.fail(f"seed {seed}: polyopt {argv} ran for more than {TIME_LIMIT} s")
    shown = f"seed {seed}: polyopt {argv} -> {result.returncode}\n{result.stderr[-2000:]}"
    assert result.returncode in (0, 1, 2), shown
    assert "Traceback" not in result.stderr and "this is a bug in polyopt" not in result.stderr, \
        shown
    if result.returncode == 2:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        errors = [line for line in lines if "error:" in line]
        assert len(errors) == 1 and lines[-1] == errors[0], shown  # one line says what


@pytest.mark.parametrize("seed", range(4))
def test_cli_bad_inputs_small_sample(seed, tmp_path):
    _run_case(seed, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 260))
def test_cli_bad_inputs_large_sample(seed, tmp_path):
    _run_case(seed, tmp_path)
