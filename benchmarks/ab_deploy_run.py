"""A/B of an exported model's run (``NAME_run``) against the Python executor, in CPU time:
two polyopt trees' exports (before/after) and ``m.run`` of this tree, on one thread.

For each model (bench_graph.py's small settings; ``--full``: full size) each tree exports
it in a subprocess; a C program linked with the library creates it, runs it 3 times, then
``--runs`` times, and prints the median CPU time of a run (the process's: one thread),
the page faults per run and the anonymous huge pages the process holds; rounds of the C
programs and of ``m.run`` alternate (``--rounds``), and the median of the rounds' medians
is reported.  CPU time is what compares on a loaded machine (wall time there is mostly
waiting for a core).

    python benchmarks/ab_deploy_run.py --before /tmp/base --models lstm_2layer --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TREE = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from _env import C_TIMER_PRELUDE, link_timer  # noqa: E402

EXPORT = """
import sys, polyopt as po, onnx
model = onnx.load({path!r})
po.graph.compile(po.graph.from_onnx(model), num_threads=1).export_library({folder!r},
                                                                            name="m")
"""
TIMER = C_TIMER_PRELUDE + r"""
#include "m.h"
static double cpu(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    m_model *m; int i, runs = atoi(argv[2]); double *t = malloc(sizeof(double) * runs), start;
    long before;
    if (m_create(argv[1], &m) != POLYOPT_OK) {
        fprintf(stderr, "%s\n", m_error_message());
        return 1;
    }
    for (i = 0; i < m_input_count(); i++)
        m_set_input(m, i, calloc(1, m_input_bytes(i)), m_input_bytes(i));
    for (i = 0; i < 3; i++) m_run(m);
    before = faults();
    for (i = 0; i < runs; i++) { start = cpu(); if (m_run(m)) return 1; t[i] = cpu() - start; }
    qsort(t, runs, sizeof *t, cmp);
    printf("{\"cpu_ms\": %.4f, \"faults_per_run\": %.1f, \"huge_kb\": %ld}\n", 1e3 * t[runs / 2],
           (double)(faults() - before) / runs, huge_kb());
    return 0;
}
"""


def export(tree: str, model_path: str, folder: str) -> str:
    subprocess.run([sys.executable, "-c", EXPORT.format(path=model_path, folder=folder)],
                   check=True, env={**os.environ, "PYTHONPATH": tree}, cwd=tree)
    return link_timer(folder, TIMER, "m")


def python_round(compiled, feeds, runs: int) -> dict:
    for _ in range(3):
        compiled.run(feeds)
    before, times = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
    for _ in range(runs):
        start = time.process_time()
        compiled.run(feeds)
        times.append(time.process_time() - start)
    return {"cpu_ms": 1e3 * statistics.median(times),
            "faults_per_run": (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
            / runs}


def main() -> int:
    import numpy as np
    import onnx

    import polyopt as po
    from bench_graph import models
    from testlib.onnx_models import random_inputs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="the polyopt tree to compare with")
    parser.add_argument("--models", nargs="*")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--full", action="store_true", help="the models at full size")
    args = parser.parse_args()
    chosen = {k: v for k, v in models(not args.full).items()
              if not args.models or k in args.models}
    with tempfile.TemporaryDirectory(prefix="ab-deploy-run-") as scratch:
        for name, model in chosen.items():
            path = os.path.join(scratch, f"{name}.onnx")
            onnx.save(model, path)
            programs = {label: (export(tree, path, os.path.join(scratch, f"{name}-{label}")),
                                os.path.join(scratch, f"{name}-{label}"))
                        for label, tree in (("before", args.before), ("after", TREE))}
            compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1)
            feeds = {k: np.zeros_like(v) for k, v in random_inputs(model).items()}
            rounds: dict[str, list] = {"before": [], "after": [], "python": []}
            for _ in range(args.rounds):
                for label, (program, folder) in programs.items():
                    done = subprocess.run([program, folder, str(args.runs)], check=True,
                                          capture_output=True, text=True)
                    rounds[label].append(json.loads(done.stdout))
                rounds["python"].append(python_round(compiled, feeds, args.runs))
            row = {"model": name, "steps": len(compiled.steps)}
            for label, found in rounds.items():
                row[label] = {key: statistics.median(r[key] for r in found)
                              for key in found[0]}
            print(json.dumps(row), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
