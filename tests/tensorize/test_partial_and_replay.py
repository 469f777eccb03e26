"""Tensorize as a registered primitive (recorded, replayed, checked after later steps)
and partial tiles around a tensorized sub-nest (full tiles call the intrinsic, the
remainder runs as scalar code), bit-exact against NumPy on non-dividing sizes."""

import numpy as np
import pytest

import polyopt as po
from polyopt.tensorize.builtin import dot_16x4_u8s8, gemm_u8s8
from polyopt.schedules.tensorized import int8_conv2d_template, int8_matmul_template
from polyopt.transform.state import PRIMITIVES, ScheduleState

from testlib.errors import refused
from testlib.machine import run_needs
from testlib.numeric import assert_numbers
from testlib.tensorize import (VNNI, build_vnni, check_gemv, gemv8, gemv_program, int8_matmul,
                               int8_operands, numpy_conv_int32, row_dot_schedule, vnni_machine)

RNG = np.random.default_rng(15)


def run_matmul(s, A, W, C, m, n, k):
    """Build (vpdpbusd in the code), then, where the host has VNNI, run bit-exact."""
    f = build_vnni(s, [A, W, C])
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(m, n, k)
    c = np.full((m, n), 7, np.int32)
    f(a, packed, c)
    assert_numbers(c, expected)  # int32: bit for bit
    return f


# -- the registered primitive ------------------------------------------------------------
def test_tensorize_is_a_registered_pure_primitive():
    A, W, C = int8_matmul(2, 16, 8)
    s, ji = row_dot_schedule(C)
    before = s.state
    after, result = PRIMITIVES["tensorize"].apply(before, "C", "j.inner", dot_16x4_u8s8())
    assert result is None and before.program.tensorized == ()
    assert [t[:2] for t in after.program.tensorized] == [("C", "j.inner")]
    after.check('s["C"].tensorize(...)')                      # legal
    assert isinstance(after, ScheduleState)


def test_script_records_the_builtin_and_replay_reproduces_it():
    A = po.placeholder((12, 16), name="A", dtype="uint8")
    W = po.placeholder((2, 4, 64, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    int8_matmul_template(s, C, rows=6, parallel=False, target_info=vnni_machine(),
                         tensor_unit="avx512")
    script = s.script()
    assert 's["C_local"].tensorize("i", "gemm_u8s8(rows=6, cols=64)")' in script
    fresh = po.create_schedule(C).replay(script)
    assert str(po.lower(fresh, [A, W, C])) == str(po.lower(s, [A, W, C]))
    again = po.create_schedule(C).replay(s.steps)
    assert again.program.tensorized[0][2] is s.program.tensorized[0][2]
    f = build_vnni(fresh, [A, W, C])
    run_needs(*VNNI)
    a, _, packed, expected = int8_operands(12, 128, 16, blocked_columns=64)
    c = np.zeros((12, 128), np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


def test_builtin_key_is_made_again_when_not_alive():
    from polyopt.tensorize.apply import intrinsic_by_key

    made = intrinsic_by_key("gemm_u8s8(rows=3, cols=48)")
    assert made.name == "gemm_u8s8_3x48" and made.output.shape == (3, 48)
    with pytest.raises(po.InvalidArgumentError, match="no intrinsic 'nope' is declared"):
        intrinsic_by_key("nope")


def test_user_intrinsic_is_recorded_by_its_key_and_replayed():
    A, B, C = gemv_program(3, 16, 24)
    intrin = gemv8()
    s = po.create_schedule(C)
    i, j = C.op.axis
    jo, ji = s[C].split(j, factor=8)
    ro, ri = s[C].split(C.op.reduce_axis[0], factor=8)
    s[C].reorder(i, jo, ro, ji, ri)
    s[C].tensorize(ji, intrin)
    assert f'tensorize("j.inner", "{intrin.key}")' in s.script()
    fresh = po.create_schedule(C).replay(s.script())
    assert fresh.program.tensorized[0][2] is intrin
    check_gemv(fresh, A, B, C, 3, 16, 24)


def test_two_user_intrinsics_with_one_name_get_distinct_keys():
    first, second = gemv8(), gemv8()
    assert first.key != second.key and second.key.startswith(first.name)
    a = po.placeholder((4,), name="a")
    c = po.compute((4,), lambda i: a[i] * 2.0, name="c")
    with pytest.raises(po.InvalidArgumentError, match="key must be a non-empty string"):
        po.decl_tensor_intrin(c.op, lambda ins, outs: po.tensorize.call_extern(
            "void", "f", outs[0].access_ptr("w")), key=5)


def test_a_later_step_that_breaks_the_tensorize_is_refused():
    A, W, C = int8_matmul(2, 32, 8)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())
    assert not s[C].can_split(ji, factor=4)
    # the type and attributes of the matcher's error, the step it broke in front
    err = refused(po.UnknownLoopError, lambda: s[C].split(ji, factor=4))
    assert (err.stage, err.loop) == ("C", "j.inner")
    run_matmul(s, A, W, C, 2, 32, 8)                      # the schedule is unchanged


def test_unchecked_tensorize_is_caught_by_check():
    A, W, C = int8_matmul(2, 16, 8)
    s, ji = row_dot_schedule(C)
    s[C].reverse(C.op.reduce_axis[0], check=False)
    s[C].tensorize(ji, dot_16x4_u8s8(), check=False)     # illegal, not checked
    assert not s.is_legal()
    with pytest.raises(po.IllegalTensorizeError) as refused:
        s.check()
    assert (refused.value.axis, refused.value.inside) == ("j.inner", False)
    assert refused.value.dependence.array == "C"


# -- partial tiles -----------------------------------------------------------------------
@pytest.mark.parametrize("m, n, k", [(5, 40, 24), (3, 17, 8)])
def test_partial_column_tile_runs_as_scalar_code(m, n, k):
    A, W, C = int8_matmul(m, n, k)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())
    lowered = str(po.lower(s, [A, W, C]))
    assert "if (j_outer " in lowered                              # the full tiles: the call
    assert "dot_16x4_u8s8.update" in lowered and "(int32)A[i, 4 * ko + ki]" in lowered
    assert "llvm.x86.avx512.vpdpbusd.512" in build_vnni(s, [A, W, C]).llvm_ir
    run_matmul(s, A, W, C, m, n, k)


def test_partial_tiles_with_symbolic_sizes():
    M, G, N = po.var("M"), po.var("G"), po.var("N")
    A = po.placeholder((M, 4 * G), name="A", dtype="uint8")
    W = po.placeholder((G, N, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s, ji = row_dot_schedule(C)
    s[C].tensorize(ji, dot_16x4_u8s8())
    f = build_vnni(s, [A, W, C])
    run_needs(*VNNI)
    for m, n, k in ((3, 40, 8), (2, 7, 4), (4, 32, 12)):   # partial, only partial, full
        a, _, packed, expected = int8_operands(m, n, k)
        c = np.zeros((m, n), np.int32)
        f(a, packed, c)
        np.testing.assert_array_equal(c, expected)


@pytest.mark.parametrize("m", [37, 13])
def test_matmul_template_with_a_partial_row_tile(m):
    n, k = 64, 20
    a, w, _, expected = int8_operands(m, n, k)
    packed = po.ops.pack_vnni_numpy(w, columns=64, blocked=True)
    A = po.placeholder((m, k), name="A", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    s = po.create_schedule(C)
    loops = int8_matmul_template(s, C, rows=6, parallel=True, target_info=vnni_machine(),
                                 tensor_unit="avx512")
    assert loops["rows"] == 6
    f = build_vnni(s, [A, W, C], num_threads=2)
    run_needs(*VNNI)
    c = np.zeros((m, 64), np.int32)
    f(a, packed, c)
    np.testing.assert_array_equal(c, expected)


def test_conv_template_with_a_partial_pixel_tile():
    c, f, size = 8, 64, 7                                 # 7 output columns, tiles of 4
    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((1, c // 4, 3, 3, 64, 4), name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_nchw(X, W, padding=1, name="Y")
    s = po.create_schedule(Y)
    assert int8_conv2d_template(s, Y, rows=4, parallel=False,
                                target_info=vnni_machine())["rows"] == 4
    kernel = build_vnni(s, [X, W, Y])
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, 3, 3), dtype=np.int8)
    y = np.zeros((1, f, size, size), np.int32)
    kernel(x, po.ops.pack_conv_vnni_numpy(w), y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 1, 1))


def test_partial_tile_of_a_user_intrinsic_with_reset_and_update():
    A, B, C = gemv_program(2, 20, 8)                      # 20 columns: tiles of 8, 8, 4
    s = po.create_schedule(C)
    jo, ji = s[C].split(C.op.axis[1], factor=8)
    s[C].tensorize(ji, gemv8())
    check_gemv(s, A, B, C, 2, 20, 8)


def test_strict_refusal_suggests_the_split():
    A, W, C = int8_matmul(6, 64, 8)
    s = po.create_schedule(C)
    i, j = C.op.axis
    ko, ki = C.op.reduce_axis
    io, ii = s[C].split(i, factor=4)
    s[C].reorder(io, ko, ii, j, ki)
    # the message is the point here: it suggests the split
    with pytest.raises(po.TensorizeDomainMismatchError,
                       match=r"loop 'i.inner' has 2 iteration\(s\) .* "
                       r"extent 4 and strict=True .* split the loop by 4") as err:
        s[C].tensorize(ii, gemm_u8s8(4, 64), strict=True)
    assert (err.value.stage, err.value.axis, err.value.problem) == ("C", "i.inner", "domain")
    s[C].tensorize(ii, gemm_u8s8(4, 64))
    assert 'strict' not in s.script()
    run_matmul(s, A, W, C, 6, 64, 8)


# -- requantization fused into the int8 tile ---------------------------------------------
def numpy_requantize(acc, scale, zero_point, *, relu, bias=None, axis=-1, dtype=np.uint8,
                     rounding="even"):
    if bias is not None:
        shape = [1] * acc.ndim
        shape[axis] = -1
        acc = acc + bias.reshape(shape)
    scaled = acc.astype(np.float32) * np.float32(scale)
    rounded = np.rint(scaled) if rounding == "even" else np.where(
        scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5))
    info = np.iinfo(dtype)
    return np.clip(rounded + zero_point, zero_point if relu else info.min, info.max
                   ).astype(dtype)


def stored_arrays(lowered: str) -> set[str]:
    return {line.split("[")[0].strip().removesuffix(".flat") for line in lowered.splitlines()
            if "] = " in line}


@pytest.mark.parametrize("size, rows", [(8, None), (7, 4)])    # dividing, partial tile
def test_conv_template_requantizes_in_the_tile(size, rows):
    c, f = 8, 64
    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((1, c // 4, 3, 3, 64, 4), name="W", dtype="int8")
    bias = po.placeholder((f,), name="bias", dtype="int32")
    Y = po.ops.conv2d_u8s8_nchw(X, W, padding=1, name="Y")
    R = po.ops.requantize(Y, 0.004, 5, relu=True, bias=bias, axis=1, name="R")
    s = po.create_schedule(R)
    int8_conv2d_template(s, Y, rows=rows, parallel=True, epilogue=R,
                         target_info=vnni_machine())
    lowered = str(po.lower(s, [X, W, bias, R]))
    assert "gemm_u8s8" in lowered and stored_arrays(lowered) >= {"R", "Y_local"}
    assert "Y" not in stored_arrays(lowered)                 # no int32 output round trip
    kernel = build_vnni(s, [X, W, bias, R], num_threads=2)
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, 3, 3), dtype=np.int8)
    b = RNG.integers(-3000, 3000, f, dtype=np.int32)
    r = np.zeros((1, f, size, size), np.uint8)
    kernel(x, po.ops.pack_conv_vnni_numpy(w), b, r)
    expected = numpy_requantize(numpy_conv_int32(x, w, 1, 1), 0.004, 5, relu=True, bias=b,
                                axis=1)
    np.testing.assert_array_equal(r, expected)


@pytest.mark.parametrize("m, dtype, rounding", [(12, "uint8", "even"), (9, "int8", "away")])
def test_matmul_template_requantizes_in_the_tile(m, dtype, rounding):
    n, k = 64, 32
    a, w, _, acc = int8_operands(m, n, k)
    packed = po.ops.pack_vnni_numpy(w, columns=64, blocked=True)
    A = po.placeholder((m, k), name="A", dtype="uint8")
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    Q = po.ops.requantize(C, 0.0021, -3 if dtype == "int8" else 9, dtype=dtype,
                          rounding=rounding, name="Q")
    s = po.create_schedule(Q)
    int8_matmul_template(s, C, parallel=False, epilogue=Q, target_info=vnni_machine(),
                         tensor_unit="avx512")
    lowered = str(po.lower(s, [A, W, Q]))
    assert "C" not in stored_arrays(lowered) and "Q" in stored_arrays(lowered)
    f = build_vnni(s, [A, W, Q])
    run_needs(*VNNI)
    q = np.zeros((m, n), dtype)
    f(a, packed, q)
    np.testing.assert_array_equal(q, numpy_requantize(acc, 0.0021, -3 if dtype == "int8" else 9,
                                                      relu=False, dtype=np.dtype(dtype),
                                                      rounding=rounding))


def test_epilogue_must_read_the_accumulator():
    A = po.placeholder((6, 8), name="A", dtype="uint8")
    W = po.placeholder((1, 2, 64, 4), name="W", dtype="int8")
    C = po.ops.matmul_u8s8(A, W)
    other = po.placeholder((6, 64), name="other", dtype="int32")
    Q = po.ops.requantize(other, 0.5)
    s = po.create_schedule([C, Q])
    with pytest.raises(po.InvalidArgumentError, match="computed element by element from 'C'"):
        int8_matmul_template(s, C, epilogue=Q, target_info=vnni_machine(),
                             tensor_unit="avx512")


def test_conv_padding_with_the_zero_point_and_a_qlinear_requantization():
    """QLinearConv's computation: padding with the input zero point, its sum folded into
    a per-channel bias, then the requantization, all in the int8 tile."""
    c, f, size, zero = 8, 64, 6, 128
    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((1, c // 4, 3, 3, 64, 4), name="W", dtype="int8")
    bias = po.placeholder((f,), name="bias", dtype="int32")
    Y = po.ops.conv2d_u8s8_nchw(X, W, padding=1, pad_value=zero, name="Y")
    Q = po.ops.requantize(Y, 0.0004, 128, bias=bias, axis=1, name="Q")
    s = po.create_schedule(Q)
    int8_conv2d_template(s, Y, parallel=False, epilogue=Q, target_info=vnni_machine())
    with pytest.raises(po.InvalidArgumentError, match="pad_value must be a uint8 value"):
        po.ops.conv2d_u8s8_nchw(X, W, padding=1, pad_value=300)
    kernel = build_vnni(s, [X, W, bias, Q])
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, 3, 3), dtype=np.int8)
    b = (-zero * w.astype(np.int32).sum(axis=(1, 2, 3))).astype(np.int32)
    q = np.zeros((1, f, size, size), np.uint8)
    kernel(x, po.ops.pack_conv_vnni_numpy(w), b, q)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=zero)
    acc = numpy_conv_int32(padded.astype(np.int32) - zero, w, 0, 1)   # sum (x - z) w
    np.testing.assert_array_equal(q, numpy_requantize(acc, 0.0004, 128, relu=False))
