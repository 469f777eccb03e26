"""A copy ``P[k, f] = W[f, k]``, ``k`` unrolled around ``f`` vectorized in square blocks,
moves each block through registers: contiguous vector loads, shuffles, vector stores
(:mod:`polyopt.target.llvm.transpose`); other copies are emitted as scheduled."""

import re

import numpy as np
import pytest

import polyopt as po


def _transposed_copy(rows, cols, n, dtype="float32", scale=None, straight=False):
    """``P[k, f] = W[f, k]`` (or ``W[k, f]`` when ``straight``) in ``n`` x ``n`` blocks."""
    shape = (rows, cols) if straight else (cols, rows)
    W = po.placeholder(shape, name="W", dtype=dtype)

    def element(k, f):
        value = W[k, f] if straight else W[f, k]
        return value * scale if scale is not None else value

    P = po.compute((rows, cols), element, name="P")
    s = po.create_schedule(P)
    k, f = s[P].axes
    ko, ki = s[P].split(k, factor=n)
    fo, fi = s[P].split(f, factor=n)
    s[P].reorder(ko, fo, ki, fi)
    s[P].unroll(ki)
    s[P].vectorize(fi)
    return W, P, po.build(s, [W, P])


def _run(kernel, W, P, straight=False):
    rng = np.random.default_rng(1)
    w = rng.standard_normal(tuple(int(e.value) for e in W.shape)).astype(W.dtype)
    p = np.full(tuple(int(e.value) for e in P.shape), np.nan, P.dtype)
    kernel(w, p)
    return w, p


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_square_blocks_are_transposed_in_registers(n):
    W, P, f = _transposed_copy(2 * n, 3 * n, n)
    w, p = _run(f, W, P)
    np.testing.assert_array_equal(p, w.T)
    rounds = n.bit_length() - 1
    assert f.llvm_ir.count("shufflevector") == n * rounds  # n / 2 pairs, 2 per pair
    assert f.llvm_ir.count(f"load <{n} x float>") == n
    assert f.llvm_ir.count(f"store <{n} x float>") == n
    assert not re.search(r"vgather|vscatter", f.assembly)


@pytest.mark.parametrize("rows, cols", [(44, 40), (40, 44), (44, 44)])
def test_partial_blocks_are_masked(rows, cols):
    """float64 in 8 x 8 blocks: the last blocks along k (4 rows), along f (4 lanes) or
    both are transposed too, reading and writing only their elements (masked loads and
    stores), without gathers or scalar remainders."""
    W, P, f = _transposed_copy(rows, cols, 8, dtype="float64")
    w, p = _run(f, W, P)
    np.testing.assert_array_equal(p, w.T)
    assert "llvm.masked.load.v8f64" in f.llvm_ir and "llvm.masked.store.v8f64" in f.llvm_ir
    assert not re.search(r"vgather|vscatter", f.assembly)


@pytest.mark.parametrize("straight, scale", [(True, None), (False, 2.0)])
def test_other_copies_are_emitted_as_scheduled(straight, scale):
    """A copy along the vector (already contiguous) and a copy that computes are not
    transposed copies: no shuffles, the same numbers."""
    W, P, f = _transposed_copy(32, 32, 16, straight=straight, scale=scale)
    w, p = _run(f, W, P)
    expected = w if straight else w.T
    np.testing.assert_array_equal(p, expected * (scale or 1))
    assert "shufflevector" not in f.llvm_ir


def test_fewer_pixels_than_the_block_are_a_masked_block():
    """An 8-iteration unrolled loop around a vectorized loop of 7 (an int8 conv tile of
    7 pixels x 32 channels copied out in blocks of 8 channels): a masked 8 x 8 block."""
    W = po.placeholder((7, 16), name="W", dtype="int32")
    P = po.compute((16, 7), lambda k, f: W[f, k], name="P")
    s = po.create_schedule(P)
    k, f = s[P].axes
    ko, ki = s[P].split(k, factor=8)
    s[P].unroll(ki)
    s[P].vectorize(f)
    kernel = po.build(s, [W, P])
    w = np.arange(7 * 16, dtype=np.int32).reshape(7, 16)
    p = np.full((16, 7), -1, np.int32)
    kernel(w, p)
    np.testing.assert_array_equal(p, w.T)
    assert "llvm.masked.store.v8i32" in kernel.llvm_ir
    assert not re.search(r"vgather|vscatter", kernel.assembly)


def test_a_fused_outer_loop_in_the_indices_keeps_the_transpose():
    """The block's position enters through a fused loop's division and remainder
    (``fused / 3``, ``fused % 3``), which do not change the strides along the block."""
    W = po.placeholder((2, 3, 8, 8), name="W")
    P = po.compute((2, 3, 8, 8), lambda a, b, k, f: W[a, b, f, k], name="P")
    s = po.create_schedule(P)
    a, b, k, f = s[P].axes
    s[P].fuse(a, b)
    s[P].unroll(k)
    s[P].vectorize(f)
    kernel = po.build(s, [W, P])
    w = np.random.default_rng(2).standard_normal((2, 3, 8, 8)).astype(np.float32)
    p = np.full((2, 3, 8, 8), np.nan, np.float32)
    kernel(w, p)
    np.testing.assert_array_equal(p, w.transpose(0, 1, 3, 2))
    assert kernel.llvm_ir.count("shufflevector") == 8 * 3
    assert not re.search(r"vgather|vscatter", kernel.assembly)


@pytest.mark.parametrize("dtype, order", [("float32", "read first"), ("float32", "term first"),
                                          ("int32", "read first")])
def test_a_copy_plus_a_term_of_the_unrolled_row_is_transposed_then_added(dtype, order):
    """``P[k, f] = W[f, k] + b[k]`` (a convolution's output row and its bias): the block
    is transposed in registers and ``b[k]`` added to each transposed vector (one splat
    per vector), in either order of the sum and for integers too."""
    W = po.placeholder((16, 8), name="W", dtype=dtype)
    B = po.placeholder((8,), name="b", dtype=dtype)
    P = po.compute((8, 16), (lambda k, f: W[f, k] + B[k]) if order == "read first" else
                   (lambda k, f: B[k] + W[f, k]), name="P")
    s = po.create_schedule(P)
    k, f = s[P].axes
    fo, fi = s[P].split(f, factor=8)
    s[P].reorder(fo, k, fi)
    s[P].unroll(k)
    s[P].vectorize(fi)
    kernel = po.build(s, [W, B, P])
    rng = np.random.default_rng(3)
    w = rng.integers(-50, 50, (16, 8)).astype(dtype)
    b = rng.integers(-50, 50, 8).astype(dtype)
    p = np.zeros((8, 16), dtype)
    kernel(w, b, p)
    np.testing.assert_array_equal(p, w.T + b[:, None])
    add = "fadd" if dtype == "float32" else "add"
    element = "float" if dtype == "float32" else "i32"
    assert kernel.llvm_ir.count("shufflevector") == 8 * 3 + 8  # the transpose, the splats
    assert len(re.findall(rf"= {add} [a-z ]*<8 x {element}>", kernel.llvm_ir)) == 8
    assert not re.search(r"vgather|vscatter", kernel.assembly)


def test_a_term_along_the_vector_is_no_transposed_copy():
    """``P[k, f] = W[f, k] + b[f]``: the term changes along the vectorized loop, so the
    copy is emitted as scheduled (no shuffles), with the same numbers."""
    W = po.placeholder((8, 8), name="W")
    B = po.placeholder((8,), name="b")
    P = po.compute((8, 8), lambda k, f: W[f, k] + B[f], name="P")
    s = po.create_schedule(P)
    k, f = s[P].axes
    s[P].unroll(k)
    s[P].vectorize(f)
    kernel = po.build(s, [W, B, P])
    w = np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32)
    b = np.arange(8, dtype=np.float32)
    p = np.zeros((8, 8), np.float32)
    kernel(w, b, p)
    np.testing.assert_array_equal(p, w.T + b[None, :])
    assert "shufflevector" not in kernel.llvm_ir
