"""Translate a :class:`LoweredFunc` into an LLVM IR module.

The function is ``i32 name(ptr noalias A, ..., i64 param, ...)``: one pointer per
array argument (in argument order), then every program parameter; it returns 0, or
1 when a temporary buffer cannot be allocated.  Arrays are dense row-major; the
strides are computed once on entry.

Temporaries (already contracted to their footprint, see :mod:`polyopt.ast.storage`)
are allocated once per call: small ones of constant size on the stack (``alloca``, so
LLVM may keep a register tile in registers), others with ``aligned_alloc``, freed on
every path.  A temporary private to the iterations of a parallel loop gets one buffer
per thread, allocated in the outlined loop body.

What to unroll, outline, widen or emit as a transposed copy, which loops have
independent iterations or stream rows, which accumulations may be reassociated and
which vector math functions calls go to was decided by the LLVM target's lowering
passes (:mod:`.passes`), recorded in the loop AST (:class:`~polyopt.ast.nodes.Unrolled`,
:class:`~polyopt.ast.nodes.Outlined`, ``For.hints``, ``Run.reassociate``...) and in
``func.decisions``; the emitter follows it, so it takes a function lowered with
``target="llvm"``.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
>>> ir_text = str(module_for(po.lower(po.create_schedule(B), [A, B], target="llvm")))
>>> 'define i32 @"B_kernel"(ptr noalias' in ir_text
True
"""

from __future__ import annotations

import contextlib

from llvmlite import ir

from ...ast.intrinsic_calls import IntrinsicCall
from ...ast.nodes import (Block, For, If, Intrinsic, Node, Outlined, Run, Unrolled, Widened,
                          upper_bound)
from ...errors import InternalError, InvalidArgumentError
from ...machine import TargetInfo
from ...te.expr import Expr, IterVar, Select, Var
from ...te.tensor import walk
from ..accumulate import reassociable
from .access_groups import tag
from .indices import IndexEmitter
from .intrinsics import emit_intrinsic_call
from .serial_loops import LoopEmitter
from .memory import FlushingBuilder, MemoryAccess
from .outline import emit_top_level
from .parallel import emit_parallel_for, emit_session, runs_several_regions
from .temporaries import Temporaries
from .transpose import emit_transposed_copy
from .values import I64, ValueEmitter, ir_name, llvm_type
from .vecmath import attach_vector_math

# the target's own code sequences (see the ``transposed_copies`` pass)
INTRINSICS = {"transposed_copy": emit_transposed_copy}


def module_for(func, *, num_threads: int = 0, parallel_min_work: int | None = None,
               target_info: TargetInfo | None = None) -> ir.Module:
    """The LLVM module holding ``func`` compiled to one function of the same name
    (``num_threads`` for parallel loops; 0 means ``OMP_NUM_THREADS`` or all cores;
    ``parallel_min_work``: see :func:`.parallel.runs_on_threads`) for the machine
    ``target_info`` (its vector width decides which vectorized loops LLVM unrolls; the
    host by default).  ``func`` comes from ``po.lower(..., target="llvm")``."""
    if "widen_partial_tiles" not in func.passes:
        raise InvalidArgumentError(
            f"{func.name} was not lowered for LLVM (its passes: {', '.join(func.passes)}); "
            "lower it with po.lower(s, args, target='llvm')")
    info = TargetInfo.host() if target_info is None else target_info
    module = FunctionEmitter(func, num_threads, parallel_min_work,
                             short_vector_loop=info.lanes("float32")).module
    attach_vector_math(module, func.decision("vector_math"))  # the pass's choice
    return module


class FunctionEmitter(MemoryAccess, Temporaries, LoopEmitter, IndexEmitter):
    """One function's code: the loop AST walked in order; memory (:mod:`.memory`),
    temporaries (:mod:`.temporaries`), loops (:mod:`.serial_loops`) and index arithmetic
    (:mod:`.indices`) come from the mixins."""

    def __init__(self, func, num_threads: int = 0, parallel_min_work: int | None = None,
                 short_vector_loop: int = 16):
        self.func = func
        self.short_vector_loop = short_vector_loop  # see serial_loops._loop_hints
        self.num_threads = num_threads
        self.parallel_min_work = parallel_min_work
        self.guard = None  # in a widened loop: (its variable, how many iterations are real)
        self.counters: dict = {}  # loops counting from 0: var -> (count, start, step)
        self.access_groups: list = []  # of the enclosing loops with independent iterations
        self.program = func.program
        self.module = ir.Module(name=func.name)
        arrays, params = func.arrays, self.program.params
        fn_type = ir.FunctionType(ir.IntType(32), [ir.PointerType()] * len(arrays)
                                  + [I64] * len(params))
        self.fn = ir.Function(self.module, fn_type, name=func.name)
        self.builder = self.new_builder(self.fn.append_basic_block("entry"))
        self.values = self.new_values(self.builder)
        self._pending: dict[str, dict[int, tuple]] = {}  # see _store
        self._unrolling = 0  # depth of unrolled loops being copied
        self._known_in: tuple[int, dict[str, dict[int, ir.Value]]] = (0, {})  # see _read
        self.scalars: dict[object, ir.Value] = {}
        self._used: dict[str, frozenset[int]] = {}
        self._selects: dict[str, bool] = {}
        self._addresses: dict[tuple, ir.Value] = {}  # see _address
        self._leaves: dict[int, tuple] = {}          # see _value_key
        self._indices: dict[tuple, ir.Value] = {}    # see _index
        for param, arg in zip(params, self.fn.args[len(arrays):]):
            arg.name = ir_name(param.name)
            self.scalars[param.name] = arg
        self.pointers: dict[str, ir.Value] = {}
        for array, arg in zip(arrays, self.fn.args):
            arg.name = ir_name(array.name)
            arg.add_attribute("noalias")
            self.pointers[array.name] = arg
        self.strides = {a.name: self._strides(a) for a in self.program.arrays}
        self._emit_body()

    def new_builder(self, block: ir.Block) -> ir.IRBuilder:
        """A builder at ``block`` that writes the waiting stores before ending a block."""
        return FlushingBuilder(block, self._write_pending)

    def new_values(self, builder: ir.IRBuilder) -> ValueEmitter:
        """The statement emitter, reading and tagging memory through this emitter."""
        values = ValueEmitter(builder, self.module, self._scalar, self._address)
        values.tag = self._tag
        values.read = self._read
        return values

    # -- values the statement emitter asks for -------------------------------------
    def _scalar(self, expr: Expr) -> ir.Value:
        key = expr.name if isinstance(expr, Var) else id(expr)
        try:
            return self.scalars[key]
        except KeyError:
            raise InternalError(f"'{expr}' has no value in generated code") from None

    def _tag(self, access: ir.Instruction) -> None:
        """Put a load or store into the access groups of the enclosing loops; not in a
        widened loop, whose extra iterations the dependence test does not cover."""
        if self.guard is None:
            tag(access, self.access_groups, self.module)

    # -- function body ---------------------------------------------------------------
    def _emit_body(self) -> None:
        b = self.builder
        with b.goto_entry_block():
            self.status = b.alloca(ir.IntType(32), name="status")
        self.status.type = ir.PointerType()
        b.store(ir.Constant(ir.IntType(32), 0), self.status)
        # a private temporary used only in parallel regions needs no buffer here
        private = {t.name for t in self._private()}
        needed = {t.name for t in self._private(self._statements_outside_threads(
            self.func.body))}
        heap, failed = self.allocate_temps([t for t in self.func.temps
                                            if t.name not in private or t.name in needed])
        run_block = b.append_basic_block("run")
        fail_block = b.append_basic_block("out_of_memory")
        b.cbranch(failed, fail_block, run_block)
        b.position_at_end(fail_block)
        self.free(heap)
        b.ret(ir.Constant(ir.IntType(32), 1))
        b.position_at_end(run_block)
        session = self.num_threads != 1 and runs_several_regions(self.func.body,
                                                                 self.parallel_min_work)
        if session:
            emit_session(b, self.module, "begin")
        emit_top_level(self, self.func.body)
        self._write_pending()
        if session:
            emit_session(b, self.module, "end")
        self.free(heap)
        b.ret(b.load(self.status, typ=ir.IntType(32)))

    def _node(self, node: Node) -> None:
        if not isinstance(node, (Block, Run, Unrolled, Intrinsic)):
            self._write_pending()  # a loop or a branch: its blocks must see memory
        if isinstance(node, Block):
            for item in node.items:
                self._node(item)
        elif isinstance(node, For):
            self._serial_loop(node, self._index(node.init))
        elif isinstance(node, If):
            self._if(node)
        elif isinstance(node, IntrinsicCall):  # a tensorized sub-nest
            emit_intrinsic_call(self, node)
        elif isinstance(node, Run):
            self._run(node)
        elif isinstance(node, Unrolled):
            self._unrolled(node)
        elif isinstance(node, Widened):
            self._widened(node)
        elif isinstance(node, Outlined):
            emit_parallel_for(self, node, self.num_threads, self.parallel_min_work)
            self._known_in = (0, {})  # the threads wrote memory: nothing is known
        elif isinstance(node, Intrinsic) and node.name in INTRINSICS:
            INTRINSICS[node.name](self, node.body)
        else:
            raise InternalError(f"unknown AST node {node!r}")

    def _widened(self, node: Widened) -> None:
        """A partial vectorized loop run over the whole tile with conditional stores
        (see :func:`polyopt.ast.tiles.can_widen`), when it has a real iteration."""
        loop = node.loop
        b = self.builder
        start = self._index(loop.init)
        limit, exclusive = upper_bound(loop)
        count = b.sub(self._index(limit), start, flags=("nsw",))  # real iterations
        if not exclusive:
            count = b.add(count, ir.Constant(I64, 1), flags=("nsw",))
        run_block, join = b.append_basic_block("widened"), b.append_basic_block("widened.end")
        b.cbranch(b.icmp_signed(">", count, ir.Constant(I64, 0)), run_block, join)
        b.position_at_end(run_block)
        self.guard = (loop.var, count)  # iteration number < count: a real one
        self._serial_loop(loop, start, trips=node.trips)
        self.guard = None
        b.branch(join)
        b.position_at_end(join)

    def _unrolled(self, node: Unrolled) -> None:
        """``node``'s loop as copies of its body, one per iteration; in a partial tile
        (``guarded``), its condition guards each copy."""
        loop, trips, guarded = node.loop, node.trips, node.guarded
        start = self._index(loop.init)
        self._unrolling += 1
        for copy in range(trips):
            iv = self._plus(start, copy * loop.step)
            self.scalars[loop.var] = iv
            if guarded:
                self._write_pending()
                self._if(If(loop.cond, loop.body))
            else:
                self._node(loop.body)
        self.scalars.pop(loop.var, None)
        self._unrolling -= 1
        if not self._unrolling:
            self._write_pending()

    def _if(self, node: If) -> None:
        b = self.builder
        then_block = b.append_basic_block("if.then")
        else_block = b.append_basic_block("if.else")
        join = b.append_basic_block("if.end")
        b.cbranch(self._index(node.cond), then_block, else_block)
        b.position_at_end(then_block)
        self._node(node.then)
        b.branch(join)
        b.position_at_end(else_block)
        if node.otherwise is not None:
            self._node(node.otherwise)
        b.branch(join)
        b.position_at_end(join)

    @contextlib.contextmanager
    def bound(self, run: Run):
        """``run``'s statement, the index variables it uses bound to ``run``'s values
        meanwhile (a flat offset may replace the statement's own indices)."""
        stmt = self.program.statement(run.stmt)
        used = self._used_vars(stmt)
        bound = []
        for axis, arg in zip(stmt.index_vars, run.args):
            if id(axis) in used:
                self.scalars[id(axis)] = self._index(arg)
                bound.append(axis)
        try:
            yield stmt
        finally:
            for axis in bound:
                del self.scalars[id(axis)]

    def _run(self, run: Run) -> None:
        with self.bound(run) as stmt:
            self._emit_statement(stmt, run.reassociate)

    def _emit_statement(self, stmt, reassociate: bool = False) -> None:
        # (the ``reassociate`` pass decided which accumulations LLVM may reorder)
        self.values.reduction = reassociable(stmt) if reassociate else None
        if self._branches(stmt):
            self._write_pending()
        value = self.values.emit(stmt.value, stmt.target.dtype)
        address = self._address(stmt.target)
        if self.guard is not None:  # a widened loop: keep the old value outside the range
            self._write_pending()
            old = self.builder.load(address, typ=llvm_type(stmt.target.dtype))
            var, count = self.guard
            real = self.builder.icmp_signed("<", self.counters[var][0], count)
            value = self.builder.select(real, value, old)
        self._store(stmt.target, value, address)

    def _branches(self, stmt) -> bool:
        """Whether emitting ``stmt``'s value branches (a select guards its reads)."""
        if stmt.name not in self._selects:
            self._selects[stmt.name] = any(isinstance(n, Select) for n in walk(stmt.value))
        return self._selects[stmt.name]

    def _used_vars(self, stmt) -> frozenset[int]:
        """The ids of the index variables ``stmt``'s target and value use."""
        if stmt.name not in self._used:
            self._used[stmt.name] = frozenset(
                id(node) for root in (stmt.target, stmt.value) for node in walk(root)
                if isinstance(node, IterVar))
        return self._used[stmt.name]
