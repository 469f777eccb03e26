"""A blocked int8 matrix product as an instruction stream: the device's GEMM routine.

``gemm_program(config, m, n, k)`` computes ``y = x @ w.T`` for ``x`` of ``m x k`` input
tiles and ``w`` of ``n x k`` weight tiles (DRAM tensors ``"x"``, ``"w"``, laid out by
:func:`gemm_dram`), into ``y`` of ``m x n`` output tiles, optionally requantized on the
accumulators (``shift``: ``clip(acc >> shift, -128, 127)``, two ALU instructions), or
kept whole (``wide=True``: the int32 accumulators leave the device as four int8 byte
planes, STORE narrowing to the low byte and an ALU ``shr 8`` between the stores;
:func:`gemm_result` puts them together again).  The output columns are processed in
chunks of ``tile_n`` tiles and the reduction in chunks of ``tile_k``, sized so that
every buffer fits; ``virtual_threads=2`` splits the input, weight and accumulator buffers
in halves so that the loads of one chunk overlap the GEMM of the previous one and the
store of one output chunk overlaps the next (VTA's latency hiding), with the dependence
tokens placed accordingly.

It is written by hand, as a library routine (the graph layer's offload of int8
convolutions uses it; schedules are lowered onto the device by :mod:`.target`).

>>> from polyopt.target.accel.config import VTA
>>> program, uops = gemm_program(VTA, 1, 64, 64)
>>> sum(isinstance(i, Gemm) and not i.reset for i in program), len(uops)
(4, 2)
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidArgumentError
from .config import AccelConfig
from .isa import Alu, Gemm, Load, Store, Tokens, Uop
from .sim import uop_array


def _chunks(total: int, size: int):
    return [(start, min(size, total - start)) for start in range(0, total, size)]


def gemm_sizes(config: AccelConfig, m: int, n: int, k: int, virtual_threads: int = 1
               ) -> tuple[int, int]:
    """The largest chunks ``(tile_n, tile_k)`` whose buffers fit, ``virtual_threads``
    copies of each; InvalidArgumentError names a buffer that cannot hold one chunk."""
    tile_n = min(n, config.entries("acc") // (virtual_threads * m))
    if tile_n < 1:
        raise InvalidArgumentError(
            f"the accumulator buffer ({config.acc_bytes} bytes) cannot hold "
            f"{virtual_threads} x {m} output tiles of {config.entry_bytes('acc')} bytes; "
            "use fewer rows of tiles per call")
    tile_k = min(k, config.entries("inp") // (virtual_threads * m),
                 config.entries("wgt") // (virtual_threads * tile_n))
    if tile_k < 1:
        raise InvalidArgumentError(
            f"the input buffer ({config.inp_bytes} bytes) cannot hold {virtual_threads} x "
            f"{m} input tiles; use fewer rows of tiles per call")
    return tile_n, tile_k


def gemm_program(config: AccelConfig, m: int, n: int, k: int, *, virtual_threads: int = 1,
                 shift: int | None = None, tile_n: int | None = None,
                 tile_k: int | None = None, wide: bool = False) -> tuple[list, list[Uop]]:
    """The instructions, and the micro-ops they use (the DRAM tensor ``"uops"``)."""
    if virtual_threads not in (1, 2):
        raise InvalidArgumentError(f"virtual_threads is 1 or 2, got {virtual_threads!r}")
    if wide and shift is not None:
        raise InvalidArgumentError("wide=True stores the whole accumulators: no shift")
    auto_n, auto_k = gemm_sizes(config, m, n, k, virtual_threads)
    tile_n, tile_k = min(tile_n or auto_n, auto_n), min(tile_k or auto_k, auto_k)
    half = {b: config.entries(b) // virtual_threads for b in ("inp", "wgt", "acc")}
    uops: list[Uop] = []
    first_uop: dict[tuple, int] = {}

    def uop_set(acc: int, inp: int, wgt: int, tn: int, tk: int) -> int:
        """Micro-ops of one chunk: row r multiplies input tile (r, 0) by weight tile
        (0, 0) into accumulator tile (r, 0); the loops add the column and the k step."""
        key = (acc, inp, wgt, tn, tk)
        if key not in first_uop:
            first_uop[key] = len(uops)
            uops.extend(Uop(dst=acc + r * tn, src=inp + r * tk, wgt=wgt) for r in range(m))
        return first_uop[key]

    body = []
    chunk = 0
    for out_index, (n0, tn) in enumerate(_chunks(n, tile_n)):
        acc = (out_index % virtual_threads) * half["acc"]
        begin = uop_set(acc, 0, 0, tn, 1)
        # accumulator (r, j) is acc + r * tn + j; reuse a half once its store is done
        # the store of the last chunk that used this half is done (wide, one thread:
        # the previous chunk's last byte plane; see the last GEMM below for two)
        reuse = out_index >= virtual_threads and not (wide and virtual_threads > 1)
        body.append(Gemm(begin, begin + m, iter_out=tn, dst_out=1, reset=True,
                         tokens=Tokens(pop_next=reuse)))
        k_chunks = _chunks(k, tile_k)
        for k_index, (k0, tk) in enumerate(k_chunks):
            side = chunk % virtual_threads
            inp, wgt = side * half["inp"], side * half["wgt"]
            # input (r, c) at inp + r * tk + c; weight (j, c) at wgt + j * tk + c
            body.append(Load("inp", "x", k0, sram=inp, rows=m, cols=tk, stride=k,
                             tokens=Tokens(pop_next=chunk >= virtual_threads)))
            body.append(Load("wgt", "w", n0 * k + k0, sram=wgt, rows=tn, cols=tk, stride=k,
                             tokens=Tokens(push_next=True)))
            begin = uop_set(acc, inp, wgt, tn, tk)
            last = k_index == len(k_chunks) - 1
            # wide, two threads: the previous chunk's last byte plane is popped here, after
            # that chunk's ALU pops and before this chunk's, so the pops stay in order
            wait_store = last and wide and virtual_threads > 1 and out_index > 0
            body.append(Gemm(begin, begin + m, iter_out=tn, iter_in=tk, dst_out=1,
                             wgt_out=tk, src_in=1, wgt_in=1,
                             tokens=Tokens(pop_prev=True, push_prev=True,
                                           push_next=last and shift is None,
                                           pop_next=wait_store)))
            chunk += 1
        if shift is not None:
            begin = uop_set(acc, 0, 0, tn, 1)
            body.append(Alu("shr", begin, begin + m, iter_out=tn, dst_out=1, imm=shift))
            body.append(Alu("clip", begin, begin + m, iter_out=tn, dst_out=1,
                            imm=(-128, 127), tokens=Tokens(push_next=True)))
        if wide:
            begin = uop_set(acc, 0, 0, tn, 1)
            for plane in range(4):
                if plane:  # after the previous plane's store read the accumulators
                    body.append(Alu("shr", begin, begin + m, iter_out=tn, dst_out=1, imm=8,
                                    tokens=Tokens(pop_next=True, push_next=True)))
                body.append(Store("y", plane * m * n + n0, sram=acc, rows=m, cols=tn,
                                  stride=n, tokens=Tokens(pop_prev=True, push_prev=True)))
            continue
        body.append(Store("y", n0, sram=acc, rows=m, cols=tn, stride=n,
                          tokens=Tokens(pop_prev=True, push_prev=True)))
    load_uops = Load("uop", "uops", 0, sram=0, rows=1, cols=len(uops), stride=len(uops))
    if len(uops) > config.entries("uop"):
        raise InvalidArgumentError(f"the routine needs {len(uops)} micro-ops; the uop "
                                   f"buffer holds {config.entries('uop')}")
    return [load_uops] + body, uops


def gemm_dram(config: AccelConfig, x: np.ndarray, w: np.ndarray, uops: list[Uop], *,
              wide: bool = False) -> dict:
    """DRAM tensors for :func:`gemm_program` from int8 matrices ``x`` (M x K) and ``w``
    (N x K), with M, K, N multiples of batch, block_in and block_out; ``"y"`` receives
    the result (read it back with :func:`gemm_result`)."""
    c = config
    (rows, depth), (cols, depth_w) = x.shape, w.shape
    if depth != depth_w or rows % c.batch or depth % c.block_in or cols % c.block_out:
        raise InvalidArgumentError(
            f"x is {x.shape} and w is {w.shape}: they need the same number of columns, a "
            f"multiple of {c.block_in}, and rows multiples of {c.batch} and {c.block_out}")
    m, k, n = rows // c.batch, depth // c.block_in, cols // c.block_out
    tiles_x = x.reshape(m, c.batch, k, c.block_in).transpose(0, 2, 1, 3)
    tiles_w = w.reshape(n, c.block_out, k, c.block_in).transpose(0, 2, 1, 3)
    return {"x": np.ascontiguousarray(tiles_x.reshape(m * k, c.batch, c.block_in), np.int8),
            "w": np.ascontiguousarray(tiles_w.reshape(n * k, c.block_out, c.block_in),
                                      np.int8),
            "y": np.zeros(((4 if wide else 1) * m * n, c.batch, c.block_out), np.int8),
            "uops": uop_array(uops)}


def gemm_result(config: AccelConfig, y: np.ndarray, m: int, n: int) -> np.ndarray:
    """The output tiles as an (M x N) int8 matrix, or int32 from the four byte planes of
    a ``wide`` program."""
    c = config
    if len(y) == 4 * m * n:
        planes = y.reshape(4, m * n, c.batch, c.block_out).view(np.uint8).astype(np.uint32)
        whole = (planes[0] | planes[1] << 8 | planes[2] << 16 | planes[3] << 24)
        return gemm_result(config, whole.view(np.int32), m, n)
    return y.reshape(m, n, c.batch, c.block_out).transpose(0, 2, 1, 3).reshape(
        m * c.batch, n * c.block_out)
