"""The slow property run: at least 10,000 generated cases, with its result recorded.

Run from the repository root::

    python benchmarks/run_property.py                 # the slow set (tests/property/plan.py)
    python benchmarks/run_property.py --scale 0.05    # a twentieth of it
    python benchmarks/run_property.py --families handwritten,bad-input

Each case (a family and a seed) runs in one of two persistent worker processes under a
time limit (tests/property/pool.py; the onnx, library and cli families of issue 32 too); references are computed without polyopt.  Writes
``benchmarks/results/property.md`` (the command, the counts per family and outcome
class, the defects grouped by message) and ``property.json`` (the counts and every
defect's record), and saves each defect's standalone reproducer in
``benchmarks/results/property_reproducers/`` (not committed: run them with ``python``).
Prints PASS when no case found a defect (issue 12: "a slow run of at least 10,000
generated cases passes with zero defects"), else FAIL.  Progress goes to stderr, and the
results are rewritten every 500 cases, so that an interrupted run still reports.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import functools
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

from _env import write_results as machine_results  # noqa: E402
from property.plan import LONGER, SLOW, SLOW_FIRST_SEED, TIMEOUT, cases  # noqa: E402
from property.pool import OK, run_cases  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
CLASSES = ["ok-accepted", "ok-refused", "ok-no-oracle", "crash", "internal", "wrong",
           "accepted-illegal", "replay", "refusal-class", "oracle", "message", "bad-refusal",
           "accepted-bad", "accepted-invalid", "signal", "timeout"]


@functools.lru_cache(maxsize=1)
def _commit() -> str:
    """The commit the run started from (asked once, at the start: later commits during
    a run do not change the code its workers imported)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cause(detail: str) -> str:
    """A defect's message without its numbers and instances, to group defects by cause."""
    first = (detail.split(" @ ")[0].splitlines() or [""])[0]
    return re.sub(r"\S*\d\S*", "#", first)[:64]


def write_results(records, command, started, planned) -> bool:
    done = [r for r in records if r is not None]
    counts = collections.Counter((r["family"], r["outcome"]) for r in done)
    families = list(dict.fromkeys(r["family"] for r in done))
    classes = [c for c in CLASSES if any(k[1] == c for k in counts)]
    classes += sorted({k[1] for k in counts} - set(classes))
    defects = [r for r in done if r["outcome"] not in OK]
    passed = not defects and len(done) >= planned
    minutes = (time.time() - started) / 60
    lines = [
        "# Property run (issues 12, 32): generated cases against references computed without "
        "polyopt",
        "",
        f"Command: `{command}`  ",
        f"Commit {_commit()}, {datetime.datetime.now().isoformat(timespec='minutes')}, "
        f"{platform.python_version()}, 2 worker processes, {TIMEOUT:.0f} s of CPU per case ("
        + ", ".join(f"{f} {TIMEOUT * k:.0f} s" for f, k in LONGER.items()) + "), "
        f"{minutes:.1f} min.  ",
        f"Cases: {len(done)} of {planned} planned.  Result: **{'PASS' if passed else 'FAIL'}** "
        f"({len(defects)} defect(s)).",
        "",
        "| family | " + " | ".join(classes) + " | total |",
        "|---|" + "---|" * (len(classes) + 1),
    ]
    for family in families:
        row = [str(counts.get((family, c), 0)) for c in classes]
        total = sum(counts.get((family, c), 0) for c in classes)
        lines.append(f"| {family} | " + " | ".join(row) + f" | {total} |")
    lines.append("| all | " + " | ".join(str(sum(counts.get((f, c), 0) for f in families))
                                          for c in classes) + f" | {len(done)} |")
    lines += ["", "Outcome classes: ok-accepted (numbers checked; cli: status 0 or 1; library: "
              "every step's load checked), ok-refused (a PolyoptError; cli: status 2 with one "
              "error line), ok-no-oracle (onnx: onnxruntime has no kernel for the model, "
              "polyopt ran it); every other class is a defect.  Families: "
              "tests/property/families.py (onnx: random graphs against onnxruntime; library: "
              "interrupted, concurrent and tampered library builds; cli: bad inputs of every "
              "polyopt command).", ""]
    if defects:
        lines += ["## Defects", "", "Reproduce one with "
                  "`PYTHONPATH=.:tests python -m property.worker --family F --seed S`, or run "
                  "its saved script from `benchmarks/results/property_reproducers/`.", ""]
        by_cause = collections.defaultdict(list)
        for r in defects:
            by_cause[(r["outcome"], _cause(r["detail"]))].append(r)
        for (outcome, detail), group in sorted(by_cause.items(), key=lambda kv: -len(kv[1])):
            seeds = ", ".join(f"{r['family']} {r['seed']}" for r in group[:6])
            more = f" (+{len(group) - 6} more)" if len(group) > 6 else ""
            lines.append(f"- **{outcome}** x{len(group)}: {detail} -- {seeds}{more}")
    machine_results("property", "\n".join(lines) + "\n", {
        "command": command, "cases": len(done), "planned": planned, "passed": passed,
        "counts": {f"{family} {outcome}": n for (family, outcome), n in sorted(counts.items())},
        "defects": [{k: v for k, v in r.items() if k != "reproducer"} for r in defects]})
    folder = RESULTS / "property_reproducers"
    for r in defects:
        if r.get("reproducer"):
            folder.mkdir(exist_ok=True)
            (folder / f"{r['outcome']}_{r['family']}_{r['seed']}.py").write_text(
                r["reproducer"])
    return passed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the slow set")
    parser.add_argument("--families", help="comma-separated families (default: all)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    plan = {f: n for f, n in SLOW.items()
            if not args.families or f in args.families.split(",")}
    todo = cases(plan, SLOW_FIRST_SEED, args.scale)
    command = "python benchmarks/run_property.py" + "".join(
        f" {a}" for a in sys.argv[1:])
    started = time.time()
    _commit()
    records = [None] * len(todo)
    index = {case: k for k, case in enumerate(todo)}
    finished = 0

    def progress(record):
        nonlocal finished
        records[index[record["family"], record["seed"]]] = record
        finished += 1
        if record["outcome"] not in OK:
            print(f"DEFECT {record['family']} {record['seed']}: {record['outcome']}: "
                  f"{record['detail'][:200]}", file=sys.stderr, flush=True)
        if finished % 500 == 0:
            print(f"{finished}/{len(todo)} cases, {time.time() - started:.0f} s",
                  file=sys.stderr, flush=True)
            write_results(records, command, started, len(todo))

    run_cases(todo, workers=args.workers, timeout=TIMEOUT, progress=progress)
    passed = write_results(records, command, started, len(todo))
    print(("PASS" if passed else "FAIL") + f": see {RESULTS / 'property.md'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
