"""Which cases the default and the slow property runs take, and how a failure reads.

The default run (``pytest tests/property``) takes :data:`FAST` (seeds from 0), the slow
run (``pytest -m slow tests/property``, ``benchmarks/run_property.py``) :data:`SLOW`
(seeds from :data:`SLOW_FIRST_SEED`, so that it looks beyond the fast subset).

>>> sum(SLOW.values()) >= 10_000
True
"""

from __future__ import annotations

FAST = {"te": 10, "te-steps": 30, "te-auto": 10, "kernel-steps": 30, "c-steps": 20,
        "c-auto": 20, "c-types": 8, "te-tune": 5, "c-tune": 5, "handwritten": 80,
        "bad-input": 130, "onnx": 10, "library": 1, "cli": 4}
SLOW = {"te": 1500, "te-steps": 3000, "te-auto": 1000, "kernel-steps": 2000, "c-steps": 1000,
        "c-auto": 1500, "c-types": 1500, "te-tune": 500, "c-tune": 500, "handwritten": 1500,
        "bad-input": 1500, "onnx": 1500, "library": 200, "cli": 600}
SLOW_FIRST_SEED = 100_000
TIMEOUT = 30.0  # seconds of CPU time per case (pool.WALL_FACTOR times that on the clock)
# families whose cases run whole builds in subprocesses: this many times TIMEOUT
LONGER = {"cli": 4, "library": 10}


def cases(plan: dict, first_seed: int = 0, scale: float = 1.0) -> list[tuple[str, int]]:
    """``(family, seed)`` pairs, families interleaved (so that a partial run covers all)."""
    counts = {family: max(1, round(count * scale)) for family, count in plan.items()}
    out = []
    for k in range(max(counts.values())):
        out += [(family, first_seed + k) for family, count in counts.items() if k < count]
    return out


def format_defects(defects: list[dict], full: int = 3) -> str:
    """A failure message: one line per defect, then the reproducers of the first ``full``
    (each a standalone script: save it and run it with ``python``)."""
    lines = [f"{len(defects)} defect(s):"]
    lines += [f"  {d['family']} seed {d['seed']}: {d['outcome']}: {d['detail'][:300]}"
              for d in defects]
    for d in defects[:full]:
        lines += ["", f"----- reproducer of {d['family']} seed {d['seed']} "
                  f"(or: PYTHONPATH=.:tests python -m property.worker --family {d['family']} "
                  f"--seed {d['seed']}) -----", d.get("reproducer", "")]
    return "\n".join(lines)
