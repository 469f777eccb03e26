"""polyopt's fp32 templates vs onnxruntime and PyTorch, one operator each, 1 and 2 threads.

Run: ``python benchmarks/bench_templates.py`` (``--quick``: fewer timed calls, printed
only; ``--only conv``: the cases whose name contains a text, printed only; ``--threads
1``).  Writes ``benchmarks/results/templates.md`` and ``templates.json`` (this machine's
section; see ``_env.write_results``).

Cases (batch 1, float32):

* ``matmul 1024``: ``C = A @ B``, 1024 x 1024 x 1024. polyopt: ``po.templates.
  matmul_template`` with its defaults (the register tile and panel of
  ``TargetInfo.host()``), built with ``num_threads``; the peers get A and B as inputs
  (no weight pre-packing on either side).
* ResNet-18's 3x3 layers (64 x 56 x 56, 128 x 28 x 28, 256 x 14 x 14, 512 x 7 x 7, same
  channels in and out, pad 1) and its 1x1 stride-2 projection (64 x 56 x 56 -> 128),
  with a bias: polyopt compiles the one-``Conv`` graph with ``po.graph.compile``, so the
  layer takes the template and weight layout the graph layer gives it (the template's
  name is in the table); the peers get the same constant weights.

Peers: onnxruntime (``intra_op_num_threads`` = threads, one inter-op thread,
``session.intra_op.allow_spinning`` = 0, all graph optimizations) and PyTorch eager
(``torch.set_num_threads``, ``torch.inference_mode``; ``OMP_WAIT_POLICY=PASSIVE`` for the
process).  Every result is checked against NumPy (float64 sums) before timing.  Times
are medians of alternating blocks (``_env.alternating_medians``: the three sides see
the same load).  Speed = best peer's time / polyopt's time (above 1: polyopt faster).

Targets (issue 29): every case >= 1.0x the best peer on 1 and 2 threads; the geometric
mean of those ratios >= 1.1x; matmul 1024 on 2 threads >= 1.8x its 1-thread speed.
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from _env import alternating_medians, restart_with_clean_environment, write_results  # noqa: E402

if __name__ == "__main__":
    restart_with_clean_environment(2)

import datetime  # noqa: E402
import math  # noqa: E402

import numpy as np  # noqa: E402

import polyopt as po  # noqa: E402
from testlib.onnx_models import ort_session, single_op  # noqa: E402

THREADS = (1, 2)
# name: (input channels, size, output channels, kernel, stride, pad)
CONVS = {
    "conv 64x56x56 3x3": (64, 56, 64, 3, 1, 1),
    "conv 128x28x28 3x3": (128, 28, 128, 3, 1, 1),
    "conv 256x14x14 3x3": (256, 14, 256, 3, 1, 1),
    "conv 512x7x7 3x3": (512, 7, 512, 3, 1, 1),
    "conv 64x56x56->128 1x1/2": (64, 56, 128, 1, 2, 0),
}
MATMUL = "matmul 1024"


def conv_reference(x, w, b, stride: int, pad: int) -> np.ndarray:
    """NCHW convolution in float64 with NumPy (one image)."""
    x = np.pad(x[0].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    k = w.shape[-1]
    windows = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))
    windows = windows[:, ::stride, ::stride]
    return (np.einsum("chwrs,fcrs->fhw", windows, w.astype(np.float64))
            + b[:, None, None])[None]


class Case:
    """One operator on the three sides: ``calls`` (polyopt, onnxruntime, PyTorch),
    ``errors`` (each side's largest error relative to the reference's magnitude)."""

    def __init__(self, name: str, threads: int):
        self.name, self.threads = name, threads
        rng = np.random.default_rng(0)
        if name == MATMUL:
            self._matmul(rng, 1024)
        else:
            self._conv(rng, *CONVS[name])
        scale = max(1.0, float(np.max(np.abs(self.reference))))
        self.errors = [float(np.max(np.abs(run() - self.reference))) / scale
                       for run in self.results]

    def _matmul(self, rng, n: int) -> None:
        import torch

        A, B = po.placeholder((n, n), name="A"), po.placeholder((n, n), name="B")
        C = po.ops.matmul(A, B)
        s = po.create_schedule(C)
        po.templates.matmul_template(s, C)
        kernel = po.build(s, [A, B, C], num_threads=self.threads)
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        c = np.empty((n, n), np.float32)
        self.template, self.flops = "matmul_template", 2 * n ** 3
        self.reference = a.astype(np.float64) @ b.astype(np.float64)
        session = ort_session(single_op("MatMul", [(n, n), (n, n)]), self.threads)
        feeds, out = {"x0": a, "x1": b}, session.get_outputs()[0].name
        ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.empty((n, n))
        self.calls = [lambda: kernel(a, b, c), lambda: session.run([out], feeds),
                      lambda: torch.matmul(ta, tb, out=tc)]
        self.results = [lambda: (kernel(a, b, c), c)[1], lambda: session.run([out], feeds)[0],
                        lambda: (torch.matmul(ta, tb, out=tc), tc.numpy())[1]]

    def _conv(self, rng, channels: int, size: int, features: int, k: int, stride: int,
              pad: int) -> None:
        import torch
        import torch.nn.functional as F

        x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
        w = (rng.standard_normal((features, channels, k, k))
             * np.sqrt(2.0 / (channels * k * k))).astype(np.float32)
        b = rng.standard_normal(features).astype(np.float32)
        model = single_op("Conv", [x.shape], consts=(w, b), kernel_shape=[k, k],
                          strides=[stride] * 2, pads=[pad] * 4)
        compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=self.threads,
                                    cache=False)
        kernels = [step.template for step in compiled.steps if step.kernel is not None]
        self.template = " + ".join(kernels)
        out_size = (size + 2 * pad - k) // stride + 1
        self.flops = 2 * features * channels * k * k * out_size ** 2
        self.reference = conv_reference(x, w, b, stride, pad)
        session = ort_session(model, self.threads)
        feeds, out = {"x0": x}, session.get_outputs()[0].name
        output = compiled.graph.outputs[0]
        tx, tw, tb = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b)

        def torch_conv():
            with torch.inference_mode():
                return F.conv2d(tx, tw, tb, stride=stride, padding=pad)
        self.calls = [lambda: compiled.run(feeds), lambda: session.run([out], feeds),
                      torch_conv]
        self.results = [lambda: compiled.run(feeds)[output],
                        lambda: session.run([out], feeds)[0], lambda: torch_conv().numpy()]


def measure(name: str, threads: int, repeat: int) -> dict:
    import torch

    torch.set_num_threads(threads)
    load = os.getloadavg()[0]
    case = Case(name, threads)
    if max(case.errors) > 1e-4:
        raise SystemExit(f"{name} on {threads} thread(s): a result differs from NumPy's "
                         f"(relative errors polyopt, onnxruntime, PyTorch: {case.errors})")
    ours, ort, torch_s = alternating_medians(case.calls, repeat)
    best = min(ort, torch_s)
    row = {"case": name, "threads": threads, "template": case.template,
           "polyopt_ms": 1e3 * ours, "onnxruntime_ms": 1e3 * ort, "torch_ms": 1e3 * torch_s,
           "polyopt_gflops": case.flops / ours / 1e9, "best_peer": "onnxruntime"
           if ort <= torch_s else "PyTorch", "vs_best": best / ours,
           "vs_onnxruntime": ort / ours, "vs_torch": torch_s / ours,
           "max_rel_error": case.errors, "load_before": load, "load_after": os.getloadavg()[0],
           "date": str(datetime.datetime.now().replace(microsecond=0))}
    print(row, flush=True)
    return row


def targets(rows: list[dict]) -> list[tuple[str, bool, str]]:
    """``(target, passed, measured)`` of issue 29's targets."""
    checks = [(f"{r['case']}, {r['threads']} thread(s): >= 1.0x the best peer",
               r["vs_best"] >= 1.0, f"{r['vs_best']:.2f}x ({r['best_peer']})") for r in rows]
    if rows:
        mean = math.exp(sum(math.log(r["vs_best"]) for r in rows) / len(rows))
        checks.append((f"geometric mean of the {len(rows)} ratios >= 1.1x", mean >= 1.1,
                       f"{mean:.2f}x"))
    by_threads = {r["threads"]: r for r in rows if r["case"] == MATMUL}
    if 1 in by_threads and 2 in by_threads:
        scaling = by_threads[1]["polyopt_ms"] / by_threads[2]["polyopt_ms"]
        checks.append(("matmul 1024: 2 threads >= 1.8x the speed of 1 thread",
                       scaling >= 1.8, f"{scaling:.2f}x"))
    return checks


def report(rows: list[dict]) -> str:
    import onnxruntime
    import torch

    lines = ["# Templates: polyopt vs onnxruntime and PyTorch, one operator", "",
             f"float32, batch 1 · onnxruntime {onnxruntime.__version__} · PyTorch "
             f"{torch.__version__} · polyopt sized by `TargetInfo.host()` · the machine is "
             "shared: each row gives when it was measured and the 1-minute load average "
             "before and after it.", "",
             "Medians of alternating blocks; speed = peer time / polyopt time (above 1: "
             "polyopt faster); every result checked against NumPy (float64) first.", "",
             "| case | threads | template | polyopt ms | GFLOP/s | onnxruntime ms | "
             "PyTorch ms | vs onnxruntime | vs PyTorch | vs best | measured (load) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {r['threads']} | {r['template']} | "
                     f"{r['polyopt_ms']:.3f} | {r['polyopt_gflops']:.1f} | "
                     f"{r['onnxruntime_ms']:.3f} | {r['torch_ms']:.3f} | "
                     f"{r['vs_onnxruntime']:.2f}x | {r['vs_torch']:.2f}x | "
                     f"**{r['vs_best']:.2f}x** | {r['date']} ({r['load_before']:.1f} / "
                     f"{r['load_after']:.1f}) |")
    lines += ["", "## Targets (issue 29)", "", "| target | result |", "|---|---|"]
    lines += [f"| {text} | {'PASS' if ok else 'FAIL'} ({value}) |"
              for text, ok, value in targets(rows)]
    return "\n".join(lines) + "\n"


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed calls, printed only")
    parser.add_argument("--only", default=None,
                        help="the cases whose name contains this text (printed only)")
    parser.add_argument("--threads", default=None, help="comma-separated thread counts")
    opts = parser.parse_args()
    import importlib.util

    missing = [m for m in ("torch", "onnxruntime", "onnx") if importlib.util.find_spec(m) is None]
    if missing:
        sys.exit(f"bench_templates.py needs {', '.join(missing)}: `pip install -e '.[bench]'` "
                 "(torch==2.13.0 from PyPI is the CPU build)")
    threads = tuple(int(t) for t in opts.threads.split(",")) if opts.threads else THREADS
    names = [n for n in (MATMUL, *CONVS) if opts.only is None or opts.only in n]
    rows = [measure(name, t, 3 if opts.quick else 10) for name in names for t in threads]
    text = report(rows)
    print(text)
    if not (opts.quick or opts.only or opts.threads):
        write_results("templates", text, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
