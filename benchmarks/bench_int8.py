"""int8 (VNNI) kernels vs onnxruntime and vs polyopt's fp32 templates, 1 and 2 threads,
side by side in one run (issue 15).

Run: ``python benchmarks/bench_int8.py`` (``--quick``: small sizes, printed only;
``--only conv`` / ``--only matmul,bf16`` and ``--threads 1``: a part, printed only).
Writes ``benchmarks/results/int8.md`` and ``int8.json``.

* int8 matmul 1024^3, u8 activations x s8 weights -> s32: polyopt's
  ``int8_matmul_template`` (``vpdpbusd`` register tiles through ``s[C].tensorize``,
  weights packed once to the blocked VNNI layout, outside the timing) vs onnxruntime's
  ``MatMulInteger`` (weights as an initializer, so it may prepack them) vs polyopt's
  fp32 ``matmul_template`` on the same shape;
* the five ResNet-18 conv layers of ``bench_suite.py``, batch 1, NCHW: polyopt's
  ``int8_conv2d_template`` (``po.ops.conv2d_u8s8_nchw``: u8 x s8 -> s32; the input is
  packed into groups of 4 channels inside the kernel, the weights once, outside the
  timing; the strided 1x1 layer runs ``gemm_u8s8_nchw``, lanes along the pixels) vs onnxruntime's ``ConvInteger`` (the same computation) vs polyopt's fp32
  ``conv2d_template``; and polyopt's conv with the requantization to uint8 fused into
  the tile (``epilogue=po.ops.requantize(Y, ..., rounding="even")``) vs onnxruntime's
  ``QLinearConv`` (the same computation, checked equal bit for bit).  The check against onnxruntime takes the smaller of the two
  like-for-like ratios (int32 out vs ConvInteger, uint8 out vs QLinearConv);
* bf16 matmul 1024^3 (``bf16_matmul_template``: ``vdpbf16ps`` tiles, float32 sums) vs
  polyopt's fp32 ``matmul_template`` (target >= 1.6x);
* AMX (issue 31, ``--only amx``; measured only on a host with AMX, else the section says
  "not measured: host has no AMX"): int8 matmul 1024^3 on AMX tiles
  (``tensor_unit="amx"``: ``tdpbusd``) vs onnxruntime's ``MatMulInteger`` (target >=
  1.0x) and polyopt's VNNI kernel; bf16 matmul 1024^3 (``tdpbf16ps``) vs PyTorch's bf16
  matmul (target >= 1.0x) and polyopt's fp32 (target >= 3x); the five conv layers on
  AMX (``conv2d_u8s8_wide``, ``amx_conv2d_template``, requantized to u8) vs
  onnxruntime's ``QLinearConv`` and PyTorch's quantized conv (target >= 1.0x both).

PyTorch's quantized operators (``quantized::linear`` / ``quantized::conv2d``, its x86
engine, prepacked weights, channels-last input, u8 out, checked within 1 of the
reference) are shown beside them when PyTorch is installed (no target).

onnxruntime runs with ``session.intra_op.allow_spinning=0`` and the process with
``OMP_WAIT_POLICY=PASSIVE`` (idle threads would otherwise spin and take the cores from
whoever runs next: a run without PASSIVE measured polyopt's 2-thread kernels at 1-20
GOP/s between onnxruntime's); polyopt's thread pool honours it too (its idle workers
sleep at once).  polyopt's fp32 templates run with their defaults, in the same run.  The
sides are timed in alternating blocks (``_env.alternating_samples``), medians.  Every
result is checked (int32: exactly) before anything is timed.  Targets: int8 >= 1.0x
onnxruntime and >= 2.5x polyopt fp32; bf16 >= 1.6x fp32.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__" and os.environ.get("OMP_WAIT_POLICY") != "PASSIVE":
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.execve(sys.executable, [sys.executable, *sys.argv], os.environ)

import argparse  # noqa: E402
import statistics  # noqa: E402

import numpy as np  # noqa: E402

from _env import alternating_samples, cpu_model, write_results  # noqa: E402

import polyopt as po  # noqa: E402
from polyopt.schedules.tensorized import (int8_conv2d_template,  # noqa: E402
                                         int8_matmul_template)

THREADS = (1, 2)
CONVS = [(64, 64, 56, 3, 1, 1), (128, 128, 28, 3, 1, 1), (256, 256, 14, 3, 1, 1),
         (512, 512, 7, 3, 1, 1), (64, 128, 56, 1, 0, 2)]


def onnxruntime_session(nodes, inputs, outputs, initializers, threads: int):
    try:
        import onnx
        import onnxruntime as ort
        from onnx import helper
    except ImportError:
        sys.exit("bench_int8.py needs onnx and onnxruntime: pip install onnx onnxruntime "
                 "(or the 'bench' extra)")
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    del onnx
    return session


def ort_matmul_integer(a, w, threads):
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node("MatMulInteger", ["A", "B"], ["C"])
    session = onnxruntime_session(
        [node], [helper.make_tensor_value_info("A", TensorProto.UINT8, a.shape)],
        [helper.make_tensor_value_info("C", TensorProto.INT32, (a.shape[0], w.shape[1]))],
        [numpy_helper.from_array(w, "B")], threads)
    return lambda: session.run(None, {"A": a})[0]


def ort_conv_integer(x, w, padding, stride, threads):
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node("ConvInteger", ["X", "W"], ["Y"], pads=[padding] * 4,
                            strides=[stride] * 2)
    session = onnxruntime_session(
        [node], [helper.make_tensor_value_info("X", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.INT32, None)],
        [numpy_helper.from_array(w, "W")], threads)
    return lambda: session.run(None, {"X": x})[0]


def fp32_matmul(m, n, k, threads, rng):
    A, B = po.placeholder((m, k), name="A"), po.placeholder((k, n), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)  # its defaults, as bench_matmul.py
    f = po.build(s, [A, B, C], num_threads=threads)
    a, b = rng.random((m, k), np.float32), rng.random((k, n), np.float32)
    c = np.empty((m, n), np.float32)
    f(a, b, c)
    assert np.allclose(c, a @ b, rtol=1e-3), "fp32 matmul differs from NumPy"
    return lambda: f(a, b, c)


def int8_matmul(a, w, threads, cols=64, unit="avx512"):
    m, k = a.shape
    packed = po.ops.pack_vnni_numpy(w, columns=cols, blocked=True)
    A = po.placeholder((m, k), name="A", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    loops = int8_matmul_template(s, C, cols=cols, parallel=threads > 1, tensor_unit=unit)
    f = po.build(s, [A, W, C], num_threads=threads)
    c = np.empty((m, packed.shape[0] * cols), np.int32)
    f(a, packed, c)
    expected = a.astype(np.int32) @ w.astype(np.int32)
    assert np.array_equal(c[:, :w.shape[1]], expected), "int8 matmul differs from NumPy"
    return (lambda: f(a, packed, c)), loops["rows"]


def fp32_conv(c, f_, size, kernel, padding, stride, threads, rng):
    X = po.placeholder((1, c, size, size), name="X")
    W = po.placeholder((f_, c, kernel, kernel), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=padding, stride=stride, name="Y")
    s = po.create_schedule(Y)
    po.templates.conv2d_template(s, Y)
    f = po.build(s, [X, W, Y], num_threads=threads)
    x = rng.random((1, c, size, size), np.float32)
    w = rng.random((f_, c, kernel, kernel), np.float32)
    y = np.empty(tuple(e.value for e in Y.shape), np.float32)
    return lambda: f(x, w, y)


def medians(calls: dict, quick: bool) -> dict:
    names = list(calls)
    samples = alternating_samples([calls[n] for n in names], repeat=3 if quick else 5,
                                  rounds=2 if quick else 6)
    spread = {n: _relative_iqr(t) for n, t in zip(names, samples)}  # IQR / median per side
    return {n: statistics.median(t) for n, t in zip(names, samples)} | {"spread": spread}


def _relative_iqr(times: list[float]) -> float:
    q = statistics.quantiles(times, n=4)
    return (q[2] - q[0]) / statistics.median(times)


def matmul_rows(size: int, quick: bool, rng) -> list[dict]:
    a = rng.integers(0, 256, (size, size), dtype=np.uint8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    rows = []
    for threads in THREADS:
        ours, tile_rows = int8_matmul(a, w, threads)
        peer = ort_matmul_integer(a, w, threads)
        assert np.array_equal(peer(), a.astype(np.int32) @ w.astype(np.int32))
        calls = {"polyopt int8": ours, "onnxruntime MatMulInteger": peer,
                 "polyopt fp32": fp32_matmul(size, size, size, threads, rng)}
        torch_call = torch_quantized_linear(a, w, threads)
        if torch_call is not None:  # its requantized sums, within 1 of ours
            sums = (a.astype(np.int64) @ w.astype(np.int64)) * (X_SCALE * W_SCALE)
            expected = np.clip(np.rint(sums / LINEAR_OUT_SCALE) + Y_ZERO, 0, 255)
            assert np.abs(torch_call().int_repr().numpy() - expected).max() <= 1, \
                "PyTorch's quantized linear differs from the product"
            calls["PyTorch quantized"] = torch_call
        times = medians(calls, quick)
        ops = 2.0 * size ** 3
        rows.append({"kernel": f"int8 matmul {size}^3 (tile {tile_rows}x64)", "threads": threads,
                     **{k: ops / v / 1e9 for k, v in times.items() if k != "spread"},
                     "spread": times["spread"]})
        print(rows[-1], flush=True)
    return rows


def ort_qlinear_conv(x, w, padding, stride, threads):
    from onnx import TensorProto, helper, numpy_helper
    names = ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"]
    node = helper.make_node("QLinearConv", names, ["Y"], pads=[padding] * 4,
                            strides=[stride] * 2)
    consts = [numpy_helper.from_array(v, n) for n, v in (
        ("xs", np.array(X_SCALE, np.float32)), ("xz", np.array(X_ZERO, np.uint8)),
        ("W", w), ("ws", np.array(W_SCALE, np.float32)), ("wz", np.array(0, np.int8)),
        ("ys", np.array(Y_SCALE, np.float32)), ("yz", np.array(Y_ZERO, np.uint8)))]
    session = onnxruntime_session(
        [node], [helper.make_tensor_value_info("X", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("Y", TensorProto.UINT8, None)], consts, threads)
    return lambda: session.run(None, {"X": x})[0]


LINEAR_OUT_SCALE = 32.0  # 1024-term sums of u8 x s8 products land inside u8


def _torch(threads: int):
    """PyTorch with its x86 (fbgemm) quantized engine on ``threads`` threads, or None."""
    try:
        import torch
    except ImportError:
        return None
    torch.backends.quantized.engine = "x86"
    torch.set_num_threads(threads)
    return torch


def torch_quantized_linear(a, w, threads):
    """PyTorch's ``quantized::linear`` (u8 x s8, prepacked weights, the sums requantized
    to u8 at scale ``LINEAR_OUT_SCALE``), or None without PyTorch."""
    torch = _torch(threads)
    if torch is None:
        return None
    x = torch.quantize_per_tensor(torch.from_numpy(a.astype(np.float32)) * X_SCALE,
                                  X_SCALE, 0, torch.quint8)
    weight = torch.quantize_per_tensor(torch.from_numpy(w.astype(np.float32)) * W_SCALE,
                                       W_SCALE, 0, torch.qint8)
    packed = torch.ops.quantized.linear_prepack(weight.t().contiguous(), None)
    return lambda: torch.ops.quantized.linear(x, packed, LINEAR_OUT_SCALE, Y_ZERO)


def torch_quantized_conv(x, w, padding, stride, threads):
    """PyTorch's ``quantized::conv2d`` (channels-last u8 input, as its x86 kernels want
    it, prepacked s8 weights, u8 out at QLinearConv's scales), or None without PyTorch."""
    torch = _torch(threads)
    if torch is None:
        return None
    xq = torch.quantize_per_tensor(
        (torch.from_numpy(x.astype(np.float32)) - X_ZERO) * X_SCALE, X_SCALE, X_ZERO,
        torch.quint8).contiguous(memory_format=torch.channels_last)
    weight = torch.quantize_per_tensor(torch.from_numpy(w.astype(np.float32)) * W_SCALE,
                                       W_SCALE, 0, torch.qint8)
    packed = torch.ops.quantized.conv2d_prepack(weight, None, [stride] * 2, [padding] * 2,
                                                [1, 1], 1)
    return lambda: torch.ops.quantized.conv2d(xq, packed, Y_SCALE, Y_ZERO)


def numpy_conv_int32(x, w, padding, stride):
    _, c, h, width = x.shape
    f, _, r, _ = w.shape
    xp = np.pad(x.astype(np.int32), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - r) // stride + 1
    cols = np.stack([xp[0, ci, ry:ry + stride * oh:stride, rx:rx + stride * ow:stride]
                     .reshape(-1) for ci in range(c) for ry in range(r) for rx in range(r)])
    return (w.reshape(f, -1).astype(np.int32) @ cols).reshape(1, f, oh, ow)


# the requantization of the QLinearConv peer: x = 0.02 (x_q - 128), w = 0.01 w_q,
# y = 0.5 y_q + 128 -> y_q = round(acc * 0.02 * 0.01 / 0.5) + 128 with acc over
# (x_q - 128) w_q; polyopt's fused conv computes that from acc over x_q w_q with the
# bias -128 * sum(w_q) per channel; the scale in float32 as onnxruntime computes it, and
# ties to even (requantize(rounding="even")): the same uint8 results, bit for bit
X_SCALE, X_ZERO, W_SCALE, Y_SCALE, Y_ZERO = 0.02, 128, 0.01, 0.5, 128
OUT_SCALE = float(np.float32(X_SCALE) * np.float32(W_SCALE) / np.float32(Y_SCALE))


def int8_conv(x, w, padding, stride, threads, *, requantized: bool = False):
    c, size, f_ = x.shape[1], x.shape[2], w.shape[0]
    packed = po.ops.pack_conv_vnni_numpy(w)
    X = po.placeholder(x.shape, name="X", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_nchw(X, W, stride=stride, padding=padding, name="Y",
                                pad_value=X_ZERO if requantized else 0)
    out, args, extra = Y, [X, W, Y], []
    if requantized:  # padded with the zero point, as QLinearConv
        bias = po.placeholder((f_,), name="bias", dtype="int32")
        out = po.ops.requantize(Y, OUT_SCALE, Y_ZERO, bias=bias, axis=1, rounding="even",
                                name="Q")
        args = [X, W, bias, out]
        extra = [(-X_ZERO * w.astype(np.int32).sum(axis=(1, 2, 3))).astype(np.int32)]
    s = po.create_schedule(out)
    loops = int8_conv2d_template(s, Y, parallel=threads > 1,
                                 epilogue=out if requantized else None)
    f = po.build(s, args, num_threads=threads)
    y = np.empty(tuple(e.value for e in out.shape), out.dtype)
    f(x, packed, *extra, y)
    if not requantized:
        assert np.array_equal(y, numpy_conv_int32(x, w, padding, stride)), \
            f"int8 conv {c}x{size} -> {f_} differs from NumPy"
    tile = (f"{loops['cols']} channels x {loops['rows']} rows, lanes on pixels"
            if loops.get("lanes") == "pixels" else f"{loops['rows']}x{loops['cols']}")
    return (lambda: f(x, packed, *extra, y)), (tile, y)


def bf16_rows(size: int, quick: bool, rng) -> list[dict]:
    from polyopt.dtypes import from_bfloat16_bits, to_bfloat16_bits
    from polyopt.schedules.tensorized import bf16_matmul_template

    a = to_bfloat16_bits(rng.standard_normal((size, size)).astype(np.float32))
    w = to_bfloat16_bits(rng.standard_normal((size, size)).astype(np.float32))
    packed = po.ops.pack_vnni_numpy(w, columns=64, blocked=True, group=2)
    exact = from_bfloat16_bits(a).astype(np.float64) @ from_bfloat16_bits(w).astype(np.float64)
    rows = []
    for threads in THREADS:
        A = po.placeholder(a.shape, name="A", dtype="bfloat16")
        W = po.placeholder(packed.shape, name="W", dtype="bfloat16")
        C = po.ops.matmul_bf16(A, W)
        s = po.create_schedule(C)
        loops = bf16_matmul_template(s, C, parallel=threads > 1, tensor_unit="avx512")
        f = po.build(s, [A, W, C], num_threads=threads)
        c = np.empty((size, packed.shape[0] * 64), np.float32)
        f(a, packed, c)
        assert np.allclose(c[:, :size], exact, rtol=1e-4, atol=1e-3), "bf16 matmul is wrong"
        times = medians({"polyopt bf16": lambda: f(a, packed, c),
                         "polyopt fp32": fp32_matmul(size, size, size, threads, rng)}, quick)
        rows.append({"kernel": f"bf16 matmul {size}^3 (tile {loops['rows']}x64)",
                     "threads": threads,
                     **{k: 2.0 * size ** 3 / v / 1e9 for k, v in times.items()
                        if k != "spread"}, "spread": times["spread"]})
        print(rows[-1], flush=True)
    return rows


def bf16_matmul(a, packed, threads, unit):
    """polyopt's bf16 matmul on ``unit`` (``"amx"`` or ``"avx512"``): (call, out)."""
    from polyopt.schedules.tensorized import bf16_matmul_template

    A = po.placeholder(a.shape, name="A", dtype="bfloat16")
    W = po.placeholder(packed.shape, name="W", dtype="bfloat16")
    C = po.ops.matmul_bf16(A, W)
    s = po.create_schedule(C)
    bf16_matmul_template(s, C, parallel=threads > 1, tensor_unit=unit)
    f = po.build(s, [A, W, C], num_threads=threads)
    c = np.empty((a.shape[0], packed.shape[0] * packed.shape[2]), np.float32)
    return (lambda: f(a, packed, c)), c


def torch_bf16_matmul(a_bits, w_bits, threads):
    """PyTorch's bf16 matmul (its oneDNN kernels use AMX where the CPU has it), or None."""
    torch = _torch(threads)
    if torch is None:
        return None
    a = torch.from_numpy(a_bits.astype(np.int16)).view(torch.bfloat16)
    w = torch.from_numpy(w_bits.astype(np.int16)).view(torch.bfloat16)
    return lambda: torch.matmul(a, w)


NO_AMX = "not measured: host has no AMX"


def amx_rows(size: int, quick: bool, rng) -> list[dict]:
    """The AMX rows (issue 31): only on a host with AMX-INT8 and AMX-BF16."""
    from polyopt.dtypes import from_bfloat16_bits, to_bfloat16_bits

    host = po.TargetInfo.host()
    if not (host.has_amx_int8 and host.has_amx_bf16):
        return [{"kernel": f"AMX int8 and bf16 matmul {size}^3, the int8 conv layers",
                 "not measured": NO_AMX}]
    rows = []
    a = rng.integers(0, 256, (size, size), dtype=np.uint8)
    w = rng.integers(-128, 128, (size, size), dtype=np.int8)
    ab = to_bfloat16_bits(rng.standard_normal((size, size)).astype(np.float32))
    wb = to_bfloat16_bits(rng.standard_normal((size, size)).astype(np.float32))
    packed_b = po.ops.pack_vnni_numpy(wb, columns=32, blocked=True, group=2)
    exact = from_bfloat16_bits(ab).astype(np.float64) @ from_bfloat16_bits(wb).astype(
        np.float64)
    for threads in THREADS:
        amx, _ = int8_matmul(a, w, threads, cols=32, unit="amx")  # (checked exactly)
        calls = {"polyopt AMX int8": amx,
                 "onnxruntime MatMulInteger": ort_matmul_integer(a, w, threads),
                 "polyopt VNNI int8": int8_matmul(a, w, threads)[0]}
        times = medians(calls, quick)
        rows.append({"kernel": f"AMX int8 matmul {size}^3", "threads": threads,
                     **{k: 2.0 * size ** 3 / v / 1e9 for k, v in times.items()
                        if k != "spread"}, "spread": times["spread"]})
        print(rows[-1], flush=True)
        ours, c = bf16_matmul(ab, packed_b, threads, "amx")
        ours()
        assert np.allclose(c[:, :size], exact, rtol=1e-4, atol=1e-3), "AMX bf16 is wrong"
        calls = {"polyopt AMX bf16": ours,
                 "polyopt fp32": fp32_matmul(size, size, size, threads, rng)}
        torch_call = torch_bf16_matmul(ab, wb, threads)
        if torch_call is not None:
            calls["PyTorch bf16"] = torch_call
        times = medians(calls, quick)
        rows.append({"kernel": f"AMX bf16 matmul {size}^3", "threads": threads,
                     **{k: 2.0 * size ** 3 / v / 1e9 for k, v in times.items()
                        if k != "spread"}, "spread": times["spread"]})
        print(rows[-1], flush=True)
    for c, f_, size, kernel, padding, stride in (CONVS[:1] if quick else CONVS):
        x = rng.integers(0, 256, (1, c, size, size), dtype=np.uint8)
        w = rng.integers(-128, 128, (f_, c, kernel, kernel), dtype=np.int8)
        out = (size + 2 * padding - kernel) // stride + 1
        ops = 2.0 * f_ * c * kernel * kernel * out * out
        for threads in THREADS:
            amx, q = amx_conv(x, w, padding, stride, threads)
            qlinear = ort_qlinear_conv(x, w, padding, stride, threads)
            assert np.array_equal(q, qlinear()), "AMX conv differs from QLinearConv"
            calls = {"polyopt AMX int8 conv": amx, "onnxruntime QLinearConv": qlinear}
            torch_call = torch_quantized_conv(x, w, padding, stride, threads)
            if torch_call is not None:
                calls["PyTorch quantized"] = torch_call
            times = medians(calls, quick)
            rows.append({"kernel": f"AMX conv {c}x{size}x{size} -> {f_}, {kernel}x{kernel} "
                                   f"s{stride}, u8 out", "threads": threads,
                         **{k: ops / v / 1e9 for k, v in times.items() if k != "spread"},
                         "spread": times["spread"]})
            print(rows[-1], flush=True)
    return rows


def amx_conv(x, w, padding, stride, threads):
    """polyopt's int8 conv on AMX tiles (``conv2d_u8s8_wide``), requantized to u8 as
    QLinearConv: (call, its output)."""
    from polyopt.schedules.amx_conv import amx_conv2d_template

    f_ = w.shape[0]
    packed = po.ops.pack_conv_vnni_numpy(w)
    X = po.placeholder(x.shape, name="X", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    bias = po.placeholder((f_,), name="bias", dtype="int32")
    Y = po.ops.conv2d_u8s8_wide(X, W, stride=stride, padding=padding, pad_value=X_ZERO,
                                name="Y")
    out = po.ops.requantize(Y, OUT_SCALE, Y_ZERO, bias=bias, axis=1, rounding="even",
                            name="Q")
    s = po.create_schedule(out)
    amx_conv2d_template(s, Y, epilogue=out, parallel=threads > 1)
    f = po.build(s, [X, W, bias, out], num_threads=threads)
    extra = (-X_ZERO * w.astype(np.int32).sum(axis=(1, 2, 3))).astype(np.int32)
    y = np.empty(tuple(e.value for e in out.shape), np.uint8)
    f(x, packed, extra, y)
    return (lambda: f(x, packed, extra, y)), y


AMX_TARGETS = {"polyopt AMX int8": (("onnxruntime MatMulInteger", 1.0),),
               "polyopt AMX int8 conv": (("onnxruntime QLinearConv", 1.0),
                                         ("PyTorch quantized", 1.0)),
               "polyopt AMX bf16": (("PyTorch bf16", 1.0), ("polyopt fp32", 3.0))}


def amx_markdown(rows: list[dict]) -> str:
    """The AMX section of the results: measured rows and their targets, or why not."""
    lines = ["", "## AMX (issue 31)", ""]
    for row in rows:
        if "not measured" in row:
            lines.append(f"- {row['kernel']}: {row['not measured']}")
            continue
        ours = next(k for k in AMX_TARGETS if k in row)
        others = ", ".join(f"{k} {row[k]:.0f}" for k in row
                           if k not in ("kernel", "threads", "spread", ours))
        lines.append(f"- {row['kernel']}, {row['threads']} thread(s): {ours} "
                     f"{row[ours]:.0f} GOP/s; {others}")
        for peer, target in AMX_TARGETS[ours]:
            if peer in row:
                ratio = row[ours] / row[peer]
                lines.append(f"  - vs {peer}: {ratio:.2f}x (target >= {target}x): "
                             f"{'PASS' if ratio >= target else 'FAIL'}")
    return "\n".join(lines) + "\n"


def conv_rows(quick: bool, rng, layers=None) -> list[dict]:
    rows = []
    chosen = CONVS[:1] if quick else [CONVS[i] for i in (layers or range(len(CONVS)))]
    for c, f_, size, kernel, padding, stride in chosen:
        out = (size + 2 * padding - kernel) // stride + 1
        ops = 2.0 * f_ * c * kernel * kernel * out * out
        x = rng.integers(0, 256, (1, c, size, size), dtype=np.uint8)
        w = rng.integers(-128, 128, (f_, c, kernel, kernel), dtype=np.int8)
        for threads in THREADS:
            ours, (tile_rows, _) = int8_conv(x, w, padding, stride, threads)
            peer = ort_conv_integer(x, w, padding, stride, threads)
            assert np.array_equal(peer(), numpy_conv_int32(x, w, padding, stride))
            qlinear = ort_qlinear_conv(x, w, padding, stride, threads)
            calls = {"polyopt int8": ours, "onnxruntime ConvInteger": peer,
                     "onnxruntime QLinearConv": qlinear,
                     "polyopt fp32": fp32_conv(c, f_, size, kernel, padding, stride,
                                               threads, rng)}
            fused, (_, q) = int8_conv(x, w, padding, stride, threads, requantized=True)
            assert np.array_equal(q, qlinear()), "fused requantization differs from QLinearConv"
            calls["polyopt int8+requant"] = fused
            torch_call = torch_quantized_conv(x, w, padding, stride, threads)
            if torch_call is not None:  # its rounding may differ from QLinearConv's by 1
                got = torch_call().int_repr().contiguous().numpy()
                assert np.abs(got.astype(int) - q.astype(int)).max() <= 1, \
                    "PyTorch's quantized conv differs from QLinearConv"
                calls["PyTorch quantized"] = torch_call
            times = medians(calls, quick)
            rows.append({"kernel": f"conv {c}x{size}x{size} -> {f_}, {kernel}x{kernel} "
                                   f"s{stride} (tile {tile_rows})", "threads": threads,
                         **{k: ops / v / 1e9 for k, v in times.items() if k != "spread"},
                         "spread": times["spread"]})
            print(rows[-1], flush=True)
    return rows


def checks(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        if "polyopt bf16" in row:
            ratio = row["polyopt bf16"] / row["polyopt fp32"]
            found.append({"kernel": row["kernel"], "threads": row["threads"],
                          "vs": "polyopt fp32", "target": 1.6, "ratio": ratio,
                          "result": "PASS" if ratio >= 1.6 else "FAIL"})
            continue
        ours = row.get("polyopt int8")
        if "onnxruntime MatMulInteger" in row:
            peer_ratio = ours / row["onnxruntime MatMulInteger"]
        else:  # the smaller of the like-for-like ratios
            peer_ratio = min(ours / row["onnxruntime ConvInteger"],
                             row["polyopt int8+requant"] / row["onnxruntime QLinearConv"])
        for what, ratio, target in (("onnxruntime", peer_ratio, 1.0),
                                    ("polyopt fp32", ours / row["polyopt fp32"], 2.5)):
            found.append({"kernel": row["kernel"], "threads": row["threads"],
                          "vs": what, "target": target, "ratio": ratio,
                          "result": "FAIL" if ratio is None or ratio < target else "PASS"})
    return found


def markdown(rows, found, load) -> str:
    def g(x):
        return "-" if x is None else f"{x:.0f}"

    lines = ["# int8 kernels vs onnxruntime and polyopt fp32 (issue 15)", "",
             f"{cpu_model()}; load average {load[0]:.1f} before, {load[1]:.1f} after "
             "(shared). The fp32 column is polyopt's fp32 template measured in the same "
             "run, alternating with the others (figures from other runs or machines do "
             "not compare: the machine kind changes).",
             "GOP/s (2 x multiply-adds per second), medians of alternating blocks.", "",
             "| kernel | threads | polyopt int8 (bf16) | onnxruntime (MatMulInteger or ConvInteger)"
             " | polyopt int8 + requantize to u8, fused | onnxruntime QLinearConv "
             "| PyTorch quantized (u8 out) | polyopt fp32 | noise |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        peer = row.get("onnxruntime MatMulInteger") or row.get("onnxruntime ConvInteger")
        ours = row.get("polyopt int8", row.get("polyopt bf16"))
        lines.append(f"| {row['kernel']} | {row['threads']} | {g(ours)} | "
                     f"{g(peer)} | {g(row.get('polyopt int8+requant'))} | "
                     f"{g(row.get('onnxruntime QLinearConv'))} | "
                     f"{g(row.get('PyTorch quantized'))} | {g(row['polyopt fp32'])} | "
                     f"{_noise(row)} |")
    lines += ["", "| kernel | threads | int8 vs | target | ratio | result |",
              "|---|---|---|---|---|---|"]
    for check in found:
        ratio = "-" if check["ratio"] is None else f"{check['ratio']:.2f}x"
        lines.append(f"| {check['kernel']} | {check['threads']} | {check['vs']} | "
                     f">= {check['target']}x | {ratio} | {check['result']} |")
    lines += ["", "noise: the interquartile range of the samples (6 alternating blocks) as a "
              "share of the median, for polyopt int8 (bf16) / the onnxruntime peer "
              "(QLinearConv or MatMulInteger).",
              "", "The conv ratio to onnxruntime is the smaller of int32 out vs ConvInteger "
              "and uint8 out (requantization fused into the tile) vs QLinearConv; bf16 "
              "rows: GFLOP/s, compared with polyopt fp32 only. PyTorch: "
              "`quantized::linear` / `quantized::conv2d` on its x86 (fbgemm) engine, "
              "prepacked weights, channels-last input, u8 out (shown, no target: the "
              "issue's targets are against onnxruntime)."]
    return "\n".join(lines) + "\n"


def _noise(row: dict) -> str:
    spread = row.get("spread", {})
    ours = spread.get("polyopt int8", spread.get("polyopt bf16"))
    peer = spread.get("onnxruntime QLinearConv", spread.get("onnxruntime MatMulInteger"))
    return " / ".join("-" if v is None else f"{100 * v:.0f}%" for v in (ours, peer))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, printed only")
    parser.add_argument("--only", default="matmul,bf16,conv,amx",
                        help="comma-separated parts: matmul, bf16, conv, amx (a part: "
                             "printed only)")
    parser.add_argument("--convs", default=None,
                        help="comma-separated indices of the conv layers (0-4; a part: "
                             "printed only)")
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts (default 1,2; others: printed only)")
    opts = parser.parse_args(argv)
    parts = {p.strip() for p in opts.only.split(",") if p.strip()}
    if not parts <= {"matmul", "bf16", "conv", "amx"}:
        parser.error(f"--only takes matmul, bf16, conv, amx; got {opts.only}")
    global THREADS
    if opts.threads:
        THREADS = tuple(int(t) for t in opts.threads.split(","))
    layers = [int(i) for i in opts.convs.split(",")] if opts.convs else None
    complete = (parts == {"matmul", "bf16", "conv", "amx"} and THREADS == (1, 2) and not opts.quick
                and layers is None)
    rng = np.random.default_rng(0)
    load_before = os.getloadavg()[0]
    rows, amx = [], []
    if "amx" in parts:
        amx = amx_rows(256 if opts.quick else 1024, opts.quick, rng)
    if "matmul" in parts:
        rows += matmul_rows(256 if opts.quick else 1024, opts.quick, rng)
    if "bf16" in parts:
        rows += bf16_rows(256 if opts.quick else 1024, opts.quick, rng)
    if "conv" in parts:
        rows += conv_rows(opts.quick, rng, layers)
    found = checks(rows)
    text = markdown(rows, found, (load_before, os.getloadavg()[0]))
    if amx:
        text += amx_markdown(amx)
    print("\n" + text)
    if complete:
        write_results("int8", text, {"rows": rows, "checks": found, "amx": amx})
        print("wrote benchmarks/results/int8.md and int8.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
