"""The int8 conv's requantization to onnxruntime's rounding (ties to even, bit for bit
with QLinearConv) and its input packing (padded channel rows first, then grouped
without a condition), checked against NumPy and onnxruntime."""

import numpy as np
import pytest

import polyopt as po
from polyopt.schedules.tensorized import PADDED_STAGE_ROW, int8_conv2d_template
from testlib.machine import WIDE_CPU, run_needs
from testlib.tensorize import VNNI, build_vnni, numpy_conv_int32, vnni_machine

RNG = np.random.default_rng(1515)


def numpy_requantize_even(acc, scale, zero_point, dtype, relu=False):
    """float32 ``acc * scale`` rounded to nearest, ties to even (np.rint), plus the zero
    point, clipped to ``dtype`` (from the zero point with ``relu``)."""
    rounded = np.rint(acc.astype(np.float32) * np.float32(scale)).astype(np.float64)
    info = np.iinfo(dtype)
    return np.clip(rounded + zero_point, zero_point if relu else info.min,
                   info.max).astype(dtype)


TIES_AND_EXTREMES = np.array([1, 3, 5, -1, -3, -5, 7, -7, 0, 2, -2, 2**31 - 1, -2**31,
                              2**24 + 1, -(2**24 + 3), 2**22, -(2**22) - 1, 8388609,
                              -8388609, 511, 513, -511, -513], np.int32)


@pytest.mark.parametrize("dtype, zero_point, relu", [
    ("uint8", 128, False), ("uint8", 7, False), ("uint8", 0, True), ("uint8", 9, True),
    ("int8", 0, False), ("int8", -3, True), ("int8", 6, False)])
@pytest.mark.parametrize("scale", [0.5, 0.25, 0.0004, 3.0])
def test_requantize_rounds_ties_to_even_vectorized(dtype, zero_point, relu, scale):
    acc = np.concatenate([TIES_AND_EXTREMES, RNG.integers(-2**31, 2**31, 40),
                          RNG.integers(-1500, 1500, 33)]).astype(np.int32)
    A = po.placeholder(acc.shape, name="A", dtype="int32")
    Q = po.ops.requantize(A, scale, zero_point, dtype=dtype, relu=relu, rounding="even")
    s = po.create_schedule(Q)
    s[Q].vectorize(Q.op.axis[0])
    q = np.zeros(acc.shape, dtype)
    po.build(s, [A, Q])(acc, q)
    np.testing.assert_array_equal(q, numpy_requantize_even(acc, scale, zero_point, dtype,
                                                           relu))


def test_requantize_even_uses_no_int32_conversion():
    A = po.placeholder((64,), name="A", dtype="int32")
    Q = po.ops.requantize(A, 0.0004, 128, rounding="even")
    s = po.create_schedule(Q)
    s[Q].vectorize(Q.op.axis[0])
    f = po.build(s, [A, Q])
    assert "fptosi float" not in f.optimized_ir and "fptoui <" in f.optimized_ir  # to u8
    # with AVX-512 the lanes go to bytes in one truncation (built for such a CPU)
    wide = po.build(s, [A, Q], target=f"llvm -mcpu={WIDE_CPU}")
    assert "fptosi float" not in wide.optimized_ir
    assert "vpmovdb" in wide.assembly or "vpmovusdb" in wide.assembly


@pytest.mark.parametrize("rounding, expected", [
    (None, [10, 12, 12, 10, 8, 8]), ("even", [10, 12, 12, 10, 8, 8]),
    ("away", [11, 12, 13, 9, 8, 7])])
def test_requantize_rounds_ties_to_even_by_default(rounding, expected):
    """ONNX's QuantizeLinear semantics unless asked: 0.5, 1.5, 2.5, -0.5, -1.5, -2.5."""
    A = po.placeholder((6,), name="A", dtype="int32")
    Q = po.ops.requantize(A, 0.5, 10, **({} if rounding is None else {"rounding": rounding}))
    q = np.zeros(6, np.uint8)
    po.build(po.create_schedule(Q), [A, Q])(np.array([1, 3, 5, -1, -3, -5], np.int32), q)
    assert q.tolist() == expected


def test_requantize_rejects_an_unknown_rounding():
    A = po.placeholder((4,), name="A", dtype="int32")
    with pytest.raises(po.InvalidArgumentError, match="rounding must be 'away'.*'even'"):
        po.ops.requantize(A, 0.5, rounding="nearest")


def qlinear_conv(x, w, padding, stride, scales, zeros):
    """onnxruntime's QLinearConv of uint8 ``x`` and int8 ``w`` (weight zero point 0)."""
    from onnx import TensorProto, helper, numpy_helper

    from testlib.onnx_models import ort_session

    (xs, ws, ys), (xz, yz) = scales, zeros
    names = ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"]
    node = helper.make_node("QLinearConv", names, ["Y"], pads=[padding] * 4,
                            strides=[stride] * 2)
    consts = [numpy_helper.from_array(v, n) for n, v in (
        ("xs", np.array(xs, np.float32)), ("xz", np.array(xz, np.uint8)), ("W", w),
        ("ws", np.array(ws, np.float32)), ("wz", np.array(0, np.int8)),
        ("ys", np.array(ys, np.float32)), ("yz", np.array(yz, np.uint8)))]
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "X", TensorProto.UINT8, x.shape)], [helper.make_tensor_value_info(
            "Y", TensorProto.UINT8, None)], initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return ort_session(model).run(None, {"X": x})[0]


@pytest.mark.parametrize("c, f, size, kernel, padding, stride, ys, threads", [
    (8, 64, 20, 3, 1, 1, 0.25, 2), (8, 64, 7, 3, 1, 1, 0.25, 1),
    (16, 64, 12, 1, 0, 2, 0.05, 1), (16, 64, 12, 1, 0, 2, 0.05, 2)])
def test_fused_conv_equals_onnxruntime_qlinearconv_bit_for_bit(c, f, size, kernel, padding,
                                                               stride, ys, threads):
    pytest.importorskip("onnxruntime")
    xs, ws, xz, yz = 0.02, 0.01, 128, 120
    scale = float(np.float32(xs) * np.float32(ws) / np.float32(ys))  # onnxruntime's order
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, kernel, kernel), dtype=np.int8)
    X = po.placeholder(x.shape, name="X", dtype="uint8")
    W = po.placeholder(po.ops.pack_conv_vnni_numpy(w).shape, name="W", dtype="int8")
    bias = po.placeholder((f,), name="bias", dtype="int32")
    Y = po.ops.conv2d_u8s8_nchw(X, W, stride=stride, padding=padding, pad_value=xz,
                                name="Y")
    Q = po.ops.requantize(Y, scale, yz, bias=bias, axis=1, rounding="even", name="Q")
    s = po.create_schedule(Q)
    int8_conv2d_template(s, Y, parallel=threads > 1, epilogue=Q, target_info=vnni_machine())
    kernel = build_vnni(s, [X, W, bias, Q], num_threads=threads)
    run_needs(*VNNI)
    q = np.zeros(tuple(e.value for e in Q.shape), np.uint8)
    b = (-xz * w.astype(np.int32).sum(axis=(1, 2, 3))).astype(np.int32)
    kernel(x, po.ops.pack_conv_vnni_numpy(w), b, q)
    expected = qlinear_conv(x, w, padding, stride, (xs, ws, ys), (xz, yz))
    np.testing.assert_array_equal(q, expected)
    assert 0 < (q == 0).sum() + (q == 255).sum() < q.size      # some values saturate
    acc = numpy_conv_int32(np.pad(x, ((0, 0), (0, 0), (padding,) * 2, (padding,) * 2),
                                  constant_values=xz).astype(np.int32) - xz, w, 0, stride)
    np.testing.assert_array_equal(q, numpy_requantize_even(acc, scale, yz, np.uint8))


def packing_lines(source: str, name: str) -> list[str]:
    """The statements of ``source`` that store into ``name``."""
    return [line for line in source.splitlines() if line.strip().startswith(f"{name}[")]


@pytest.mark.parametrize("c, size, padding, pad_value", [
    (8, PADDED_STAGE_ROW, 1, 0),     # padded rows first (per group), then grouped
    (6, PADDED_STAGE_ROW + 4, 2, 77),   # a ragged last group reads the pad value too
    (8, 5, 1, 3),                    # narrow rows: the padding inlined into the packing
    (8, 9, 0, 0)])                   # no padding: grouped directly
def test_packing_pads_channel_rows_then_groups_without_a_condition(c, size, padding,
                                                                   pad_value):
    f = 64
    groups = -(-c // 4)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, 3, 3), dtype=np.int8)
    wide = np.zeros((f, groups * 4, 3, 3), np.int8)
    wide[:, :c] = w
    X = po.placeholder(x.shape, name="X", dtype="uint8")
    W = po.placeholder((1, groups, 3, 3, 64, 4), name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_nchw(X, W, padding=padding, pad_value=pad_value, name="Y")
    s = po.create_schedule(Y)
    int8_conv2d_template(s, Y, parallel=True, target_info=vnni_machine())
    kernel = build_vnni(s, [X, W, Y], num_threads=2)
    source = kernel.source
    packing = packing_lines(source, "Y_packed")
    assert len(packing) == 1
    padded = size + 2 * padding >= PADDED_STAGE_ROW and (padding or c % 4)
    assert ("?" in packing[0]) == bool((padding or c % 4) and not padded)
    if padded:   # 4 channel rows padded per group of the packing
        assert "Y_padded[4]" in source and len(packing_lines(source, "Y_padded")) == 1
    run_needs(*VNNI)
    y = np.zeros((1, f, size + 2 * padding - 2, size + 2 * padding - 2), np.int32)
    kernel(x, po.ops.pack_conv_vnni_numpy(wide), y)
    xp = np.pad(x, ((0, 0), (0, groups * 4 - c), (padding,) * 2, (padding,) * 2),
                constant_values=pad_value)
    np.testing.assert_array_equal(y, numpy_conv_int32(xp, wide, 0, 1))
