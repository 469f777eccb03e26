"""Run cases in persistent worker processes, each case under a time limit.

:func:`run_cases` starts ``workers`` processes of :mod:`property.worker` and feeds them
``(family, seed)`` cases one after another (a fresh process every :data:`RECYCLE`
cases, so that memory stays bounded).  A worker that dies (a signal, an exit) or
does not answer within ``timeout`` seconds of its CPU time (``plan.LONGER`` times that for families of
whole builds; ``WALL_FACTOR`` times as long on the clock, for a case that sleeps) is killed and restarted; the case in flight
gets the outcome ``signal`` or ``timeout`` and the reproducer the worker left in its
scratch directory.  CPU time, so that a loaded machine does not turn slow cases into
timeouts (two cases of 12 and 23 s of CPU did, at load 6).

>>> records = run_cases([("te", 1)], workers=1)
>>> records[0]["outcome"]
'ok-accepted'
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from polyopt.transform.time_limit import cpu_seconds

from .plan import LONGER

ROOT = Path(__file__).resolve().parents[2]
OK = ("ok-accepted", "ok-refused", "ok-no-oracle")  # (no-oracle: onnx, see onnx_check)
STARTUP = 120.0  # seconds a new worker may take to import polyopt
RECYCLE = 250  # cases per worker process (compiled kernels stay cached in a process)
STOP_GRACE = 10.0  # seconds a worker whose input is closed has to exit before it is killed
WALL_FACTOR = 3  # a case may take this many times its CPU limit on the clock
POLL = 0.2  # seconds between looks at a worker's CPU time


class Worker:
    """One worker process and its scratch directory."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.process = None
        self.cases = 0
        self.start()

    def start(self):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]),
                   OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONFAULTHANDLER="1")
        self.log = open(self.scratch / "stderr.log", "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "property.worker", "--scratch", str(self.scratch)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, env=env,
            cwd=ROOT)
        # the worker's "ready": its imports are not a case's time (on a loaded machine it
        # may come later: then the case's answer skips it, see _answer)
        self.ready = _is_ready(self._read_line(STARTUP))

    def _read_line(self, timeout: float) -> bytes:
        """One line from the worker, or b"" if none comes within ``timeout`` seconds."""
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout)
        selector.close()
        return self.process.stdout.readline() if ready else b""

    def stop(self):
        """End the worker: its input closed, it leaves its loop and exits, running its
        ``atexit`` cleanups (the bad-input cases' folders); killed if it does not."""
        if self.process and self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=STOP_GRACE)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        self.log.close()

    def run(self, family: str, seed: int, timeout: float) -> dict:
        self.cases += 1
        if self.cases % RECYCLE == 0:
            self.stop()
            self.start()
        request = json.dumps({"family": family, "seed": seed}) + "\n"
        try:
            self.process.stdin.write(request.encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        timeout *= LONGER.get(family, 1)
        line, timed_out = self._answer(timeout)
        if line:
            return json.loads(line)
        return self._lost(family, seed, timeout, timed_out=timed_out)

    def _answer(self, timeout: float) -> tuple[bytes, bool]:
        """The worker's answer, or ``(b"", timed_out)`` when it used ``timeout``
        seconds of CPU (or ``WALL_FACTOR`` times that on the clock) or died."""
        pid = self.process.pid
        cpu, deadline = cpu_seconds(pid, children=True), time.monotonic() + \
            timeout * WALL_FACTOR
        while True:
            line = self._read_line(POLL)
            if line and not self.ready and _is_ready(line):  # the imports ended only now:
                self.ready = True                           # the case starts now
                cpu, deadline = cpu_seconds(pid, children=True), time.monotonic() + \
                    timeout * WALL_FACTOR
                continue
            if line or self.process.poll() is not None:
                return line, False
            if time.monotonic() > deadline or \
                    cpu_seconds(pid, children=True) - cpu > timeout:
                return b"", True

    def _lost(self, family, seed, timeout, timed_out):
        """The worker died or hung on this case: kill it, keep its reproducer, restart."""
        if timed_out or self.process.poll() is None:
            self.process.kill()
        code = self.process.wait()
        inflight = self.scratch / "inflight.py"
        reproducer = inflight.read_text() if inflight.exists() else ""
        if timed_out:
            outcome, detail = "timeout", (f"no answer within {timeout:.0f} s of CPU time "
                                          f"({timeout * WALL_FACTOR:.0f} s on the clock)")
        elif code < 0:
            outcome, detail = "signal", f"worker killed by {signal.Signals(-code).name}"
        else:
            outcome, detail = "signal", f"worker exited with status {code}"
        self.log.close()
        self.start()
        return {"family": family, "seed": seed, "outcome": outcome, "detail": detail,
                "reproducer": reproducer.replace("in flight when the worker stopped",
                                                 f"{outcome}: {detail}")}


def _is_ready(line: bytes) -> bool:
    """Whether ``line`` is a new worker's "ready" (not a case's record)."""
    try:
        return json.loads(line) == {"ready": True}
    except ValueError:
        return False


def run_cases(cases, *, workers: int = 2, timeout: float = 25.0, progress=None) -> list[dict]:
    """Run ``cases`` (``(family, seed)`` pairs) on ``workers`` processes; returns one
    record per case, in the order of ``cases``.  ``progress(record)`` is called as each
    case finishes."""
    todo = queue.Queue()
    for index, case in enumerate(cases):
        todo.put((index, case))
    results = [None] * len(cases)
    lock = threading.Lock()

    def serve(scratch):
        worker = Worker(Path(scratch))
        try:
            while True:
                try:
                    index, (family, seed) = todo.get_nowait()
                except queue.Empty:
                    return
                started = time.monotonic()
                record = worker.run(family, seed, timeout)
                record["seconds"] = round(time.monotonic() - started, 2)
                results[index] = record
                if progress is not None:
                    with lock:
                        progress(record)
        finally:
            worker.stop()

    with tempfile.TemporaryDirectory(prefix="polyopt-property-") as root:
        threads = [threading.Thread(target=serve, args=(Path(root) / f"w{k}",))
                   for k in range(workers)]
        for k, thread in enumerate(threads):
            (Path(root) / f"w{k}").mkdir()
            thread.start()
        for thread in threads:
            thread.join()
    return results


def defects(records) -> list[dict]:
    return [r for r in records if r["outcome"] not in OK]
