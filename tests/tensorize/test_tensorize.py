"""Tensorize: exact matching (acceptance and refusal), legality, and bit-exact results."""

import numpy as np
import pytest

import polyopt as po
from polyopt.tensorize.builtin import dot_16x4_u8s8, gemm_u8s8
from polyopt.schedules.tensorized import int8_matmul_template

from testlib.errors import refused
from testlib.machine import machine_for, run_needs, target_for
from testlib.tensorize import (RNG, int8_matmul, int8_operands, numpy_conv_int32,  # noqa: F401
                               row_dot_schedule)

# vpdpbusd code is built for the host where it has AVX-512 VNNI, else for a CPU that has
# it and inspected; it runs only where the host has it (run_needs)
VNNI = ("avx512f", "avx512vnni")
BF16 = ("avx512f", "avx512bf16")

# -- acceptance ------------------------------------------------------------------------
def test_split_reorder_matches_update_and_is_bit_exact():
    A, W, C = int8_matmul(5, 48, 24)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert "llvm.x86.avx512.vpdpbusd.512" in f.llvm_ir
    assert "dot_16x4_u8s8.update" in str(po.lower(s, [A, W, C]))
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(5, 48, 24)
    c = np.zeros((5, 48), np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


def test_reduction_inside_matches_as_body_reset_plus_update():
    A, W, C = int8_matmul(3, 16, 4)          # one group of 4: the whole reduction
    s = po.create_schedule(C)
    s[C].tensorize(C.op.axis[1], dot_16x4_u8s8())
    lowered = str(po.lower(s, [A, W, C]))
    assert "dot_16x4_u8s8.body" in lowered and "] = 0;" not in lowered  # init replaced too
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert "vpdpbusd" in f.assembly
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(3, 16, 4)
    c = np.full((3, 16), 99, np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


def test_symbolic_sizes_accepted_only_for_dividing_splits():
    M, G, N = po.var("M"), po.var("G"), po.var("N")
    A = po.placeholder((M, 4 * G), name="A", dtype="uint8")
    W = po.placeholder((G, 16 * N, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())     # 16 divides 16 * N for every N
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert "vpdpbusd" in f.assembly
    run_needs(*VNNI)
    for m, n, k in ((3, 32, 8), (4, 64, 20)):
        a, _, packed, expected = int8_operands(m, n, k)
        c = np.zeros((m, n), np.int32)
        f(a, packed, c)
        np.testing.assert_array_equal(c, expected)


def test_after_fuse_the_fused_loop_is_renamed():
    A, W, C = int8_matmul(4, 16, 8)
    s = po.create_schedule(C)
    i, j = C.op.axis
    ko, ki = C.op.reduce_axis
    s[C].reorder(ko, i, j, ki)
    fused = s[C].fuse(ko, i)                 # one loop over (group, row)
    assert s[C].can_tensorize(j, dot_16x4_u8s8())
    s[C].tensorize(j, dot_16x4_u8s8())
    assert fused.name.endswith("fused")
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert "vpdpbusd" in f.assembly
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(4, 16, 8)
    c = np.zeros((4, 16), np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


@pytest.mark.parametrize("m, n, k", [(12, 128, 64), (37, 40, 12)])
def test_template_bit_exact_on_dividing_and_padded_sizes(m, n, k):
    a, w, _, expected = int8_operands(m, n, k)
    k_padded = -(-k // 4) * 4
    a_padded = np.zeros((m, k_padded), np.uint8)
    a_padded[:, :k] = a
    packed = po.ops.pack_vnni_numpy(w, columns=64, blocked=True)
    A = po.placeholder((m, k_padded), name="A", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    loops = int8_matmul_template(s, C, parallel=m > 20, target_info=machine_for(*VNNI),
                                 tensor_unit="avx512")
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert loops["rows"] == (6 if m == 12 else 4)   # 37: a partial tile of 1 row, scalar
    assert "vpdpbusd" in f.assembly
    run_needs(*VNNI)
    c = np.zeros((m, packed.shape[0] * 64), np.int32)
    f(a_padded, packed, c)
    np.testing.assert_array_equal(c[:, :n], expected)


# -- refusals ----------------------------------------------------------------------------
def test_non_dividing_extent_refused_with_the_extent_when_strict():
    A, W, C = int8_matmul(2, 40, 8)
    s, ji = row_dot_schedule(C)
    assert s[C].can_tensorize(ji, dot_16x4_u8s8())      # partial tiles run as scalar code
    assert not s[C].can_tensorize(ji, dot_16x4_u8s8(), strict=True)
    # the message is the point here: it names the tile and the fix (the split)
    with pytest.raises(po.TensorizeDomainMismatchError,
                       match=r"loop 'j.inner' has 8 iteration\(s\) in the "
                       r"tile at i=0, j.outer=2, ko=0 but the intrinsic's dimension 'i' has "
                       r"extent 16 and strict=True refuses partial tiles .*: split the loop "
                       r"by 16") as err:
        s[C].tensorize(ji, dot_16x4_u8s8(), strict=True)
    assert (err.value.stage, err.value.axis, err.value.intrinsic, err.value.problem) == \
        ("C", "j.inner", "dot_16x4_u8s8", "domain")
    assert err.value.mismatch.kind == "domain"


def test_no_complete_tile_refused_even_without_strict():
    A, W, C = int8_matmul(2, 8, 8)                       # 8 columns: never 16
    s, ji = row_dot_schedule(C)
    err = refused(po.TensorizeDomainMismatchError, lambda: s[C].tensorize(ji, dot_16x4_u8s8()))
    assert (err.stage, err.axis, err.problem) == ("C", "j.inner", "domain")
    assert err.mismatch.kind == "domain"


def test_transposed_access_refused_with_the_access():
    A = po.placeholder((2, 8), name="A", dtype="uint8")
    WT = po.placeholder((2, 4, 16), name="WT", dtype="int8")   # [group, k, n]: transposed
    ko = po.reduce_axis((0, 2), name="ko")
    ki = po.reduce_axis((0, 4), name="ki")
    C = po.compute((2, 16), lambda i, j: po.sum(
        A[i, 4 * ko + ki].astype("int32") * WT[ko, ki, j].astype("int32"), axis=[ko, ki]),
        name="C")
    s = po.create_schedule(C)
    s[C].reorder(C.op.axis[0], ko, C.op.axis[1], ki)
    with pytest.raises(po.TensorizeAccessMismatchError,
                       match=r"the read of WT WT\[ko, ki, j\] has stride 1 "
                       r"in dimension 0 of buffer 'b', "
                       r"which is declared with stride 4 \(dense\)") as err:
        s[C].tensorize(C.op.axis[1], dot_16x4_u8s8())
    assert (err.value.stage, err.value.axis, err.value.intrinsic) == ("C", "j", "dot_16x4_u8s8")
    assert err.value.problem == "access"


def test_access_that_is_not_the_intrinsics_refused_with_the_instance():
    A = po.placeholder((2, 8), name="A", dtype="uint8")
    W = po.placeholder((2, 16, 4), name="W", dtype="int8")
    ko = po.reduce_axis((0, 2), name="ko")
    ki = po.reduce_axis((0, 4), name="ki")
    C = po.compute((2, 16), lambda i, j: po.sum(
        A[i, 4 * ko + ki // 2].astype("int32") * W[ko, j, ki].astype("int32"), axis=[ko, ki]),
        name="C")
    s, ji = row_dot_schedule(C)
    with pytest.raises(po.TensorizeAccessMismatchError,
                       match=r"the read of A A\[i, 4 \* ko \+ ki // 2\] "
                       r"is not the intrinsic's 'a' .* in the tile at i=0, j.outer=0, ko=0, at "
                       r"j.inner=0, ki=2 it is offset \(0, 1\) from the origin where the "
                       r"intrinsic touches a\[2\]") as err:
        s[C].tensorize(ji, dot_16x4_u8s8())
    assert (err.value.stage, err.value.axis, err.value.problem) == ("C", "j.inner", "access")


def test_other_expression_refused():
    A = po.placeholder((2, 8), name="A", dtype="uint8")
    W = po.placeholder((2, 16, 4), name="W", dtype="int8")
    ko = po.reduce_axis((0, 2), name="ko")
    ki = po.reduce_axis((0, 4), name="ki")
    C = po.compute((2, 16), lambda i, j: po.sum(
        A[i, 4 * ko + ki].astype("int32") + W[ko, j, ki].astype("int32"), axis=[ko, ki]),
        name="C")
    s, ji = row_dot_schedule(C)
    with pytest.raises(po.TensorizeExpressionMismatchError,
                       match="not the intrinsic's .different operations") as err:
        s[C].tensorize(ji, dot_16x4_u8s8())
    assert (err.value.stage, err.value.axis, err.value.problem) == ("C", "j.inner",
                                                                    "expression")


def test_wrong_loop_count_and_dense_stride_refused():
    A, W, C = int8_matmul(6, 64, 8)
    s = po.create_schedule(C)
    with pytest.raises(po.TensorizeMismatchError) as err:
        s[C].tensorize(C.op.axis[1], dot_16x4_u8s8())
    assert (err.value.problem, err.value.loops, err.value.intrinsic) == (
        "loop_count", ("j", "ko", "ki"), "dot_16x4_u8s8")
    assert len(err.value.intrinsic_loops) == 2
    # b is declared dense [16, 4]: a 16 x 4 region of W[ko, j, ki] with 64 columns is too
    A2, W2, C2 = int8_matmul(6, 16, 8)
    s2 = po.create_schedule(C2)
    i, j = C2.op.axis
    ko, ki = C2.op.reduce_axis
    s2[C2].reorder(ko, i, j, ki)
    io, ii = s2[C2].split(i, factor=6)
    with pytest.raises(po.TensorizeMismatchError) as err:
        s2[C2].tensorize(ii, gemm_u8s8(6, 64))
    assert (err.value.stage, err.value.axis, err.value.problem) == ("C", "i.inner", "domain")


def test_statement_inside_the_loop_refused():
    A, W, C = int8_matmul(6, 16, 8)
    s = po.create_schedule(C)
    local = s.cache_write(C, "local")
    s[local].compute_at(s[C], C.op.axis[0])
    with pytest.raises(po.TensorizeMismatchError) as err:
        s[C].tensorize(C.op.axis[0], dot_16x4_u8s8())
    assert (err.value.stage, err.value.axis, err.value.problem, err.value.statements) == (
        "C", "i", "foreign_statements", ("C_local_init", "C_local_update"))


def test_not_an_intrinsic_refused():
    A, W, C = int8_matmul(2, 16, 4)
    s = po.create_schedule(C)
    with pytest.raises(po.InvalidArgumentError, match="po.decl_tensor_intrin"):
        s[C].tensorize(C.op.axis[1], "vpdpbusd")


# -- int8 conv and bf16 ------------------------------------------------------------------
@pytest.mark.parametrize("c, f, size, kernel, padding, stride", [
    (8, 64, 10, 3, 1, 1), (4, 128, 9, 1, 0, 2), (8, 64, 7, 3, 1, 2)])
def test_int8_conv_template_bit_exact(c, f, size, kernel, padding, stride):
    from polyopt.schedules.tensorized import int8_conv2d_template

    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((f // 64, c // 4, kernel, kernel, 64, 4), name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_nchw(X, W, stride=stride, padding=padding, name="Y")
    s = po.create_schedule(Y)
    int8_conv2d_template(s, Y, parallel=True, target_info=machine_for(*VNNI))
    kernel_fn = po.build(s, [X, W, Y], num_threads=2, target=target_for(*VNNI))
    assert "vpdpbusd" in kernel_fn.llvm_ir
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, kernel, kernel), dtype=np.int8)
    y = np.zeros(tuple(e.value for e in Y.shape), np.int32)
    kernel_fn(x, po.ops.pack_conv_vnni_numpy(w), y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, padding, stride))


def test_bf16_matmul_within_float32_rounding():
    from polyopt.dtypes import from_bfloat16_bits, to_bfloat16_bits
    from polyopt.schedules.tensorized import bf16_matmul_template

    a = to_bfloat16_bits(RNG.standard_normal((12, 40)).astype(np.float32))
    w = to_bfloat16_bits(RNG.standard_normal((40, 50)).astype(np.float32))
    packed = po.ops.pack_vnni_numpy(w, columns=64, blocked=True, group=2)
    A = po.placeholder(a.shape, name="A", dtype="bfloat16")
    W = po.placeholder(packed.shape, name="W", dtype="bfloat16")
    C = po.ops.matmul_bf16(A, W)
    s = po.create_schedule(C)
    bf16_matmul_template(s, C, parallel=False, target_info=machine_for(*BF16),
                         tensor_unit="avx512")
    f = po.build(s, [A, W, C], target=target_for(*BF16))
    assert "llvm.x86.avx512bf16.dpbf16ps.512" in f.llvm_ir and "vdpbf16ps" in f.assembly
    run_needs(*BF16)
    c = np.zeros((12, 64), np.float32)
    f(a, packed, c)
    exact = from_bfloat16_bits(a).astype(np.float64) @ from_bfloat16_bits(w).astype(np.float64)
    magnitude = np.abs(from_bfloat16_bits(a)).astype(np.float64) @ np.abs(from_bfloat16_bits(w))
    assert np.all(np.abs(c[:, :50] - exact) <= 40 * 2 ** -24 * magnitude + 1e-30)


def test_bfloat16_is_a_storage_type():
    A = po.placeholder((4,), name="A", dtype="bfloat16")
    with pytest.raises(po.DTypeError, match="bfloat16 is a storage type"):
        po.compute((4,), lambda i: A[i] * A[i])


def test_illegal_order_around_the_tiles_refused_with_the_dependence():
    """Tiles run as single steps must keep the dependences between them: here the
    reduction's groups were reversed unchecked, which the tiles would run backwards."""
    A, W, C = int8_matmul(2, 16, 8)
    s, ji = row_dot_schedule(C)
    s[C].reverse(C.op.reduce_axis[0], check=False)
    with pytest.raises(po.IllegalTensorizeError) as err:
        s[C].tensorize(ji, dot_16x4_u8s8())
    v = err.value.violation
    assert (err.value.axis, err.value.inside) == ("j.inner", False)
    assert (v.dependence.kind, v.dependence.array) == ("flow", "C")
    assert (v.source, v.sink, v.element) == ("C_update[i=0, j=0, ko=0, ki=3]",
                                             "C_update[i=0, j=0, ko=1, ki=0]", "C[0, 0]")


def test_opencl_refuses_tensorized_schedules():
    pytest.importorskip("pyopencl")
    A, W, C = int8_matmul(2, 16, 8)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())
    with pytest.raises(po.BackendError, match="builds for target='llvm' only"):
        po.build(s, [A, W, C], target="opencl")


def test_loop_marked_vectorized_around_the_call_runs_serially():
    A, W, C = int8_matmul(3, 32, 8)
    s, ji = row_dot_schedule(C)
    s[C].vectorize(C.op.axis[0])             # rows carry no dependence
    s[C].tensorize(ji, dot_16x4_u8s8())
    assert "#pragma vectorized" not in str(po.lower(s, [A, W, C]))
    f = po.build(s, [A, W, C], target=target_for(*VNNI))
    assert "vpdpbusd" in f.assembly
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(3, 32, 8)
    c = np.zeros((3, 32), np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


def test_fp32_fma_rows_update_within_rounding():
    from polyopt.tensorize.builtin import gemm_f32_rows

    A = po.placeholder((12, 20), name="A")
    B = po.placeholder((20, 64), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    i, j = C.op.axis
    io, jo, ii, ji = s[C].tile(i, j, 6, 64)
    s[C].reorder(io, jo, C.op.reduce_axis[0], ii, ji)
    s[C].tensorize(ii, gemm_f32_rows(6, 64))
    f = po.build(s, [A, B, C], target=target_for("avx512f"))
    assert "llvm.fma.v16f32" in f.llvm_ir and "zmm" in f.assembly
    run_needs("avx512f")
    a = RNG.standard_normal((12, 20)).astype(np.float32)
    b = RNG.standard_normal((20, 64)).astype(np.float32)
    c = np.zeros((12, 64), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
