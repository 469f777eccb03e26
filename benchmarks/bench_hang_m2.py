"""CPU seconds of hang_m2's steps (issue 32): split(nparts=4), cache_write, then the
refused reverse, counting the process *and* the forked copies it waited for (the
rewritten kernel's dependences are computed in a forked copy under a CPU limit,
:mod:`polyopt.transform.limited_deps`; ``time.process_time()`` alone does not see them).

Each tree given runs in its own process (``PYTHONPATH=<tree>``), ``--runs`` times;
the table has the median per step.  Writes
``results/experiments/hang_m2_cpu.{json,md}``::

    python benchmarks/bench_hang_m2.py --tree before=/path/to/old/tree --tree after=.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
OUT = HERE / "results" / "experiments" / "hang_m2_cpu"
TESTS = HERE.parent / "tests"

MEASURE = '''
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import polyopt as po
from testlib.kernels import triangles as kern  # hang_m2's kernel

def now():
    t = os.times()
    return time.perf_counter(), t.user + t.system, t.children_user + t.children_system

steps = {}
s = po.create_schedule(kern)
for name, step in (("split", lambda: s["S2"].split("t", nparts=4)),
                   ("cache_write", lambda: s.cache_write(s["S2"], "global")),
                   ("reverse", lambda: s["S1"].reverse("k"))):
    wall0, own0, kids0 = now()
    try:
        step()
        verdict = "accepted"
    except po.PolyoptError as err:
        verdict = type(err).__name__
    wall1, own1, kids1 = now()
    steps[name] = {"verdict": verdict, "wall": wall1 - wall0, "cpu": own1 - own0,
                   "children_cpu": kids1 - kids0}
print(json.dumps(steps))
'''


def measure(tree: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{tree}{os.pathsep}{TESTS}")
    done = subprocess.run([sys.executable, "-c", MEASURE, tree], env=env, check=True,
                          capture_output=True, text=True, timeout=3600)
    return json.loads(done.stdout.strip().splitlines()[-1])


def load_average() -> str:
    try:
        return " ".join(pathlib.Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", required=True,
                        help="label=path of a polyopt source tree")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = {"load_before": load_average(), "trees": {}}
    for spec in args.tree:
        label, _, path = spec.partition("=")
        runs = [measure(str(pathlib.Path(path).resolve())) for _ in range(args.runs)]
        results["trees"][label] = runs
    results["load_after"] = load_average()
    OUT.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n")
    lines = ["| tree | step | verdict | CPU s (process) | CPU s (forked copies) | wall s |",
             "|---|---|---|---:|---:|---:|"]
    for label, runs in results["trees"].items():
        for step in runs[0]:
            def median(key):
                return statistics.median(run[step][key] for run in runs)
            lines.append(f"| {label} | {step} | {runs[0][step]['verdict']} | "
                         f"{median('cpu'):.1f} | {median('children_cpu'):.1f} | "
                         f"{median('wall'):.1f} |")
    print("\n".join(lines))
    print(f"load average {results['load_before']} before, {results['load_after']} after")


if __name__ == "__main__":
    main()
