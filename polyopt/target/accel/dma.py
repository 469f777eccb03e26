"""DMA loads and stores: buffer entries copied as few 2-D strided rectangles as possible.

A copy ``dst[k] <- src[k]`` (on-chip entries from DRAM entries, ``src < 0`` for zero
padding) becomes padded rectangles when the leading dimensions allow, else strided runs
(:func:`strided_runs`); a strided footprint (a stride-2 convolution's input) is loaded
as its box hull (:func:`box_hull`).

>>> list(strided_runs(np.arange(6), np.array([0, 1, 2, 10, 11, 12])))
[(0, 0, 2, 3, 10)]
"""

from __future__ import annotations

import numpy as np

def strided_runs(src: np.ndarray, dst: np.ndarray):
    """``(src0, dst0, rows, cols, stride)`` pieces covering ``dst[k] <- src[k]`` where
    ``src`` (the on-chip side, contiguous within a piece) advances by 1 and ``dst`` by 1
    within a row and by ``stride`` between rows."""
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    k, n = 0, len(src)
    while k < n:
        cols = 1
        while k + cols < n and src[k + cols] == src[k] + cols and dst[k + cols] == dst[k] + cols:
            cols += 1
        rows, stride = 1, 0
        if k + cols < n:
            stride = int(dst[k + cols] - dst[k])
        while True:
            start = k + rows * cols
            if start + cols > n or stride <= 0:
                break
            if not (np.array_equal(src[start:start + cols], src[k] + rows * cols
                                   + np.arange(cols)) and np.array_equal(
                    dst[start:start + cols], dst[k] + rows * stride + np.arange(cols))):
                break
            rows += 1
        yield int(src[k]), int(dst[k]), rows, cols, max(stride, cols)
        k += rows * cols


def dma_pieces(dst: np.ndarray, src: np.ndarray, grid: list):
    """``(sram, offset, rows, cols, stride, pad)`` loads writing ``dst[k] <- src[k]``
    (``src < 0``: zero padding): per value of the leading grid dimensions, one padded
    load when the last two form a rectangle whose copied part is a strided source
    sub-rectangle; or 2-D strided runs (padding as zero-only loads); whichever takes
    fewer loads."""
    rectangles = _rectangle_pieces(dst, src, grid)
    if rectangles is not None and len(rectangles) == 1:
        return rectangles
    runs = _run_pieces(dst, src)
    return runs if rectangles is None or len(runs) < len(rectangles) else rectangles


def _rectangle_pieces(dst: np.ndarray, src: np.ndarray, grid: list):
    if len(grid) >= 2:
        outer = np.stack(grid[:-2], 1) if len(grid) > 2 else np.zeros((len(dst), 0), np.int64)
        keys, group = np.unique(outer, axis=0, return_inverse=True)
        group = group.ravel()
        pieces = []
        for g in range(len(keys)):
            sel = group == g
            piece = _padded_rectangle(dst[sel], src[sel], grid[-2][sel], grid[-1][sel])
            if piece is None:
                pieces = None
                break
            pieces.append(piece)
        if pieces is not None:
            return pieces
    return None


def _run_pieces(dst: np.ndarray, src: np.ndarray):
    out = []
    copied = src >= 0
    for sram, offset, rows, cols, stride in strided_runs(dst[copied], src[copied]):
        out.append((sram, offset, rows, cols, stride, (0, 0, 0, 0)))
    zeros = np.sort(dst[~copied])
    k = 0
    while k < len(zeros):
        run = 1
        while k + run < len(zeros) and zeros[k + run] == zeros[k] + run:
            run += 1
        out.append((int(zeros[k]), 0, 0, 0, 1, (0, 0, run, 0)))
        k += run
    return out


def box_hull(lead: list, values: dict) -> dict | None:
    """The copy's values extended to the box hull of the buffer entries it writes
    (``lead``: their leading indices), when its footprint is not a dense box but every
    variable is an affine function of those indices (a strided convolution's input:
    every other row and column).  Loading the box is one rectangle per DMA instead of
    one LOAD per entry; the buffer holds the box already (it is the footprint's hull).
    None when the footprint is a box or the variables are not affine in it.

    >>> box_hull([np.array([0, 0, 2, 2]), np.array([0, 2, 0, 2])],
    ...           {"y": np.array([0, 0, 2, 2]), "x": np.array([4, 6, 4, 6])})["x"]
    array([4, 5, 6, 4, 5, 6, 4, 5, 6])
    >>> box_hull([np.array([0, 2, 3])], {"y": np.array([0, 4, 9])}) is None  # not affine
    True
    """
    if not lead or not values or len(lead[0]) == 0:
        return None
    lows, highs = [int(v.min()) for v in lead], [int(v.max()) for v in lead]
    box = int(np.prod([h - l + 1 for l, h in zip(lows, highs)], dtype=np.int64))
    if box == len(lead[0]):
        return None
    moving = [k for k in range(len(lead)) if highs[k] > lows[k]]
    known = np.stack([np.ones_like(lead[0])] + [lead[k] for k in moving], 1)
    axes = np.meshgrid(*[np.arange(lows[k], highs[k] + 1) for k in moving], indexing="ij")
    points = np.stack([np.ones(box, np.int64)] + [a.ravel() for a in axes], 1)
    out = {}
    for name, value in values.items():
        coef = np.rint(np.linalg.lstsq(known.astype(float), value.astype(float),
                                       rcond=None)[0]).astype(np.int64)
        if not np.array_equal(known @ coef, value):
            return None
        out[name] = points @ coef
    return out


def in_bounds(index: list, shape: tuple, copied: np.ndarray) -> bool:
    return all(((i[copied] >= 0) & (i[copied] < e)).all() for i, e in zip(index, shape))


def _padded_rectangle(dst, src, y, x):
    ys, xs = np.unique(y), np.unique(x)
    height, width = len(ys), len(xs)
    if height * width != len(dst) or ys[-1] - ys[0] + 1 != height or \
            xs[-1] - xs[0] + 1 != width:
        return None
    order = np.lexsort((x, y))
    dst, src = dst[order], src[order]
    if not np.array_equal(dst, dst[0] + np.arange(len(dst))):
        return None
    src = src.reshape(height, width)
    rows_in, cols_in = np.nonzero((src >= 0).any(1))[0], np.nonzero((src >= 0).any(0))[0]
    if len(rows_in) == 0:
        return (int(dst[0]), 0, 0, 0, 1, (height, 0, width, 0))
    top, bottom = int(rows_in[0]), int(height - 1 - rows_in[-1])
    left, right = int(cols_in[0]), int(width - 1 - cols_in[-1])
    inner = src[top:height - bottom, left:width - right]
    rows, cols = inner.shape
    stride = int(inner[1, 0] - inner[0, 0]) if rows > 1 else cols
    expected = inner[0, 0] + np.arange(rows)[:, None] * stride + np.arange(cols)[None, :]
    outside = np.ones_like(src, bool)
    outside[top:height - bottom, left:width - right] = False
    if not np.array_equal(inner, expected) or (src[outside] >= 0).any():
        return None
    return (int(dst[0]), int(inner[0, 0]), rows, cols, stride, (top, bottom, left, right))
