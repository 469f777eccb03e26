"""Run a computation that cannot be interrupted under a limit of wall time.

isl's scheduler bounds its effort by counting operations, but one operation can take
long (an integer program whose numbers grow): a program that gave up after 20,000
operations in 30 ms ran for minutes with 200,000.  islpy holds the GIL while isl runs,
so no thread can stop it; :func:`run_limited` runs it in a forked copy of the process
instead and kills the copy when time is up.  Where there is no ``fork``, it runs in
the process, unbounded.

>>> run_limited(lambda: "done", seconds=5)
('ok', 'done')
"""

from __future__ import annotations

import os
import select
import signal
import time
from typing import Callable


def run_limited(compute: Callable[[], str], seconds: float) -> tuple[str, str]:
    """``("ok", text)`` with the text ``compute()`` returns, ``("error", message)`` when
    it raised, or ``("timeout", "")`` when it ran for ``seconds`` without an answer."""
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
    chunks, deadline = [], time.monotonic() + seconds
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([read], [], [], remaining)[0]:
                os.kill(pid, signal.SIGKILL)
                return "timeout", ""
            chunk = os.read(read, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    status, _, text = b"".join(chunks).decode().partition("\n")
    return (status, text) if status in ("ok", "error") else ("error", "the computation died")


def _answer(compute: Callable[[], str]) -> tuple[str, str]:
    try:
        return "ok", compute()
    except Exception as error:  # reported to the caller, who decides
        return "error", f"{type(error).__name__}: {error}"
