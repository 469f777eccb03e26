"""Property test of operator libraries: random library specs, random sequences of builds
that are interrupted (the builder killed at a random moment), concurrent (two builders
into the same folder and cache) or tampered with afterwards (a cache entry, the shared
or static library, the header or the manifest truncated, edited, swapped or deleted), and
spec changes that keep the variant names but change their shapes.

After every step, ``po.load_library`` in a fresh process either refuses the folder with
a PolyoptError or gives a library whose every variant computes NumPy's numbers and
writes nothing past its output (a guard region); after every build that completed, it
loads.  A build never fails because of what is in the cache, and a final build always
repairs the folder.  Every step runs in a subprocess under a time limit.

The default suite runs a couple of examples; ``pytest -m slow`` many more, and
``POLYOPT_PROPERTY_EXAMPLES=200`` as many as asked, from a random seed.
"""

from __future__ import annotations

import glob
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

ROOT = str(pathlib.Path(__file__).resolve().parents[2])
LIMIT = 240  # seconds any one step may take: a hang fails the test
_EXAMPLES = int(os.environ.get("POLYOPT_PROPERTY_EXAMPLES", "0"))

KINDS = {"inc": "A[i] + 1", "dbl": "A[i] * 2", "sq": "A[i] * A[i]"}

CHECK = r'''
import re, sys, numpy as np, polyopt as po
REFERENCE = {"inc": lambda a: a + 1, "dbl": lambda a: a * 2, "sq": lambda a: a * a}
try:
    lib = po.load_library(sys.argv[1])
except po.PolyoptError as err:
    print("REFUSED", type(err).__name__, str(err)[:200]); sys.exit(0)
for name in lib.variants:
    A, B = lib[name].signature.arrays
    n = int(A.shape[0].value)
    a = (np.arange(n) % 7).astype(A.dtype)
    buffer = np.full(n + 64, 99, B.dtype)
    lib[name](a, buffer[:n])
    expected = REFERENCE[re.match(r"[a-z]+", name).group()](a)
    if not (buffer[:n] == expected).all() or not (buffer[n:] == 99).all():
        print("WRONG", name, buffer[:8].tolist()); sys.exit(0)
print("OK", len(lib.variants))
'''


def _settings(examples: int):
    options = {} if _EXAMPLES else {"phases": [Phase.explicit, Phase.generate]}
    return settings(max_examples=_EXAMPLES or examples, deadline=None,
                    derandomize=not _EXAMPLES, database=None,
                    suppress_health_check=list(HealthCheck), **options)


@st.composite
def specs(draw):
    """``[(kind, sizes, dtypes, parallel)]``: one to three kernels."""
    count = draw(st.integers(1, 3))
    return [(draw(st.sampled_from(sorted(KINDS))),
             draw(st.lists(st.sampled_from([1, 3, 8, 17]), min_size=1, max_size=2, unique=True)),
             draw(st.lists(st.sampled_from(["float32", "float64", "int32"]), min_size=1,
                           max_size=2, unique=True)),
             draw(st.booleans())) for _ in range(count)]


STEPS = st.one_of(
    st.tuples(st.just("build"), st.sampled_from([1, 2])),
    st.tuples(st.just("interrupt"), st.floats(0.0, 2.5)),
    st.tuples(st.just("concurrent"), st.sampled_from([1, 2])),
    st.tuples(st.just("tamper"), st.sampled_from(["object", "meta", "request", "shared",
                                                  "static", "header", "manifest"]),
              st.sampled_from(["truncate", "flip", "swap", "delete"]), st.integers(0, 10**6)),
    st.tuples(st.just("respec"), st.integers(1, 3)),
)


def spec_text(kernels, factor: int) -> str:
    lines = ["import polyopt as po", "from polyopt.aot import Kernel, grid"]
    for index, (kind, _, _, parallel) in enumerate(kernels):
        lines += [f"def build_{index}(n, dtype):",
                  f"    A = po.placeholder((n * {factor},), name='A', dtype=dtype)",
                  f"    B = po.compute((n * {factor},), lambda i: {KINDS[kind]}, name='B')",
                  "    s = po.create_schedule(B)"]
        if parallel:
            lines.append("    s[B].parallel(B.op.axis[0])")
        lines.append("    return s, [A, B]")
    lines.append("def kernels():")
    for index, (kind, sizes, dtypes, _) in enumerate(kernels):
        lines.append(f"    yield Kernel('{kind}{index}', build_{index}, "
                     f"grid(n={sizes!r}, dtype={dtypes!r}))")
    return "\n".join(lines) + "\n"


class Folder:
    """A spec, its output folder and its cache, and the steps run on them."""

    def __init__(self, path: pathlib.Path, kernels):
        self.path, self.kernels = path, kernels
        self.out, self.cache = path / "out", path / "cache"
        self.env = dict(os.environ, PYTHONPATH=ROOT, POLYOPT_CACHE=str(self.cache))
        self.respec(1)

    def respec(self, factor: int) -> None:
        (self.path / "spec.py").write_text(spec_text(self.kernels, factor))

    def start(self, jobs: int) -> subprocess.Popen:
        command = [sys.executable, "-m", "polyopt.cli", "lib", "build", "spec.py", "-o",
                   str(self.out), "-j", str(jobs), "--quiet"]
        return subprocess.Popen(command, cwd=self.path, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def finish(self, process: subprocess.Popen) -> None:
        try:
            output, _ = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            raise
        assert process.returncode == 0, output
        assert "warning" not in output, output

    def interrupt(self, seconds: float) -> None:
        process = self.start(2)
        time.sleep(seconds)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate(timeout=LIMIT)

    def tamper(self, where: str, how: str, pick: int) -> None:
        patterns = {"object": "cache/objects/*/*.o", "meta": "cache/objects/*/*.json",
                    "request": "cache/requests/*/*", "shared": "out/*.so",
                    "static": "out/*.a", "header": "out/*.h", "manifest": "out/manifest.json"}
        files = sorted(glob.glob(str(self.path / patterns[where])))
        if not files:
            return
        target = files[pick % len(files)]
        data = open(target, "rb").read()
        if how == "truncate":
            data = data[: len(data) // 2]
        elif how == "flip" and data:
            data = bytearray(data)
            data[pick % len(data)] ^= 0x5A
            data = bytes(data)
        elif how == "swap":
            data = open(files[(pick + 1) % len(files)], "rb").read() if len(files) > 1 \
                else data[::-1]
        if how == "delete":
            os.remove(target)
        else:
            open(target, "wb").write(data)

    def check(self, must_load: bool) -> None:
        done = subprocess.run([sys.executable, "-c", CHECK, str(self.out)], cwd=self.path,
                              env=self.env, capture_output=True, text=True, timeout=LIMIT)
        assert done.returncode == 0, f"rc={done.returncode} {done.stdout} {done.stderr[-800:]}"
        verdict = done.stdout.split()[0]
        assert verdict in (("OK",) if must_load else ("OK", "REFUSED")), done.stdout
        assert "InternalError" not in done.stdout, done.stdout


def run_case(path: pathlib.Path, kernels, steps) -> None:
    folder = Folder(path, kernels)
    for step in steps:
        kind = step[0]
        if kind == "build":
            folder.finish(folder.start(step[1]))
        elif kind == "interrupt":
            folder.interrupt(step[1])
        elif kind == "concurrent":
            first, second = folder.start(step[1]), folder.start(3 - step[1])
            folder.finish(first)
            folder.finish(second)
        elif kind == "tamper":
            folder.tamper(*step[1:])
        else:
            folder.respec(step[1])
        if (folder.out / "manifest.json").exists() or kind != "interrupt":
            folder.check(must_load=kind in ("build", "concurrent"))
    folder.finish(folder.start(2))  # whatever happened, a build repairs the folder
    folder.check(must_load=True)


def _case(tmp_path_factory, kernels, steps):
    run_case(tmp_path_factory.mktemp("library"), kernels, steps)


@_settings(2)
@given(kernels=specs(), steps=st.lists(STEPS, min_size=1, max_size=2))
def test_libraries_survive_interrupted_concurrent_and_tampered_builds(tmp_path_factory,
                                                                       kernels, steps):
    _case(tmp_path_factory, kernels, steps)


@pytest.mark.slow
@_settings(25)
@given(kernels=specs(), steps=st.lists(STEPS, min_size=2, max_size=7))
def test_libraries_survive_many_interrupted_concurrent_and_tampered_builds(
        tmp_path_factory, kernels, steps):
    _case(tmp_path_factory, kernels, steps)


@pytest.mark.slow
def test_a_tampered_cache_and_library_then_a_killed_build(tmp_path):
    """One fixed sequence through every kind of step (the random ones may miss some)."""
    kernels = [("sq", [3, 8], ["float32", "int32"], True), ("inc", [17], ["float64"], False)]
    run_case(tmp_path, kernels, [
        ("build", 2), ("tamper", "object", "swap", 1), ("tamper", "shared", "truncate", 0),
        ("respec", 2), ("interrupt", 0.8), ("tamper", "meta", "flip", 7),
        ("concurrent", 1), ("tamper", "manifest", "flip", 120)])
