"""A bit-exact functional simulator of the accelerator, with a cycle model and a hazard
detector.

:func:`run` executes an instruction stream on NumPy arrays (one NumPy operation per
instruction, not per element) and returns a :class:`Report`: the counters (GEMM and
ALU operations, bytes loaded per buffer, bytes stored), the cycles each queue was busy,
the total cycles and the GEMM core's utilization.

Timing: each queue starts its next instruction when it is free and the tokens it pops
have been pushed; an instruction costs ``issue_cycles`` plus its work (DMA latency and
bytes over bandwidth, or one cycle per GEMM step / ALU tile), so the three queues
overlap as far as the tokens allow.

Hazards: two instructions on different queues that touch one buffer entry, one of them
writing it, must be ordered by the tokens (a chain of pushes and pops), or the result
would depend on timing.  The simulator tracks, per entry, the last writer and the last
reader of each queue, and raises :class:`HazardError` naming both instructions when such
a pair is unordered; a pop that no push ever satisfies raises it too (a deadlock).

>>> import numpy as np
>>> from polyopt.target.accel.isa import Gemm, Load, Store, Tokens, Uop
>>> from polyopt.machine.accel import VTA
>>> x = np.arange(16, dtype=np.int8).reshape(1, 1, 16)
>>> w = np.ones((1, 16, 16), np.int8)
>>> dram = {"x": x, "w": w, "uops": uop_array([Uop(0, 0, 0)]),
...         "y": np.zeros((1, 1, 16), np.int8)}
>>> program = [Load("uop", "uops", 0, sram=0, rows=1, cols=1, stride=1),
...            Load("inp", "x", 0, sram=0, rows=1, cols=1, stride=1),
...            Load("wgt", "w", 0, sram=0, rows=1, cols=1, stride=1,
...                 tokens=Tokens(push_next=True)),
...            Gemm(0, 1, reset=True),
...            Gemm(0, 1, tokens=Tokens(pop_prev=True, push_next=True)),
...            Store("y", 0, sram=0, rows=1, cols=1, stride=1, tokens=Tokens(pop_prev=True))]
>>> report = run(program, dram, VTA)
>>> int(dram["y"][0, 0, 0]), report.gemm_ops, report.loaded["wgt"]
(120, 1, 256)
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from ...errors import BackendError, InvalidArgumentError
from ...machine.accel import BUFFERS, AccelConfig
from .isa import QUEUES, Alu, Gemm, Load, Store, Uop


class HazardError(BackendError):
    """A program the accelerator would run wrongly: ``problem`` is ``"unordered"`` (the
    instructions ``instruction`` and ``other`` both use entries of ``buffer``, the first
    as ``access`` says, and no dependence token orders them) or ``"deadlock"`` (every
    queue waits for a token never pushed; ``waiting``: queue -> its next instruction)."""

    def __init__(self, problem: str, *, instruction: int | None = None,
                 other: int | None = None, buffer: str | None = None, access: str = "",
                 program=(), waiting: dict | None = None):
        self.problem, self.instruction, self.other = problem, instruction, other
        self.buffer, self.access, self.waiting = buffer, access, dict(waiting or {})
        if problem == "unordered":
            message = (f"instruction {instruction} ({program[instruction]}) {access} {buffer} "
                       f"entries that instruction {other} ({program[other]}) also uses, and no "
                       "dependence token orders them: add a push/pop between their queues")
        else:
            stuck = "; ".join(f"{q}: instruction {i}" for q, i in self.waiting.items())
            message = (f"deadlock: every queue waits for a token that is never pushed "
                       f"({stuck}); push the tokens the queues pop, in program order")
        super().__init__(message)


def uop_array(uops: list[Uop]) -> np.ndarray:
    """Micro-ops as a DRAM tensor (one int32 triple each)."""
    return np.array([(u.dst, u.src, u.wgt) for u in uops], dtype=np.int32).reshape(-1, 3)


@dataclass
class Report:
    """Counters and cycles of one run."""

    gemm_ops: int = 0
    alu_ops: int = 0
    loaded: dict = field(default_factory=lambda: {b: 0 for b in BUFFERS})
    stored: int = 0
    busy: dict = field(default_factory=lambda: {q: 0 for q in QUEUES})
    cycles: int = 0
    gemm_cycles: int = 0

    @property
    def utilization(self) -> float:
        """The fraction of the cycles in which the GEMM core computed."""
        return self.gemm_cycles / self.cycles if self.cycles else 0.0

    def __str__(self) -> str:
        loads = ", ".join(f"{b} {n}" for b, n in self.loaded.items() if n)
        busy = ", ".join(f"{q} {n}" for q, n in self.busy.items())
        return (f"{self.gemm_ops} GEMM ops, {self.alu_ops} ALU ops; bytes loaded: {loads}; "
                f"bytes stored: {self.stored}; busy cycles: {busy}; total {self.cycles} "
                f"cycles; GEMM utilization {self.utilization:.1%}")


def _neighbour(queue: str, side: str) -> str | None:
    k = QUEUES.index(queue) + (-1 if side == "prev" else 1)
    return QUEUES[k] if 0 <= k < len(QUEUES) else None


def _pop_channel(queue: str, side: str) -> tuple[str, str]:
    """The channel an instruction of ``queue`` pops from: what its neighbour pushes."""
    neighbour = _neighbour(queue, side)
    if neighbour is None:
        raise InvalidArgumentError(f"a {queue} instruction cannot pop a token from its "
                                   f"{side} queue (there is none)")
    return neighbour, queue


def _push_channel(queue: str, side: str) -> tuple[str, str]:
    neighbour = _neighbour(queue, side)
    if neighbour is None:
        raise InvalidArgumentError(f"a {queue} instruction cannot push a token to its "
                                   f"{side} queue (there is none)")
    return queue, neighbour


_CHANNELS = (("load", "compute"), ("compute", "load"), ("compute", "store"),
             ("store", "compute"))


class _Machine:
    """The on-chip buffers, the counters and the hazard tracker of one run."""

    def __init__(self, config: AccelConfig, dram: dict):
        c = config
        self.config, self.dram, self.report = c, dram, Report()
        self.sram = {
            "uop": np.zeros((c.entries("uop"), 3), np.int32),
            "inp": np.zeros((c.entries("inp"), c.batch, c.block_in), np.int8),
            "wgt": np.zeros((c.entries("wgt"), c.block_out, c.block_in), np.int8),
            "acc": np.zeros((c.entries("acc"), c.batch, c.block_out), np.int32),
        }
        self.writer = {b: np.full(len(a), -1, np.int64) for b, a in self.sram.items()}
        self.reader = {b: {q: np.full(len(a), -1, np.int64) for q in QUEUES}
                       for b, a in self.sram.items()}
        self.where: list[tuple[str, int]] = []  # instruction -> (queue, position)
        self.clocks: list[dict] = []            # instruction -> vector clock
        self.program = None

    # -- hazards -----------------------------------------------------------------------
    def _ordered(self, earlier: int, later: int) -> bool:
        queue, position = self.where[earlier]
        return self.clocks[later][queue] >= position

    def _check(self, me: int, others: np.ndarray, what: str, buffer: str) -> None:
        for other in np.unique(others):
            if other >= 0 and other != me and not self._ordered(int(other), me):
                raise HazardError("unordered", instruction=me, other=int(other),
                                  buffer=buffer, access=what, program=self.program)

    def touch(self, me: int, buffer: str, entries: np.ndarray, *, write: bool) -> None:
        entries = np.asarray(entries, np.int64).ravel()
        if entries.size == 0:
            return
        if entries.min() < 0 or entries.max() >= len(self.sram[buffer]):
            raise InvalidArgumentError(
                f"instruction {me} ({self.program[me]}) uses {buffer} entries up to "
                f"{entries.max()}, outside the buffer ({len(self.sram[buffer])} entries of "
                f"{self.config.entry_bytes(buffer)} bytes)")
        self._check(me, self.writer[buffer][entries], "reads" if not write else "writes",
                    buffer)
        if write:
            for queue in QUEUES:
                self._check(me, self.reader[buffer][queue][entries], "writes", buffer)
            self.writer[buffer][entries] = me
        else:
            self.reader[buffer][self.where[me][0]][entries] = me

    # -- instructions ----------------------------------------------------------------
    def load(self, me: int, ins: Load) -> int:
        source = self.dram.get(ins.dram)
        target = self.sram.get(ins.buffer)
        if source is None or target is None:
            raise InvalidArgumentError(f"{ins}: no DRAM tensor {ins.dram!r} or no buffer "
                                       f"{ins.buffer!r}")
        if source.shape[1:] != target.shape[1:] or source.dtype != target.dtype:
            raise InvalidArgumentError(
                f"{ins}: DRAM tensor {ins.dram!r} holds entries {source.shape[1:]} "
                f"{source.dtype}, the {ins.buffer} buffer {target.shape[1:]} {target.dtype}")
        rows, cols = np.arange(ins.rows), np.arange(ins.cols)
        src = ins.offset + rows[:, None] * ins.stride + cols[None, :]
        top, _, left, _ = ins.pad
        block = ins.sram + np.arange(ins.height)[:, None] * ins.width + \
            np.arange(ins.width)[None, :]
        dst = block[top:top + ins.rows, left:left + ins.cols]
        if src.size and (src.min() < 0 or src.max() >= len(source)):
            raise InvalidArgumentError(f"{ins}: reads past the end of {ins.dram!r} "
                                       f"({len(source)} entries)")
        self.touch(me, ins.buffer, block, write=True)
        target[block.ravel()] = 0
        target[dst.ravel()] = source[src.ravel()]
        nbytes = src.size * self.config.entry_bytes(ins.buffer)
        self.report.loaded[ins.buffer] += nbytes
        return self._dma_cycles(nbytes)

    def _dma_cycles(self, nbytes: int) -> int:
        c = self.config
        return c.issue_cycles + c.dram_latency + -(-nbytes // c.dram_bytes_per_cycle)

    def _indices(self, me: int, ins) -> tuple[np.ndarray, ...]:
        self.touch(me, "uop", np.arange(ins.uop_begin, ins.uop_end), write=False)
        uops = self.sram["uop"][ins.uop_begin:ins.uop_end]
        i = np.arange(ins.iter_out)[:, None, None]
        j = np.arange(ins.iter_in)[None, :, None]
        dst = (uops[None, None, :, 0] + i * ins.dst_out + j * ins.dst_in).ravel()
        src = (uops[None, None, :, 1] + i * ins.src_out + j * ins.src_in).ravel()
        wgt = (uops[None, None, :, 2] + i * getattr(ins, "wgt_out", 0)
               + j * getattr(ins, "wgt_in", 0)).ravel()
        return dst, src, wgt

    def gemm(self, me: int, ins: Gemm) -> int:
        dst, src, wgt = self._indices(me, ins)
        acc = self.sram["acc"]
        if ins.reset:
            self.touch(me, "acc", dst, write=True)
            acc[dst] = 0
        else:
            self.touch(me, "inp", src, write=False)
            self.touch(me, "wgt", wgt, write=False)
            self.touch(me, "acc", dst, write=True)
            products = np.einsum("nbi,noi->nbo", self.sram["inp"][src].astype(np.int32),
                                 self.sram["wgt"][wgt].astype(np.int32))
            np.add.at(acc, dst, products)  # in order, repeated entries accumulate
            self.report.gemm_ops += dst.size
            self.report.gemm_cycles += dst.size * self.config.gemm_cycles
        return self.config.issue_cycles + dst.size * (0 if ins.reset else
                                                      self.config.gemm_cycles)

    def alu(self, me: int, ins: Alu) -> int:
        dst, src, _ = self._indices(me, ins)
        acc = self.sram["acc"]
        if ins.imm is None:
            self.touch(me, "acc", src, write=False)
        self.touch(me, "acc", dst, write=True)
        sequential = ins.imm is None and (len(np.unique(dst)) != dst.size or np.isin(
            dst, src[src != dst]).any())
        if sequential:  # a later micro-op reads what an earlier one wrote
            for d, s in zip(dst, src):
                acc[d] = _alu(ins.op, acc[d], acc[s])
        else:
            operand = acc[src] if ins.imm is None else ins.imm
            acc[dst] = _alu(ins.op, acc[dst], operand)
        self.report.alu_ops += dst.size
        return self.config.issue_cycles + dst.size * self.config.alu_cycles

    def store(self, me: int, ins: Store) -> int:
        target = self.dram.get(ins.dram)
        c = self.config
        if target is None or target.dtype != np.int8 or target.shape[1:] != (c.batch,
                                                                              c.block_out):
            raise InvalidArgumentError(f"{ins}: DRAM tensor {ins.dram!r} must hold int8 "
                                       f"entries of shape {(c.batch, c.block_out)}")
        rows, cols = np.arange(ins.rows), np.arange(ins.cols)
        src = ins.sram + rows[:, None] * ins.cols + cols[None, :]
        dst = ins.offset + rows[:, None] * ins.stride + cols[None, :]
        if dst.size and (dst.min() < 0 or dst.max() >= len(target)):
            raise InvalidArgumentError(f"{ins}: writes past the end of {ins.dram!r}")
        self.touch(me, "acc", src, write=False)
        target[dst.ravel()] = self.sram["acc"][src.ravel()].astype(np.int8)  # low 8 bits
        nbytes = src.size * c.batch * c.block_out
        self.report.stored += nbytes
        return self._dma_cycles(nbytes)


def _alu(op: str, a: np.ndarray, b) -> np.ndarray:
    if op == "add":
        return a + b
    if op == "mul":
        return a * b
    if op == "max":
        return np.maximum(a, b)
    if op == "min":
        return np.minimum(a, b)
    if op == "shr":
        return np.right_shift(a, b)
    low, high = b
    return np.clip(a, low, high)


def run(program, dram: dict, config: AccelConfig) -> Report:
    """Execute ``program`` (a list of instructions) on ``dram`` (named NumPy arrays of
    entries; stores write into them) and return the :class:`Report`."""
    machine = _Machine(config, dram)
    machine.program = list(program)
    queues = {q: collections.deque() for q in QUEUES}
    for index, ins in enumerate(machine.program):
        if not isinstance(ins, (Load, Gemm, Alu, Store)):
            raise InvalidArgumentError(f"instruction {index} is not an accelerator "
                                       f"instruction: {ins!r}")
        queues[ins.queue].append(index)
    machine.where = [None] * len(machine.program)
    machine.clocks = [None] * len(machine.program)
    positions = {q: 0 for q in QUEUES}
    free = {q: 0 for q in QUEUES}
    last_clock = {q: {p: -1 for p in QUEUES} for q in QUEUES}
    channels = {c: collections.deque() for c in _CHANNELS}
    execute = {Load: machine.load, Gemm: machine.gemm, Alu: machine.alu, Store: machine.store}
    while any(queues.values()):
        best = None
        for queue in QUEUES:
            if not queues[queue]:
                continue
            ins = machine.program[queues[queue][0]]
            pops = [_pop_channel(queue, side) for side in ("prev", "next")
                    if getattr(ins.tokens, f"pop_{side}")]
            if any(not channels[c] for c in pops):
                continue
            start = max([free[queue]] + [channels[c][0][0] for c in pops])
            if best is None or start < best[0]:
                best = (start, queue, pops)
        if best is None:
            raise HazardError("deadlock", waiting={q: queues[q][0] for q in QUEUES if queues[q]})
        start, queue, pops = best
        me = queues[queue].popleft()
        ins = machine.program[me]
        clock = dict(last_clock[queue])
        for channel in pops:
            _, pusher_clock = channels[channel].popleft()
            clock = {q: max(clock[q], pusher_clock[q]) for q in QUEUES}
        clock[queue] = positions[queue]
        machine.where[me], machine.clocks[me] = (queue, positions[queue]), clock
        positions[queue] += 1
        cost = execute[type(ins)](me, ins)
        end = start + cost
        machine.report.busy[queue] += cost
        free[queue], last_clock[queue] = end, clock
        for side in ("prev", "next"):
            if getattr(ins.tokens, f"push_{side}"):
                channels[_push_channel(queue, side)].append((end, clock))
        machine.report.cycles = max(machine.report.cycles, end)
    return machine.report
