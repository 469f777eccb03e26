"""The int8 conv template's register tiles (``conv_tile``): 8 x 32, 7 x 32... chosen from
the register budget, tiles narrower than the weights' block, and explicit tiles that do
not divide the width (a scalar remainder), all bit-exact against NumPy."""

import re

import numpy as np
import pytest

import polyopt as po
from polyopt.machine import TargetInfo
from polyopt.schedules.tensorized import conv_tile, int8_conv2d_template

from testlib.machine import run_needs
from testlib.tensorize import VNNI, build_vnni, numpy_conv_int32, vnni_machine

RNG = np.random.default_rng(1515)
AVX512 = TargetInfo(vector_bits=512, vector_registers=32)


@pytest.mark.parametrize("width, rows, cols, expected", [
    (56, None, None, (8, 32)), (28, None, None, (7, 32)), (14, None, None, (7, 32)),
    (7, None, None, (7, 32)), (9, None, None, (3, 64)), (10, None, None, (5, 32)),
    (7, 4, None, (4, 64)), (14, 7, None, (7, 32)), (7, None, 64, (1, 64))])
def test_conv_tile_fits_half_the_registers_and_divides_the_width(width, rows, cols, expected):
    assert conv_tile(width, 64, rows=rows, cols=cols, info=AVX512) == expected
    r, c = expected
    if rows is None:
        assert width % r == 0 and r * c // 16 <= 16


def conv_program(c, f, size, kernel, padding, stride):
    X = po.placeholder((1, c, size, size), name="X", dtype="uint8")
    W = po.placeholder((f // 64, c // 4, kernel, kernel, 64, 4), name="W", dtype="int8")
    return X, W, po.ops.conv2d_u8s8_nchw(X, W, stride=stride, padding=padding, name="Y")


@pytest.mark.parametrize("c, f, size, kernel, padding, stride, rows, cols, tile", [
    (8, 128, 14, 3, 1, 1, None, None, (7, 32)),   # 2 blocks of 64 in 4 tiles of 32
    (4, 64, 7, 3, 1, 1, None, None, (7, 32)),
    (4, 64, 8, 3, 1, 1, None, None, (8, 32)),     # full 8 x 8 transposed blocks
    (8, 64, 10, 3, 1, 1, 4, 32, (4, 32)),         # 10 = 4 + 4 + a partial tile of 2
    (8, 128, 9, 1, 0, 2, None, None, (5, 32)),    # strided 1x1: 5 output columns
    (8, 64, 9, 1, 0, 1, None, None, (3, 64)),     # 1x1: packed row by row
    (4, 64, 7, 3, 1, 1, 3, 16, (3, 16))])         # 7 = 3 + 3 + 1, tiles of 16 channels
def test_conv_tiles_bit_exact(c, f, size, kernel, padding, stride, rows, cols, tile):
    X, W, Y = conv_program(c, f, size, kernel, padding, stride)
    s = po.create_schedule(Y)
    loops = int8_conv2d_template(s, Y, rows=rows, cols=cols, parallel=True,
                                 target_info=vnni_machine())
    assert (loops["rows"], loops["cols"]) == tile      # VNNI machines have 32 registers
    assert f"gemm_u8s8_{loops['rows']}x{loops['cols']}" in str(po.lower(s, [X, W, Y]))
    kernel_fn = build_vnni(s, [X, W, Y], num_threads=2, parallel_min_work=0)
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, c, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (f, c, kernel, kernel), dtype=np.int8)
    y = np.full(tuple(e.value for e in Y.shape), 7, np.int32)
    kernel_fn(x, po.ops.pack_conv_vnni_numpy(w), y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, padding, stride))


def test_a_tile_wider_than_the_block_is_refused():
    X, W, Y = conv_program(4, 64, 7, 3, 1, 1)
    s = po.create_schedule(Y)
    with pytest.raises(po.InvalidArgumentError, match="must divide the weights' block of 64"):
        int8_conv2d_template(s, Y, cols=48, target_info=vnni_machine())


@pytest.mark.parametrize("size, kernel, padding, stride, parallel", [
    (14, 3, 1, 1, False), (16, 1, 0, 2, False), (40, 3, 1, 1, True)])
def test_the_tile_goes_out_transposed_in_registers(size, kernel, padding, stride, parallel):
    """The tile (pixels x channels) is written to NCHW through register transposes, also
    for 7 pixels (masked 8 x 8 blocks) and inside the fused channel-block/row loop:
    no gathers; in the outlined parallel loop the tile is zeroed without scatters."""
    X, W, Y = conv_program(4, 64, size, kernel, padding, stride)
    s = po.create_schedule(Y)
    int8_conv2d_template(s, Y, parallel=parallel, target_info=vnni_machine())
    kernel_fn = build_vnni(s, [X, W, Y], num_threads=2 if parallel else 1)
    assert "shufflevector" in kernel_fn.llvm_ir
    assert not re.search(r"gather|scatter", kernel_fn.assembly)
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, 4, size, size), dtype=np.uint8)
    w = RNG.integers(-128, 128, (64, 4, kernel, kernel), dtype=np.int8)
    y = np.zeros(tuple(e.value for e in Y.shape), np.int32)
    kernel_fn(x, po.ops.pack_conv_vnni_numpy(w), y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, padding, stride))


@pytest.mark.parametrize("stride, outer, rows", [(1, "y.outer", 4), (2, "y", 1)])
def test_a_1x1_conv_packs_each_row_inside_the_parallel_row_loop(stride, outer, rows):
    """A 1x1 conv reads one packed row per output row: the rows are packed inside the
    loop over output rows (a buffer of one row, or of the pixel-lane tile's 4 rows of 12,
    per thread), so one parallel region per call."""
    X, W, Y = conv_program(8, 128, 12, 1, 0, stride)
    s = po.create_schedule(Y)
    loops = int8_conv2d_template(s, Y, parallel=True, target_info=vnni_machine())
    assert loops["outer"].name == outer
    assert f"uint8 Y_packed[2][{rows}][" in str(po.lower(s, [X, W, Y]))
    kernel_fn = build_vnni(s, [X, W, Y], num_threads=2, parallel_min_work=0)
    assert kernel_fn.llvm_ir.count('call void @"polyopt_parallel"') == 1
    run_needs(*VNNI)
    x = RNG.integers(0, 256, (1, 8, 12, 12), dtype=np.uint8)
    w = RNG.integers(-128, 128, (128, 8, 1, 1), dtype=np.int8)
    y = np.full(tuple(e.value for e in Y.shape), 7, np.int32)
    kernel_fn(x, po.ops.pack_conv_vnni_numpy(w), y)
    np.testing.assert_array_equal(y, numpy_conv_int32(x, w, 0, stride))
