"""The benchmark suite of issue 5: schedule templates vs NumPy and vs polyopt's default
schedule, on 1 and 2 threads, side by side in one run.

Run: ``python benchmarks/bench_suite.py`` (``--quick``: small sizes, printed only;
``--no-matmul``: skip the matmul part; ``--only 1x1``: the kernels whose name contains
the text, printed only).  Writes ``benchmarks/results/suite.md`` and
``suite.json``.

* conv2d NCHW float32, batch 1, the ResNet-18 layers (3x3 at 56/28/14/7 and the strided
  1x1 downsample), ``po.templates.conv2d_template`` vs NumPy (pad + im2col + matmul on
  OpenBLAS) and vs the default schedule;
* softmax and layer norm over the rows of 4096x1024 float32 (``softmax_template``,
  ``layer_norm_template``) vs the usual NumPy expressions;
* the chain ``maximum((a*2 + b)*c - 1, 0)`` of 5 elementwise computes on 10^7 float32,
  fused by ``injective_chain_template``, vs the NumPy expression (which writes
  temporaries);
* compile time per kernel: ``create_schedule`` + template + ``build`` of a fresh
  expression, kernel cache cleared;
* matmul: ``benchmarks/bench_matmul.py``, run as its own process (its table is
  included in the report).

The process restarts without OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (OpenBLAS picks its own
kernel, recorded from threadpoolctl).  For each thread count, NumPy is limited with
threadpoolctl and polyopt's kernels are built with ``num_threads``; NumPy, the template
and the default schedule are timed in alternating blocks (``_env.alternating_medians``,
shared with bench_matmul) of at least 5 calls, more for fast kernels (a block of NumPy's
calls lasts at least 20 ms: ``_env.repetitions``).  Medians.
Every result is checked against NumPy before anything is timed.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import (alternating_medians, repetitions, require_threadpoolctl,  # noqa: E402
                  restart_with_clean_environment, write_results)

if __name__ == "__main__":
    require_threadpoolctl("bench_suite.py")
    restart_with_clean_environment(2)

import argparse  # noqa: E402
import datetime  # noqa: E402
import importlib  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_info, threadpool_limits  # noqa: E402

import polyopt as po  # noqa: E402
from bench_core import _git_commit, elementwise_kernel  # noqa: E402

build_module = importlib.import_module("polyopt.build")  # holds the kernel cache
HERE = pathlib.Path(__file__).resolve().parent
THREADS = (1, 2)
ROUNDS = 3  # blocks of repetitions per side, alternating


@dataclass
class Case:
    """One kernel: ``make()`` builds fresh tensors (inputs..., output); ``template(s, out)``
    schedules them; ``numpy(*inputs)`` is the reference."""

    name: str
    family: str                      # conv2d, row, chain: selects the target below
    make: Callable[[], list]
    template: Callable
    inputs: Callable[[np.random.Generator], list]
    numpy: Callable
    flops: float | None = None
    default_schedule: bool = True    # also time polyopt's default schedule
    tolerance: float = 1e-3
    notes: str = ""
    extra: dict = field(default_factory=dict)


TARGETS = {"conv2d": 1.0, "row": 1.0, "chain": 2.0}
TARGET_TEXT = {"conv2d": "at least 1x NumPy im2col + matmul",
               "row": "at least 1x NumPy", "chain": "at least 2x NumPy"}


def _rand(rng, shape):
    return rng.standard_normal(shape, dtype=np.float32)


# -- NumPy references -----------------------------------------------------------------

def numpy_conv2d(x, w, padding: int, stride: int):
    """NCHW convolution, batch 1: np.pad, im2col (strided views copied), one matmul."""
    _, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x[0], ((0, 0), (padding, padding), (padding, padding))) if padding else x[0]
    oh, ow = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    cols = np.empty((c, r, s, oh, ow), x.dtype)
    for dy in range(r):
        for dx in range(s):
            cols[:, dy, dx] = xp[:, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride]
    return (w.reshape(k, c * r * s) @ cols.reshape(c * r * s, oh * ow)).reshape(1, k, oh, ow)


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_layer_norm(x, g, b, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(axis=1, keepdims=True) + eps) * g + b


# -- cases ----------------------------------------------------------------------------

def conv_case(c: int, f: int, size: int, kernel: int, padding: int, stride: int) -> Case:
    def make():
        X = po.placeholder((1, c, size, size), name="X")
        W = po.placeholder((f, c, kernel, kernel), name="W")
        return [X, W, po.ops.conv2d_nchw(X, W, padding=padding, stride=stride, name="Y")]

    out = (size + 2 * padding - kernel) // stride + 1
    return Case(f"conv2d {c}x{size}x{size} -> {f}, {kernel}x{kernel} s{stride} p{padding}",
                "conv2d", make, po.templates.conv2d_template,
                lambda rng: [_rand(rng, (1, c, size, size)), _rand(rng, (f, c, kernel, kernel))],
                lambda x, w: numpy_conv2d(x, w, padding, stride),
                flops=2.0 * f * c * kernel * kernel * out * out)


def softmax_case(rows: int, cols: int) -> Case:
    def make():
        X = po.placeholder((rows, cols), name="X")
        return [X, po.ops.softmax(X)]

    return Case(f"softmax {rows}x{cols}", "row", make, po.templates.softmax_template,
                lambda rng: [_rand(rng, (rows, cols))], numpy_softmax, tolerance=1e-5)


def layer_norm_case(rows: int, cols: int) -> Case:
    def make():
        X = po.placeholder((rows, cols), name="X")
        g, b = po.placeholder((cols,), name="g"), po.placeholder((cols,), name="b")
        return [X, g, b, po.ops.layer_norm(X, g, b, eps=1e-5)]

    return Case(f"layer norm {rows}x{cols}", "row", make, po.templates.layer_norm_template,
                lambda rng: [_rand(rng, (rows, cols)), _rand(rng, cols), _rand(rng, cols)],
                numpy_layer_norm)


def chain_case(n: int) -> Case:
    """bench_core's chain of 5 elementwise computes (and its NumPy expression)."""
    chain = elementwise_kernel(n, fused=False, run_reps=0)
    return Case(chain.name, "chain", chain.make, po.templates.injective_chain_template,
                lambda rng: [_rand(rng, n) for _ in range(3)], chain.numpy,
                notes="default schedule: 5 loops writing 4 temporaries")


def cases(quick: bool) -> list[Case]:
    if quick:
        return [conv_case(16, 16, 28, 3, 1, 1), conv_case(16, 32, 28, 1, 0, 2),
                softmax_case(256, 256), layer_norm_case(256, 256), chain_case(10 ** 5)]
    resnet = [conv_case(64, 64, 56, 3, 1, 1), conv_case(128, 128, 28, 3, 1, 1),
              conv_case(256, 256, 14, 3, 1, 1), conv_case(512, 512, 7, 3, 1, 1),
              conv_case(64, 128, 56, 1, 0, 2)]
    return resnet + [softmax_case(4096, 1024), layer_norm_case(4096, 1024),
                     chain_case(10 ** 7)]


# -- measurement ------------------------------------------------------------------------

def compile_kernel(case: Case, threads: int, template: bool):
    """(seconds for create_schedule [+ template] + build, kernel), cache cleared."""
    args = case.make()
    build_module._CACHE.clear()
    start = time.perf_counter()
    s = po.create_schedule(args[-1])
    if template:
        case.template(s, args[-1])
    kernel = po.build(s, args, num_threads=threads)
    return time.perf_counter() - start, kernel


def measure(case: Case, threads: int, reps: int, compile_reps: int, rng) -> dict:
    print(f"== {case.name}, {threads} thread(s)", flush=True)
    compiles = [compile_kernel(case, threads, True) for _ in range(compile_reps)]
    ours = compiles[-1][1]
    default = compile_kernel(case, threads, False)[1] if case.default_schedule else None
    inputs = case.inputs(rng)
    ref = case.numpy(*inputs)
    out = np.full(ref.shape, np.nan, np.float32)
    for kernel in filter(None, (ours, default)):
        out.fill(np.nan)
        kernel(*inputs, out)
        if not np.allclose(out, ref, rtol=case.tolerance, atol=case.tolerance):
            raise SystemExit(f"{case.name}: polyopt differs from NumPy (max abs error "
                             f"{np.nanmax(np.abs(out - ref)):g}); not timing a wrong kernel")
    runs = {"numpy": lambda: case.numpy(*inputs), "template": lambda: ours(*inputs, out)}
    if default is not None:
        runs["default"] = lambda: default(*inputs, out)
    with threadpool_limits(threads):  # blocks of repetitions, alternating, after pauses
        reps = repetitions(runs["numpy"], reps)
        med = dict(zip(runs, alternating_medians(list(runs.values()), reps, ROUNDS)))
    row = {"kernel": case.name, "family": case.family, "threads": threads,
           "compile_s": statistics.median(c[0] for c in compiles),
           "template_s": med["template"], "numpy_s": med["numpy"],
           "default_s": med.get("default"), "vs_numpy": med["numpy"] / med["template"],
           "vs_default": med["default"] / med["template"] if "default" in med else None,
           "template_gflops": case.flops / med["template"] / 1e9 if case.flops else None,
           "numpy_gflops": case.flops / med["numpy"] / 1e9 if case.flops else None,
           "reps": reps * ROUNDS, "notes": case.notes}
    print(f"   template {med['template']:.4g} s, NumPy {med['numpy']:.4g} s "
          f"({row['vs_numpy']:.2f}x), compile {row['compile_s']:.3f} s", flush=True)
    return row


def run_matmul(quick: bool) -> str:
    """bench_matmul.py in its own process; its report (the table it prints)."""
    command = [sys.executable, str(HERE / "bench_matmul.py")] + (["--quick"] if quick else [])
    print("== matmul: " + " ".join(command[1:]), flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return f"bench_matmul.py failed (exit {done.returncode}):\n\n```\n{done.stderr}\n```"
    return done.stdout.strip()


# -- report -----------------------------------------------------------------------------

def expectations(rows: list[dict]) -> list[dict]:
    checks = []
    for r in rows:
        target = TARGETS[r["family"]]
        ratio = r["vs_numpy"]
        verdict = "PASS" if ratio >= target else \
            f"FAIL (needs {100 * (target / ratio - 1):.0f}% more speed)"
        checks.append({"expectation": f"{r['kernel']}, {r['threads']} thread(s): "
                       f"{TARGET_TEXT[r['family']]}", "measured": f"{ratio:.2f}x",
                       "result": verdict})
    for r in rows:
        if r["threads"] == THREADS[0]:
            checks.append({"expectation": f"{r['kernel']}: compile time under 1 s",
                           "measured": f"{r['compile_s']:.3f} s",
                           "result": "PASS" if r["compile_s"] < 1.0 else
                           f"FAIL ({100 * (r['compile_s'] - 1):.0f}% over)"})
    return checks


def markdown(rows, checks, blas, matmul: str, quick: bool, load: tuple) -> str:
    def num(x, spec):
        return "—" if x is None else format(x, spec)


    lines = ["# Benchmark suite: schedule templates vs NumPy and vs the default schedule", ""]
    if quick:
        lines += ["**Quick smoke run: small sizes, not the sizes of the issue.**", ""]
    lines += [f"{datetime.date.today()} · {os.cpu_count()} CPUs · float32 · polyopt "
              f"{_git_commit()} · OpenBLAS: {', '.join(blas) or 'not reported'} · "
              f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')} · load average "
              f"{load[0]:.2f} before, {load[1]:.2f} after (other processes share the CPUs; "
              "2-thread figures suffer most when one is busy)", "",
              "Command: `python benchmarks/bench_suite.py`. Medians of the repetitions in "
              "the last column, timed with `_env.alternating_medians` (NumPy, template and "
              "default in alternating blocks, each after a pause). Ratios are NumPy time / "
              "template time and default-schedule time / template time (above 1: the "
              "template is faster). Compile = create_schedule + template + build, kernel "
              "cache cleared. NumPy allocates its results; polyopt writes into a given "
              "array (and allocates its own temporaries on every call).", "",
              "| kernel | threads | compile s | template s | NumPy s | default s | "
              "vs NumPy | vs default | template GFLOP/s | NumPy GFLOP/s | reps |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['kernel']} | {r['threads']} | {r['compile_s']:.3f} | {r['template_s']:.4g} "
            f"| {r['numpy_s']:.4g} | {num(r['default_s'], '.4g')} | {r['vs_numpy']:.2f}x "
            f"| {num(r['vs_default'], '.2f')}x "
            f"| {num(r['template_gflops'], '.1f')} | {num(r['numpy_gflops'], '.1f')} "
            f"| {r['reps']} |")
    lines += ["", "## Expectations (issue 5)", "", "| expectation | measured | result |",
              "|---|---|---|"]
    lines += [f"| {c['expectation']} | {c['measured']} | {c['result']} |" for c in checks]
    lines += ["", "## Matmul (`benchmarks/bench_matmul.py`, run by the suite)", "", matmul, ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repetitions; prints, writes no files")
    parser.add_argument("--no-matmul", action="store_true", help="skip bench_matmul.py")
    parser.add_argument("--only", metavar="TEXT",
                        help="only the kernels whose name contains TEXT (implies --no-matmul;"
                             " prints, writes no files)")
    opts = parser.parse_args(argv)
    selected = [c for c in cases(opts.quick) if opts.only is None or opts.only in c.name]
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    reps, compile_reps = (1, 1) if opts.quick else (5, 3)
    rows = [measure(case, threads, reps, compile_reps, rng)
            for case in selected for threads in THREADS]
    blas = [f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')}"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    skip_matmul = opts.no_matmul or opts.only is not None
    matmul = "skipped (--no-matmul)" if skip_matmul else run_matmul(opts.quick)
    checks = expectations(rows)
    text = markdown(rows, checks, blas, matmul, opts.quick, (load_before, os.getloadavg()[0]))
    print("\n" + text)
    if not opts.quick and opts.only is None:
        write_results("suite", text, {"openblas": blas, "load_average": [
            load_before, os.getloadavg()[0]], "rows": rows, "expectations": checks})
        print("wrote benchmarks/results/suite.md and suite.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
