"""Statements enumerated through a division (fused loops) address arrays by one flat
offset, which isl simplifies: no division per element, no gather."""

import numpy as np
import pytest

import polyopt as po

from testlib.machine import HOST, vector_of


def _fused_scale(channels, rows, cols, vector):
    A = po.placeholder((channels, rows, cols), name="A")
    B = po.compute((channels, rows, cols), lambda c, y, x: A[c, y, x] * 2.0 + 1.0, name="B")
    s = po.create_schedule(B)
    c, y, x = s[B].axes
    outer, inner = s[B].split(s[B].fuse(y, x), factor=vector)
    s[B].vectorize(inner)
    return s, A, B


@pytest.mark.parametrize("rows, cols", [(28, 28), (7, 9), (5, 3)])
def test_fused_vectorized_loop_reads_and_writes_contiguous_vectors(rows, cols):
    lanes = HOST.lanes("float32")  # one vector of the host
    s, A, B = _fused_scale(3, rows, cols, lanes)
    kernel = po.build(s, [A, B])
    a = np.random.default_rng(0).standard_normal((3, rows, cols), dtype=np.float32)
    b = np.full_like(a, np.nan)
    kernel(a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)
    if rows * cols % lanes == 0:  # (LLVM may still vectorize a partial tile its own way)
        assert "gather" not in kernel.optimized_ir and "scatter" not in kernel.optimized_ir
        assert f"load {vector_of('float32')}" in kernel.optimized_ir


def test_printed_program_shows_the_flat_offsets():
    s, A, B = _fused_scale(2, 4, 6, 8)
    text = str(po.lower(s, [A, B]))
    assert "B.flat[(24 * c + 8 * y_x_fused_outer + y_x_fused_inner)] = " \
           "A.flat[(24 * c + 8 * y_x_fused_outer + y_x_fused_inner)] * 2.0 + 1.0;" in text


def test_statements_without_division_keep_their_indices():
    A = po.placeholder((8, 6), name="A")
    B = po.compute((8, 6), lambda i, j: A[i, j] + 1.0, name="B")
    s = po.create_schedule(B)
    s[B].split(s[B].axes[0], factor=4)
    assert "B[(4 * i_outer + i_inner), j] = A[(4 * i_outer + i_inner), j] + 1.0;" \
        in str(po.lower(s, [A, B]))


def test_fused_reduction_accumulates_through_the_same_offset():
    A = po.placeholder((6, 10, 8), name="A")
    k = po.reduce_axis((0, 8), name="k")
    B = po.compute((6, 10), lambda i, j: po.sum(A[i, j, k], axis=k), name="B")
    s = po.create_schedule(B)
    s[B].fuse(*s[B].axes[:2])
    kernel = po.build(s, [A, B])
    a = np.random.default_rng(1).standard_normal((6, 10, 8), dtype=np.float32)
    b = np.zeros((6, 10), np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, a.sum(axis=2), rtol=1e-5, atol=1e-5)
    text = str(kernel.source)
    assert "B.flat[i_j_fused] = B.flat[i_j_fused] + A.flat[(8 * i_j_fused + k)];" in text


@pytest.mark.parametrize("channels, block, lanes", [(64, 32, 16), (32, 32, 16), (48, 16, 8)])
def test_blocked_read_back_divides_once_per_block_not_per_lane(channels, block, lanes):
    """``B[f, x] = A[f // block, x, f % block]`` (a blocked layout read back) with ``f``
    split by the block: the flat offset cancels the division, the copy is contiguous
    vector code (it divided in every vector lane, with gathers)."""
    width = 7
    A = po.placeholder((channels // block, width, block), name="A")
    B = po.compute((channels, width), lambda f, x: A[f // block, x, f % block], name="B")
    s = po.create_schedule(B)
    f, x = s[B].axes
    fo, fi = s[B].split(f, factor=block)
    fio, fii = s[B].split(fi, factor=lanes)
    s[B].reorder(fo, fio, x, fii)
    s[B].vectorize(fii)
    text = str(po.lower(s, [A, B]))
    statement = next(line for line in text.splitlines() if "B" in line and " = " in line)
    assert "/" not in statement and "%" not in statement, statement
    kernel = po.build(s, [A, B])
    a = np.random.default_rng(2).standard_normal(tuple(d.value for d in A.shape),
                                                 dtype=np.float32)
    b = np.full((channels, width), np.nan, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, a.transpose(0, 2, 1).reshape(channels, width))
    assert "gather" not in kernel.optimized_ir
