"""``autotvm.callback.log_to_file`` and ``progress_bar``: called after each batch as
``callback(tuner, inputs, results)``.

``log_to_file(path)`` appends every trial to the :class:`polyopt.tune.RecordsDB` at
``path`` (a folder: one JSON-lines file per machine inside it), which
``autotvm.apply_history_best(path)`` reads.
"""

from __future__ import annotations

import math
import sys
import time

from ...errors import InvalidArgumentError, public
from ...tune.records import RecordsDB

__all__ = ["log_to_file", "progress_bar"]


def records_at(path_or_db) -> RecordsDB:
    """The records database a TVM log path names (or the database given)."""
    if isinstance(path_or_db, RecordsDB):
        return path_or_db
    if not isinstance(path_or_db, str) or not path_or_db:
        raise InvalidArgumentError(f"give the records' path (a folder name such as "
                                   f"'matmul.log') or a po.tune.RecordsDB, got {path_or_db!r}")
    return RecordsDB(path_or_db)


@public
def log_to_file(file_out, protocol: str = "json"):
    """A callback appending every measured trial to the records at ``file_out``."""
    db = records_at(file_out)

    def _log(tuner, inputs, results):
        for item, result in zip(inputs, results):
            db.add(item.task, item.config, result)

    _log.db = db
    return _log


@public
def progress_bar(total: int, prefix: str = "", si_prefix: str = "G"):
    """A callback printing, after each batch, the best time so far and the progress
    (``si_prefix``: accepted; polyopt reports times, not FLOPS)."""
    start = time.perf_counter()
    state = {"done": 0, "best": math.inf}

    def _progress(tuner, inputs, results):
        state["done"] += len(results)
        for result in results:
            if result.ok:
                state["best"] = min(state["best"], result.cost)
        best = f"{state['best'] * 1e3:.4f} ms" if math.isfinite(state["best"]) else "-"
        end = "\n" if state["done"] >= total else ""
        sys.stdout.write(f"\r{prefix}Best: {best} | Progress: ({state['done']}/{total}) | "
                         f"{time.perf_counter() - start:.2f} s{end}")
        sys.stdout.flush()

    return _progress
