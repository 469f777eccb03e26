"""Intrinsics declared in the tests: external C and LLVM IR micro-kernels, a Python LLVM
emitter; and the requantization epilogue."""

import numpy as np
import pytest
from llvmlite import ir

import polyopt as po

from testlib.tensorize import check_gemv, gemv8, gemv_program  # noqa: F401

SCALE_LL = r"""
define void @test_scale4(ptr %c, ptr %a) {
  %v = load <4 x float>, ptr %a, align 4
  %r = fmul <4 x float> %v, <float 3.0, float 3.0, float 3.0, float 3.0>
  store <4 x float> %r, ptr %c, align 4
  ret void
}
"""


def test_external_c_update_with_a_runtime_stride():
    A, B, C = gemv_program(3, 16, 24)
    s = po.create_schedule(C)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=8)
    ro, ri = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(i, jo, ro, ji, ri)
    s[C].tensorize(ji, gemv8())
    f = check_gemv(s, A, B, C, 3, 16, 24)
    assert 'call void @"test_gemv8_update"(' in f.llvm_ir


def test_external_c_reset_and_update_replace_a_whole_reduction():
    A, B, C = gemv_program(2, 16, 8)
    s = po.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, gemv8())
    f = check_gemv(s, A, B, C, 2, 16, 8)
    assert '@"test_gemv8_reset"(' in f.llvm_ir and '@"test_gemv8_update"(' in f.llvm_ir


def test_imported_llvm_ir_is_linked_and_inlined():
    a = po.placeholder((4,), name="a")
    c = po.compute((4,), lambda i: a[i] * 3.0, name="c")
    intrin = po.decl_tensor_intrin(
        c.op, lambda ins, outs: po.tensorize.call_extern(
            "void", "test_scale4", outs[0].access_ptr("w"), ins[0].access_ptr("r")),
        imports=[po.tensorize.import_llvm(SCALE_LL)])
    A = po.placeholder((20,), name="A")
    B = po.compute((20,), lambda i: A[i] * 3.0, name="B")
    s = po.create_schedule(B)
    outer, inner = s[B].split(B.op.axis[0], factor=4)
    s[B].tensorize(inner, intrin)
    f = po.build(s, [A, B])
    x = np.arange(20, dtype=np.float32)
    y = np.zeros(20, np.float32)
    f(x, y)
    np.testing.assert_array_equal(y, x * 3)
    assert "@test_scale4" in f.llvm_ir and "call void @test_scale4" not in f.optimized_ir


def test_python_llvm_emitter():
    """An implementation written with llvmlite: c[i] = a[i] + b[i] over 16 int32 lanes."""
    a = po.placeholder((16,), name="a", dtype="int32")
    b = po.placeholder((16,), name="b", dtype="int32")
    c = po.compute((16,), lambda i: a[i] + b[i], name="c")
    seen = []

    def emit(ctx):
        vector = ir.VectorType(ir.IntType(32), 16)
        x = ctx.builder.load(ctx.pointer(0), typ=vector, align=4)
        y = ctx.builder.load(ctx.pointer(1), typ=vector, align=4)
        ctx.builder.store(ctx.builder.add(x, y), ctx.pointer(2), align=4)
        seen.append(ctx.intrin.name)

    intrin = po.decl_tensor_intrin(c.op, lambda ins, outs: po.tensorize.LLVMEmitter(emit),
                                   name="add16")
    X = po.placeholder((3, 32), name="X", dtype="int32")
    Y = po.placeholder((3, 32), name="Y", dtype="int32")
    Z = po.compute((3, 32), lambda i, j: X[i, j] + Y[i, j], name="Z")
    s = po.create_schedule(Z)
    jo, ji = s[Z].split(Z.op.axis[1], factor=16)
    s[Z].tensorize(ji, intrin)
    x = np.arange(96, dtype=np.int32).reshape(3, 32)
    z = np.zeros((3, 32), np.int32)
    po.build(s, [X, Y, Z])(x, x * 7, z)
    np.testing.assert_array_equal(z, x * 8)
    assert seen == ["add16"]


def test_intrinsic_declaration_errors():
    a = po.placeholder((4,), name="a")
    c = po.compute((4,), lambda i: a[i] * 2.0, name="c")
    with pytest.raises(po.InvalidArgumentError, match="binds: buffer 'a' is int8"):
        po.decl_tensor_intrin(c.op, lambda i, o: po.tensorize.call_extern("void", "f"),
                              binds={a: po.decl_buffer((4,), "int8", "a")})
    with pytest.raises(po.InvalidArgumentError, match="call_extern arguments"):
        po.tensorize.call_extern("void", "f", 1.5)
    n = po.var("n")
    v = po.placeholder((n,), name="v")
    w = po.compute((n,), lambda i: v[i] + 1.0, name="w")
    with pytest.raises(po.InvalidArgumentError, match="the shape of 'v' must be constant, got n"):
        po.decl_tensor_intrin(w.op, lambda i, o: po.tensorize.call_extern("void", "f"))


def test_offset_factor_refused_with_the_start():
    a = po.placeholder((4,), name="a")
    c = po.compute((4,), lambda i: a[i] * 3.0, name="c")
    intrin = po.decl_tensor_intrin(
        c.op, lambda ins, outs: po.tensorize.call_extern(
            "void", "f", outs[0].access_ptr("w"), ins[0].access_ptr("r")),
        binds={a: po.decl_buffer((4,), "float32", "a", offset_factor=8)})
    A = po.placeholder((20,), name="A")
    B = po.compute((20,), lambda i: A[i] * 3.0, name="B")
    s = po.create_schedule(B)
    outer, inner = s[B].split(B.op.axis[0], factor=4)
    with pytest.raises(po.BufferAlignmentError) as refused:
        s[B].tensorize(inner, intrin)
    assert (refused.value.buffer, refused.value.factor, refused.value.array,
            refused.value.start) == ("a", 8, "A", (4,))


@pytest.mark.parametrize("rounding", [None, "away"])       # None: the default, to even
def test_requantize_epilogue_matches_numpy(rounding):
    acc = po.placeholder((4, 40), name="acc", dtype="int32")
    bias = po.placeholder((40,), name="bias", dtype="int32")
    q = po.ops.requantize(acc, 0.0123, zero_point=7, dtype="uint8", relu=True, bias=bias,
                          **({} if rounding is None else {"rounding": rounding}))
    s = po.create_schedule(q)
    f = po.build(s, [acc, bias, q])
    rng = np.random.default_rng(1)
    x = rng.integers(-20000, 20000, (4, 40), dtype=np.int32)
    b = rng.integers(-500, 500, 40, dtype=np.int32)
    out = np.zeros((4, 40), np.uint8)
    f(x, b, out)
    scaled = (x + b).astype(np.float32) * np.float32(0.0123)
    rounded = np.rint(scaled) if rounding is None else np.where(
        scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5))
    np.testing.assert_array_equal(out, np.clip(rounded + 7, 7, 255).astype(np.uint8))
