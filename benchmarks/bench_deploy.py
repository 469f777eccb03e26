"""An exported model through its C API against the Python executor and onnxruntime.

For each model (the ones of bench_graph.py; ``--quick``: their small settings) and thread
count: compile, export (``m.export_library``), build a C timing program against
``lib<name>.a`` with gcc, and measure in that fresh process the load time
(``NAME_create``: the CPU check and reading the weights, each 1 MiB chunk hashed on the
pool's threads; wall and CPU time of the process) and the median
latency of ``NAME_run``; in this process the median latency of ``m.run`` (the Python
executor, same kernels) and of onnxruntime's session (Python API; its C API is not
installed here).  Also the sizes: the runtime's objects (the C runtime and the thread
pool) and the whole library and weights.  Writes ``results/deploy.md`` and ``.json``.

    python benchmarks/bench_deploy.py --quick --models resnet18 --threads 1
    python benchmarks/bench_deploy.py --quick --full resnet18   # + ResNet-18 at full size
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _env import cpu_model, restart_with_clean_environment, write_results  # noqa: E402

import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.onnx_models import ort_session, random_inputs  # noqa: E402
from bench_graph import models  # noqa: E402

TIMER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include MODEL_H
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
                          return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a,
                                               y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    P(model) *m; int i, runs = atoi(argv[2]); double start = now(), load, *t, load_cpu;
    struct timespec c0, c1; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    if (P(create)(argv[1], &m) != POLYOPT_OK) { fprintf(stderr, "%s\n", P(error_message)()); return 1; }
    load = now() - start; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    load_cpu = (c1.tv_sec - c0.tv_sec) + 1e-9 * (c1.tv_nsec - c0.tv_nsec);
    for (i = 0; i < P(input_count)(); i++) P(set_input)(m, i, calloc(1, P(input_bytes)(i)), P(input_bytes)(i));
    t = malloc(sizeof(double) * runs);
    for (i = 0; i < 3; i++) P(run)(m);
    for (i = 0; i < runs; i++) { start = now(); if (P(run)(m)) return 1; t[i] = now() - start; }
    qsort(t, runs, sizeof *t, cmp);
    printf("{\"load_ms\": %.3f, \"load_cpu_ms\": %.3f, \"run_ms\": %.4f}\n", 1e3 * load,
           1e3 * load_cpu, 1e3 * t[runs / 2]);
    P(destroy)(m);
    return 0;
}
"""


def c_timing(folder: str, name: str, runs: int) -> dict:
    with open(os.path.join(folder, "manifest.json")) as file:
        flags = json.load(file)["link"][1:]
    source = os.path.join(folder, "timer.c")
    with open(source, "w") as file:
        file.write(TIMER)
    program = os.path.join(folder, "timer")
    subprocess.run(["gcc", "-O2", f"-DMODEL_H=\"{name}.h\"", f"-DP(x)={name}_##x", "-I", folder,
                    source, os.path.join(folder, f"lib{name}.a"), *flags, "-lpthread", "-o",
                    program], check=True)
    done = subprocess.run([program, folder, str(runs)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def median_ms(call, runs: int) -> float:
    for _ in range(3):
        call()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def measure(name: str, model, threads: int, runs: int) -> dict:
    folder = tempfile.mkdtemp(prefix="bench-deploy-")
    try:
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=threads)
        start = time.perf_counter()
        manifest = compiled.export_library(folder, name=name, source=model)
        export_s = time.perf_counter() - start
        c = c_timing(folder, name, runs)
        embedded = os.path.join(folder, "embedded")
        compiled.export_library(embedded, name=name, weights="embedded")
        embedded_load = c_timing(embedded, name, 3)["load_ms"]
        feeds = {k: np.zeros_like(v) for k, v in random_inputs(model).items()}
        python_ms = median_ms(lambda: compiled.run(feeds), runs)
        session = ort_session(model, threads)
        ort_ms = median_ms(lambda: session.run(None, feeds), runs)
        size = lambda f: os.path.getsize(os.path.join(folder, f))  # noqa: E731
        return {"model": name, "threads": threads, "c_api_ms": c["run_ms"],
                "python_ms": python_ms, "onnxruntime_ms": ort_ms, "load_ms": c["load_ms"],
                "load_cpu_ms": c["load_cpu_ms"],
                "load_embedded_ms": embedded_load,
                "export_s": export_s, "kernels": len(manifest["plan"]["kernels"]),
                "runtime_kb": manifest["runtime_object_bytes"] / 1024,
                "so_kb": size(f"lib{name}.so") / 1024,
                "weights_kb": size(f"{name}.weights") / 1024}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def report(rows: list[dict], quick: bool) -> str:
    lines = ["# Exported models: the C API against the Python executor and onnxruntime", "",
             f"CPU: {cpu_model()}. "
             + ("Small settings (bench_graph.py --quick models; full size where marked), "
                f"few runs, one sample each, measured while the machine was loaded by other "
                f"jobs (load average {os.getloadavg()[0]:.1f} at the end): the C, Python "
                "and onnxruntime figures of a row are taken seconds apart, so they are "
                "indicative only." if quick else ""),
             "", "C API: a C program linked with lib<name>.a (median of NAME_run); Python: "
             "m.run (median); onnxruntime: its Python session (median). Load: NAME_create "
             "(CPU check, weights read and SHA-256 per 1 MiB chunk on the pool's threads; "
             "wall time, and in parentheses the process's CPU time; embedded: the weights "
             "inside the library, nothing read). Runtime: the C runtime's and the thread "
             "pool's objects (an upper bound of what they add beside kernels and weights).",
             "", "| model | threads | C API ms | Python ms | C/Python | onnxruntime ms | "
             "load ms | load ms (embedded) | runtime KB | .so KB | weights KB | kernels |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['model']} | {r['threads']} | {r['c_api_ms']:.3f} | "
                     f"{r['python_ms']:.3f} | {r['c_api_ms'] / r['python_ms']:.2f} | "
                     f"{r['onnxruntime_ms']:.3f} | {r['load_ms']:.2f} ({r['load_cpu_ms']:.2f} CPU) | "
                     f"{r['load_embedded_ms']:.2f} | {r['runtime_kb']:.0f} | "
                     f"{r['so_kb']:.0f} | {r['weights_kb']:.0f} | {r['kernels']} |")
    return "\n".join(lines + [""] + targets(rows, quick)) + "\n"


def targets(rows: list[dict], quick: bool) -> list[str]:
    """The issue's targets, PASS or FAIL on these rows (NOT RUN on small settings)."""
    def verdict(ok: bool) -> str:
        return "NOT RUN (small settings)" if quick else ("PASS" if ok else "FAIL")

    worst_python = max(abs(r["c_api_ms"] / r["python_ms"] - 1) for r in rows)
    slower = [f"{r['model']} {r['threads']}T" for r in rows
              if r["c_api_ms"] > r["onnxruntime_ms"]]
    resnet = [r["load_ms"] for r in rows if r["model"].startswith("resnet18")]
    runtime = max(r["runtime_kb"] for r in rows)
    return [
        f"Load average {os.getloadavg()[0]:.1f} at the end of the run.", "",
        "| target | result |", "|---|---|",
        f"| runtime beside kernels and weights < 300 KB | {runtime:.0f} KB: "
        f"{'PASS' if runtime < 300 else 'FAIL'} |",
        f"| C API latency within 3% of the Python executor | worst "
        f"{100 * worst_python:.0f}%: {verdict(worst_python <= 0.03)} |",
        f"| C API at least onnxruntime's speed | slower on "
        f"{', '.join(slower) or 'none'}: {verdict(not slower)} |",
        f"| ResNet-18 load < 50 ms (weights file) | "
        f"{', '.join(f'{v:.0f} ms' for v in resnet) or 'not run'}: "
        f"{verdict(bool(resnet) and max(resnet) < 50)} |",
    ]


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the small settings")
    parser.add_argument("--models", nargs="*", help="names among resnet18, mobilenet_v2, "
                        "bert_layer, lstm_2layer (default: all)")
    parser.add_argument("--threads", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--full", nargs="*", default=[],
                        help="also these models at full size, on one thread (with --quick)")
    args = parser.parse_args()
    restart_with_clean_environment(max(args.threads))
    chosen = {k: v for k, v in models(args.quick).items()
              if not args.models or k in args.models}
    rows = []
    for name, model in chosen.items():
        for threads in args.threads:
            rows.append(measure(name, model, threads, args.runs))
            print(rows[-1], flush=True)
    for name, model in models(False).items() if args.quick else ():
        if name in args.full:
            rows.append(measure(name, model, 1, args.runs))
            rows[-1]["model"] = f"{name} (full size)"
            print(rows[-1], flush=True)
    text = report(rows, args.quick)
    write_results("deploy", text, rows)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
