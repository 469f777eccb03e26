"""A blocked int8 matrix product with a bias and an epilogue, as a schedule for the
accelerator: the program the graph layer's offloaded convolutions run.

``gemm_schedule(config, m, n, k, tiles, ...)`` returns a schedule and its arguments
``[A, W, B, Y]``: ``A`` (``m x k`` input tiles, int8), ``W`` (``n x k`` weight tiles,
int8), ``B`` (``n`` accumulator tiles, int32: a bias per output column, the same on every
row of a tile) and the output ``Y``.  The accumulators ``S = A @ W.T + B`` leave the
device either

* requantized (``requantize=Requantize(shift, zero_point, low, high)``): ``clip(
  round_half_even(S / 2**shift) + zero_point, low, high)`` narrowed to int8, ``Y`` of
  shape ``(m, n, batch, block_out)``; computed by ALU stages (two copies of ``S`` give
  the rounding bit, see :func:`_rounded`), or
* whole (``planes=P``): the low ``P`` bytes of ``S``, ``Y`` of shape ``(P, m, n, batch,
  block_out)`` (a STORE narrows to the low byte; plane ``p`` is a copy of ``S`` shifted
  by ``8 p``), put together by :func:`from_planes`.

The schedule is VTA's: the output tiled by ``tiles = (rows, cols, depth)`` tiles, the
operands cached in ``inp``/``wgt`` at each depth chunk, the bias in ``acc``, the product
tensorized onto the GEMM core, and (``threads=2``) the row chunks split between two
virtual threads; ``po.build(s, args, target="accel")`` derives the dependence tokens.

>>> import polyopt as po
>>> from polyopt.machine.accel import VTA
>>> s, args = gemm_schedule(VTA, 4, 2, 3, (2, 2, 3), planes=4)
>>> [tuple(int(e) for e in a.shape) for a in args]
[(4, 3, 1, 16), (2, 3, 16, 16), (2, 1, 16), (4, 4, 2, 1, 16)]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..te.compat import const
from ..te.tensor import (compute, if_then_else, maximum, minimum, placeholder, reduce_axis,
                          reduce_sum)
from ..transform.schedule import create_schedule
from ..machine.accel import AccelConfig
from ..tensorize.accel import gemm_intrin


@dataclass(frozen=True)
class Requantize:
    """``clip(round_half_even(x / 2**shift) + zero_point, low, high)`` on the ALU."""

    shift: int
    zero_point: int
    low: int
    high: int


def acc_copies(planes: int | None, requantize: Requantize | None) -> int:
    """Accumulator tiles per output tile: ``S`` and its copies."""
    return 3 if requantize is not None else planes


def gemm_schedule(config: AccelConfig, m: int, n: int, k: int, tiles: tuple[int, int, int],
                  *, threads: int = 1, planes: int | None = None,
                  requantize: Requantize | None = None):
    """The schedule and ``[A, W, B, Y]`` (see the module)."""
    if (planes is None) == (requantize is None) or planes is not None and not 1 <= planes <= 4:
        raise InvalidArgumentError("gemm_schedule needs planes (1 to 4) or requantize")
    c = config
    tile_m, tile_n, tile_k = tiles
    A = placeholder((m, k, c.batch, c.block_in), name="A", dtype="int8")
    W = placeholder((n, k, c.block_out, c.block_in), name="W", dtype="int8")
    B = placeholder((n, c.batch, c.block_out), name="B", dtype="int32")
    ko = reduce_axis((0, k), name="ko")
    ki = reduce_axis((0, c.block_in), name="ki")
    shape = (m, n, c.batch, c.block_out)
    C = compute(shape, lambda i, j, x, y: reduce_sum(
        A[i, ko, x, ki].astype("int32") * W[j, ko, y, ki].astype("int32"), axis=[ko, ki]),
        name="C")
    S = compute(shape, lambda i, j, x, y: C[i, j, x, y] + B[j, x, y], name="S")
    if requantize is not None:
        stages, Y = _rounded(S, shape, requantize)
    else:
        stages, Y = _planes(S, shape, planes)
    s = create_schedule(Y)
    for stage in [C, S] + stages:
        s[stage].set_scope("acc")
    BL = s.cache_read(B, "acc", [S])
    AL = s.cache_read(A, "inp", [C])
    WL = s.cache_read(W, "wgt", [C])
    axes = list(Y.op.axis)
    outer = axes[:-4]                      # the plane, if any
    i, j, x, y = axes[-4:]
    io, ii = s[Y].split(i, factor=tile_m)
    jo, ji = s[Y].split(j, factor=tile_n)
    if threads > 1:
        it, io = s[Y].split(io, nparts=threads)
        s[Y].reorder(it, io, jo, *outer, ii, ji, x, y)
        s[Y].virtual_thread(it)
    else:
        s[Y].reorder(io, jo, *outer, ii, ji, x, y)
    for stage in [C, S, BL] + stages:
        s[stage].compute_at(s[Y], jo)
    ci, cj, cx, cy = C.op.axis
    ko_o, ko_i = s[C].split(ko, factor=tile_k)
    s[C].reorder(ko_o, ci, cj, ko_i, cx, cy, ki)
    s[AL].compute_at(s[C], ko_o)
    s[WL].compute_at(s[C], ko_o)
    s[C].tensorize(cx, gemm_intrin(config))
    return s, [A, W, B, Y]


def _zero(shape, name):
    return compute(shape, lambda *a: const(0, "int32"), name=name)


def _planes(S, shape, planes: int):
    """Copies of ``S`` shifted by 8, 16, 24 bits (a copy: a reset tile plus ``S``) and
    the output choosing the plane's tile."""
    stages, sources = [], [S]
    for p in range(1, planes):
        zero = _zero(shape, f"Z{p}")
        shifted = compute(shape, lambda *a, z=zero, p=p: (z[a] + S[a]) // (1 << (8 * p)),
                          name=f"P{p}")
        stages += [zero, shifted]
        sources.append(shifted)

    def plane(p, *a):
        value = sources[-1][a]
        for q in range(planes - 2, -1, -1):
            value = if_then_else(p == q, sources[q][a], value)
        return value.astype("int8")

    return stages, compute((planes,) + shape, plane, name="Y")


def _rounded(S, shape, rq: Requantize):
    """``round_half_even(S / 2**s)`` as ``(S + 2**(s-1) - 1 + bit) >> s`` with ``bit``
    the parity of ``S >> s`` (``(S >> s) - 2 * (S >> (s + 1))``, from two copies of
    ``S``), then the zero point (``+ zero_point * 2**s`` before the shift) and the clip."""
    s = rq.shift
    if s == 0:
        R = compute(shape, lambda *a: maximum(minimum(S[a] + rq.zero_point, rq.high),
                                              rq.low), name="R")
        return [R], compute(shape, lambda *a: R[a].astype("int8"), name="Y")
    z1, z2 = _zero(shape, "Z1"), _zero(shape, "Z2")
    T = compute(shape, lambda *a: (z1[a] + S[a]) // (1 << s), name="T")
    U = compute(shape, lambda *a: (z2[a] + S[a]) // (1 << (s + 1)) * -2, name="U")
    V = compute(shape, lambda *a: T[a] + U[a], name="V")
    bias = (1 << (s - 1)) - 1 + rq.zero_point * (1 << s)
    R = compute(shape, lambda *a: maximum(minimum(((S[a] + V[a]) + bias) // (1 << s),
                                                  rq.high), rq.low), name="R")
    return [z1, z2, T, U, V, R], compute(shape, lambda *a: R[a].astype("int8"), name="Y")


def from_planes(y: np.ndarray) -> np.ndarray:
    """The int32 values of byte planes ``y`` (``P`` int8 planes, low byte first; the top
    plane carries the sign)."""
    planes = y.shape[0]
    total = y[-1].astype(np.int32) << (8 * (planes - 1))
    for p in range(planes - 1):
        total += y[p].view(np.uint8).astype(np.int32) << (8 * p)
    return total


def choose_tiles(config: AccelConfig, m: int, n: int, k: int, copies: int,
                 stores: int = 1) -> tuple[tuple[int, int, int], int]:
    """``(rows, cols, depth)`` tiles of :func:`gemm_schedule` and its virtual threads
    (1 or 2), the buffers fitting (each thread keeps its own ``rows x depth`` input
    tiles, ``cols x depth`` weight tiles, ``copies x rows x cols`` accumulator tiles
    plus ``cols`` bias tiles; two threads need two chunks of rows), chosen by a rough
    cycle estimate (:func:`_estimate`): per chunk step its loads and GEMM, overlapped
    with two threads; per tile its ``stores`` STOREs.  A partial chunk of columns or
    of depth is not contiguous in the buffers (one STORE or LOAD per row), so the
    largest divisors are tried too.  ``((1, 1, 1), 1)`` when nothing fits: the
    compiler's refusal says why.

    >>> from polyopt.machine.accel import VTA
    >>> choose_tiles(VTA, 3136, 4, 36, 3)   # depth 12 divides 36: no partial chunk
    ((64, 4, 12), 2)
    """
    c = config
    best = None
    for threads in (1, 2) if m > 1 else (1,):
        inp, wgt, acc = (c.entries(b) // threads for b in ("inp", "wgt", "acc"))
        most = -(-m // threads)  # every thread gets a chunk of rows
        for tile_m in sorted({most, *(1 << e for e in range(16) if 1 << e < most)}):
            widest = min(n, acc // (copies * tile_m + 1))
            if widest < 1:
                continue
            for tile_n in {widest, _divisor(n, widest)}:
                deepest = min(k, inp // tile_m, wgt // tile_n)
                for tile_k in {deepest, _divisor(k, deepest)} if deepest else ():
                    cycles = _estimate(c, m, n, k, (tile_m, tile_n, tile_k), stores,
                                       threads)
                    rank = (cycles, -tile_k, -tile_m)
                    if best is None or rank < best[0]:
                        best = (rank, ((tile_m, tile_n, tile_k), threads))
    return ((1, 1, 1), 1) if best is None else best[1]


def _divisor(total: int, most: int) -> int:
    """The largest divisor of ``total`` that is at most ``most`` (>= 1)."""
    return max(d for d in range(1, most + 1) if total % d == 0)


def _estimate(c: AccelConfig, m: int, n: int, k: int, tiles, stores: int,
              threads: int) -> float:
    """Rough cycles of :func:`gemm_schedule` (see :func:`choose_tiles`): per chunk
    step, its loads (one per row when the chunk is partial) and its GEMM, overlapped
    with two threads; per tile, its STOREs (one per row for a partial column chunk)."""
    tile_m, tile_n, tile_k = tiles
    dma = c.issue_cycles + c.dram_latency

    def step(depth: int) -> float:
        count = 2 if depth == tile_k else tile_m + tile_n
        load = (tile_m * c.entry_bytes("inp") + tile_n * c.entry_bytes("wgt")) * depth \
            / c.dram_bytes_per_cycle + count * dma
        gemm = tile_m * tile_n * depth * c.gemm_cycles + c.issue_cycles
        return max(load, gemm) if threads > 1 else load + gemm

    rows, cols = -(-m // tile_m), -(-n // tile_n)
    per_tile = (k // tile_k) * step(tile_k) + (step(k % tile_k) if k % tile_k else 0)
    store_count = stores * rows * (cols + (tile_m - 1) * (n % tile_n > 0))
    store = (stores * m * n * c.entry_bytes("acc") // 4 / c.dram_bytes_per_cycle
             + store_count * dma)
    steps = rows * cols * -(-k // tile_k)  # plus a fixed cost per step, as measured
    return rows * cols * per_tile + store / threads + steps * (c.dram_latency
                                                                 + 4 * c.issue_cycles)
