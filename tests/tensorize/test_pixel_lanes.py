"""``gemm_u8s8_nchw``: ``vpdpbusd`` with its lanes along output pixels (weights
broadcast), so a 1x1 conv's NCHW output is stored without a transpose; matched exactly
(the tile's whole rows must be contiguous in the output), bit-exact against NumPy."""

import numpy as np
import pytest

import polyopt as po
from polyopt.tensorize.builtin import gemm_u8s8_nchw
from polyopt.schedules.tensorized import int8_conv2d_template, pixel_tile

from testlib.errors import refused
from testlib.machine import run_needs
from testlib.tensorize import VNNI, build_vnni, numpy_conv_int32, vnni_machine

RNG = np.random.default_rng(1516)


def conv_program(c, f, size, stride):
    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((f // 64, c // 4, 1, 1, 64, 4), name="W", dtype="int8")
    return X, W, po.ops.conv2d_u8s8_nchw(X, W, stride=stride, name="Y")


def operands(c, f, size):
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, 1, 1), dtype=np.int8)
    return x, w, po.ops.pack_conv_vnni_numpy(w)


@pytest.mark.parametrize("c, f, size, stride, parallel, rows", [
    (8, 64, 16, 2, True, 8),      # 8 x 8 output: one tile of 8 rows (64 pixels)
    (12, 128, 12, 1, False, 4),   # 12 x 12: 4 rows (48 pixels, 3 vectors)
    (4, 64, 56, 2, True, 4)])     # ResNet-18's strided 1x1 width: 4 rows of 28
def test_pixel_lane_conv_bit_exact(c, f, size, stride, parallel, rows):
    X, W, Y = conv_program(c, f, size, stride)
    s = po.create_schedule(Y)
    loops = int8_conv2d_template(s, Y, parallel=parallel, target_info=vnni_machine())
    assert (loops["lanes"], loops["rows"], loops["cols"]) == ("pixels", rows, 2)
    width = Y.shape[3].value
    assert f"gemm_u8s8_nchw_2x{rows}x{width}" in str(po.lower(s, [X, W, Y]))
    kernel = build_vnni(s, [X, W, Y], num_threads=2 if parallel else 1)
    assert "vpdpbusd" in kernel.llvm_ir
    run_needs(*VNNI)
    x, w, packed = operands(c, f, size)
    y = np.full(tuple(e.value for e in Y.shape), 7, np.int32)
    kernel(x, packed, y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 0, stride))


@pytest.mark.parametrize("c, f, columns, channels", [
    (6, 64, 64, 2),    # 6 input channels: the last group of 4 reads the pad value
    (8, 6, 3, 1)])     # weights in blocks of 3 channels: tiles of one channel
def test_pixel_lane_conv_ragged_channels_and_odd_blocks(c, f, columns, channels):
    X = po.placeholder((1, c, 16, 16), name="X", dtype="uint8")
    w = RNG.integers(-128, 128, (f, c, 1, 1), dtype=np.int8)
    padded = np.zeros((f, -(-c // 4) * 4, 1, 1), np.int8)
    padded[:, :c] = w
    packed = po.ops.pack_conv_vnni_numpy(padded, columns=columns)
    W = po.placeholder(packed.shape, name="W", dtype="int8")
    Y = po.ops.conv2d_u8s8_nchw(X, W, stride=2, name="Y")
    s = po.create_schedule(Y)
    loops = int8_conv2d_template(s, Y, parallel=True, target_info=vnni_machine())
    assert (loops["lanes"], loops["cols"]) == ("pixels", channels)
    kernel = build_vnni(s, [X, W, Y], num_threads=2)
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, 16, 16), dtype=np.uint8)
    y = np.full((1, f, 8, 8), 7, np.int32)
    kernel(x, packed, y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 0, 2))


@pytest.mark.parametrize("rounding", ["away", "even"])
def test_pixel_lane_conv_requantizes_in_the_tile(rounding):
    c, f, size = 8, 64, 16
    X, W, Y = conv_program(c, f, size, 2)
    bias = po.placeholder((f,), name="bias", dtype="int32")
    Q = po.ops.requantize(Y, 0.0037, 7, relu=True, bias=bias, axis=1, rounding=rounding,
                          name="Q")
    s = po.create_schedule(Q)
    assert int8_conv2d_template(s, Y, parallel=True, epilogue=Q,
                                target_info=vnni_machine())["lanes"] == "pixels"
    kernel = build_vnni(s, [X, W, bias, Q], num_threads=2)
    run_needs(*VNNI)
    x, w, packed = operands(c, f, size)
    b = RNG.integers(-3000, 3000, f, dtype=np.int32)
    q = np.zeros((1, f, 8, 8), np.uint8)
    kernel(x, packed, b, q)
    scaled = ((numpy_conv_int32(x, w, 0, 2) + b.reshape(1, -1, 1, 1)).astype(np.float32)
              * np.float32(0.0037))
    rounded = (np.rint(scaled) if rounding == "even" else
               np.where(scaled >= 0, np.floor(scaled + 0.5), np.ceil(scaled - 0.5)))
    np.testing.assert_array_equal(q, np.clip(rounded + 7, 7, 255).astype(np.uint8))


def test_pixel_tile_takes_whole_rows_of_whole_vectors():
    assert [pixel_tile(h, w) for h, w in ((28, 28), (8, 8), (12, 12), (14, 14), (5, 5),
                                          (7, 7), (32, 16))] == [4, 8, 4, None, None, None, 8]
    X, W, Y = conv_program(8, 64, 9, 2)        # 5 x 5 output: the pixels x channels tile
    s = po.create_schedule(Y)
    assert "lanes" not in int8_conv2d_template(s, Y, parallel=False,
                                               target_info=vnni_machine())


def schedule_by_hand(Y, *, rows, channels, layout=None):
    s = po.create_schedule(Y)
    local = s.cache_write(Y, "local", layout=layout) if layout else s.cache_write(Y, "local")
    n, f, y, x = Y.op.axis
    yo, yi = s[Y].split(y, factor=rows)
    fo, fi = s[Y].split(f, factor=channels)
    s[Y].reorder(n, yo, fo, fi, yi, x)
    s[local].compute_at(s[Y], fo)
    ln, lf, ly, lx = local.op.axis
    cg, ry, rx, ci = local.op.reduce_axis
    s[local].reorder(ln, cg, ry, rx, lf, ly, lx, ci)
    return s, local, lf


def test_the_match_needs_the_tile_rows_contiguous():
    """The intrinsic reads its pixels as whole vectors: a channels-last tile (the
    pixels 64 channels apart) is refused, naming the buffer and its stride; a tile of
    another width is refused by its domain; the right one is accepted and exact."""
    X, W, Y = conv_program(8, 64, 16, 2)
    s, local, lf = schedule_by_hand(Y, rows=2, channels=2,
                                    layout="{ [n, f, y, x] -> [n, y, x, f] }")
    err = refused(po.TensorizeAccessMismatchError,
                  lambda: s[local].tensorize(lf, gemm_u8s8_nchw(2, 2, 8)))
    assert (err.stage, err.problem, err.mismatch.stage) == ("Y_local", "access", 4)  # strides
    s, local, lf = schedule_by_hand(Y, rows=2, channels=2)
    assert not s[local].can_tensorize(lf, gemm_u8s8_nchw(2, 4, 8))   # 4 rows, not 2
    err = refused(po.TensorizeDomainMismatchError,                    # 4 channels, not 2
                  lambda: s[local].tensorize(lf, gemm_u8s8_nchw(4, 2, 8)))
    assert (err.stage, err.axis, err.problem) == ("Y_local", lf.name, "domain")
    s[local].tensorize(lf, gemm_u8s8_nchw(2, 2, 8))
    script = s.script()
    assert 'gemm_u8s8_nchw(channels=2, rows=2, width=8)' in script
    fresh = po.create_schedule(Y).replay(script)
    assert str(po.lower(fresh, [X, W, Y])) == str(po.lower(s, [X, W, Y]))
    kernel = build_vnni(s, [X, W, Y])
    run_needs(*VNNI)
    x, w, packed = operands(8, 64, 16)
    y = np.zeros((1, 64, 8, 8), np.int32)
    kernel(x, packed, y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 0, 2))


def test_a_partial_block_of_rows_runs_as_scalar_code():
    """12 x 12 output in tiles of 8 rows (96 pixels): the last 4 rows are a partial
    tile, run as scalar code; every value still exact."""
    X, W, Y = conv_program(8, 64, 12, 1)
    s, local, lf = schedule_by_hand(Y, rows=8, channels=2)
    err = refused(po.TensorizeDomainMismatchError,
                  lambda: s[local].tensorize(lf, gemm_u8s8_nchw(2, 8, 12), strict=True))
    assert "strict=True refuses partial tiles" in str(err.mismatch)  # says how to accept them
    s[local].tensorize(lf, gemm_u8s8_nchw(2, 8, 12))
    kernel = build_vnni(s, [X, W, Y])
    run_needs(*VNNI)
    x, w, packed = operands(8, 64, 12)
    y = np.full((1, 64, 12, 12), 7, np.int32)
    kernel(x, packed, y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 0, 1))


@pytest.mark.parametrize("args, message", [
    ((2, 3, 5), "multiple of 16"), ((8, 4, 28), "accumulator registers"),
    ((0, 4, 28), "channels must be a positive int")])
def test_bad_tiles_are_refused(args, message):
    with pytest.raises(po.InvalidArgumentError, match=message):
        gemm_u8s8_nchw(*args)
