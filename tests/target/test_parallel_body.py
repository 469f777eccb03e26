"""The outlined body of a parallel loop sees what the serial code sees: constant array
strides stay constants, and it is inlined before it is optimized."""

import re

import numpy as np

import polyopt as po


def _parallel_kernel(shape):
    A = po.placeholder(shape, name="A")
    B = po.compute(shape, lambda i, j, k: A[i, j, k] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].parallel(B.op.axis[0])
    return A, B, po.build(s, [A, B], num_threads=2, parallel_min_work=0)


def _body_signature(ir_text: str) -> str:
    return re.search(r'define internal void @"B_kernel\.omp0\.body"\(([^)]*)\)', ir_text)[1]


def test_constant_strides_are_not_passed_to_the_body():
    _, _, f = _parallel_kernel((6, 5, 7))
    params = _body_signature(f.llvm_ir)
    # A, B; the bounds and the piece size; the counter the pieces are claimed from
    assert params.count("ptr noalias") == 2 and params.count("i64") == 3
    assert "alwaysinline" in f.llvm_ir
    a = np.random.default_rng(0).random((6, 5, 7), dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2))


def test_symbolic_strides_are_passed_to_the_body():
    n, m = po.var("n"), po.var("m")
    _, _, f = _parallel_kernel((4, n, m))
    assert _body_signature(f.llvm_ir).count("i64") > 3
    a = np.random.default_rng(1).random((4, 3, 9), dtype=np.float32)
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_array_equal(b, a * np.float32(2))
