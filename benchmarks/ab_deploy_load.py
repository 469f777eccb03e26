"""A/B of an exported model's load (``NAME_create``) with its weights file: two polyopt
trees (before/after), ResNet-18's weights (45 MB: the real widths and classes; the input is
32x32 so that it compiles fast, which does not change the weights).

Each tree exports the model in a subprocess; a C program linked with the library then
creates the model once per fresh process (the weights file in the page cache, as in
bench_deploy.py; one create of each tree and thread count per round, rounds repeated) and
prints the wall and the process's CPU time (all its threads) of ``NAME_create``.  CPU
time is the figure to compare on a loaded machine; the wall time of a parallel check is
lower than its CPU time only where the threads get cores.

    python benchmarks/ab_deploy_load.py --before /tmp/base --threads 1 2 --samples 9
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from _env import link_timer  # noqa: E402

EXPORT = """
import sys, polyopt as po
sys.path.insert(0, {tests!r})
from testlib.onnx_models import resnet18
model = resnet18(resolution=32)
compiled = po.graph.compile(po.graph.from_onnx(model), num_threads={threads})
compiled.export_library({folder!r}, name="resnet")
"""
TIMER = r"""
#include <stdio.h>
#include <time.h>
#include "resnet.h"
static double now(clockid_t clock) { struct timespec t; clock_gettime(clock, &t);
                                     return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    resnet_model *m; double wall = now(CLOCK_MONOTONIC), cpu = now(CLOCK_PROCESS_CPUTIME_ID);
    if (argc != 2 || resnet_create(argv[1], &m) != POLYOPT_OK) {
        fprintf(stderr, "%s\n", resnet_error_message()); return 1; }
    printf("{\"wall_ms\": %.3f, \"cpu_ms\": %.3f}\n", 1e3 * (now(CLOCK_MONOTONIC) - wall),
           1e3 * (now(CLOCK_PROCESS_CPUTIME_ID) - cpu));
    resnet_destroy(m);
    return 0;
}
"""


def export(tree: str, folder: str, threads: int) -> None:
    env = {**os.environ, "PYTHONPATH": tree}
    subprocess.run([sys.executable, "-c", EXPORT.format(tests=os.path.join(tree, "tests"),
                                                        threads=threads, folder=folder)],
                   check=True, env=env, cwd=tree)  # (python -c: the cwd comes first)


def build_timer(folder: str) -> str:
    return link_timer(folder, TIMER, "resnet")


def time_create(program: str, folder: str) -> dict:
    return json.loads(subprocess.run([program, folder], capture_output=True, text=True,
                                     check=True).stdout)


def summary(runs: list[dict]) -> dict:
    return {key: {"median": statistics.median(r[key] for r in runs),
                  "min": min(r[key] for r in runs)} for key in ("wall_ms", "cpu_ms")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the polyopt tree to compare with")
    parser.add_argument("--after", default=TREE)
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--samples", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ab-deploy-load-") as scratch:
        programs = {}
        for label, tree in (("before", args.before), ("after", args.after)):
            for threads in args.threads:
                folder = os.path.join(scratch, f"{label}-{threads}")
                export(tree, folder, threads)
                programs[label, threads] = build_timer(folder), folder
        runs: dict = {key: [] for key in programs}
        for _ in range(args.samples):  # interleaved: one create of each per round
            for key, (program, folder) in programs.items():
                runs[key].append(time_create(program, folder))
        for (label, threads), samples in runs.items():
            print(json.dumps({"tree": label, "threads": threads, **summary(samples)}),
                  flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
