"""Operator libraries ahead of time (issue 18): build a library of N variants (default
1,000: matmul, conv2d, elementwise chains, softmax, layer norm over shapes and dtypes,
``benchmarks/aot_spec.py``) cold serially, with 2 local worker processes and on a
2-worker Dask LocalCluster; rebuild it warm; measure the library's size and load time;
build it with one variant made to fail.  Each build is a fresh ``polyopt lib build``
process with its own empty cache (``POLYOPT_CACHE``), timed by the wall clock.

    python benchmarks/bench_aot.py [--variants N]   ->  benchmarks/results/aot.md

Targets: Dask (2 workers) >= 1.8x faster than serial; warm rebuild < 5 s with 100% cache
hits and byte-identical outputs; the failing variant reported, the rest built.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from _env import write_results  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPEC = str(ROOT / "benchmarks" / "aot_spec.py")
OUTPUTS = ("libaot_spec.so", "libaot_spec.a", "aot_spec.h")
LOAD = """
import sys, time
start = time.perf_counter()
import polyopt as po
imported = time.perf_counter()
lib = po.load_library(sys.argv[1])
print(imported - start, time.perf_counter() - imported, len(lib.variants))
"""


def build(work: pathlib.Path, label: str, variants: int, extra: list[str], *,
          cache: str | None = None, fail: bool = False) -> dict:
    out = work / label
    env = dict(os.environ, PYTHONPATH=str(ROOT), AOT_VARIANTS=str(variants),
               POLYOPT_CACHE=cache or str(work / f"cache-{label}"), OMP_NUM_THREADS="1")
    env.pop("AOT_FAIL", None)
    if fail:
        env["AOT_FAIL"] = "1"
    command = [sys.executable, "-m", "polyopt.cli", "lib", "build", SPEC, "-o", str(out),
               "--quiet", *extra]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    load = max(load, os.getloadavg()[0])
    summary = re.search(r"(\d+) variant\(s\) in .* \((\d+) from the cache\)", done.stdout)
    if summary is None:
        sys.exit(f"{label} build failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    print(f"{label}: {seconds:.1f} s, {summary.group(1)} built, {summary.group(2)} cached, "
          f"exit {done.returncode}", flush=True)
    return {"label": label, "seconds": seconds, "load": load, "built": int(summary.group(1)),
            "cached": int(summary.group(2)), "exit": done.returncode, "out": out,
            "failed_lines": [line for line in done.stdout.splitlines()
                             if line.startswith("FAILED")],
            "cache": env["POLYOPT_CACHE"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=1000)
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-aot-"))
    serial = build(work, "serial", args.variants, ["-j", "1"])
    pool = build(work, "pool2", args.variants, ["-j", "2"])
    dask = build(work, "dask2", args.variants, ["-j", "2", "--dask", "local"])
    warm = build(work, "warm", args.variants, ["-j", "2"], cache=dask["cache"])
    failing = build(work, "failing", args.variants, ["-j", "2"], cache=dask["cache"],
                    fail=True)
    # the machine is shared: serial again last, and the faster serial run is the base
    # (the speedups are then the lower of the two)
    serial_again = build(work, "serial-again", args.variants, ["-j", "1"])
    base = min(serial["seconds"], serial_again["seconds"])
    identical = all((dask["out"] / n).read_bytes() == (warm["out"] / n).read_bytes()
                    for n in OUTPUTS)
    same_as_serial = all((serial["out"] / n).read_bytes() == (dask["out"] / n).read_bytes()
                         for n in OUTPUTS)
    sizes = {n: (dask["out"] / n).stat().st_size for n in OUTPUTS}
    loads = []
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", LOAD, str(dask["out"])], check=True,
                              capture_output=True, text=True,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
        loads.append([float(x) for x in done.stdout.split()])
    load_import = sorted(x[0] for x in loads)[1]
    load_library = sorted(x[1] for x in loads)[1]
    total = serial["built"]
    checks = [
        ("Dask LocalCluster (2 workers) >= 1.8x faster than serial",
         base / dask["seconds"] >= 1.8, f"{base / dask['seconds']:.2f}x"),
        ("2 local workers >= 1.8x faster than serial",
         base / pool["seconds"] >= 1.8, f"{base / pool['seconds']:.2f}x"),
        ("warm rebuild < 5 s", warm["seconds"] < 5, f"{warm['seconds']:.2f} s"),
        ("warm rebuild: 100% cache hits", warm["cached"] == total,
         f"{warm['cached']}/{total}"),
        ("warm rebuild byte-identical (.so, .a, .h)", identical, str(identical)),
        ("one failing variant: reported, exit 1, the rest built",
         failing["exit"] == 1 and len(failing["failed_lines"]) == 1 and failing["built"] == total,
         f"exit {failing['exit']}, {len(failing['failed_lines'])} failed, {failing['built']} built"),
    ]
    lines = [
        "# Operator libraries ahead of time (issue 18)", "",
        f"`python benchmarks/bench_aot.py --variants {args.variants}`: {total} variants "
        "(matmul, conv2d, elementwise chains, softmax, layer norm; float32 and float64; "
        "default schedules; `benchmarks/aot_spec.py`). Each build is a fresh `polyopt lib "
        "build` process (its import and Dask's start-up included) with an empty cache, "
        f"wall clock, on a machine with {os.cpu_count()} cores shared with other jobs.", "",
        "Serial runs first and again last; the faster of the two is the base of the "
        "speedups. The load average (1 min, the higher of start and end) shows how busy "
        "the machine was.", "",
        "| build | seconds | kernels/s | vs serial | load average |", "|---|---|---|---|---|",
    ]
    for run in (serial, pool, dask, warm, serial_again):
        lines.append(f"| {run['label']} | {run['seconds']:.1f} | "
                     f"{total / run['seconds']:.1f} | {base / run['seconds']:.2f}x | "
                     f"{run['load']:.1f} |")
    lines += ["", f"- library: `libaot_spec.so` {sizes['libaot_spec.so'] / 1e6:.2f} MB, "
              f"`libaot_spec.a` {sizes['libaot_spec.a'] / 1e6:.2f} MB, `aot_spec.h` "
              f"{sizes['aot_spec.h'] / 1e3:.0f} kB",
              f"- load time (median of 3 fresh processes): `import polyopt` {load_import:.2f} s, "
              f"`po.load_library` {load_library * 1e3:.0f} ms for {total} variants",
              f"- serial, pool and Dask libraries byte-identical: {same_as_serial}",
              f"- failing build: {failing['failed_lines'][0] if failing['failed_lines'] else '-'}",
              "", "| target | result | measured |", "|---|---|---|"]
    for title, ok, measured in checks:
        lines.append(f"| {title} | {'PASS' if ok else 'FAIL'} | {measured} |")
        print(f"{'PASS' if ok else 'FAIL'}: {title} ({measured})")
    if args.variants != 1000:
        lines += ["", f"Run with {args.variants} variants instead of the issue's 1,000 "
                  "(see the note below)."]
    data = {"variants": total, "runs": {r["label"]: r["seconds"] for r in
                                        (serial, pool, dask, warm, failing, serial_again)},
            "sizes": sizes, "load_seconds": load_library,
            "checks": {title: ok for title, ok, _ in checks}}
    write_results("aot", "\n".join(lines) + "\n", data)


if __name__ == "__main__":
    main()
