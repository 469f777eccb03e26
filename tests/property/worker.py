"""A persistent worker: runs cases one after another, one JSON outcome line per case.

Protocol: the parent writes ``{"family": ..., "seed": ...}`` lines to stdin; the worker
answers each with ``{"family", "seed", "outcome", "detail"[, "reproducer"]}`` on the
original stdout (Python's ``sys.stdout`` and fd 1 are moved to stderr, so nothing polyopt
prints can break the protocol).  Before each piece of a case runs, the script so far is
in ``<scratch>/inflight.py``: if the worker dies or hangs, the parent reads it there.

Run one case by hand::

    PYTHONPATH=.:tests python -m property.worker --family te-steps --seed 12
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import random
import sys
import tempfile
from pathlib import Path

import numpy  # noqa: F401  (imported before the first case: not part of its time)
import polyopt  # noqa: F401

from .families import families
from .script import HARNESS, Script

OK = ("ok-accepted", "ok-refused", "ok-no-oracle")  # (no-oracle: onnx, see onnx_check)


def run_case(family: str, seed: int, scratch: Path) -> dict:
    """Run case ``(family, seed)``; returns its outcome record."""
    rng = random.Random(f"{family}:{seed}")
    for old in scratch.glob("inflight*"):
        old.unlink()
    script = Script(scratch / "inflight.py")
    try:
        script.run(HARNESS, top=True)
        text = families()[family](rng, script)
    except BaseException as error:  # the case's outcome, whatever it is
        if isinstance(error, KeyboardInterrupt):
            raise
        ns = script.namespace
        if "classify" in ns:
            text = f"{ns['classify'](error)} {ns['describe'](error)}"
        else:
            text = f"crash harness: {type(error).__name__}: {error}"
    outcome, _, detail = text.partition(" ")
    record = {"family": family, "seed": seed, "outcome": outcome, "detail": detail}
    if outcome not in OK:
        record["reproducer"] = script.reproducer(
            f"property case {family} seed {seed}: {outcome}\n{detail[:300]}")
    return record


def serve(scratch: Path) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    protocol.write(json.dumps({"ready": True}) + "\n")  # imports done: cases may start
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        record = run_case(request["family"], int(request["seed"]), scratch)
        protocol.write(json.dumps(record) + "\n")
        protocol.flush()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--scratch")
    args = parser.parse_args(argv)
    faulthandler.enable()
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="polyopt-property-"))
    scratch.mkdir(parents=True, exist_ok=True)
    if args.family is None:
        serve(scratch)
        return
    record = run_case(args.family, args.seed, scratch)
    print(record.pop("reproducer", ""))
    print(json.dumps(record))


if __name__ == "__main__":
    main()
