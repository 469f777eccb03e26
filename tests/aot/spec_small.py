"""A small library spec for the tests: a matmul, a scaled copy with a size passed at
run time, a parallel (OpenMP) row sum, and a variant that fails to build (FAIL=1)."""

import os

import polyopt as po
from polyopt.aot import Kernel, grid


def matmul(n, dtype):
    A = po.placeholder((n, 8), name="A", dtype=dtype)
    B = po.placeholder((8, n), name="B", dtype=dtype)
    k = po.reduce_axis((0, 8), name="k")
    C = po.compute((n, n), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    return po.create_schedule(C), [A, B, C]


def scale(factor):
    n = po.var("n")
    X = po.placeholder((n,), name="X")
    Y = po.compute((n,), lambda i: X[i] * float(factor), name="Y")
    return po.create_schedule(Y), [X, Y]


def row_sum(rows):
    X = po.placeholder((rows, 16), name="X")
    k = po.reduce_axis((0, 16), name="k")
    S = po.compute((rows,), lambda i: po.sum(X[i, k], axis=k), name="S")
    s = po.create_schedule(S)
    s[S].parallel(S.op.axis[0])
    return s, [X, S]


def broken(n):
    if n == 13:
        raise ValueError("variant 13 is made to fail")
    return scale(n)


def kernels():
    yield Kernel("matmul", matmul, grid(n=[4, 6], dtype=["float32", "float64"]))
    yield Kernel("scale", scale, grid(factor=[3]))
    yield Kernel("row_sum", row_sum, grid(rows=[64]), {"num_threads": 2})
    if os.environ.get("FAIL"):
        yield Kernel("broken", broken, grid(n=[12, 13]))
