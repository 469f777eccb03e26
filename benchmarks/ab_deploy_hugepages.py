"""A/B of an exported model's load and run with and without huge pages, and against the
Python executor: one export per model and thread count, the C program run in fresh
processes with ``POLYOPT_HUGEPAGES`` set to each mode in turn (interleaved), and
``m.run`` of the same compiled model in this process between them.

Each C sample creates the model (wall and process CPU time, minor page faults), runs it
3 times, then ``--runs`` times, and prints the median wall and CPU time of a run and the
anonymous huge pages the process holds.  CPU time (all the process's threads) is what
compares on a loaded machine; on 2 threads it includes what the pool's workers spin.

    python benchmarks/ab_deploy_hugepages.py --models resnet18 --threads 1 2 --samples 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, HERE)
from _env import C_TIMER_PRELUDE, link_timer  # noqa: E402

TIMER = C_TIMER_PRELUDE + r"""
#include "m.h"
static double now(clockid_t c) { struct timespec t; clock_gettime(c, &t);
                                 return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    m_model *m; int i, runs = atoi(argv[2]);
    double *wall = malloc(sizeof(double) * runs), *cpu = malloc(sizeof(double) * runs);
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID), w, c;
    long f0 = faults(), load_faults;
    if (m_create(argv[1], &m) != POLYOPT_OK) {
        fprintf(stderr, "%s\n", m_error_message());
        return 1;
    }
    w = now(CLOCK_MONOTONIC) - w0; c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    load_faults = faults() - f0;
    for (i = 0; i < m_input_count(); i++)
        m_set_input(m, i, calloc(1, m_input_bytes(i)), m_input_bytes(i));
    f0 = faults();
    for (i = 0; i < 3; i++) m_run(m);
    for (i = 0; i < runs; i++) {
        double a = now(CLOCK_MONOTONIC), b = now(CLOCK_PROCESS_CPUTIME_ID);
        if (m_run(m)) return 1;
        wall[i] = now(CLOCK_MONOTONIC) - a; cpu[i] = now(CLOCK_PROCESS_CPUTIME_ID) - b;
    }
    qsort(wall, runs, sizeof *wall, cmp); qsort(cpu, runs, sizeof *cpu, cmp);
    printf("{\"load_ms\": %.3f, \"load_cpu_ms\": %.3f, \"load_faults\": %ld, "
           "\"run_ms\": %.4f, \"run_cpu_ms\": %.4f, \"run_faults\": %.1f, \"huge_kb\": %ld}\n",
           1e3 * w, 1e3 * c, load_faults, 1e3 * wall[runs / 2], 1e3 * cpu[runs / 2],
           (double)(faults() - f0) / (runs + 3), huge_kb());
    m_destroy(m);
    return 0;
}
"""


def build_timer(folder: str) -> str:
    return link_timer(folder, TIMER, "m")


def c_sample(program: str, folder: str, mode: str, runs: int) -> dict:
    env = {**os.environ, "POLYOPT_HUGEPAGES": mode}
    done = subprocess.run([program, folder, str(runs)], capture_output=True, text=True,
                          check=True, env=env)
    return json.loads(done.stdout)


def python_sample(compiled, feeds, runs: int) -> dict:
    for _ in range(3):
        compiled.run(feeds)
    wall, cpu = [], []
    for _ in range(runs):
        a, b = time.perf_counter(), time.process_time()
        compiled.run(feeds)
        wall.append(time.perf_counter() - a)
        cpu.append(time.process_time() - b)
    return {"run_ms": 1e3 * statistics.median(wall), "run_cpu_ms": 1e3 * statistics.median(cpu)}


def summary(samples: list[dict]) -> dict:
    return {key: round(statistics.median(s[key] for s in samples), 3) for key in samples[0]}


def main() -> int:
    import numpy as np

    import polyopt as po
    from bench_graph import models
    from testlib.onnx_models import random_inputs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="*", default=["resnet18"])
    parser.add_argument("--quick", action="store_true", help="bench_graph's small settings")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--modes", nargs="*", default=["after", "early", "0"],
                        help="POLYOPT_HUGEPAGES values: after (the default), early, 0")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--no-python", action="store_true")
    args = parser.parse_args()
    chosen = models(args.quick)
    for name in args.models:
        model = chosen[name]
        for threads in args.threads:
            folder = tempfile.mkdtemp(prefix="ab-deploy-huge-")
            try:
                compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=threads)
                compiled.export_library(folder, name="m")
                program = build_timer(folder)
                feeds = {k: np.zeros_like(v) for k, v in random_inputs(model).items()}
                results: dict[str, list] = {m: [] for m in args.modes}
                if not args.no_python:
                    results["python"] = []
                for sample in range(args.samples):
                    order = args.modes[sample % len(args.modes):] + \
                        args.modes[:sample % len(args.modes)]
                    for mode in order:
                        results[mode].append(c_sample(program, folder, mode, args.runs))
                    if not args.no_python:
                        results["python"].append(python_sample(compiled, feeds, args.runs))
                for mode, samples in results.items():
                    print(json.dumps({"model": name, "threads": threads, "mode": mode,
                                      **summary(samples)}), flush=True)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
