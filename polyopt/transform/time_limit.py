"""Run a computation that cannot be interrupted under a limit of CPU time.

isl's scheduler bounds its effort by counting operations, but one operation can take
long (an integer program whose numbers grow): a program that gave up after 20,000
operations in 30 ms ran for minutes with 200,000.  islpy holds the GIL while isl runs,
so no thread can stop it; :func:`run_limited` runs it in a forked copy of the process
instead and kills the copy when time is up.  The limit counts the copy's CPU time
(read from ``/proc``), so that the answer does not depend on how loaded the machine is
(a schedule that isl finds in 1 s alone must not be given up on when other processes
take half the cores); wall time bounds it too, at ``WALL_FACTOR`` times as much.
Where there is no ``fork``, it runs in the process, unbounded.

>>> run_limited(lambda: "done", seconds=5)
('ok', 'done')
"""

from __future__ import annotations

import os
import select
import signal
import time
from typing import Callable

WALL_FACTOR = 10     # a starved copy still ends: at most this many times the CPU limit
POLL_SECONDS = 0.02


def run_limited(compute: Callable[[], str], seconds: float) -> tuple[str, str]:
    """``("ok", text)`` with the text ``compute()`` returns, ``("error", message)`` when
    it raised, or ``("timeout", "")`` when it used ``seconds`` of CPU time (or ran
    ``WALL_FACTOR`` times as long) without an answer."""
    if not hasattr(os, "fork"):
        return _answer(compute)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: compute, answer, leave without running Python's exit code
        try:
            os.close(read)
            status, text = _answer(compute)
            data = f"{status}\n{text}".encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
        finally:
            os._exit(0)
    os.close(write)
    chunks, deadline = [], time.monotonic() + seconds * WALL_FACTOR
    try:
        while True:
            if not select.select([read], [], [], POLL_SECONDS)[0]:
                if time.monotonic() > deadline or cpu_seconds(pid) > seconds:
                    os.kill(pid, signal.SIGKILL)
                    return "timeout", ""
                continue
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    status, _, text = b"".join(chunks).decode().partition("\n")
    return (status, text) if status in ("ok", "error") else ("error", "the computation died")


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """The CPU time process ``pid`` has used (with ``children``: and its children it
    waited for); 0 where ``/proc`` cannot tell (then only a wall-time bound applies).

    >>> cpu_seconds(os.getpid()) > 0
    True
    """
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
    except OSError:
        return 0.0
    used = fields[11:15] if children else fields[11:13]  # utime stime (cutime cstime)
    return sum(int(ticks) for ticks in used) / os.sysconf("SC_CLK_TCK")


def _answer(compute: Callable[[], str]) -> tuple[str, str]:
    try:
        return "ok", compute()
    except Exception as error:  # reported to the caller, who decides
        return "error", f"{type(error).__name__}: {error}"
