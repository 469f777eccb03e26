"""The "how to optimize GEMM on CPU" tutorial, ported by changing the imports only (and
the sizes, kept small): each step's schedule, numbers checked against NumPy."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers

M = K = N = 64
bn = 32
target = "llvm -mcpu=core-avx2"
dev = tvm.device(target, 0)


@pytest.fixture(scope="module")
def data():
    a = tvm.nd.array(np.random.rand(M, K).astype("float32"), dev)
    b = tvm.nd.array(np.random.rand(K, N).astype("float32"), dev)
    return a, b, np.dot(a.numpy(), b.numpy())


def gemm():
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    C = te.compute((M, N), lambda x, y: te.sum(A[x, k] * B[k, y], axis=k), name="C")
    return A, B, C


def packed_gemm():
    k = te.reduce_axis((0, K), "k")
    A = te.placeholder((M, K), name="A")
    B = te.placeholder((K, N), name="B")
    packedB = te.compute((N / bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute(
        (M, N),
        lambda x, y: te.sum(A[x, k] * packedB[y // bn, k, tvm.tir.indexmod(y, bn)], axis=k),
        name="C")
    return A, B, packedB, C


def evaluate(s, args, data):
    func = tvm.build(s, args, target=target, name="mmult")
    a, b, answer = data
    c = tvm.nd.array(np.zeros((M, N), dtype="float32"), dev)
    func(a, b, c)
    assert_numbers(c.numpy(), answer, rtol=1e-5, atol=1e-7)  # (TVM's atol)
    timer = func.time_evaluator(func.entry_name, dev, number=2)
    assert timer(a, b, c).mean > 0


def blocked(s, C):
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    (k,) = s[C].op.reduce_axis
    ko, ki = s[C].split(k, factor=4)
    return xo, yo, xi, yi, ko, ki


def test_default(data):
    A, B, C = gemm()
    evaluate(te.create_schedule(C.op), [A, B, C], data)


@pytest.mark.parametrize("step", ["blocking", "vectorization", "loop_permutation"])
def test_blocking_vectorization_permutation(step, data):
    A, B, C = gemm()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi, ko, ki = blocked(s, C)
    s[C].reorder(xo, yo, ko, ki, xi, yi)
    if step != "blocking":
        s[C].vectorize(yi)
    if step == "loop_permutation":
        s[C].reorder(xo, yo, ko, xi, ki, yi)
    evaluate(s, [A, B, C], data)


def test_array_packing(data):
    A, B, packedB, C = packed_gemm()
    s = te.create_schedule(C.op)
    xo, yo, xi, yi, ko, ki = blocked(s, C)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].vectorize(yi)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    evaluate(s, [A, B, C], data)


@pytest.mark.parametrize("parallel", [False, True])
def test_write_cache_and_parallel(parallel, data):
    A, B, packedB, C = packed_gemm()
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "global")
    xo, yo, xi, yi = s[C].tile(C.op.axis[0], C.op.axis[1], bn, bn)
    s[CC].compute_at(s[C], yo)
    xc, yc = s[CC].op.axis
    (k,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(k, factor=4)
    s[CC].reorder(ko, xc, ki, yc)
    s[CC].unroll(ki)
    s[CC].vectorize(yc)
    if parallel:
        s[C].parallel(xo)
    x, y, z = s[packedB].op.axis
    s[packedB].vectorize(z)
    s[packedB].parallel(x)
    evaluate(s, [A, B, C], data)
