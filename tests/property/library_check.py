"""Run one random library case (a spec of :mod:`property.gen_library`): builds of an
operator library that are interrupted, concurrent or tampered with, each step checked.

This module's text is pasted into every ``library`` case's reproducer (it imports only
the standard library and NumPy/polyopt in subprocesses).  :func:`run_library_case`
writes the spec, then runs each step: ``("build", jobs)``, ``("interrupt", seconds)``
(the builder's process group killed after that long), ``("concurrent", jobs)`` (two
builders into the same folder and cache), ``("tamper", where, how, pick)`` (a cache
entry, the shared or static library, the header or the manifest truncated, flipped,
swapped or deleted) or ``("respec", factor)`` (the same variant names with other
shapes).  After every step ``po.load_library`` in a fresh process either refuses the
folder with a PolyoptError or gives a library whose every variant computes NumPy's
numbers and writes nothing past its output (a guard region); after a completed build
it loads; a changed ``.so`` is detected (refused, or relinked from the verified archive
with a warning), never loaded as is.  A build never fails because of what is in the
cache, and a final build always repairs the folder.  The outcome is ``ok-accepted`` or a
:class:`Defect` (``bad-refusal``, ``wrong``, ``accepted-bad``, ``internal``, ``crash``,
``signal``, ``timeout``).
"""

import glob
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:  # pasted after the harness (a case's script), or imported (tests/aot)
    Defect
except NameError:
    from property.harness import Defect

LIMIT = 240  # seconds any one step may take on the clock

KINDS = {"inc": "A[i] + 1", "dbl": "A[i] * 2", "sq": "A[i] * A[i]"}

LOAD_AND_CHECK = r'''
import re, sys, warnings, numpy as np, polyopt as po
REFERENCE = {"inc": lambda a: a + 1, "dbl": lambda a: a * 2, "sq": lambda a: a * a}
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    try:
        lib = po.load_library(sys.argv[1])
    except po.PolyoptError as err:
        print("REFUSED", type(err).__name__, str(err)[:200]); sys.exit(0)
warned = any("does not match" in str(w.message) for w in caught)
for name in lib.variants:
    A, B = lib[name].signature.arrays
    n = int(A.shape[0].value)
    a = (np.arange(n) % 7).astype(A.dtype)
    buffer = np.full(n + 64, 99, B.dtype)
    lib[name](a, buffer[:n])
    expected = REFERENCE[re.match(r"[a-z]+", name).group()](a)
    if not (buffer[:n] == expected).all() or not (buffer[n:] == 99).all():
        print("WRONG", name, buffer[:8].tolist()); sys.exit(0)
print("WARNED" if warned else "OK", len(lib.variants))
'''


def spec_text(kernels, factor: int) -> str:
    """A spec file: kernels ``[(kind, sizes, dtypes, parallel)]``, arrays of ``n * factor``."""
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


class LibraryFolder:
    """A spec, its output folder and its cache, and the steps run on them."""

    def __init__(self, path, kernels):
        self.path, self.kernels = pathlib.Path(path), kernels
        self.out, self.cache = self.path / "out", self.path / "cache"
        import polyopt
        root = str(pathlib.Path(polyopt.__file__).resolve().parents[1])
        self.env = dict(os.environ, POLYOPT_CACHE=str(self.cache), PYTHONPATH=os.pathsep.join(
            [root, os.environ.get("PYTHONPATH", "")]))
        self.respec(1)

    def respec(self, factor: int) -> None:
        (self.path / "spec.py").write_text(spec_text(self.kernels, factor))

    def start(self, jobs: int):
        command = [sys.executable, "-m", "polyopt.cli", "lib", "build", "spec.py", "-o",
                   str(self.out), "-j", str(jobs), "--quiet"]
        return subprocess.Popen(command, cwd=self.path, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)

    def finish(self, process) -> None:
        try:
            output, _ = process.communicate(timeout=LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise Defect("timeout", f"a library build ran for more than {LIMIT} s")
        if "this is a bug in polyopt" in output:
            raise Defect("internal", f"lib build: {output[-600:]}")
        if "Traceback" in output or process.returncode < 0:
            raise Defect("crash", f"lib build status {process.returncode}: {output[-600:]}")
        if process.returncode != 0 or "warning" in output:
            raise Defect("bad-refusal", f"a build failed or warned (status "
                         f"{process.returncode}): {output[-600:]}")

    def interrupt(self, seconds: float) -> None:
        process = self.start(2)
        time.sleep(seconds)
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate(timeout=LIMIT)

    def tamper(self, where: str, how: str, pick: int) -> bool:
        """Damage one file; whether its bytes changed."""
        patterns = {"object": "cache/objects/*/*.o", "meta": "cache/objects/*/*.json",
                    "request": "cache/requests/*/*", "shared": "out/*.so",
                    "static": "out/*.a", "header": "out/*.h", "manifest": "out/manifest.json"}
        files = sorted(glob.glob(str(self.path / patterns[where])))
        if not files:
            return False
        target = files[pick % len(files)]
        with open(target, "rb") as handle:
            before = handle.read()
        data = before
        if how == "truncate":
            data = data[: len(data) // 2]
        elif how == "flip" and data:
            data = bytearray(data)
            data[pick % len(data)] ^= 0x5A
            data = bytes(data)
        elif how == "swap":
            if len(files) > 1:
                with open(files[(pick + 1) % len(files)], "rb") as handle:
                    data = handle.read()
            else:
                data = data[::-1]
        if how == "delete":
            os.remove(target)
            return True
        with open(target, "wb") as handle:
            handle.write(data)
        return data != before

    def check(self, must_load: bool, must_detect: bool = False) -> str:
        """Load the folder in a fresh process and check every variant's numbers."""
        try:
            done = subprocess.run([sys.executable, "-c", LOAD_AND_CHECK, str(self.out)],
                                  cwd=self.path, env=self.env, capture_output=True,
                                  text=True, timeout=LIMIT)
        except subprocess.TimeoutExpired:
            raise Defect("timeout", f"loading the library took more than {LIMIT} s")
        shown = f"status {done.returncode}: {done.stdout[-300:]} {done.stderr[-600:]}"
        if done.returncode < 0:
            raise Defect("signal", f"loading and calling the library: {shown}")
        if done.returncode != 0 or not done.stdout.split():
            raise Defect("crash", f"loading and calling the library: {shown}")
        if "InternalError" in done.stdout:
            raise Defect("internal", done.stdout[:400])
        verdict = done.stdout.split()[0]
        if verdict == "WRONG":
            raise Defect("wrong", done.stdout[:400])
        if must_load and verdict == "REFUSED":
            raise Defect("bad-refusal", f"a built library was refused: {done.stdout[:400]}")
        if must_detect and verdict == "OK":
            raise Defect("accepted-bad", "a changed .so was loaded without a word")
        return verdict


def run_library_case(kernels, steps) -> str:
    """Run ``steps`` on a fresh folder for ``kernels``; the case's outcome text."""
    folder = LibraryFolder(tempfile.mkdtemp(prefix="polyopt-library-case-"), kernels)
    verdicts = []
    try:
        for step in steps:
            kind, changed = step[0], False
            if kind == "build":
                folder.finish(folder.start(step[1]))
            elif kind == "interrupt":
                folder.interrupt(step[1])
            elif kind == "concurrent":
                first, second = folder.start(step[1]), folder.start(3 - step[1])
                folder.finish(first)
                folder.finish(second)
            elif kind == "tamper":
                changed = folder.tamper(*step[1:])
            else:
                folder.respec(step[1])
            verdict = "-"
            if (folder.out / "manifest.json").exists() or kind != "interrupt":
                verdict = folder.check(must_load=kind in ("build", "concurrent"),
                                       must_detect=changed and step[1] == "shared")
            verdicts.append(f"{kind}:{verdict}")
        folder.finish(folder.start(2))  # whatever happened, a build repairs the folder
        verdicts.append(f"final:{folder.check(must_load=True)}")
    finally:
        shutil.rmtree(folder.path, ignore_errors=True)
    return "ok-accepted " + " ".join(verdicts)
