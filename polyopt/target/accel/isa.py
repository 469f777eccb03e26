"""The accelerator's instructions, in the spirit of VTA's: LOAD, GEMM, ALU, STORE.

Three queues run them: ``load`` (input and weight DMA), ``compute`` (micro-op and
accumulator loads, GEMM, ALU) and ``store`` (accumulators to DRAM).  Each queue runs
its instructions in order; between queues, order comes only from *dependence tokens*:
an instruction may push a token to the neighbouring queue (``push_prev``/``push_next``,
in the order load -> compute -> store) when it ends, and may pop one
(``pop_prev``/``pop_next``) before it starts, waiting until one is there.

Buffers hold *entries*: an input tile (``batch x block_in`` int8), a weight tile
(``block_out x block_in`` int8), an accumulator tile (``batch x block_out`` int32) or
a micro-op.  DRAM tensors are named arrays of entries of one kind.

A GEMM or ALU instruction runs a two-level loop around its micro-ops (VTA's)::

    for i in range(iter_out):
        for j in range(iter_in):
            for dst, src, wgt in uops[uop_begin:uop_end]:
                d, s, w = (dst + i * dst_out + j * dst_in, src + i * src_out + j * src_in,
                           wgt + i * wgt_out + j * wgt_in)
                GEMM: acc[d] = (0 if reset else acc[d]) + inp[s] @ wgt[w].T
                ALU:  acc[d] = op(acc[d], imm if imm is not None else acc[s])

>>> print(Load("wgt", "W", 0, sram=0, rows=2, cols=4, stride=8, tokens=Tokens(pop_next=True)))
LOAD wgt[0..] <- W[0 + 2x4 stride 8]  (pop next)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InvalidArgumentError

QUEUES = ("load", "compute", "store")
ALU_OPS = ("add", "max", "min", "shr", "clip", "mul")


@dataclass(frozen=True, slots=True)
class Tokens:
    """Dependence tokens: pop before starting, push when done (prev/next in the order
    load -> compute -> store)."""

    pop_prev: bool = False
    pop_next: bool = False
    push_prev: bool = False
    push_next: bool = False

    def __str__(self) -> str:
        names = [n.replace("_", " ") for n in ("pop_prev", "pop_next", "push_prev",
                                                "push_next") if getattr(self, n)]
        return f"  ({', '.join(names)})" if names else ""


@dataclass(frozen=True, slots=True)
class Uop:
    """One micro-op: accumulator, input and weight entry indices (ALU: dst and src are
    both accumulator entries)."""

    dst: int
    src: int
    wgt: int = 0


@dataclass(frozen=True, slots=True)
class Load:
    """A 2-D strided DMA from DRAM tensor ``dram`` (entries ``offset + y * stride + x``
    for ``y < rows, x < cols``) into ``buffer`` at entry ``sram``, with zero padding
    around it (``pad = (top, bottom, left, right)`` entries): row ``y`` lands at
    ``sram + (y + top) * (left + cols + right) + left``."""

    buffer: str
    dram: str
    offset: int
    sram: int
    rows: int
    cols: int
    stride: int
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)
    tokens: Tokens = field(default_factory=Tokens)

    @property
    def queue(self) -> str:
        return "load" if self.buffer in ("inp", "wgt") else "compute"

    @property
    def width(self) -> int:
        return self.pad[2] + self.cols + self.pad[3]

    @property
    def height(self) -> int:
        return self.pad[0] + self.rows + self.pad[1]

    def __str__(self) -> str:
        pad = f" pad {self.pad}" if any(self.pad) else ""
        return (f"LOAD {self.buffer}[{self.sram}..] <- {self.dram}[{self.offset} + "
                f"{self.rows}x{self.cols} stride {self.stride}]{pad}{self.tokens}")


@dataclass(frozen=True, slots=True)
class Gemm:
    """Accumulate input tiles times weight tiles over micro-ops (see the module doc)."""

    uop_begin: int
    uop_end: int
    iter_out: int = 1
    iter_in: int = 1
    dst_out: int = 0
    dst_in: int = 0
    src_out: int = 0
    src_in: int = 0
    wgt_out: int = 0
    wgt_in: int = 0
    reset: bool = False
    tokens: Tokens = field(default_factory=Tokens)
    queue = "compute"

    def __str__(self) -> str:
        head = "GEMM reset" if self.reset else "GEMM"
        return (f"{head} uops[{self.uop_begin}:{self.uop_end}] x {self.iter_out}x"
                f"{self.iter_in} (dst {self.dst_out},{self.dst_in} src {self.src_out},"
                f"{self.src_in} wgt {self.wgt_out},{self.wgt_in}){self.tokens}")


@dataclass(frozen=True, slots=True)
class Alu:
    """An elementwise operation on accumulator tiles: ``op`` is add, max, min, shr
    (arithmetic shift right), mul, or clip (``imm = (low, high)``); the second operand
    is ``imm`` when given, else the tile at ``src``."""

    op: str
    uop_begin: int
    uop_end: int
    iter_out: int = 1
    iter_in: int = 1
    dst_out: int = 0
    dst_in: int = 0
    src_out: int = 0
    src_in: int = 0
    imm: int | tuple[int, int] | None = None
    tokens: Tokens = field(default_factory=Tokens)
    queue = "compute"

    def __post_init__(self):
        if self.op not in ALU_OPS:
            raise InvalidArgumentError(f"unknown ALU operation {self.op!r}; use one of "
                                       f"{', '.join(ALU_OPS)}")
        if self.op == "clip" and not (isinstance(self.imm, tuple) and len(self.imm) == 2):
            raise InvalidArgumentError("ALU clip needs imm=(low, high)")

    def __str__(self) -> str:
        operand = f"imm {self.imm}" if self.imm is not None else "acc"
        return (f"ALU {self.op} {operand} uops[{self.uop_begin}:{self.uop_end}] x "
                f"{self.iter_out}x{self.iter_in} (dst {self.dst_out},{self.dst_in} src "
                f"{self.src_out},{self.src_in}){self.tokens}")


@dataclass(frozen=True, slots=True)
class Store:
    """Accumulator tiles narrowed to the output type (the low 8 bits: clip first) into
    DRAM tensor ``dram`` at entries ``offset + y * stride + x``, from ``sram + y * cols +
    x``."""

    dram: str
    offset: int
    sram: int
    rows: int
    cols: int
    stride: int
    tokens: Tokens = field(default_factory=Tokens)
    queue = "store"

    def __str__(self) -> str:
        return (f"STORE acc[{self.sram}..] -> {self.dram}[{self.offset} + {self.rows}x"
                f"{self.cols} stride {self.stride}]{self.tokens}")


Instruction = Load | Gemm | Alu | Store


def listing(program) -> str:
    """The instruction stream, one numbered line each, with its queue."""
    return "\n".join(f"{k:4d} {ins.queue:<7} {ins}" for k, ins in enumerate(program))
