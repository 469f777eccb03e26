"""The simulated accelerator's parameters: the GEMM core's shape, the on-chip buffers,
the data types and the cycle costs.

Two configurations differ only in these numbers: :data:`VTA` (the published default
of the VTA design: a 1x16x16 int8 GEMM core, 32 KiB of micro-ops, 32 KiB of inputs,
256 KiB of weights, 128 KiB of int32 accumulators) and :data:`TPU_LIKE` (a larger
square matrix unit with larger buffers).

>>> VTA.block_in, VTA.block_out, VTA.entries("wgt")
(16, 16, 1024)
>>> VTA.entry_bytes("inp"), VTA.entry_bytes("wgt"), VTA.entry_bytes("acc")
(16, 256, 64)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgumentError

BUFFERS = ("uop", "inp", "wgt", "acc")


@dataclass(frozen=True, slots=True)
class AccelConfig:
    """One device.  A GEMM step multiplies a ``batch x block_in`` input tile by a
    ``block_out x block_in`` weight tile into a ``batch x block_out`` accumulator tile.
    Buffers are arrays of entries: one input tile, one weight tile, one accumulator
    tile (int32), or one micro-op (4 bytes) each."""

    name: str
    batch: int = 1
    block_in: int = 16
    block_out: int = 16
    uop_bytes: int = 32 * 1024
    inp_bytes: int = 32 * 1024
    wgt_bytes: int = 256 * 1024
    acc_bytes: int = 128 * 1024
    # cycle model: a fixed cost per instruction, then per unit of work
    issue_cycles: int = 4              # decoding and starting any instruction
    dram_latency: int = 64             # first byte of a DMA transfer
    # DMA bandwidth: VTA's memory bus is 64 bits wide (its published configuration's
    # LOG_BUS_WIDTH = 6 counts bits), one transfer a cycle
    dram_bytes_per_cycle: int = 8
    gemm_cycles: int = 1               # one batch x block_in x block_out step, pipelined
    alu_cycles: int = 1                # one accumulator tile, pipelined

    def entry_bytes(self, buffer: str) -> int:
        """Bytes of one entry of ``buffer``."""
        sizes = {"uop": 4, "inp": self.batch * self.block_in,
                 "wgt": self.block_out * self.block_in,
                 "acc": 4 * self.batch * self.block_out}
        if buffer not in sizes:
            raise InvalidArgumentError(f"unknown buffer {buffer!r}; the buffers are "
                                       f"{', '.join(BUFFERS)}")
        return sizes[buffer]

    def capacity(self, buffer: str) -> int:
        """Bytes of ``buffer``."""
        self.entry_bytes(buffer)
        return getattr(self, f"{buffer}_bytes")

    def entries(self, buffer: str) -> int:
        """How many entries ``buffer`` holds."""
        return self.capacity(buffer) // self.entry_bytes(buffer)


VTA = AccelConfig("vta")
TPU_LIKE = AccelConfig("tpu-like", batch=8, block_in=64, block_out=64, uop_bytes=64 * 1024,
                       inp_bytes=512 * 1024, wgt_bytes=4 * 1024 * 1024,
                       acc_bytes=2 * 1024 * 1024, dram_bytes_per_cycle=128)

__all__ = ["AccelConfig", "BUFFERS", "TPU_LIKE", "VTA"]
