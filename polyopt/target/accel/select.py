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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ast.intrinsic_calls import IntrinsicCall
from ...ast.nodes import Block, For, If, Run, walk
from ...errors import BackendError, ScheduleError
from ...names import sanitize
from ...te.expr import BinOp, Call, Cast, Const, Select, TensorRead
from ...machine.accel import AccelConfig
from .enumerate import expr_value, index_value, instances, loop_values
from .isa import Alu, Gemm, Load, Store, Tokens, Uop, listing
from .tokens import Record, derive_tokens

DEVICE_SCOPES = ("inp", "wgt", "acc")


@dataclass
class Compiled:
    """An instruction stream, its micro-ops and the DRAM tensors it names (arrays by
    name, ``"uops"``)."""

    program: list
    uops: list
    arrays: tuple  # the function's arrays that are DRAM tensors

    def listing(self) -> str:
        return listing(self.program)


@dataclass
class _Layout:
    """Where each device array lives: its buffer, first entry, entries per copy, and
    the virtual-thread loop (AST variable) whose iterations get their own copies."""

    buffer: dict = field(default_factory=dict)
    base: dict = field(default_factory=dict)
    size: dict = field(default_factory=dict)
    thread_loop: dict = field(default_factory=dict)
    copies: dict = field(default_factory=dict)


def entry_shape(config: AccelConfig, scope: str) -> tuple[int, int]:
    return {"inp": (config.batch, config.block_in), "wgt": (config.block_out,
                                                            config.block_in)}.get(
        scope, (config.batch, config.block_out))


def _ints(shape, what: str) -> tuple[int, ...]:
    out = []
    for extent in shape:
        if not (isinstance(extent, Const) and isinstance(extent.value, int)):
            raise BackendError(f"{what} has a symbolic extent {extent}; the accelerator "
                               "needs constant shapes")
        out.append(extent.value)
    return tuple(out)


def _leading(index: list, shape: tuple[int, ...]) -> np.ndarray:
    """Row-major entry number of the leading (non-entry) indices."""
    linear = np.zeros_like(index[0]) if index else 0
    for value, extent in zip(index[:-2], shape[:-2]):
        linear = linear * extent + value
    return linear


class Selector:
    """Walks a lowered function's loops (see the module)."""

    def __init__(self, func, config: AccelConfig, copies: dict[str, int]):
        self.func, self.config, self.program = func, config, func.program
        self.layout = _Layout()
        self.uop_dram: list[Uop] = []
        self.uop_cache: dict[tuple, int] = {}
        self.uop_free = 0
        self.threads: dict[str, int] = {}  # virtual-thread loop variable -> iteration
        # which array each accumulator entry holds now (stages computed in place)
        self.holder = np.full(config.entries("acc"), -1, np.int64)
        self.holder_ids: dict[str, int] = {}
        self._allocate(copies)

    # -- buffers ------------------------------------------------------------------------
    def _allocate(self, copies: dict[str, int]) -> None:
        used = {s: 0 for s in DEVICE_SCOPES}
        aliases = self._aliases()
        for array in self.func.temps:
            if array.scope not in DEVICE_SCOPES:
                raise ScheduleError(
                    f"'{array.name}' is kept in {array.scope!r} memory, which the "
                    "accelerator does not have: cache it into 'inp' or 'wgt' "
                    "(s.cache_read) or keep it in 'acc' (s[stage].set_scope('acc'))")
            shape = _ints(array.shape, f"buffer '{array.name}'")
            if shape[-2:] != entry_shape(self.config, array.scope):
                raise ScheduleError(
                    f"'{array.name}' ({array.scope}) has entries {shape[-2:]}, the device's "
                    f"are {entry_shape(self.config, array.scope)}: write the computation in "
                    "the packed layout (last two dimensions one device tile)")
            self.layout.buffer[array.name] = array.scope
            entries = int(np.prod(shape[:-2], dtype=np.int64))
            loop, count = copies.get(array.name, (None, 1))
            self.layout.thread_loop[array.name], self.layout.copies[array.name] = loop, count
            self.layout.size[array.name] = entries
            if array.name in aliases:
                self.layout.base[array.name] = self.layout.base[aliases[array.name]]
                continue
            self.layout.base[array.name] = used[array.scope]
            used[array.scope] += entries * count

    def _aliases(self) -> dict[str, str]:
        """Elementwise ``acc`` stages computed in place of the accumulators they read."""
        result = {}
        temps = {a.name: a for a in self.func.temps}
        for stmt in self.program.statements:
            target = self.program.array_of(stmt.target.tensor)
            if target.name not in temps or target.scope != "acc":
                continue
            source = _alu_source(stmt.value)
            if source is not None:
                name = self.program.array_of(source.tensor).name
                if name in temps and temps[name].scope == "acc":
                    result[target.name] = result.get(name, name)
        return result

    def _hold(self, entries: np.ndarray, name: str) -> None:
        self.holder[entries] = self.holder_ids.setdefault(name, len(self.holder_ids))

    def _expect(self, entries: np.ndarray, name: str, reader: str) -> None:
        """Refuse reading ``name`` from entries an in-place stage has overwritten."""
        held = self.holder[entries]
        wanted = self.holder_ids.get(name, -2)
        wrong = held[(held >= 0) & (held != wanted)]
        if len(wrong):
            other = next(n for n, i in self.holder_ids.items() if i == wrong[0])
            raise ScheduleError(
                f"{reader} reads '{name}' after '{other}', computed in place of it in the "
                f"accumulators, overwrote it: compute '{other}' after every reader of "
                f"'{name}' (or from a copy: a zero stage plus '{name}')")

    def entry(self, name: str, leading: np.ndarray) -> np.ndarray:
        loop = self.layout.thread_loop[name]
        copy = 0 if loop is None else self.threads.get(loop, 0) % self.layout.copies[name]
        return self.layout.base[name] + copy * self.layout.size[name] + leading

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
        reads = [r for r in _reads(stmt.value)]
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
        raise ScheduleError(
            f"statement {stmt.name} ({stmt.op}) computes '{target.name}' in global memory "
            "from global memory: on the accelerator every computation happens in its "
            "buffers; cache its inputs into 'inp'/'wgt' and keep it in 'acc'")

    def _entries(self, read: TensorRead, values: dict, rows: int):
        array = self.program.array_of(read.tensor)
        index = [expr_value(e, values, rows).astype(np.int64) for e in read.indices]
        shape = _ints(array.shape, f"'{array.name}'")
        return array, index, shape

    def _at_entry_origin(self, stmt, values: dict, rows: int) -> np.ndarray:
        _, index, shape = self._entries(stmt.target, values, rows)
        return (index[-2] == 0) & (index[-1] == 0)

    def load(self, stmt, target, values: dict, rows: int) -> list[Record]:
        value = stmt.value
        cond = None
        if isinstance(value, Select) and _is_zero(value.otherwise):
            cond, value = value.cond, value.then
        while isinstance(value, Cast):
            value = value.value
        if not isinstance(value, TensorRead):
            raise ScheduleError(f"the copy {stmt.name} into '{target.name}' computes "
                                f"{stmt.value}: a DMA load only copies (or pads with 0)")
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        hull = _box_hull(self._entries(stmt.target, sub, n)[1][:-2], sub)
        exact = [(sub, n)]
        for sub, n in ([(hull, len(next(iter(hull.values()))))] if hull else []) + exact:
            _, dst_index, dst_shape = self._entries(stmt.target, sub, n)
            source, src_index, src_shape = self._entries(value, sub, n)
            copied = np.ones(n, bool) if cond is None else \
                expr_value(cond, sub, n).astype(bool)
            if sub is exact[0][0] or _in_bounds(src_index, src_shape, copied) and len(
                    np.unique(np.stack(dst_index[:-2], 1), axis=0)) == n:
                break  # the hull's entries are distinct and read inside the source
        if src_shape[-2:] != dst_shape[-2:]:
            raise ScheduleError(f"'{source.name}' has entries {src_shape[-2:]} but "
                                f"'{target.name}' {dst_shape[-2:]}: pack it in the device layout")
        dst = self.entry(target.name, _leading(dst_index, dst_shape))
        src = np.where(copied, _leading(src_index, src_shape), -1)
        grid = [i for i in dst_index[:-2]]
        if target.scope == "acc":
            self._hold(dst, target.name)
        return [self._load_record(target.scope, source.name, piece)
                for piece in _dma_pieces(dst, src, grid)]

    def _load_record(self, buffer: str, dram: str, piece) -> Record:
        sram, offset, rows, cols, stride, pad = piece
        ins = Load(buffer, dram, offset, sram=sram, rows=rows, cols=cols, stride=stride,
                   pad=pad)
        written = ins.sram + np.arange(ins.height * ins.width)
        queue = ins.queue
        return Record(queue, writes={buffer: written},
                      make=lambda tokens, ins=ins: _with_tokens(ins, tokens), what=str(ins))

    def store(self, stmt, target, values: dict, rows: int) -> list[Record]:
        branches = _store_branches(stmt.value)
        if target.dtype != "int8" or branches is None:
            raise ScheduleError(f"the store {stmt.name} into '{target.name}' computes "
                                f"{stmt.value}: a STORE narrows accumulators to int8 "
                                "(.astype('int8')), or one of several by an index condition "
                                "(if_then_else); do the rest in ALU stages")
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        _, dst_index, dst_shape = self._entries(stmt.target, sub, n)
        dst_all = _leading(dst_index, dst_shape)
        src, dst = [], []
        for conditions, read in branches:
            taken = np.ones(n, bool)
            for cond, wanted in conditions:
                taken &= expr_value(cond, sub, n).astype(bool) == wanted
            if not taken.any():
                continue
            part = {k: v[taken] for k, v in sub.items()}
            source, src_index, src_shape = self._entries(read, part, int(taken.sum()))
            src.append(self.entry(source.name, _leading(src_index, src_shape)))
            self._expect(src[-1], source.name, f"the store {stmt.name}")
            dst.append(dst_all[taken])
        out = []
        for sram, offset, rows_, cols, stride in _strided_runs(np.concatenate(src),
                                                                np.concatenate(dst)):
            ins = Store(target.name, offset, sram=sram, rows=rows_, cols=cols, stride=stride)
            out.append(Record("store", reads={"acc": sram + np.arange(rows_ * cols)},
                              make=lambda tokens, ins=ins: _with_tokens(ins, tokens),
                              what=str(ins)))
        return out

    def reset(self, stmt, target, values: dict, rows: int) -> list[Record]:
        if not _is_zero(stmt.value):
            raise ScheduleError(f"{stmt.name} sets '{target.name}' to {stmt.value}; the "
                                "accumulators can only be reset to 0")
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        _, index, shape = self._entries(stmt.target, sub, int(origin.sum()))
        dst = self.entry(target.name, _leading(index, shape))
        self._hold(dst, target.name)
        triples = np.stack([dst, np.zeros_like(dst), np.zeros_like(dst)], 1)
        return self._micro(triples, sub, lambda begin, end, loops: Gemm(
            begin, end, reset=True, **loops), {}, {"acc": dst})

    def gemm(self, stmt, values: dict, rows: int) -> list[Record]:
        reads = _reads(stmt.value)
        acc_read = [r for r in reads if self.program.array_of(r.tensor).scope == "acc"]
        inp = [r for r in reads if self.program.array_of(r.tensor).scope == "inp"]
        wgt = [r for r in reads if self.program.array_of(r.tensor).scope == "wgt"]
        if not (acc_read and inp and wgt):
            raise ScheduleError(f"the tensorized {stmt.name} must accumulate in 'acc' from "
                                "'inp' and 'wgt' buffers (cache_read its operands there and "
                                "set_scope('acc') its stage)")
        entries = []
        for read in (stmt.target, inp[0], wgt[0]):
            array, index, shape = self._entries(read, values, rows)
            entries.append(self.entry(array.name, _leading(index, shape)))
        triples = np.stack(entries, 1)
        self._hold(entries[0], self.program.array_of(stmt.target.tensor).name)
        return self._micro(triples, values, lambda begin, end, loops: Gemm(
            begin, end, **loops), {"acc": entries[0], "inp": entries[1],
                                   "wgt": entries[2]}, {"acc": entries[0]}, gemm=True)

    def alu(self, stmt, target, values: dict, rows: int) -> list[Record]:
        ops = _alu_ops(stmt.value)
        if ops is None:
            raise ScheduleError(
                f"{stmt.name} computes {stmt.value} in 'acc': the ALU applies x // 2**s, "
                "minimum/maximum with a constant, + or * a constant or another "
                "accumulator tile, in place of the accumulators it reads")
        origin = self._at_entry_origin(stmt, values, rows)
        sub = {k: v[origin] for k, v in values.items()}
        n = int(origin.sum())
        _, index, shape = self._entries(stmt.target, sub, n)
        dst = self.entry(target.name, _leading(index, shape))
        first = self.program.array_of(_alu_source(stmt.value).tensor).name
        self._expect(dst, first, stmt.name)
        out = []
        for op, operand in ops:
            if isinstance(operand, TensorRead):
                array, src_index, src_shape = self._entries(operand, sub, n)
                src, imm = self.entry(array.name, _leading(src_index, src_shape)), None
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
                raise ScheduleError(
                    f"one instruction needs {len(key)} micro-ops, the micro-op buffer "
                    f"holds {capacity}: tile the loops inside the accumulator stage smaller")
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


def _reads(expr) -> list[TensorRead]:
    out = []

    def visit(e):
        if isinstance(e, TensorRead):
            out.append(e)
            return
        for child in _children(e):
            visit(child)
    visit(expr)
    return out


def _children(e):
    if isinstance(e, BinOp):
        return (e.a, e.b)
    if isinstance(e, Cast):
        return (e.value,)
    if isinstance(e, Call):
        return e.args
    if isinstance(e, Select):
        return (e.cond, e.then, e.otherwise)
    return tuple(getattr(e, "args", ())) + tuple(
        x for x in (getattr(e, "a", None), getattr(e, "b", None)) if x is not None)


def _is_zero(e) -> bool:
    while isinstance(e, Cast):
        e = e.value
    return isinstance(e, Const) and e.value == 0


def _store_branches(e, conditions=()):
    """``[(conditions, read)]`` of a store's value: a plain copy, or copies chosen by
    index conditions (``if_then_else(p == 0, A[...], B[...])``: byte planes); each
    condition is ``(expr, True/False)``.  None when it computes anything else."""
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, TensorRead):
        return [(conditions, e)]
    if isinstance(e, Select) and not _reads(e.cond):
        then = _store_branches(e.then, conditions + ((e.cond, True),))
        other = _store_branches(e.otherwise, conditions + ((e.cond, False),))
        return None if then is None or other is None else then + other
    return None


def _const(e):
    while isinstance(e, Cast):
        e = e.value
    return int(e.value) if isinstance(e, Const) and isinstance(e.value, (int, np.integer)) \
        else None


def _alu_source(expr):
    """The accumulator read an elementwise expression is computed in place of (its
    innermost first operand), or None when it is not an ALU chain."""
    ops = _alu_ops(expr, source_only=True)
    return ops


def _alu_ops(expr, source_only: bool = False):
    """``[(op, imm or TensorRead)]`` applying ``expr`` in place of its first operand
    (or, with ``source_only``, that operand), or None when the ALU cannot compute it."""
    while isinstance(expr, Cast):
        expr = expr.value
    if isinstance(expr, TensorRead):
        return expr if source_only else []
    head, op, operand = None, None, None
    if isinstance(expr, BinOp) and expr.op in ("+", "*", "//"):
        head, other = expr.a, expr.b
        value = _const(other)
        if expr.op == "//":
            if value is None or value <= 0 or value & (value - 1):
                return None
            op, operand = "shr", value.bit_length() - 1
        elif value is not None:
            op, operand = {"+": "add", "*": "mul"}[expr.op], value
        elif expr.op == "+" and isinstance(other, TensorRead):
            op, operand = "add", other
        else:
            return None
    elif isinstance(expr, Call) and expr.func in ("maximum", "minimum"):
        a, b = expr.args
        if _const(b) is None:
            a, b = b, a
        if _const(b) is None:
            return None
        head, op, operand = a, {"maximum": "max", "minimum": "min"}[expr.func], _const(b)
    else:
        return None
    inner = _alu_ops(head, source_only)
    if inner is None or source_only:
        return inner
    if op == "max" and inner and inner[-1][0] == "min" and operand <= inner[-1][1]:
        return inner[:-1] + [("clip", (operand, inner[-1][1]))]
    return inner + [(op, operand)]


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


def _strided_runs(src: np.ndarray, dst: np.ndarray):
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


def _dma_pieces(dst: np.ndarray, src: np.ndarray, grid: list):
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
    for sram, offset, rows, cols, stride in _strided_runs(dst[copied], src[copied]):
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


def _box_hull(lead: list, values: dict) -> dict | None:
    """The copy's values extended to the box hull of the buffer entries it writes
    (``lead``: their leading indices), when its footprint is not a dense box but every
    variable is an affine function of those indices (a strided convolution's input:
    every other row and column).  Loading the box is one rectangle per DMA instead of
    one LOAD per entry; the buffer holds the box already (it is the footprint's hull).
    None when the footprint is a box or the variables are not affine in it.

    >>> _box_hull([np.array([0, 0, 2, 2]), np.array([0, 2, 0, 2])],
    ...           {"y": np.array([0, 0, 2, 2]), "x": np.array([4, 6, 4, 6])})["x"]
    array([4, 5, 6, 4, 5, 6, 4, 5, 6])
    >>> _box_hull([np.array([0, 2, 3])], {"y": np.array([0, 4, 9])}) is None  # not affine
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


def _in_bounds(index: list, shape: tuple, copied: np.ndarray) -> bool:
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


def thread_copies(func) -> dict[str, tuple[str, int]]:
    """For each device array computed inside a virtual-thread loop, that loop's AST
    variable and trip count (each iteration gets its own copy)."""
    loops = {}
    for node in walk(func.body):
        if isinstance(node, For) and node.kind == "vthread":
            low, trips = loop_values(node, {}, 1)
            loops[node.var] = int(trips[0])
    result = {}
    for footprint in func.footprints:
        for name in footprint.loops:
            var = sanitize(name)
            if var in loops:
                result[footprint.array] = (var, loops[var])
    return result
