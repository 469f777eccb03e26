"""The tuning records: every trial, one JSON line, one file per machine.

``RecordsDB(folder)`` keeps ``<folder>/<fingerprint>.jsonl``, where the fingerprint
(:func:`machine_fingerprint`) hashes the CPU's name and features: a record measured on
another machine is never used (its file is another one; a line of another machine found
in this file is ignored with a warning).  The folder must be private to this user (mode
0700, ours: :func:`polyopt.private_folder.make_private`), the file a regular file of ours
that nobody else may write.  A line holds the task's signature, its name and argument
description, the target key, the point (``config``), the schedule's ``script()``, the
structural hash of its lowered program, the loop-nest features, the measure result, polyopt's version and the time, with a SHA-256
of all that: a damaged, truncated or edited line is refused with a warning.  Lines are
appended with one ``write`` each (``O_APPEND``), so a killed run leaves at most its last
line truncated, and a new run resumes: :meth:`RecordsDB.measured` says which points
were measured already.

>>> import tempfile
>>> db = RecordsDB(tempfile.mkdtemp())
>>> db.records("0" * 64, "llvm")
[]
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
import warnings

from ..errors import InvalidArgumentError, PolyoptWarning, public, public_methods
from ..machine import TargetInfo
from ..private_folder import make_private, private_folder
from .errors import RecordsError
from .measure import MeasureResult

__all__ = ["RecordsDB", "apply_best", "best_config", "machine_fingerprint"]

FORMAT = 1


@public
def machine_fingerprint(info: TargetInfo | None = None) -> str:
    """16 hex digits naming a CPU by its LLVM name and features (the host's by default).

    >>> machine_fingerprint(TargetInfo.for_cpu("znver3")) == \\
    ...     machine_fingerprint(TargetInfo.for_cpu("znver4"))
    False
    """
    info = info if info is not None else TargetInfo.host()
    if not isinstance(info, TargetInfo):
        raise InvalidArgumentError(f"machine_fingerprint takes a TargetInfo, got "
                                   f"{type(info).__name__}")
    text = f"{info.kind}\0{info.name}\0{','.join(sorted(info.features))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _version() -> str:
    from .. import __version__
    return __version__


def _digest(record: dict) -> str:
    body = {k: v for k, v in record.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def config_key(config_json: dict) -> str:
    """What identifies a point within a task's records (its index and knob values)."""
    return json.dumps(config_json, sort_keys=True)


@public_methods
class RecordsDB:
    """See the module docstring.  ``folder`` None: polyopt's private cache folder
    (``<cache>/tune``); ``machine``: the fingerprint to read and write (this host's by
    default)."""

    def __init__(self, folder: str | os.PathLike | None = None, *, machine: str | None = None):
        if folder is None:
            folder = private_folder("tune")
        if not isinstance(folder, (str, os.PathLike)):
            raise InvalidArgumentError(f"RecordsDB takes a folder name, got "
                                       f"{type(folder).__name__}")
        if machine is not None and not isinstance(machine, str):
            raise InvalidArgumentError(f"machine is a fingerprint string, got {machine!r}")
        folder = os.fspath(folder)
        if os.path.isfile(folder):
            raise RecordsError(f"{folder} is a file; records live in a folder (one file per "
                               f"machine inside it): give a folder name")
        problem = make_private(folder)
        if problem:
            raise RecordsError(f"cannot keep tuning records there: {problem}; use a folder "
                               f"of your own")
        self.folder = folder
        self.machine = machine or machine_fingerprint()
        self.path = os.path.join(folder, f"{self.machine}.jsonl")
        self._lines: list[dict] = []
        self._read_bytes = 0
        self._warned_other = False

    # -- writing ---------------------------------------------------------------------
    def add(self, task, config, result: MeasureResult, *, script: str | None = None,
            features=None, program: str | None = None) -> dict:
        """Append one trial (and return the record written)."""
        from .space import ConfigEntity
        from .task import Task
        if not (isinstance(task, Task) and isinstance(config, ConfigEntity) and
                isinstance(result, MeasureResult)):
            raise InvalidArgumentError("RecordsDB.add(task, config, result) takes a "
                                       "po.tune.Task, a point of its space and a "
                                       "MeasureResult")
        record = {
            "format": FORMAT, "machine": self.machine, "signature": task.signature,
            "target": task.target_key, "task": task.name,
            "args": repr(task.args_signature), "config": config.to_json(),
            "script": script, "program": program, "features": [float(v) for v in features]
            if features is not None else None,
            "result": result.to_json(), "version": _version(), "time": time.time()}
        record["sha256"] = _digest(record)
        line = (json.dumps(record, sort_keys=True) + "\n").encode()
        descriptor = self._open_for_append()
        try:
            if os.fstat(descriptor).st_size and os.pread(descriptor, 1, os.fstat(
                    descriptor).st_size - 1) != b"\n":
                os.write(descriptor, b"\n")  # (a truncated last line stays alone)
            os.write(descriptor, line)
        finally:
            os.close(descriptor)
        return record

    def _open_for_append(self) -> int:
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT |
                                 getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as err:
            raise RecordsError(f"cannot write the records file {self.path}: {err}") from err
        self._check_file(os.fstat(descriptor), descriptor)
        return descriptor

    def _check_file(self, info, descriptor=None) -> None:
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or \
                info.st_mode & 0o022:
            if descriptor is not None:
                os.close(descriptor)
            raise RecordsError(f"the records file {self.path} is not a regular file of yours "
                               f"that only you may write; move it away")

    # -- reading ---------------------------------------------------------------------
    def _load(self) -> list[dict]:
        """Every valid record of this machine (new lines read since the last call)."""
        self._warn_other_machines()
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return self._lines
        self._check_file(info)
        if info.st_size < self._read_bytes:  # (replaced: read it again)
            self._lines, self._read_bytes = [], 0
        if info.st_size == self._read_bytes:
            return self._lines
        with open(self.path, "rb") as handle:
            handle.seek(self._read_bytes)
            data = handle.read()
        complete = data.rfind(b"\n") + 1  # (a line still being written: next time)
        refused = foreign = 0
        for number, raw in enumerate(data[:complete].splitlines()):
            if not raw.strip():
                continue
            record = _parse(raw)
            if record is None:
                refused += 1
            elif record["machine"] != self.machine:
                foreign += 1
            else:
                self._lines.append(record)
        self._read_bytes += complete
        if refused:
            warnings.warn(f"{self.path}: {refused} damaged, truncated or edited record "
                          f"line(s) refused (their checksum or format does not match)",
                          PolyoptWarning, stacklevel=3)
        if foreign:
            warnings.warn(f"{self.path}: {foreign} record(s) of another machine ignored "
                          f"(measured on another CPU: times do not transfer)",
                          PolyoptWarning, stacklevel=3)
        return self._lines

    def _warn_other_machines(self) -> None:
        if self._warned_other:
            return
        self._warned_other = True
        others = sorted(name for name in os.listdir(self.folder)
                        if name.endswith(".jsonl") and name != os.path.basename(self.path))
        if others:
            warnings.warn(f"{self.folder}: records of {len(others)} other machine(s) "
                          f"({', '.join(others[:3])}) ignored: they were measured on another "
                          f"CPU (this one is {self.machine})", PolyoptWarning, stacklevel=4)

    def records(self, signature: str, target: str) -> list[dict]:
        """Every trial of the task ``signature`` for ``target`` (a target key)."""
        return [r for r in self._load() if r["signature"] == signature and
                r["target"] == target]

    def measured(self, signature: str, target: str) -> dict:
        """``{config_key: record}`` of the points measured already (resume)."""
        return {config_key(r["config"]): r for r in self.records(signature, target)}

    def best(self, signature: str, target: str) -> dict | None:
        """The measured record of least cost (None when none was measured)."""
        found = [(MeasureResult.from_json(r["result"]).cost, k, r) for k, r in
                 enumerate(self.records(signature, target)) if r["result"]["status"] == "ok"]
        return min(found)[2] if found else None

    def related(self, task) -> list[dict]:
        """Measured records of the same operator (task name) and target with another
        signature (other shapes): training data for a cost model."""
        return [r for r in self._load() if r["task"] == task.name and
                r["target"] == task.target_key and r["signature"] != task.signature and
                r["result"]["status"] == "ok" and r.get("features")]

    def __len__(self) -> int:
        return len(self._load())

    def __repr__(self):
        return f"RecordsDB({self.path!r})"


def _parse(raw: bytes) -> dict | None:
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or \
            record.get("sha256") != _digest(record):
        return None
    for name, kind in (("machine", str), ("signature", str), ("target", str), ("task", str),
                       ("config", dict), ("result", dict)):
        if not isinstance(record.get(name), kind):
            return None
    return record


def _check_pair(db, task, what: str) -> None:
    from .task import Task
    if not isinstance(db, RecordsDB) or not isinstance(task, Task):
        raise InvalidArgumentError(f"{what}(db, task) takes a po.tune.RecordsDB and a "
                                   f"po.tune.Task, got {type(db).__name__} and "
                                   f"{type(task).__name__}")


@public
def best_config(db: RecordsDB, task):
    """The best measured point of ``task`` in ``db`` (None when there is none)."""
    _check_pair(db, task, "best_config")
    record = db.best(task.signature, task.target_key)
    return None if record is None else task.space.from_json(record["config"])


@public
def apply_best(db: RecordsDB, task, *, build: bool = True, **build_options):
    """The kernel built (``po.build``) with ``task``'s best recorded schedule, or that
    ``(schedule, tensors)`` with ``build=False``; the untuned schedule, with a warning,
    when nothing was recorded for this task on this machine."""
    _check_pair(db, task, "apply_best")
    config = best_config(db, task)
    if config is None:
        warnings.warn(f"no tuning record of task {task.name!r} for this machine in "
                      f"{db.folder}: the untuned schedule is used", PolyoptWarning,
                      stacklevel=3)
        schedule, tensors = task.default_instance()
    else:
        schedule, tensors = task.instantiate(config)  # (checked again)
    if not build:
        return schedule, tensors
    from ..build import build as build_kernel
    return build_kernel(schedule, tensors, task.target, **build_options)


_CONTEXT: list = []


@contextlib.contextmanager
def applying_best(db: RecordsDB):
    """A context in which :func:`current_best` answers from ``db`` (TVM's
    ``apply_history_best`` builds on it)."""
    if not isinstance(db, RecordsDB):
        raise InvalidArgumentError(f"applying_best takes a RecordsDB, got {type(db).__name__}")
    _CONTEXT.append(db)
    try:
        yield db
    finally:
        _CONTEXT.pop()


@public
def current_best(task):
    """The best point of ``task`` in the innermost :func:`applying_best` context (None
    outside one, or when nothing was recorded)."""
    from .task import Task
    if not isinstance(task, Task):
        raise InvalidArgumentError(f"current_best takes a po.tune.Task, got "
                                   f"{type(task).__name__}")
    return best_config(_CONTEXT[-1], task) if _CONTEXT else None
