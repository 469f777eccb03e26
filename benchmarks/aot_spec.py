"""The operator library of benchmarks/bench_aot.py: matmul, conv2d, elementwise chains,
softmax and layer norm over a grid of shapes and float32/float64, default schedules.

``AOT_VARIANTS`` (default 1000) sets the number of variants, split evenly over the five
operators; ``AOT_FAIL=1`` adds one variant whose build raises."""

import os

import polyopt as po
from polyopt.aot import Kernel, grid

COUNT = int(os.environ.get("AOT_VARIANTS", "1000"))
DTYPES = ["float32", "float64"]


def _sizes(start, step):
    return [start + step * i for i in range(max(1, COUNT // 10))]


def matmul(n, dtype):
    A = po.placeholder((n, 32), name="A", dtype=dtype)
    B = po.placeholder((32, n), name="B", dtype=dtype)
    C = po.ops.matmul(A, B)
    return po.create_schedule(C), [A, B, C]


def conv2d(size, dtype):
    data = po.placeholder((1, 4, size, size), name="data", dtype=dtype)
    weight = po.placeholder((4, 4, 3, 3), name="weight", dtype=dtype)
    out = po.ops.conv2d_nchw(data, weight, padding=1)
    return po.create_schedule(out), [data, weight, out]


def chain(n, dtype):
    X = po.placeholder((n,), name="X", dtype=dtype)
    Y = po.compute((n,), lambda i: po.tanh(X[i] * 0.5 + 1.0) * X[i], name="Y")
    Z = po.compute((n,), lambda i: po.maximum(Y[i], 0.0) + 2.0, name="Z")
    s = po.create_schedule(Z)
    s[Y].compute_inline()
    return s, [X, Z]


def softmax(cols, dtype):
    X = po.placeholder((16, cols), name="X", dtype=dtype)
    Y = po.ops.softmax(X)
    return po.create_schedule(Y), [X, Y]


def layer_norm(cols, dtype):
    X = po.placeholder((16, cols), name="X", dtype=dtype)
    g = po.placeholder((cols,), name="g", dtype=dtype)
    b = po.placeholder((cols,), name="b", dtype=dtype)
    Y = po.ops.layer_norm(X, g, b)
    return po.create_schedule(Y), [X, g, b, Y]


def broken(n):
    raise ValueError(f"variant {n} is made to fail")


def kernels():
    yield Kernel("matmul", matmul, grid(n=_sizes(8, 4), dtype=DTYPES))
    yield Kernel("conv2d", conv2d, grid(size=_sizes(6, 1), dtype=DTYPES))
    yield Kernel("chain", chain, grid(n=_sizes(64, 16), dtype=DTYPES))
    yield Kernel("softmax", softmax, grid(cols=_sizes(8, 4), dtype=DTYPES))
    yield Kernel("layer_norm", layer_norm, grid(cols=_sizes(8, 4), dtype=DTYPES))
    if os.environ.get("AOT_FAIL"):
        yield Kernel("broken", broken, grid(n=[1]))
