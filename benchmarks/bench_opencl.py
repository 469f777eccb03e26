"""OpenCL matmul: the naive and the tiled (``__local`` memory) schedule next to NumPy.

Run: ``python benchmarks/bench_opencl.py`` (``--quick``: 256, printed only).
Writes ``benchmarks/results/opencl.md`` and ``opencl.json``.

Both schedules come from ``po.templates.opencl_matmul_template`` (16x16 work-groups,
one element of C per work-item; ``shared=True`` stages 16x16 tiles of A and B in
``__local`` memory).  They run on every OpenCL CPU device found: Debian's PoCL and,
when installed (``pip install intel-opencl-rt intel-cmplr-lib-rt``), Intel's CPU
runtime, found as ``libintelocl.so`` under this Python's prefix or the folder in
``INTEL_OPENCL_PREFIX``.  The arrays stay on the device (pyopencl arrays), so the
times are the kernels'.  The process restarts without OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE and with 2 threads for NumPy (PoCL and Intel's runtime use every
core: 2 here).  Medians of several runs, side by side in one process.
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _env import (median_seconds, require_threadpoolctl,  # noqa: E402
                  restart_with_clean_environment, write_results)


def _intel_library() -> pathlib.Path | None:
    prefixes = [os.environ.get("INTEL_OPENCL_PREFIX"), sys.prefix]
    for prefix in filter(None, prefixes):
        for candidate in pathlib.Path(prefix).glob("lib/libintelocl.so"):
            return candidate
    return None


def _with_vendors() -> None:
    """Restart with an OCL_ICD_VENDORS folder listing PoCL and Intel's runtime (the
    ICD loader reads it at process start)."""
    intel = _intel_library()
    if intel is None or os.environ.get("POLYOPT_BENCH_VENDORS"):
        return
    folder = pathlib.Path(tempfile.mkdtemp(prefix="polyopt-icd-"))
    (folder / "pocl.icd").write_text("libpocl.so.2\n")
    (folder / "intel.icd").write_text(f"{intel}\n")
    env = dict(os.environ, OCL_ICD_VENDORS=str(folder), POLYOPT_BENCH_VENDORS="1")
    env["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(intel.parent),
                                                           env.get("LD_LIBRARY_PATH")]))
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


if __name__ == "__main__":
    require_threadpoolctl("bench_opencl.py")
    restart_with_clean_environment(2)
    _with_vendors()

import datetime  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

import polyopt as po  # noqa: E402

TILE = 16


def cpu_devices() -> list:
    import pyopencl as cl

    return [d for p in cl.get_platforms() for d in p.get_devices()
            if d.type & cl.device_type.CPU]


def measure(device, size: int, shared: bool, a, b, repeat: int) -> dict:
    import pyopencl.array as cla

    A = po.placeholder((size, size), name="A")
    B = po.placeholder((size, size), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.opencl_matmul_template(s, C, tile=TILE, shared=shared)
    start = time.perf_counter()
    f = po.build(s, [A, B, C], target="opencl", device=device)
    compile_s = time.perf_counter() - start
    da, db = cla.to_device(f.queue, a), cla.to_device(f.queue, b)
    dc = cla.empty(f.queue, (size, size), np.float32)
    seconds = median_seconds(lambda: f(da, db, dc), repeat)
    ok = bool(np.allclose(dc.get(), a @ b, rtol=1e-3, atol=1e-2))
    return {"device": f.device, "schedule": "tiled (__local)" if shared else "naive",
            "compile_s": compile_s, "seconds": seconds,
            "gflops": 2 * size ** 3 / seconds / 1e9, "correct": ok}


def main() -> int:
    quick = "--quick" in sys.argv
    size, repeat = (256, 3) if quick else (1024, 5)
    rng = np.random.default_rng(0)
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    # NumPy first: an OpenCL runtime's worker threads may keep spinning afterwards
    numpy_s = median_seconds(lambda: a @ b, repeat)
    rows = []
    for device in cpu_devices():
        for shared in (False, True):
            rows.append(measure(device, size, shared, a, b, repeat))
    numpy_gflops = 2 * size ** 3 / numpy_s / 1e9
    for row in rows:
        row["numpy_gflops"] = numpy_gflops
        row["vs_numpy"] = numpy_s / row["seconds"]
    naive = {r["device"]: r["seconds"] for r in rows if r["schedule"] == "naive"}
    for row in rows:
        row["vs_naive"] = naive[row["device"]] / row["seconds"]
    blas = [f"{i.get('internal_api')} {i.get('version')} kernel={i.get('architecture')}"
            for i in threadpool_info() if i.get("user_api") == "blas"]
    intel = "" if _intel_library() else (" Intel's CPU runtime is not installed "
                                         "(pip install intel-opencl-rt intel-cmplr-lib-rt).")
    lines = [f"# OpenCL matmul {size}: naive vs tiled (__local) schedule vs NumPy", "",
             f"{datetime.date.today()} · {os.cpu_count()} CPUs · float32 · work-groups "
             f"{TILE}x{TILE} · NumPy on 2 threads, OpenBLAS: {', '.join(blas) or 'not reported'}"
             f" · medians of {repeat} runs, arrays on the device.{intel}", "",
             "| device | schedule | compile s | ms | GFLOP/s | vs naive | NumPy GFLOP/s | "
             "vs NumPy | correct |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['device']} | {r['schedule']} | {r['compile_s']:.2f} | "
                     f"{r['seconds'] * 1e3:.1f} | {r['gflops']:.1f} | {r['vs_naive']:.2f}x | "
                     f"{r['numpy_gflops']:.1f} | {r['vs_numpy']:.3f}x | "
                     f"{'yes' if r['correct'] else 'NO'} |")
    lines += ["", "Each work-item computes one element of C (no register tiling, no vector types "
              "yet), so the tiled kernel is bound by __local loads; a hand-written OpenCL kernel "
              "of the same structure ran at the same speed as polyopt's on PoCL. The machine is "
              "shared: compare the ratios measured in one run, not the absolute figures."]
    text = "\n".join(lines) + "\n"
    print(text)
    if not quick:
        write_results("opencl", text, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
