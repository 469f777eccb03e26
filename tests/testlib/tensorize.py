"""Shared helpers of the tensorize tests: int8 matrix products (operands, NumPy
references, the row-of-dot-products schedule), the NumPy int8 convolution, a
user-declared external C intrinsic (``gemv8``), and building ``vpdpbusd`` code on any
host (``build_vnni``: for the host where it has AVX-512 VNNI, else for a CPU that has
it, to be inspected and not run; see :mod:`testlib.machine`)."""

import numpy as np

import polyopt as po

from testlib.machine import machine_for, target_for
from testlib.numeric import assert_numbers

RNG = np.random.default_rng(7)
VNNI = ("avx512f", "avx512vnni")  # what the built-in int8 intrinsics' code needs


def vnni_machine():
    """The ``target_info`` of the int8 templates: the host, or a CPU with VNNI."""
    return machine_for(*VNNI)


def build_vnni(s, args, **options):
    """``po.build`` for the host where it has AVX-512 VNNI, else for a CPU that has it
    (then ``run_needs(*VNNI)`` before calling the kernel); its code has ``vpdpbusd``."""
    f = po.build(s, args, target=target_for(*VNNI), **options)
    assert "vpdpbusd" in f.assembly
    return f


def int8_operands(m, n, k, *, blocked_columns=None):
    a = RNG.integers(0, 256, (m, k), dtype=np.uint8)
    w = RNG.integers(-128, 128, (k, n), dtype=np.int8)
    if blocked_columns:
        packed = po.ops.pack_vnni_numpy(w, columns=blocked_columns, blocked=True)
    else:
        packed = po.ops.pack_vnni_numpy(w)
    return a, w, packed, a.astype(np.int32) @ w.astype(np.int32)


def int8_matmul(m, n, k):
    A = po.placeholder((m, k), name="A", dtype="uint8")
    W = po.placeholder((k // 4, n, 4), name="W", dtype="int8")
    return A, W, po.ops.matmul_u8s8(A, W)


def row_dot_schedule(C, factor=16):
    """i, j.outer, ko, j.inner, ki: the sub-nest under j.inner is one vpdpbusd."""
    s = po.create_schedule(C)
    i, j = C.op.axis
    ko, ki = C.op.reduce_axis
    jo, ji = s[C].split(j, factor=factor)
    s[C].reorder(i, jo, ko, ji, ki)
    return s, ji


def numpy_conv_int32(x, w, padding, stride):
    _, c, h, width = x.shape
    f, _, r, _ = w.shape
    xp = np.pad(x.astype(np.int32), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - r) // stride + 1, (width + 2 * padding - r) // stride + 1
    cols = np.stack([xp[0, ci, ry:ry + stride * oh:stride, rx:rx + stride * ow:stride]
                     .reshape(-1) for ci in range(c) for ry in range(r) for rx in range(r)])
    return (w.reshape(f, -1).astype(np.int32) @ cols).reshape(1, f, oh, ow)


GEMV_C = r"""
#include <stdint.h>
void test_gemv8_update(int32_t *c, const uint8_t *a, const int8_t *b, int64_t ldb) {
    for (int i = 0; i < 8; ++i) {
        int32_t sum = 0;
        for (int k = 0; k < 8; ++k) sum += a[k] * b[i * ldb + k];
        c[i] += sum;
    }
}
void test_gemv8_reset(int32_t *c) { for (int i = 0; i < 8; ++i) c[i] = 0; }
"""

def gemv8():
    """c[i] += sum_k a[k] * b[i, k], b with any row stride, as external C."""
    a = po.placeholder((8,), name="a", dtype="uint8")
    b = po.placeholder((8, 8), name="b", dtype="int8")
    k = po.reduce_axis((0, 8), name="k")
    c = po.compute((8,), lambda i: po.sum(a[k].astype("int32") * b[i, k].astype("int32"),
                                          axis=k), name="c")
    bb = po.decl_buffer((8, 8), "int8", "b", strides=[po.var("ldb"), 1])

    def impl(ins, outs):
        aa, b_buf = ins
        cc, = outs
        reset = po.tensorize.call_extern("void", "test_gemv8_reset", cc.access_ptr("w"))
        update = po.tensorize.call_extern("void", "test_gemv8_update", cc.access_ptr("rw"),
                                          aa.access_ptr("r"), b_buf.access_ptr("r"),
                                          b_buf.stride(0))
        return None, reset, update

    return po.decl_tensor_intrin(c.op, impl, binds={b: bb},
                                 imports=[po.tensorize.import_c(GEMV_C)])


def gemv_program(m, n, k):
    A = po.placeholder((m, k), name="A", dtype="uint8")
    B = po.placeholder((n, k), name="B", dtype="int8")
    r = po.reduce_axis((0, k), name="r")
    C = po.compute((m, n), lambda i, j: po.sum(A[i, r].astype("int32") * B[j, r].astype("int32"),
                                               axis=r), name="C")
    return A, B, C


def check_gemv(s, A, B, C, m, n, k):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (m, k), dtype=np.uint8)
    b = rng.integers(-128, 128, (n, k), dtype=np.int8)
    c = np.full((m, n), -5, np.int32)
    f = po.build(s, [A, B, C])
    f(a, b, c)
    assert_numbers(c, a.astype(np.int32) @ b.astype(np.int32).T)  # int32: bit for bit
    return f
