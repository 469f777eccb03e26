"""The "use tensorize to leverage hardware intrinsics" tutorial, ported by changing the
imports only: a matrix-vector product declared as an intrinsic with TVM's spelling
(``tvm.tir.decl_buffer`` with a symbolic stride, ``tvm.tir.ir_builder``,
``tvm.tir.call_extern`` passing ``bb.strides[0]``) and tensorized, its C code given
with the intrinsic (``imports=[po.tensorize.import_c(code)]``).  The tutorial's own way,
``s[C].pragma(x, "import_llvm", clang.create_llvm(...))``: test_tvm_tensorize_pragma.py."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm

N, M, L = 12, 32, 16
FACTOR = 16

# a full product per tile: c[i] = sum_j a[j] * b[i * stride + j]  (our own C)
GEMV_C = r"""
#include <stdint.h>
int32_t tut_gemv(float *c, const float *a, const float *b, int64_t rows, int64_t cols,
                 int64_t stride) {
    for (int64_t r = 0; r < rows; ++r) {
        float total = 0.0f;
        for (int64_t q = 0; q < cols; ++q) total += a[q] * b[r * stride + q];
        c[r] = total;
    }
    return 0;
}
"""


def product():
    A = te.placeholder((N, L), name="A")
    B = te.placeholder((M, L), name="B")
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    s = te.create_schedule(C.op)
    x, y = C.op.axis
    (z,) = C.op.reduce_axis
    yo, yi = s[C].split(y, factor=FACTOR)
    s[C].reorder(x, yo, yi, z)
    return A, B, C, s, x, yi


def intrin_gemv(m, l, imports=()):
    a = te.placeholder((l,), name="a")
    b = te.placeholder((m, l), name="b")
    k = te.reduce_axis((0, l), name="k")
    c = te.compute((m,), lambda i: te.sum(a[k] * b[i, k], axis=k), name="c")
    Ab = tvm.tir.decl_buffer(a.shape, a.dtype, name="A", offset_factor=1, strides=[1])
    Bb = tvm.tir.decl_buffer(b.shape, b.dtype, name="B", offset_factor=1,
                             strides=[te.var("s1"), 1])
    Cb = tvm.tir.decl_buffer(c.shape, c.dtype, name="C", offset_factor=1, strides=[1])

    def intrin_func(ins, outs):
        ib = tvm.tir.ir_builder.create()
        aa, bb = ins
        cc = outs[0]
        ib.emit(tvm.tir.call_extern("int32", "tut_gemv", cc.access_ptr("w"),
                                    aa.access_ptr("r"), bb.access_ptr("r"), m, l,
                                    bb.strides[0]))
        return ib.get()

    return te.decl_tensor_intrin(c.op, intrin_func, binds={a: Ab, b: Bb, c: Cb},
                                 imports=imports)


def test_the_tutorials_intrinsic_tensorizes_and_lowers():
    A, B, C, s, x, yi = product()
    s[C].tensorize(yi, intrin_gemv(FACTOR, L))
    assert "c.body(C_update[i, 16 * j_outer" in str(tvm.lower(s, [A, B, C], simple_mode=True))


def test_the_intrinsic_with_its_c_code_computes_the_product():
    A, B, C, s, x, yi = product()
    s[C].tensorize(yi, intrin_gemv(FACTOR, L, imports=[te.tensorize.import_c(GEMV_C)]))
    func = tvm.build(s, [A, B, C], target="llvm", name="gemv")
    a = np.random.uniform(size=(N, L)).astype(A.dtype)
    b = np.random.uniform(size=(M, L)).astype(B.dtype)
    c = tvm.nd.array(np.zeros((N, M), dtype=C.dtype))
    func(tvm.nd.array(a), tvm.nd.array(b), c)
    tvm.testing.assert_allclose(c.numpy(), np.dot(a, b.T), rtol=1e-5)
    assert "tut_gemv" in func.llvm_ir


def test_a_stride_that_is_no_buffers_is_refused():
    a = te.placeholder((4,), name="a")
    c = te.compute((4,), lambda i: a[i] * 2.0, name="c")
    with pytest.raises(te.PolyoptError, match="no buffer's declared stride"):
        te.decl_tensor_intrin(c.op, lambda ins, outs: tvm.tir.call_extern(
            "int32", "f", outs[0].access_ptr("w"), te.var("q")))
