"""Serial loops of the emitted function and the hints on their ``!llvm.loop`` IDs.

The mixin :class:`LoopEmitter` of :class:`.codegen.FunctionEmitter` emits a loop with a
header, a body and an exit block; a full tile counts from 0 (LLVM then knows its trip
count).  Its latch carries the schedule's decision for LLVM: vectorize (predicated in a
partial tile), do not unroll a short vector loop, unroll a long unrolled one by
:data:`UNROLL_LEFTOVER`, never vectorize a loop around scheduled SIMD code
(``passes.SCHEDULED_CODE``) unless the ``row_streams`` pass allows it, and the parallel
accesses of the loops the ``parallel_accesses`` pass found independent.

>>> from polyopt.ast.nodes import For, Int, Name, Op
>>> loop = For("i", Int(0), Op("lt", (Name("i"), Int(16))), 1, None, "vectorized")
>>> LoopEmitter._loop_hints(loop, 16)
(('llvm.loop.vectorize.enable', 1), ('llvm.loop.unroll.disable', 1))
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import For, Node, linear_form, loops, runs
from ...ast.tiles import constant_trips
from .access_groups import access_group, parallel_accesses
from .passes import INDEPENDENT, ROW_STREAM, SCHEDULED_CODE
from .values import I1, I64, ir_name

LOOP_HINTS = {"vectorized": "llvm.loop.vectorize.enable", "unrolled": "llvm.loop.unroll.full"}
# vectorized loops of at most this many iterations are not unrolled by LLVM (see
# _loop_hints); longer ones need its unrolling (a 28-column row of a 3x3 layer ran 10
# times slower without).  Those longer than one vector of the target (16 float32 with
# AVX-512, 8 with AVX2) are vectorized as one wide vector, which LLVM splits into
# registers (left a loop of two vectors, the 16 columns of the matmul template's
# register tile kept their sums in memory on AVX2: 7 GFLOP/s; unrolled by LLVM before
# it vectorized, they were rebuilt from scalars with shuffles: 14 GFLOP/s)
SHORT_VECTOR_LOOP = 16
# a loop marked unrolled that is too long to copy (passes.UNROLL_LIMIT): LLVM unrolls
# it by this factor
UNROLL_LEFTOVER = 4


class LoopEmitter:
    """Serial loops of a :class:`.codegen.FunctionEmitter`."""

    def _serial_loop(self, loop: For, start: ir.Value, last: ir.Value | None = None,
                     trips: int | None = None) -> None:
        """The loop from ``start`` while its condition holds (or up to ``last``).

        A loop whose bound is its start plus a constant (a full tile) counts from 0 to
        that constant, its variable being ``start + count``: LLVM then knows the trip
        count even where it cannot bound the start (in an outlined parallel body)."""
        b = self.builder
        if trips is None and last is None:
            trips = constant_trips(loop)
        preheader = b.block
        header = b.append_basic_block(ir_name(f"{loop.var}.header"))
        body = b.append_basic_block(ir_name(f"{loop.var}.body"))
        exit_block = b.append_basic_block(ir_name(f"{loop.var}.exit"))
        b.branch(header)
        b.position_at_end(header)
        if trips is None:
            iv = counter = b.phi(I64, name=ir_name(loop.var))
            iv.add_incoming(start, preheader)
            self.scalars[loop.var] = iv
            cond = self._index(loop.cond) if last is None else b.icmp_signed("<=", iv, last)
        else:
            counter = b.phi(I64, name=ir_name(f"{loop.var}.count"))
            counter.add_incoming(ir.Constant(I64, 0), preheader)
            cond = b.icmp_signed("<", counter, ir.Constant(I64, trips))
        b.cbranch(cond, body, exit_block)
        b.position_at_end(body)
        if trips is not None:
            iv = b.add(start, b.mul(counter, ir.Constant(I64, loop.step), flags=("nsw",)),
                       flags=("nsw",), name=ir_name(loop.var))
            self.scalars[loop.var] = iv
            self.counters[loop.var] = (counter, linear_form(loop.init), loop.step)
        group = self._access_group(loop)
        if group is not None:
            self.access_groups.append(group)
        self._node(loop.body)
        if group is not None:
            self.access_groups.pop()
        self.counters.pop(loop.var, None)
        step = b.add(counter, ir.Constant(I64, 1 if trips is not None else loop.step),
                     flags=("nsw",))
        counter.add_incoming(step, b.block)
        latch = b.branch(header)
        hints = self._loop_hints(loop, trips, guarded=self._guards_reads(loop),
                                 short=self.short_vector_loop, rows=ROW_STREAM in loop.hints)
        if hints:
            extra = () if group is None else (parallel_accesses(self.module, group),)
            latch.set_metadata("llvm.loop", self._loop_metadata(loop, hints, extra))
        b.position_at_end(exit_block)
        del self.scalars[loop.var]

    def _access_group(self, loop: For):
        """A new access group for a loop the ``parallel_accesses`` pass found to have
        independent iterations (see :mod:`.access_groups`); None otherwise."""
        return access_group(self.module) if INDEPENDENT in loop.hints else None

    def _guards_reads(self, loop: For) -> bool:
        """Whether a statement in ``loop`` reads under a condition (``if_then_else``)."""
        return loop.kind == "vectorized" and any(
            self._branches(self.program.statement(run.stmt)) for run in runs(loop.body))

    @staticmethod
    def _loop_hints(loop: For, trips: int | None, *, guarded: bool = False, short: int = 16,
                    rows: bool = False) -> tuple[tuple[str, int], ...]:
        """The hints ``(name, 0 or 1)`` for ``loop``'s ID (none: it gets no ID);
        ``trips``: its constant trip count, None in a partial tile; ``guarded``: the loop
        reads under conditions (a zero padding); ``short``: the iterations of one vector
        of the target (a longer vectorized loop up to ``SHORT_VECTOR_LOOP``: one wider
        vector); ``rows``: LLVM may vectorize it around unrolled code (the
        ``row_streams`` pass, :func:`.row_streams.walks_rows`)."""
        if loop.kind == "vectorized" and trips is None:
            # a partial tile: masked vector operations instead of a scalar remainder
            return (LOOP_HINTS[loop.kind], 1), ("llvm.loop.vectorize.predicate.enable", 1)
        if loop.kind == "vectorized" and trips <= SHORT_VECTOR_LOOP and not guarded:
            # vectorized, not first unrolled into scalars: LLVM did so to the 8 copies
            # of a 16-lane loop in a register tile of 8 rows x 1 vector, then rebuilt
            # their vectors from pieces of each other's loads with shuffles, and stored
            # the sums on every step of the reduction around them
            # (not when it reads under conditions: LLVM then gathered and scattered
            # consecutive elements, where unrolled the conditions fold away: a padding
            # copy 5x faster)
            hints = (LOOP_HINTS[loop.kind], 1), ("llvm.loop.unroll.disable", 1)
            if trips > short:  # several of the target's vectors: one wide vector
                hints += (("llvm.loop.vectorize.width", 1 << (trips - 1).bit_length()),)
            if trips & (trips - 1):  # 14 columns: one masked vector, not 8 lanes + 6 scalars
                return (*hints, ("llvm.loop.vectorize.predicate.enable", 1))
            return hints
        if loop.kind == "unrolled":
            # marked unrolled but over UNROLL_LIMIT iterations (or not constant), so not
            # copied by the unroll pass: LLVM unrolls it as far as its own limits allow
            # (forced to unroll fully, a 128-trip loop around a register tile took
            # minutes to compile)
            return (("llvm.loop.unroll.count", UNROLL_LEFTOVER),)
        if loop.kind in LOOP_HINTS:
            return ((LOOP_HINTS[loop.kind], 1),)
        if loop.kind in ("serial", "parallel") and _has_loop(loop.body, SCHEDULED_CODE) \
                and not rows:  # (rows jammed around a stride-1 loop: see row_streams)
            # SIMD goes where the schedule says: LLVM must not vectorize an enclosing
            # loop instead (e.g. a reduction loop around a register tile, the parallel
            # loop around a short vectorized one, or a copy loop around unrolled scalar
            # moves), which it does with gathers
            return (("llvm.loop.vectorize.enable", 0),)
        return ()

    def _loop_metadata(self, loop: For, hints, extra=()):
        """A distinct ``!llvm.loop`` node with ``hints`` (vectorize, fully unroll, do not
        vectorize...), ``extra`` properties (parallel accesses) and a marker naming the
        loop (see :mod:`.remarks`)."""
        m = self.module
        self._loop_ids = getattr(self, "_loop_ids", 0) + 1
        nodes = [m.add_metadata([ir.MetaDataString(m, name), ir.Constant(
                    ir.IntType(32) if name.endswith((".count", ".width")) else I1, value)])
                 for name, value in hints] + list(extra)
        unique = m.add_metadata([ir.MetaDataString(m, "polyopt.loop"),
                                 ir.Constant(ir.IntType(32), self._loop_ids),
                                 ir.MetaDataString(m, loop.var)])
        node = m.add_metadata(nodes + [unique])
        node.operands = (node,) + tuple(node.operands)  # loop IDs refer to themselves
        return node


def _has_loop(node: Node, kinds: frozenset[str]) -> bool:
    """Whether ``node`` holds a loop of one of ``kinds``."""
    return any(loop.kind in kinds for loop in loops(node))


