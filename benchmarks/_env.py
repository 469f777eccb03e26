"""Benchmark process environment: OpenBLAS's own kernel, pinned thread counts; and what
the benchmarks share: the median timers and the writing of their results.

This machine's environment sets ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``, which
slow OpenBLAS a lot; a benchmark restarts itself without them (before NumPy is
imported) and with the thread counts pinned.  Tests and CI keep the environment as is.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pathlib
import re
import statistics
import sys
import time

SLOW_OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
PINNED_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MARKER = "POLYOPT_BENCH_CLEAN_ENV"
RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def cpu_model() -> str:
    """The CPU's model name and how many CPUs this process sees (figures from different
    machines do not compare: the machine kind changes between runs).

    >>> "CPUs visible" in cpu_model() or cpu_model() != ""
    True
    """
    import platform

    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({os.cpu_count()} CPUs visible)"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def require_threadpoolctl(script: str) -> None:
    if importlib.util.find_spec("threadpoolctl") is None:
        sys.exit(f"{script} needs the package 'threadpoolctl' to report the OpenBLAS "
                 "kernel NumPy uses; install it with `pip install threadpoolctl` "
                 "(or `pip install -e '.[bench]'`).")


def restart_with_clean_environment(threads: int) -> None:
    """Restart this script without the OpenBLAS slow-down variables, ``threads`` pinned."""
    env = dict(os.environ)
    dirty = any(v in env for v in SLOW_OPENBLAS_VARS)
    unpinned = any(env.get(v) != str(threads) for v in PINNED_VARS)
    if not (dirty or unpinned) or env.get(_MARKER):
        return
    for name in SLOW_OPENBLAS_VARS:
        env.pop(name, None)
    for name in PINNED_VARS:
        env[name] = str(threads)
    env[_MARKER] = "1"
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


def median_seconds(call, repeat: int) -> float:
    """The median time of ``repeat`` calls of ``call()``, after one untimed call."""
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


MIN_BLOCK_SECONDS = 0.05  # a timed block at least this long (see alternating_samples)
WARM_UP_SECONDS = 0.01


def alternating_samples(calls, repeat: int, rounds: int = 5) -> list[list[float]]:
    """The times of each call, measured in ``rounds`` alternating blocks (both sides
    see the same load).  Each block starts after a pause: OpenBLAS's idle threads spin
    for tens of milliseconds after a call and would keep a core from the other side's
    threads.  After the pause the call runs untimed for ``WARM_UP_SECONDS``, then a
    block times ``repeat`` calls, or more to last ``MIN_BLOCK_SECONDS``: an idle core
    takes milliseconds to reach its full clock, longer than five calls of a 0.1 ms
    kernel, which then measured a different clock in every block."""
    times = [[] for _ in calls]
    for _ in range(rounds):
        for call, spent in zip(calls, times):
            time.sleep(0.3)
            last = _warm_up(call)
            for _ in range(max(repeat, math.ceil(MIN_BLOCK_SECONDS / max(last, 1e-9)))):
                start = time.perf_counter()
                call()
                spent.append(time.perf_counter() - start)
    return times


def alternating_medians(calls, repeat: int, rounds: int = 5) -> list[float]:
    """The median time of each call (see :func:`alternating_samples`)."""
    return [statistics.median(t) for t in alternating_samples(calls, repeat, rounds)]


def _warm_up(call) -> float:
    """Call ``call`` for ``WARM_UP_SECONDS`` (at least once); the last call's time."""
    begin = time.perf_counter()
    while True:
        start = time.perf_counter()
        call()
        end = time.perf_counter()
        if end - begin >= WARM_UP_SECONDS:
            return end - start


# What the C timers of exported models share (ab_deploy_run, ab_deploy_hugepages): the
# headers, the page faults so far, a comparison for qsort, the anonymous huge pages held
C_TIMER_PRELUDE = r"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
static long faults(void) { struct rusage u; getrusage(RUSAGE_SELF, &u); return u.ru_minflt; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a,
                                               y = *(const double *)b; return (x > y) - (x < y); }
static long huge_kb(void) {
    char line[256]; long kb = 0; FILE *f = fopen("/proc/self/smaps_rollup", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "AnonHugePages:", 14)) kb = atol(line + 14);
    if (f) fclose(f);
    return kb;
}
"""


def link_timer(folder: str, source: str, name: str) -> str:
    """The path of the C program ``source`` (a timer of an exported model) compiled with
    gcc -O2 in ``folder`` and linked with the model's static library ``lib<name>.a`` and
    the flags its ``manifest.json`` names."""
    import subprocess

    with open(os.path.join(folder, "manifest.json")) as file:
        flags = json.load(file)["link"][1:]
    path, program = os.path.join(folder, "timer.c"), os.path.join(folder, "timer")
    with open(path, "w") as file:
        file.write(source)
    subprocess.run(["gcc", "-O2", "-I", folder, path, os.path.join(folder, f"lib{name}.a"),
                    *flags, "-lpthread", "-o", program], check=True)
    return program


# The machine the results files measured before they kept one section per machine
EARLIER_MACHINE = ("znver4/znver5; has avx2, avx512f, avx512_vnni, avx512_bf16; lacks "
                   "avx512_fp16, amx_int8, amx_bf16",
                   "AMD EPYC Zen 4/5 (LLVM znver4/znver5), 2 core(s); has avx2, avx512f, "
                   "avx512_vnni, avx512_bf16; lacks avx512_fp16, amx_int8, amx_bf16")
_MARKER_LINE = re.compile(r"^<!-- machine: (.*) -->$", re.MULTILINE)


def this_machine() -> tuple[str, str]:
    """``(family, heading)`` of the machine running: the family (LLVM's CPU name and the
    notable flags it has and lacks) names its section, the heading (``TargetInfo.describe``:
    model, LLVM name, cores, flags) heads it.

    >>> family, heading = this_machine()
    >>> family.split(";")[0] in heading
    True
    """
    from polyopt.machine import TargetInfo

    heading = TargetInfo.host().describe()
    return f"{TargetInfo.host().name}; {heading.split('; ', 1)[1]}", heading


def write_results(name: str, text: str, data) -> None:
    """``results/<name>.md`` and ``results/<name>.json`` with this machine's section
    (the report ``text``, the ``data``) in place of its previous one; the sections of
    other machines stay.  A file without sections was measured on ``EARLIER_MACHINE``."""
    RESULTS.mkdir(exist_ok=True)
    family, heading = this_machine()
    md, js = RESULTS / f"{name}.md", RESULTS / f"{name}.json"
    title, sections = _read_sections(md.read_text() if md.exists() else "")
    lines = text.rstrip("\n").splitlines()
    if lines and lines[0].startswith("# "):
        title, lines = lines[0], lines[1:]
    body = _demoted(lines)
    sections[family] = f"## {heading}\n\n{body.strip()}\n"
    _atomic_write(md, "\n\n".join([title or f"# {name}", SECTIONS_NOTE] + [
        f"<!-- machine: {key} -->\n{value}" for key, value in sections.items()]))
    machines = _read_machines(js)
    machines[family] = {"machine": heading, "results": data}
    _atomic_write(js, json.dumps({"machines": machines}, indent=2, default=str) + "\n")


SECTIONS_NOTE = ("One section per machine (CPU family): figures of different machines do "
                 "not compare; a new run replaces its own machine's section only.")


def previous_results(name: str):
    """This machine's ``data`` in ``results/<name>.json``, or None."""
    entry = _read_machines(RESULTS / f"{name}.json").get(this_machine()[0])
    return None if entry is None else entry["results"]


def _read_sections(text: str) -> tuple[str, dict[str, str]]:
    """The title line and ``{family: section}`` of a results file's text."""
    if not text.strip():
        return "", {}
    parts = _MARKER_LINE.split(text)
    if len(parts) == 1:  # written before sections: one machine's report
        lines = text.rstrip("\n").splitlines()
        title = lines[0] if lines[0].startswith("# ") else ""
        body = _demoted(lines[bool(title):])
        return title, {EARLIER_MACHINE[0]: f"## {EARLIER_MACHINE[1]}\n\n{body.strip()}\n"}
    title = parts[0].strip().splitlines()[0] if parts[0].strip() else ""
    return title, {key: value.strip("\n") + "\n" for key, value in zip(parts[1::2], parts[2::2])}


def _demoted(lines: list[str]) -> str:
    """Markdown ``lines`` with their headings one level down (code blocks kept)."""
    out, code = [], False
    for line in lines:
        code ^= line.startswith("```")
        out.append("#" + line if line.startswith("#") and not code else line)
    return "\n".join(out)


def _read_machines(path: pathlib.Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if isinstance(data, dict) and set(data) == {"machines"}:
        return data["machines"]
    return {EARLIER_MACHINE[0]: {"machine": EARLIER_MACHINE[1], "results": data}}


def _atomic_write(path: pathlib.Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
