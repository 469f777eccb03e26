"""Instruction selection: a lowered schedule's loops as an accelerator instruction stream.

Arrays are in the device's packed layout: their last two dimensions are one *entry*
(an input tile ``batch x block_in``, a weight tile ``block_out x block_in``, an
accumulator or output tile ``batch x block_out``).  The loops outside the stages' nests
run at compile time; each stage's nest becomes instructions at once:

* a copy into the ``inp``/``wgt`` (or ``acc``) scope -> 2-D strided LOADs, with zero
  padding where the copy is an ``if_then_else(..., 0)`` (a padded convolution input);
  a strided footprint (a stride-2 convolution's input) is loaded as its box hull, which
  the buffer holds, the tokens counting every entry a LOAD writes;
* the init of a stage in ``acc`` -> a GEMM reset; its update tensorized with
  :func:`.intrin.gemm_intrin` -> a GEMM over micro-ops (two loops of the nest become
  the instruction's affine loops when the micro-ops shift uniformly along them);
* an elementwise stage in ``acc`` reading the accumulators -> ALU instructions in place
  (``x // 2**s`` shift right, ``minimum``/``maximum`` with a constant, both a clip,
  ``+``/``*`` a constant or another accumulator tile);
* a copy from ``acc`` to an int8 output -> 2-D strided STOREs (also a choice among
  ``acc`` arrays by an index condition: ``if_then_else(p == 0, S[..], P1[..])``, the
  byte planes of :mod:`.gemm`).

A loop marked ``virtual_thread`` runs its iterations interleaved (the instructions of
each iteration merged in the order of their inner loops), each with its own copy of the
buffers computed inside it; the tokens between the queues come from
:func:`.tokens.derive_tokens`.

Where arrays live on chip is :mod:`.device_buffers`; how a copy becomes few DMA
rectangles, :mod:`.dma`; what a stage's expression computes, :mod:`.stage_values`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...ast.intrinsic_calls import IntrinsicCall
from ...ast.nodes import Block, For, If, Run, walk
from ...machine.accel import AccelConfig
from ...te.expr import Cast, Select, TensorRead
from .device_buffers import DeviceBuffers, Layout, constant_extents, leading_entries
from .dma import box_hull, dma_pieces, in_bounds, strided_runs
from .enumerate import expr_value, index_value, instances, loop_values
from .isa import Alu, Gemm, Load, Store, Tokens, Uop, listing
from .stage_values import alu_ops, alu_source, is_zero, reads_of, store_branches
from .tokens import Record, derive_tokens
from ...lowering_errors import AcceleratorMappingError, DeviceCapacityError


@dataclass
class Compiled:
    """An instruction stream, its micro-ops and the DRAM tensors it names (arrays by
    name, ``"uops"``)."""

    program: list
    uops: list
    arrays: tuple  # the function's arrays that are DRAM tensors

    def listing(self) -> str:
        return listing(self.program)


class Selector(DeviceBuffers):
    """Walks a lowered function's loops (see the module)."""

    def __init__(self, func, config: AccelConfig, copies: dict[str, int]):
        self.func, self.config, self.program = func, config, func.program
        self.layout = Layout()
        self.uop_dram: list[Uop] = []
        self.uop_cache: dict[tuple, int] = {}
        self.uop_free = 0
        self.threads: dict[str, int] = {}  # virtual-thread loop variable -> iteration
        # which array each accumulator entry holds now (stages computed in place)
        self.holder = np.full(config.entries("acc"), -1, np.int64)
        self.holder_ids: dict[str, int] = {}
        self._allocate(copies)

    # -- walking ------------------------------------------------------------------------
    def compile(self) -> Compiled:
        records = self.walk(self.func.body, {}, ())
        derive_tokens(records)
        program = [r.make(Tokens(**{t: True for t in r.tokens})) for r in records]
        arrays = tuple(a for a in self.func.arrays)
        return Compiled(program, self.uop_dram, arrays)

    def walk(self, node, env: dict, key: tuple) -> list[Record]:
        statements = {n.stmt for n in walk(node) if isinstance(n, Run)}
        if len(statements) <= 1 and not _has_thread_loop(node):
            return self.nest(node, env, key)
        if isinstance(node, Block):
            # consecutive stage nests share a key: virtual threads interleave whole runs
            # of them ({loads, GEMM} of one thread, then of the other), not instructions
            # (a run of them just before a compound item joins that item's first part:
            # a thread's accumulator reset then waits for that thread's last store while
            # the other thread computes, not at once)
            out, segment, leaf, waiting = [], 0, False, []
            for item in node.items:
                compound = len({n.stmt for n in walk(item) if isinstance(n, Run)}) > 1 \
                    or _has_thread_loop(item)
                if compound or not leaf:
                    segment += 1
                    if not compound:  # a run of stage nests begins
                        waiting = []
                leaf = not compound
                made = self.walk(item, env, key + (segment,))
                if compound:
                    for rec in waiting if made else []:
                        rec.key = made[0].key
                    waiting = []
                else:
                    waiting += made
                out += made
            return out
        if isinstance(node, If):
            cols = {k: np.array([v]) for k, v in env.items()}
            if index_value(node.cond, cols, 1)[0]:
                return self.walk(node.then, env, key)
            return [] if node.otherwise is None else self.walk(node.otherwise, env, key)
        if isinstance(node, For):
            cols = {k: np.array([v]) for k, v in env.items()}
            low, trips = loop_values(node, cols, 1)
            values = [int(low[0]) + q * node.step for q in range(int(trips[0]))]
            if node.kind == "vthread":
                return self._interleaved(node, env, key, values)
            out = []
            for q, value in enumerate(values):
                out += self.walk(node.body, {**env, node.var: value}, key + (q,))
            return out
        return self.nest(node, env, key)

    def _interleaved(self, loop: For, env: dict, key: tuple, values) -> list[Record]:
        streams = []
        for q, value in enumerate(values):
            self.threads[loop.var] = q
            streams += [(r.key[len(key):], q, n, r) for n, r in
                        enumerate(self.walk(loop.body, {**env, loop.var: value}, key))]
        self.threads.pop(loop.var, None)
        return [r for *_, r in sorted(streams, key=lambda item: item[:3])]

    def nest(self, node, env: dict, key: tuple) -> list[Record]:
        out = []
        for run, cols in instances(node, env):
            rows = len(next(iter(cols.values()))) if cols else 1
            if rows == 0:
                continue
            stmt = self.program.statement(run.stmt)
            values = {v.name: index_value(a, cols, rows) for v, a in
                      zip(stmt.index_vars, run.args)}
            made = self.statement(stmt, run, values, rows)
            for rec in made:
                rec.key = key
            out += made
        return out

    # -- statements ---------------------------------------------------------------------
    def statement(self, stmt, run, values: dict, rows: int) -> list[Record]:
        target = self.program.array_of(stmt.target.tensor)
        reads = [r for r in reads_of(stmt.value)]
        scopes = {self.program.array_of(r.tensor).scope for r in reads}
        if isinstance(run, IntrinsicCall):
            return self.gemm(stmt, values, rows)
        if target.scope in ("inp", "wgt") or (target.scope == "acc" and reads and
                                              scopes <= {"global"}):
            return self.load(stmt, target, values, rows)
        if target.scope == "acc" and not reads:
            return self.reset(stmt, target, values, rows)
        if target.scope == "acc":
            return self.alu(stmt, target, values, rows)
        if reads and scopes == {"acc"}:
            return self.store(stmt, target, values, rows)
        raise AcceleratorMappingError(stmt.name, "global_compute", target=target.name,
                                      value=stmt.op)

    def _entries(self, read: TensorRead, values: dict, rows: int):
        array = self.program.array_of(read.tensor)
        index = [expr_value(e, values, rows).astype(np.int64) for e in read.indices]
        shape = constant_extents(array.shape, f"'{array.name}'")
        return array, index, shape

    def _at_entry_origin(self, stmt, values: dict, rows: int) -> np.ndarray:
        _, index, shape = self._entries(stmt.target, values, rows)
        return (index[-2] == 0) & (index[-1] == 0)

    def load(self, stmt, target, values: dict, rows: int) -> list[Record]:
        value = stmt.value
        cond = None
        if isinstance(value, Select) and is_zero(value.otherwise):
            cond, value = value.cond, value.then
        while isinstance(value, Cast):
            value = value.value
        if not isinstance(value, TensorRead):
            raise AcceleratorMappingError(stmt.name, "copy_computes", target=target.name,
                                          value=stmt.value)
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        hull = box_hull(self._entries(stmt.target, sub, n)[1][:-2], sub)
        exact = [(sub, n)]
        for sub, n in ([(hull, len(next(iter(hull.values()))))] if hull else []) + exact:
            _, dst_index, dst_shape = self._entries(stmt.target, sub, n)
            source, src_index, src_shape = self._entries(value, sub, n)
            copied = np.ones(n, bool) if cond is None else \
                expr_value(cond, sub, n).astype(bool)
            if sub is exact[0][0] or in_bounds(src_index, src_shape, copied) and len(
                    np.unique(np.stack(dst_index[:-2], 1), axis=0)) == n:
                break  # the hull's entries are distinct and read inside the source
        if src_shape[-2:] != dst_shape[-2:]:
            raise AcceleratorMappingError(stmt.name, "entry_shapes", target=target.name,
                                          source=source.name,
                                          shapes=(src_shape[-2:], dst_shape[-2:]))
        dst = self.entry(target.name, leading_entries(dst_index, dst_shape))
        src = np.where(copied, leading_entries(src_index, src_shape), -1)
        grid = [i for i in dst_index[:-2]]
        if target.scope == "acc":
            self._hold(dst, target.name)
        return [self._load_record(target.scope, source.name, piece)
                for piece in dma_pieces(dst, src, grid)]

    def _load_record(self, buffer: str, dram: str, piece) -> Record:
        sram, offset, rows, cols, stride, pad = piece
        ins = Load(buffer, dram, offset, sram=sram, rows=rows, cols=cols, stride=stride,
                   pad=pad)
        written = ins.sram + np.arange(ins.height * ins.width)
        queue = ins.queue
        return Record(queue, writes={buffer: written},
                      make=lambda tokens, ins=ins: _with_tokens(ins, tokens), what=str(ins))

    def store(self, stmt, target, values: dict, rows: int) -> list[Record]:
        branches = store_branches(stmt.value)
        if target.dtype != "int8" or branches is None:
            raise AcceleratorMappingError(stmt.name, "store_computes", target=target.name,
                                          value=stmt.value)
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        _, dst_index, dst_shape = self._entries(stmt.target, sub, n)
        dst_all = leading_entries(dst_index, dst_shape)
        src, dst = [], []
        for conditions, read in branches:
            taken = np.ones(n, bool)
            for cond, wanted in conditions:
                taken &= expr_value(cond, sub, n).astype(bool) == wanted
            if not taken.any():
                continue
            part = {k: v[taken] for k, v in sub.items()}
            source, src_index, src_shape = self._entries(read, part, int(taken.sum()))
            src.append(self.entry(source.name, leading_entries(src_index, src_shape)))
            self._expect(src[-1], source.name, f"the store {stmt.name}")
            dst.append(dst_all[taken])
        out = []
        for sram, offset, rows_, cols, stride in strided_runs(np.concatenate(src),
                                                                np.concatenate(dst)):
            ins = Store(target.name, offset, sram=sram, rows=rows_, cols=cols, stride=stride)
            out.append(Record("store", reads={"acc": sram + np.arange(rows_ * cols)},
                              make=lambda tokens, ins=ins: _with_tokens(ins, tokens),
                              what=str(ins)))
        return out

    def reset(self, stmt, target, values: dict, rows: int) -> list[Record]:
        if not is_zero(stmt.value):
            raise AcceleratorMappingError(stmt.name, "reset_not_zero", target=target.name,
                                          value=stmt.value)
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        _, index, shape = self._entries(stmt.target, sub, int(origin.sum()))
        dst = self.entry(target.name, leading_entries(index, shape))
        self._hold(dst, target.name)
        triples = np.stack([dst, np.zeros_like(dst), np.zeros_like(dst)], 1)
        return self._micro(triples, sub, lambda begin, end, loops: Gemm(
            begin, end, reset=True, **loops), {}, {"acc": dst})

    def gemm(self, stmt, values: dict, rows: int) -> list[Record]:
        reads = reads_of(stmt.value)
        acc_read = [r for r in reads if self.program.array_of(r.tensor).scope == "acc"]
        inp = [r for r in reads if self.program.array_of(r.tensor).scope == "inp"]
        wgt = [r for r in reads if self.program.array_of(r.tensor).scope == "wgt"]
        if not (acc_read and inp and wgt):
            raise AcceleratorMappingError(stmt.name, "gemm_buffers")
        entries = []
        for read in (stmt.target, inp[0], wgt[0]):
            array, index, shape = self._entries(read, values, rows)
            entries.append(self.entry(array.name, leading_entries(index, shape)))
        triples = np.stack(entries, 1)
        self._hold(entries[0], self.program.array_of(stmt.target.tensor).name)
        return self._micro(triples, values, lambda begin, end, loops: Gemm(
            begin, end, **loops), {"acc": entries[0], "inp": entries[1],
                                   "wgt": entries[2]}, {"acc": entries[0]}, gemm=True)

    def alu(self, stmt, target, values: dict, rows: int) -> list[Record]:
        ops = alu_ops(stmt.value)
        if ops is None:
            raise AcceleratorMappingError(stmt.name, "alu_operation", value=stmt.value)
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        _, index, shape = self._entries(stmt.target, sub, n)
        dst = self.entry(target.name, leading_entries(index, shape))
        first = self.program.array_of(alu_source(stmt.value).tensor).name
        self._expect(dst, first, stmt.name)
        out = []
        for op, operand in ops:
            if isinstance(operand, TensorRead):
                array, src_index, src_shape = self._entries(operand, sub, n)
                src, imm = self.entry(array.name, leading_entries(src_index, src_shape)), None
                self._expect(src, array.name, stmt.name)
            else:
                src, imm = dst, operand
            triples = np.stack([dst, src, np.zeros_like(dst)], 1)
            reads = {"acc": np.concatenate([dst, src])}
            out += self._micro(triples, sub, lambda begin, end, loops, op=op, imm=imm: Alu(
                op, begin, end, imm=imm, **{k: v for k, v in loops.items()
                                            if not k.startswith("wgt")}), reads,
                {"acc": dst})
        self._hold(dst, target.name)
        return out

    # -- micro-ops ----------------------------------------------------------------------
    def _micro(self, triples: np.ndarray, cols: dict, make, reads: dict, writes: dict,
               gemm: bool = False) -> list[Record]:
        uops, loops = _compress(triples, cols)
        key = tuple(map(tuple, uops.tolist()))
        out = []
        if key not in self.uop_cache:
            capacity = self.config.entries("uop")
            if len(key) > capacity:
                raise DeviceCapacityError("micro-op buffer", len(key), capacity)
            if self.uop_free + len(key) > capacity:
                self.uop_cache.clear()
                self.uop_free = 0
            offset = len(self.uop_dram)
            self.uop_dram.extend(Uop(*t) for t in key)
            ins = Load("uop", "uops", offset, sram=self.uop_free, rows=1, cols=len(key),
                       stride=len(key))
            out.append(Record("compute", writes={"uop": self.uop_free + np.arange(len(key))},
                              make=lambda tokens, ins=ins: _with_tokens(ins, tokens),
                              what=str(ins)))
            self.uop_cache[key] = self.uop_free
            self.uop_free += len(key)
        begin = self.uop_cache[key]
        ins = make(begin, begin + len(key), loops)
        reads = dict(reads)
        reads["uop"] = begin + np.arange(len(key))
        out.append(Record("compute", reads=reads, writes=writes,
                          make=lambda tokens, ins=ins: _with_tokens(ins, tokens),
                          what=str(ins)))
        return out


def _with_tokens(ins, tokens: Tokens):
    from dataclasses import replace
    return replace(ins, tokens=tokens)


def _has_thread_loop(node) -> bool:
    return any(isinstance(n, For) and n.kind == "vthread" for n in walk(node))


def _compress(triples: np.ndarray, cols: dict) -> tuple[np.ndarray, dict]:
    """Micro-ops and the instruction's two affine loops: the outermost loop variables
    along which the micro-ops shift uniformly become ``iter_out`` / ``iter_in``."""
    loops = {}
    names = [k for k in cols if len(np.unique(cols[k])) > 1]
    current, current_cols = triples, cols
    for level in ("out", "in"):
        found = None
        for name in names:
            column = current_cols[name]
            values = np.unique(column)
            if len(values) < 2:
                continue
            groups = [current[column == v] for v in values]
            if len({len(g) for g in groups}) != 1:
                break
            delta = groups[1][0] - groups[0][0]
            stacked = np.stack(groups)
            expected = groups[0][None] + np.arange(len(groups))[:, None, None] * delta
            if np.array_equal(stacked, expected):
                found = (name, values, delta)
            break
        if found is None:
            break
        name, values, delta = found
        keep = current_cols[name] == values[0]
        loops[f"iter_{level}"] = len(values)
        loops[f"dst_{level}"], loops[f"src_{level}"], loops[f"wgt_{level}"] = map(int, delta)
        current = current[keep]
        current_cols = {k: v[keep] for k, v in current_cols.items()}
        names.remove(name)
    return current, loops
