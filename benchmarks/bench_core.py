"""Core benchmark: polyopt's DEFAULT schedule against NumPy, side by side, one thread.

Run from the repository root::

    pip install threadpoolctl        # or: pip install -e '.[bench]'
    python benchmarks/bench_core.py            # full run, writes benchmarks/results/core.{md,json}
    python benchmarks/bench_core.py --quick    # smoke run on small sizes, prints only

What it measures, for every kernel (medians of several repetitions):

* polyopt compile time: ``po.create_schedule`` + ``po.build(..., target="llvm")`` of a
  freshly built expression, with the kernel cache (``_CACHE`` of the module ``polyopt.build``) cleared, so nothing is reused;
* polyopt run time of the compiled kernel with the default schedule (no transformations);
* NumPy run time of the equivalent NumPy code, timed alternately with polyopt's runs.

Kernels: matmul 1024^3 float32 (vs ``a @ b``); the ResNet-18 conv2d layer
1x64x56x56 -> 64, 3x3, stride 1, pad 1, NCHW float32, with the padding as an
``if_then_else`` compute (vs NumPy pad + im2col + matmul); and the elementwise chain
``maximum((a*2 + b)*c - 1, 0)`` on 10^7 float32, written both as five separate computes
and as one fused compute (vs the same NumPy expression).  Every result is checked
against NumPy with ``allclose`` before anything is timed.

Environment: this machine sets ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``, which slow
OpenBLAS down.  The script re-executes itself without them (and with
``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1``) before importing NumPy, and reports the
OpenBLAS kernel that ``threadpoolctl.threadpool_info()`` says it used.  The polyopt
default schedules have no parallel loop, so both sides use one thread.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

# ----------------------------------------------------------------------------------------
# Environment: must run before NumPy (and so OpenBLAS) is loaded.

THREADS = 1
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import (PINNED_VARS as _PINNED_VARS, SLOW_OPENBLAS_VARS as _SLOW_OPENBLAS_VARS,  # noqa: E402
                  cpu_model, require_threadpoolctl, restart_with_clean_environment,
                  write_results)


if __name__ == "__main__":
    require_threadpoolctl("bench_core.py")
    restart_with_clean_environment(THREADS)

# ----------------------------------------------------------------------------------------

import argparse  # noqa: E402
import datetime  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
if importlib.util.find_spec("polyopt") is None:
    sys.path.insert(0, str(REPO))

import polyopt as po  # noqa: E402
import threadpoolctl  # noqa: E402

# po.build is the function; its module holds the in-process kernel cache.
build_module = importlib.import_module("polyopt.build")

RESULTS = REPO / "benchmarks" / "results"


# ----------------------------------------------------------------------------------------
# Kernels: each builds a fresh polyopt expression and has a NumPy equivalent.

@dataclass
class Kernel:
    name: str
    make: Callable[[], list]             # fresh tensors: inputs..., output
    inputs: Callable[[np.random.Generator], list[np.ndarray]]
    output_shape: tuple[int, ...]
    numpy: Callable[..., np.ndarray]     # numpy(*inputs) -> result
    flops: int | None                    # floating-point operations per run, if meaningful
    bytes_moved: int | None = None       # minimum memory traffic per run, for memory-bound kernels
    run_reps: int = 7
    notes: str = ""


def matmul_kernel(n: int, run_reps: int) -> Kernel:
    def make():
        A = po.placeholder((n, n), name="A")
        B = po.placeholder((n, n), name="B")
        return [A, B, po.ops.matmul(A, B)]

    def numpy_matmul(a, b):
        return a @ b

    return Kernel(f"matmul {n}x{n}x{n}", make,
                  lambda rng: [_rand(rng, (n, n)), _rand(rng, (n, n))], (n, n),
                  numpy_matmul, flops=2 * n ** 3, run_reps=run_reps)


def conv2d_kernel(channels: int, size: int, run_reps: int) -> Kernel:
    """3x3 conv, stride 1, pad 1, NCHW, batch 1, channels -> channels (ResNet-18 layer)."""
    C = K = channels
    H = W = size
    R = 3

    def make():
        X = po.placeholder((1, C, H, W), name="X")
        Wt = po.placeholder((K, C, R, R), name="W")
        return [X, Wt, po.ops.conv2d_nchw(X, Wt, padding=1, name="Y")]

    return Kernel(f"conv2d 1x{C}x{H}x{W} -> {K}, 3x3 pad 1", make,
                  lambda rng: [_rand(rng, (1, C, H, W)), _rand(rng, (K, C, R, R))],
                  (1, K, H, W), numpy_conv2d_im2col, flops=2 * K * C * R * R * H * W,
                  run_reps=run_reps, notes="NumPy: np.pad + im2col + matmul")


def numpy_conv2d_im2col(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 stride-1 pad-1 NCHW convolution as padding, im2col and one matmul."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    padded = np.pad(x[0], ((0, 0), (1, 1), (1, 1)))
    cols = np.empty((c, r, s, h, wd), dtype=x.dtype)
    for dy in range(r):
        for dx in range(s):
            cols[:, dy, dx] = padded[:, dy:dy + h, dx:dx + wd]
    out = w.reshape(k, c * r * s) @ cols.reshape(c * r * s, h * wd)
    return out.reshape(1, k, h, wd)


def numpy_chain(a, b, c):
    return np.maximum((a * 2.0 + b) * c - 1.0, 0.0)


def elementwise_kernel(n: int, fused: bool, run_reps: int) -> Kernel:
    def make():
        a, b, c = (po.placeholder((n,), name=x) for x in "abc")
        if fused:
            out = po.compute((n,), lambda i: po.maximum((a[i] * 2.0 + b[i]) * c[i] - 1.0, 0.0),
                             name="out")
        else:
            t1 = po.compute((n,), lambda i: a[i] * 2.0, name="t1")
            t2 = po.compute((n,), lambda i: t1[i] + b[i], name="t2")
            t3 = po.compute((n,), lambda i: t2[i] * c[i], name="t3")
            t4 = po.compute((n,), lambda i: t3[i] - 1.0, name="t4")
            out = po.compute((n,), lambda i: po.maximum(t4[i], 0.0), name="out")
        return [a, b, c, out]

    kind = "1 fused compute" if fused else "5 separate computes"
    return Kernel(f"elementwise chain {_count(n)} float32, {kind}", make,
                  lambda rng: [_rand(rng, (n,)) for _ in range(3)], (n,), numpy_chain,
                  flops=None, bytes_moved=4 * 4 * n, run_reps=run_reps,
                  notes="Memory-bound: GB/s counts 3 reads + 1 write of float32. NumPy: the "
                        "plain expression `np.maximum((a * 2.0 + b) * c - 1.0, 0.0)`, which "
                        "allocates its temporaries"
                        + ("" if fused else ", as polyopt's kernel allocates t1..t4"))


def _count(n: int) -> str:
    """10**7 -> '10^7', other counts with thousands separators."""
    exponent = len(str(n)) - 1
    return f"10^{exponent}" if n == 10 ** exponent else f"{n:,}"


def _rand(rng: np.random.Generator, shape) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def kernels(quick: bool) -> list[Kernel]:
    if quick:
        return [matmul_kernel(256, run_reps=3), conv2d_kernel(16, 28, run_reps=3),
                elementwise_kernel(10 ** 5, False, run_reps=3),
                elementwise_kernel(10 ** 5, True, run_reps=3)]
    return [matmul_kernel(1024, run_reps=3), conv2d_kernel(64, 56, run_reps=9),
            elementwise_kernel(10 ** 7, False, run_reps=9),
            elementwise_kernel(10 ** 7, True, run_reps=9)]


# ----------------------------------------------------------------------------------------
# Measurement

def compile_once(kernel: Kernel):
    """Seconds for create_schedule + build of a fresh expression, and the kernel."""
    args = kernel.make()
    build_module._CACHE.clear()
    start = time.perf_counter()
    schedule = po.create_schedule(args[-1])
    func = po.build(schedule, args, target="llvm")
    return time.perf_counter() - start, func


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def check(kernel: Kernel, func, inputs, out) -> float:
    """Run once and compare with NumPy; returns the largest absolute error."""
    func(*inputs, out)
    ref = kernel.numpy(*inputs)
    if not np.allclose(out, ref, rtol=1e-3, atol=1e-3):
        worst = float(np.max(np.abs(out - ref)))
        raise SystemExit(f"{kernel.name}: polyopt result differs from NumPy (max abs error "
                         f"{worst:g}); not timing a wrong kernel")
    return float(np.max(np.abs(out - ref)))


def measure(kernel: Kernel, compile_reps: int, rng: np.random.Generator) -> dict:
    print(f"== {kernel.name}", flush=True)
    compile_s = []
    for _ in range(compile_reps):
        seconds, func = compile_once(kernel)
        compile_s.append(seconds)
    print(f"   compile: {_fmt(compile_s)}", flush=True)

    inputs = kernel.inputs(rng)
    out = np.zeros(kernel.output_shape, dtype=np.float32)
    max_err = check(kernel, func, inputs, out)
    run_numpy(kernel, inputs)  # warm-up

    polyopt_s, numpy_s = [], []
    for _ in range(kernel.run_reps):  # alternate, so both sides see the same machine noise
        gc.collect()
        polyopt_s.append(timed(lambda: func(*inputs, out)))
        gc.collect()
        numpy_s.append(timed(lambda: run_numpy(kernel, inputs)))
    print(f"   polyopt run: {_fmt(polyopt_s)}\n   numpy run:   {_fmt(numpy_s)}", flush=True)
    faults = {"polyopt": page_faults(lambda: func(*inputs, out)),
              "numpy": page_faults(lambda: run_numpy(kernel, inputs))}
    return {"kernel": kernel.name, "notes": kernel.notes, "flops": kernel.flops,
            "bytes_moved": kernel.bytes_moved, "max_abs_error": max_err,
            "compile_s": compile_s, "polyopt_run_s": polyopt_s, "numpy_run_s": numpy_s,
            "vector_types": vector_types(func.optimized_ir),
            "gathers": func.optimized_ir.count("llvm.masked.gather"),
            "minor_page_faults_per_call": faults,
            "loops": func.source}


def run_numpy(kernel: Kernel, inputs):
    return kernel.numpy(*inputs)


def page_faults(call: Callable[[], object]) -> int:
    """Minor page faults of one call (first touches of freshly mapped memory)."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    call()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def vector_types(ir: str) -> list[str]:
    """Float vector types in the optimized IR, e.g. ['<16 x float>']."""
    return sorted(set(re.findall(r"<\d+ x float>", ir)),
                  key=lambda t: int(t[1:].split()[0]))


def _fmt(samples: list[float]) -> str:
    return f"median {statistics.median(samples):.4g} s of {len(samples)}"


# ----------------------------------------------------------------------------------------
# Summary and report

def summarize(raw: dict) -> dict:
    compile_s = statistics.median(raw["compile_s"])
    ours = statistics.median(raw["polyopt_run_s"])
    theirs = statistics.median(raw["numpy_run_s"])
    row = {"kernel": raw["kernel"], "compile_s": compile_s, "polyopt_run_s": ours,
           "numpy_run_s": theirs, "ratio": theirs / ours}
    row["polyopt_gflops"] = raw["flops"] / ours / 1e9 if raw["flops"] else None
    row["numpy_gflops"] = raw["flops"] / theirs / 1e9 if raw["flops"] else None
    row["polyopt_gbs"] = raw["bytes_moved"] / ours / 1e9 if raw["bytes_moved"] else None
    row["numpy_gbs"] = raw["bytes_moved"] / theirs / 1e9 if raw["bytes_moved"] else None
    return row


def expectations(rows: list[dict]) -> list[dict]:
    """The issue's expectations, each with the measured value and PASS/FAIL."""
    checks = []
    for row in rows:
        if row["kernel"].startswith("elementwise"):
            slowdown = row["polyopt_run_s"] / row["numpy_run_s"]
            checks.append({"expectation": f"{row['kernel']}, default schedule, within 2x of NumPy",
                           "measured": f"polyopt/NumPy run time = {slowdown:.2f}x",
                           "passed": slowdown <= 2.0})
        if row["kernel"].startswith("matmul"):
            checks.append({"expectation": f"compile time of {row['kernel']} under 1 s",
                           "measured": f"{row['compile_s']:.3f} s",
                           "passed": row["compile_s"] < 1.0})
    return checks


def environment() -> dict:
    info = threadpoolctl.threadpool_info()
    blas = [f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')} "
            f"threads={i.get('num_threads')}" for i in info if i.get("user_api") == "blas"]
    import llvmlite.binding as llvm
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(), "llvm_host_cpu": llvm.get_host_cpu_name(),
        "threads": THREADS, "python": platform.python_version(), "numpy": np.__version__,
        "polyopt_commit": _git_commit(),
        "openblas": blas or ["no BLAS library reported by threadpoolctl"],
        "threadpool_info": info,
        "env": {v: os.environ.get(v) for v in (*_SLOW_OPENBLAS_VARS, *_PINNED_VARS)},
    }


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(rows: list[dict], checks: list[dict], raws: list[dict], env: dict,
             quick: bool) -> str:
    def num(x, spec=".3g"):
        return "—" if x is None else format(x, spec)

    lines = ["# Core benchmark: polyopt default schedule vs NumPy", ""]
    if quick:
        lines += ["**Quick smoke run: small sizes, not the sizes of the issue.**", ""]
    lines += [f"- Date: {env['date']}",
              f"- CPU: {env['cpu']}, LLVM host CPU `{env['llvm_host_cpu']}`",
              f"- Threads: {env['threads']} (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS="
              f"{env['threads']}; the default schedules have no parallel loop)",
              f"- OpenBLAS (threadpoolctl): {'; '.join(env['openblas'])}",
              f"- OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE in the benchmark process: "
              f"{env['env']['OPENBLAS_CORETYPE']} / {env['env']['OPENBLAS_L2_SIZE']}",
              f"- Python {env['python']}, NumPy {env['numpy']}, polyopt commit "
              f"{env['polyopt_commit']}",
              f"- Command: `python benchmarks/bench_core.py{' --quick' if quick else ''}`",
              "",
              "Times are medians (repetitions in the last column). Compile = `create_schedule` "
              "+ `build` of a fresh expression with the kernel cache cleared. Ratio = NumPy "
              "run time / polyopt run time (above 1: polyopt faster). All results were checked "
              "against NumPy with `allclose(rtol=1e-3, atol=1e-3)` before timing.",
              "",
              "| kernel | polyopt compile s | polyopt run s | numpy run s | ratio numpy/polyopt "
              "| polyopt GFLOP/s | numpy GFLOP/s | polyopt GB/s | numpy GB/s | reps (compile/run) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for row, raw in zip(rows, raws):
        lines.append(
            f"| {row['kernel']} | {row['compile_s']:.3f} | {row['polyopt_run_s']:.4g} "
            f"| {row['numpy_run_s']:.4g} | {row['ratio']:.3g} | {num(row['polyopt_gflops'])} "
            f"| {num(row['numpy_gflops'])} | {num(row['polyopt_gbs'])} | {num(row['numpy_gbs'])} "
            f"| {len(raw['compile_s'])}/{len(raw['polyopt_run_s'])} |")
    lines += ["", "## Expectations", "", "| expectation | measured | result |", "|---|---|---|"]
    for c in checks:
        lines.append(f"| {c['expectation']} | {c['measured']} | "
                     f"{'PASS' if c['passed'] else 'FAIL'} |")
    lines += ["", "## Notes", ""]
    for raw in raws:
        vec = ", ".join(raw["vector_types"]) or "none"
        faults = raw["minor_page_faults_per_call"]
        note = f" {raw['notes']}." if raw["notes"] else ""
        lines.append(f"- {raw['kernel']}: float vector types in the optimized IR: {vec}; "
                     f"masked gathers: {raw['gathers']}; minor page faults per call: polyopt "
                     f"{faults['polyopt']}, NumPy {faults['numpy']}.{note}")
    lines += ["", "Default-schedule loop nests:", ""]
    for raw in raws:
        lines += [f"```c\n// {raw['kernel']}\n{raw['loops']}\n```", ""]
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repetitions; prints, writes no result files")
    opts = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    compile_reps = 2 if opts.quick else 5
    with threadpoolctl.threadpool_limits(limits=THREADS):
        env = environment()
        print(f"OpenBLAS: {'; '.join(env['openblas'])}", flush=True)
        raws = [measure(k, compile_reps, rng) for k in kernels(opts.quick)]
    rows = [summarize(r) for r in raws]
    checks = expectations(rows)
    report = markdown(rows, checks, raws, env, opts.quick)
    print("\n" + report)
    if opts.quick:
        return
    write_results("core", report + "\n", {"environment": env, "summary": rows,
                                            "expectations": checks, "raw": raws})
    print(f"wrote {RESULTS / 'core.md'} and {RESULTS / 'core.json'}")


if __name__ == "__main__":
    main()
