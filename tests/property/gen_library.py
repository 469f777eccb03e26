"""Random operator-library cases for the ``library`` property family: a seed gives a
spec (one to three kernels, each a grid of sizes and dtypes, some parallel) and one to
four steps (builds, interrupted builds, two concurrent builds, a tampered cache entry or
output file, a spec changed under the same variant names), run and judged by
:func:`property.library_check.run_library_case`.

>>> import random
>>> kernels, steps = draw_library_case(random.Random(2))
>>> 1 <= len(kernels) <= 3 and 1 <= len(steps) <= 4
True
"""

from __future__ import annotations

import random
from pathlib import Path

from .library_check import KINDS

LIBRARY_CHECK = (Path(__file__).parent / "library_check.py").read_text()
WHERE = ("object", "meta", "request", "shared", "static", "header", "manifest")
HOW = ("truncate", "flip", "swap", "delete")


def _step(rng: random.Random) -> tuple:
    kind = rng.choice(["build", "interrupt", "concurrent", "tamper", "tamper", "respec"])
    if kind in ("build", "concurrent"):
        return (kind, rng.choice([1, 2]))
    if kind == "interrupt":
        return (kind, round(rng.uniform(0.0, 2.5), 2))
    if kind == "tamper":
        return (kind, rng.choice(WHERE), rng.choice(HOW), rng.randrange(10**6))
    return (kind, rng.randint(1, 3))


def draw_library_case(rng: random.Random, max_steps: int = 4) -> tuple[list, list]:
    """``(kernels, steps)``: kernels ``[(kind, sizes, dtypes, parallel)]``."""
    kernels = [(rng.choice(sorted(KINDS)), rng.sample([1, 3, 8, 17], rng.randint(1, 2)),
                rng.sample(["float32", "float64", "int32"], rng.randint(1, 2)),
                rng.random() < 0.5) for _ in range(rng.randint(1, 3))]
    steps = [_step(rng) for _ in range(rng.randint(1, max_steps))]
    if rng.random() < 0.7 and steps[0][0] not in ("build", "concurrent"):
        steps.insert(0, ("build", 2))  # mostly something built to tamper with
    return kernels, steps[:max_steps]


def family_library(rng, script):
    kernels, steps = draw_library_case(rng)
    script.run(LIBRARY_CHECK, top=True)
    script.run(f"OUTCOME = run_library_case({kernels!r}, {steps!r})")
    return script.namespace["OUTCOME"]
