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

What to unroll, outline, widen or emit as a transposed copy was decided by the LLVM
target's lowering passes (:mod:`.passes`), recorded in the loop AST
(:class:`~polyopt.ast.nodes.Unrolled`, :class:`~polyopt.ast.nodes.Outlined`...); the
emitter follows it, so it takes a function lowered with ``target="llvm"``.

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

from ...ast.nodes import (Block, For, If, IndexExpr, Int, Intrinsic, Name, Node, Op, Outlined,
                          Run, Unrolled, Widened, Wrapped, linear_form, loops, names_in,
                          offset_in_loop, runs, upper_bound)
from ...ast.tiles import constant_trips
from ...domain.program import Array
from ...errors import InternalError, InvalidArgumentError
from ...te.expr import Const, Expr, IterVar, Select, TensorRead, Var
from ...te.tensor import walk
from ..accumulate import combination, reassociable
from .access_groups import access_group, has_independent_iterations, parallel_accesses, tag
from .outline import emit_top_level
from .parallel import emit_parallel_for, emit_session, runs_several_regions
from .transpose import emit_transposed_copy
from .intrinsics import emit_intrinsic_call
from ...ast.intrinsic_calls import IntrinsicCall
from .row_streams import reduces_innermost, walks_rows
from .values import I1, I64, ValueEmitter, intrinsic, ir_name, llvm_type, vector_suffix

ALIGNMENT = 64
LOOP_HINTS = {"vectorized": "llvm.loop.vectorize.enable", "unrolled": "llvm.loop.unroll.full"}
# loops whose code the schedule decided (SIMD here, straight-line scalar code there):
# LLVM must not vectorize a loop around them
SCHEDULED_CODE = frozenset({"vectorized", "unrolled"})
# vectorized loops of at most one vector of 32-bit lanes (16 with AVX-512, 8 with AVX2:
# the machine's ``vector_bits // 32``) are not unrolled by LLVM (see _loop_hints); longer
# ones need its unrolling (a 28-column row of a 3x3 layer ran 10 times slower without; a
# 16-column loop of a register tile not unrolled with AVX2 kept the tile in memory:
# matmul template 512^3 on one Zen 3 core 4-6 -> 9-24 GFLOP/s, a busy machine)
SHORT_VECTOR_LOOP = 16  # AVX-512's, when no machine is named
# a loop marked unrolled that is too long to copy (passes.UNROLL_LIMIT): LLVM unrolls
# it by this factor
UNROLL_LEFTOVER = 4
# the target's own code sequences (see the ``transposed_copies`` pass)
INTRINSICS = {"transposed_copy": emit_transposed_copy}
STACK_LIMIT = 32 << 10  # constant-size temporaries up to this size live on the stack
STACK_BUDGET = 512 << 10  # of all of one function's (the rest go to the heap: a chain
                          # of 500 64x64 temporaries would overflow an 8 MiB stack)
HUGE_PAGE = 2 << 20
HUGE_THRESHOLD = 4 << 20
MADV_HUGEPAGE = 14  # Linux


def module_for(func, *, num_threads: int = 0, parallel_min_work: int | None = None,
               vector_bits: int = 32 * SHORT_VECTOR_LOOP) -> ir.Module:
    """The LLVM module holding ``func`` compiled to one function of the same name
    (``num_threads`` for parallel loops; 0 means ``OMP_NUM_THREADS`` or all cores;
    ``parallel_min_work``: see :func:`.parallel.runs_on_threads`; ``vector_bits``: the
    width of the vectors of the CPU it is compiled for, ``TargetInfo.vector_bits``).
    ``func`` comes from ``po.lower(..., target="llvm")``."""
    if "widen_partial_tiles" not in func.passes:
        raise InvalidArgumentError(
            f"{func.name} was not lowered for LLVM (its passes: {', '.join(func.passes)}); "
            "lower it with po.lower(s, args, target='llvm')")
    return FunctionEmitter(func, num_threads, parallel_min_work,
                           short_vector_loop=max(1, vector_bits // 32)).module


class FunctionEmitter:
    def __init__(self, func, num_threads: int = 0, parallel_min_work: int | None = None,
                 short_vector_loop: int = SHORT_VECTOR_LOOP):
        self.func = func
        self.short_vector_loop = short_vector_loop  # see SHORT_VECTOR_LOOP
        self.num_threads = num_threads
        self.parallel_min_work = parallel_min_work
        self.guard = None  # in a widened loop: (its variable, how many iterations are real)
        self.counters: dict = {}  # loops counting from 0: var -> (count, start, step)
        self.access_groups: list = []  # of the enclosing loops with independent iterations
        self.independent: dict = {}  # see has_independent_iterations
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
        return _FlushingBuilder(block, self._write_pending)

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

    def _read(self, read: TensorRead) -> ir.Value:
        """The element's value: the value last stored to or loaded from the same address
        in this basic block, if no store to its array came between, else a load (LLVM
        would find the same, at a price, in a body unrolled into thousands of loads)."""
        address = self._address(read)
        array = self._array_name(read)
        known = self._known_values().setdefault(array, {})
        if id(address) in known:
            return known[id(address)]
        self._write_pending(array)
        value = known[id(address)] = self.values.load(read)
        return value

    def _store(self, target: TensorRead, value: ir.Value, address: ir.Value) -> None:
        """Store ``value``; what was known of ``target``'s array is forgotten (another
        address may be the same element), except this address.  In the copies of an
        unrolled loop the store waits: only the last value stored to an address is
        written, stores in the order of their last values (so that of two addresses
        that are the same element, the later store wins), before anything may read
        them (a load of the array at another address, a branch, a loop, the end of the
        copies)."""
        array = self._array_name(target)
        self._known_values()[array] = {id(address): value}
        if not self._unrolling:
            self._tag(self.builder.store(value, address))
            return
        pending = self._pending.setdefault(array, {})
        pending.pop(id(address), None)
        pending[id(address)] = (address, value)

    def load_vector(self, read: TensorRead, lanes: int, mask: ir.Value | None = None):
        """``lanes`` elements from ``read``'s address on, as one vector (only the lanes
        that ``mask`` sets are read, the others are zero)."""
        self._write_pending(self._array_name(read))
        vector = ir.VectorType(llvm_type(read.tensor.dtype), lanes)
        align = ir.Constant(ir.IntType(32), _itemsize(read.tensor.dtype))
        address = self._address(read)
        if mask is None:
            load = self.builder.load(address, typ=vector, align=align.constant)
        else:
            masked = intrinsic(self.module, f"llvm.masked.load.{vector_suffix(vector)}.p0",
                               vector, [address.type, align.type, mask.type, vector])
            load = self.builder.call(masked, [address, align, mask,
                                              ir.Constant(vector, None)])
        self._tag(load)
        return load

    def store_vector(self, target: TensorRead, value: ir.Value,
                     mask: ir.Value | None = None) -> None:
        """Store the vector ``value`` from ``target``'s address on (only the lanes that
        ``mask`` sets); nothing known of ``target``'s array is kept."""
        array = self._array_name(target)
        self._write_pending(array)
        self._known_values()[array] = {}
        align = ir.Constant(ir.IntType(32), _itemsize(target.tensor.dtype))
        address = self._address(target)
        if mask is None:
            store = self.builder.store(value, address, align=align.constant)
        else:
            masked = intrinsic(self.module, f"llvm.masked.store.{vector_suffix(value.type)}.p0",
                               ir.VoidType(), [value.type, address.type, align.type, mask.type])
            store = self.builder.call(masked, [value, address, align, mask])
        self._tag(store)

    def _write_pending(self, array: str | None = None) -> None:
        """Write the waiting stores (of ``array``, or all)."""
        for name in [array] if array is not None else list(self._pending):
            for address, value in self._pending.pop(name, {}).values():
                self._tag(self.builder.store(value, address))

    def _array_name(self, read: TensorRead) -> str:
        return self.program.array_of(read.tensor).name

    def _known_values(self) -> dict[str, dict[int, ir.Value]]:
        """Per array, the values known at addresses (by id) in the current block."""
        if self._known_in[0] != id(self.builder.block):
            self._known_in = (id(self.builder.block), {})
        return self._known_in[1]

    def _address(self, read: TensorRead) -> ir.Value:
        """The element's pointer; computed once per basic block for the same indices of
        the same values (the accumulator of an update, a weight read by every unrolled
        copy of a row), which keeps heavily unrolled bodies small for LLVM."""
        key = (id(self.builder.block), self._array_name(read), read.flat,
               tuple(self._value_key(index) for index in read.indices))
        if key not in self._addresses:
            self._addresses[key] = self._new_address(read)
        return self._addresses[key]

    def _value_key(self, expr: Expr) -> tuple:
        """``expr`` (by identity) with the values of the variables it reads."""
        if id(expr) not in self._leaves:
            self._leaves[id(expr)] = (expr, tuple(
                n for n in walk(expr) if isinstance(n, (IterVar, Var))))
        return (id(expr),) + tuple(_value_id(self._scalar(leaf))
                                   for leaf in self._leaves[id(expr)][1])

    def _new_address(self, read: TensorRead) -> ir.Value:
        array = self.program.array_of(read.tensor)
        offset = None
        strides = [None] if read.flat else self.strides[array.name]
        for index, stride in zip(read.indices, strides):
            term = self.values.emit(index, "int64")
            if stride is not None:
                term = self.builder.mul(term, stride, flags=("nsw",))
            offset = term if offset is None else self.builder.add(offset, term, flags=("nsw",))
        if offset is None:
            offset = ir.Constant(I64, 0)
        return self.builder.gep(self.pointers[array.name], [offset], inbounds=True,
                                source_etype=llvm_type(array.dtype))

    def _strides(self, array: Array) -> list[ir.Value | None]:
        """Row-major strides in elements; ``None`` stands for the innermost stride 1."""
        strides: list[ir.Value | None] = [None] * array.ndim
        running = None
        for dim in range(array.ndim - 1, -1, -1):
            strides[dim] = running
            extent = self.values.emit(array.shape[dim], "int64")
            if running is None:
                running = extent
            elif isinstance(running, ir.Constant) and isinstance(extent, ir.Constant):
                running = ir.Constant(I64, running.constant * extent.constant)  # stays constant
            else:
                running = self.builder.mul(running, extent, flags=("nsw",))
        return strides

    def _allocate(self, array: Array) -> ir.Value:
        """``aligned_alloc`` a temporary; large ones are 2 MiB aligned and advised to use
        transparent huge pages (as NumPy does), which saves most first-touch page faults."""
        b = self.builder
        alloc = intrinsic(self.module, "aligned_alloc", ir.PointerType(), [I64, I64])
        madvise = intrinsic(self.module, "madvise", ir.IntType(32),
                            [ir.PointerType(), I64, ir.IntType(32)])
        size = self._size_in_bytes(array)
        big = b.icmp_unsigned(">=", size, ir.Constant(I64, HUGE_THRESHOLD))
        huge_size = b.and_(b.add(size, ir.Constant(I64, HUGE_PAGE - 1)),
                           ir.Constant(I64, -HUGE_PAGE))
        size = b.select(big, huge_size, size)
        alignment = b.select(big, ir.Constant(I64, HUGE_PAGE), ir.Constant(I64, ALIGNMENT))
        pointer = b.call(alloc, [alignment, size])
        advised = b.select(big, size, ir.Constant(I64, 0))  # madvise of 0 bytes is a no-op
        b.call(madvise, [pointer, advised, ir.Constant(ir.IntType(32), MADV_HUGEPAGE)])
        return pointer

    def allocate_temps(self, temps) -> tuple[list[ir.Value], ir.Value]:
        """Point ``self.pointers`` at new buffers for ``temps``; returns the heap ones (to
        free) and an i1 that is true when one could not be allocated."""
        b = self.builder
        heap, failed = [], ir.Constant(I1, 0)
        for temp in temps:
            size = _constant_size(temp)
            stacked = self.__dict__.setdefault("_stack_bytes", {}).get(id(self.fn), 0)
            if size is not None and size <= STACK_LIMIT and stacked + size <= STACK_BUDGET:
                self._stack_bytes[id(self.fn)] = stacked + size
                with b.goto_entry_block():
                    slot = b.alloca(ir.ArrayType(ir.IntType(8), max(size, 1)),
                                    name=ir_name(f"{temp.name}.stack"))
                slot.align = ALIGNMENT
                slot.type = ir.PointerType()
                self.pointers[temp.name] = slot
                continue
            pointer = self._allocate(temp)
            self.pointers[temp.name] = pointer
            heap.append(pointer)
            failed = b.or_(failed, b.icmp_unsigned("==", pointer,
                                                   ir.Constant(ir.PointerType(), None)))
        return heap, failed

    def free(self, pointers: list[ir.Value]) -> None:
        free = intrinsic(self.module, "free", ir.VoidType(), [ir.PointerType()])
        for pointer in pointers:
            self.builder.call(free, [pointer])

    def _private(self, statements: set[str] | None = None) -> list[Array]:
        """The temporaries with one buffer per thread (that one of ``statements``
        accesses, when given)."""
        storage = self.func.storage
        result = []
        for temp in self.func.temps:
            footprint = storage.get(temp.name)
            if footprint is None or not footprint.private:
                continue
            if statements is None or any(a.array == temp.name for s in self.program.statements
                                         if s.name in statements for a in s.accesses):
                result.append(temp)
        return result

    def _statements_outside_threads(self, node: Node) -> set[str]:
        """Statements that run outside every loop outlined to a thread team (the private
        temporaries they use need a buffer in the function itself)."""
        if isinstance(node, Run):
            return {node.stmt}
        if isinstance(node, Outlined):
            return set()  # emit_parallel_for allocates its per-thread buffers
        if isinstance(node, Block):
            return set().union(*(self._statements_outside_threads(n) for n in node.items))
        if isinstance(node, If):
            other = set() if node.otherwise is None else \
                self._statements_outside_threads(node.otherwise)
            return self._statements_outside_threads(node.then) | other
        if isinstance(node, Wrapped):
            return self._statements_outside_threads(node.loop)
        return self._statements_outside_threads(node.body)  # For, Intrinsic

    def _size_in_bytes(self, array: Array) -> ir.Value:
        size = ir.Constant(I64, _itemsize(array.dtype))
        for extent in array.shape:
            size = self.builder.mul(size, self.values.emit(extent, "int64"), flags=("nsw",))
        rounded = self.builder.add(size, ir.Constant(I64, ALIGNMENT))  # never 0, room to round
        return self.builder.and_(rounded, ir.Constant(I64, -ALIGNMENT))

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

    def _plus(self, start: ir.Value, offset: int) -> ir.Value:
        """``start + offset``: a constant when ``start`` is one, else computed once per
        block (unrolled copies then share their index values)."""
        if isinstance(start, ir.Constant):
            return ir.Constant(I64, start.constant + offset)
        key = ("plus", id(self.builder.block), _value_id(start), offset)
        if key not in self._indices:
            self._indices[key] = self.builder.add(start, ir.Constant(I64, offset),
                                                  flags=("nsw",))
        return self._indices[key]

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
        hints = self._loop_hints(loop, trips, self.short_vector_loop,
                                 guarded=self._guards_reads(loop),
                                 rows=lambda: walks_rows(self.program, loop, self.independent))
        if hints:
            extra = () if group is None else (parallel_accesses(self.module, group),)
            latch.set_metadata("llvm.loop", self._loop_metadata(loop, hints, extra))
        b.position_at_end(exit_block)
        del self.scalars[loop.var]

    def _access_group(self, loop: For):
        """A new access group for a vectorized loop (not widened) whose iterations are
        independent (see :mod:`.access_groups`); None otherwise."""
        if loop.kind != "vectorized" or self.guard is not None or \
                not has_independent_iterations(self.program, loop, self.independent):
            return None
        return access_group(self.module)

    def _guards_reads(self, loop: For) -> bool:
        """Whether a statement in ``loop`` reads under a condition (``if_then_else``)."""
        return loop.kind == "vectorized" and any(
            self._branches(self.program.statement(run.stmt)) for run in runs(loop.body))

    @staticmethod
    def _loop_hints(loop: For, trips: int | None, short: int = SHORT_VECTOR_LOOP, *,
                    guarded: bool = False,
                    rows=lambda: False) -> tuple[tuple[str, int], ...]:
        """The hints ``(name, 0 or 1)`` for ``loop``'s ID (none: it gets no ID);
        ``trips``: its constant trip count, None in a partial tile; ``guarded``: the loop
        reads under conditions (a zero padding); ``rows()``: LLVM may vectorize it
        around unrolled code (:func:`.row_streams.walks_rows`)."""
        if loop.kind == "vectorized" and trips is None:
            # a partial tile: masked vector operations instead of a scalar remainder
            return (LOOP_HINTS[loop.kind], 1), ("llvm.loop.vectorize.predicate.enable", 1)
        if loop.kind == "vectorized" and trips <= short and not guarded:
            # vectorized, not first unrolled into scalars: LLVM did so to the 8 copies
            # of a 16-lane loop in a register tile of 8 rows x 1 vector, then rebuilt
            # their vectors from pieces of each other's loads with shuffles, and stored
            # the sums on every step of the reduction around them
            # (not when it reads under conditions: LLVM then gathered and scattered
            # consecutive elements, where unrolled the conditions fold away: a padding
            # copy 5x faster)
            hints = (LOOP_HINTS[loop.kind], 1), ("llvm.loop.unroll.disable", 1)
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
                and not rows():  # (rows jammed around a stride-1 loop: see row_streams)
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
                    ir.IntType(32) if name.endswith(".count") else I1, value)])
                 for name, value in hints] + list(extra)
        unique = m.add_metadata([ir.MetaDataString(m, "polyopt.loop"),
                                 ir.Constant(ir.IntType(32), self._loop_ids),
                                 ir.MetaDataString(m, loop.var)])
        node = m.add_metadata(nodes + [unique])
        node.operands = (node,) + tuple(node.operands)  # loop IDs refer to themselves
        return node

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
            self._emit_statement(stmt)

    def _emit_statement(self, stmt) -> None:
        self.values.reduction = None if self.func.strict_fp else combination(stmt)
        if self.values.reduction is None and not self.func.strict_fp and reduces_innermost(
                self.program, stmt.name, self.independent):  # ``-=``: only a sum along
            self.values.reduction = reassociable(stmt)  # the innermost loop (trisolv, not lu)
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

    def _from_counter(self, expr: IndexExpr) -> ir.Value | None:
        """``var - start + c`` in a loop that counts from 0 (a full tile) as ``count + c``:
        the offset into a tile's buffer stays visibly constant after unrolling."""
        form = linear_form(expr) if self.counters else None  # once, for every loop
        if form is None:
            return None
        for var, (counter, start, step) in self.counters.items():
            offset = offset_in_loop(expr, var, start, form=form) if step == 1 else None
            if offset == 0:
                return counter
            if offset is not None:
                return self.builder.add(counter, ir.Constant(I64, offset), flags=("nsw",))
        return None

    def _index(self, expr: IndexExpr) -> ir.Value:
        """An isl AST expression as an i64 (or i1 for conditions); computed once per
        basic block for the same values of its variables (see :meth:`_address`)."""
        if isinstance(expr, Int):
            return ir.Constant(I64, expr.value)
        if isinstance(expr, Name):
            return self.scalars[expr.name]
        key = (id(self.builder.block), expr,
               tuple(_value_id(self.scalars.get(name)) for name in names_in(expr)))
        if key not in self._indices:
            self._indices[key] = self._new_index(expr)
        return self._indices[key]

    def _new_index(self, expr: Op) -> ir.Value:
        b = self.builder
        relative = self._from_counter(expr)
        if relative is not None:
            return relative
        args = [self._index(a) for a in expr.args]
        op = expr.op
        if op in ("add", "sub", "mul"):
            return getattr(b, op)(args[0], args[1], flags=("nsw",))
        if op == "neg":
            return b.sub(ir.Constant(I64, 0), args[0], flags=("nsw",))
        if op in ("min", "max"):
            result = args[0]
            for arg in args[1:]:
                pick = b.icmp_signed("<" if op == "min" else ">", result, arg)
                result = b.select(pick, result, arg)
            return result
        if op in ("div", "pdiv_q"):
            return b.sdiv(args[0], args[1])
        if op in ("pdiv_r", "zdiv_r"):
            return b.srem(args[0], args[1])
        if op == "fdiv_q":
            return self.values.floor_divmod("//", args[0], args[1], signed=True)
        if op in ("eq", "le", "lt", "ge", "gt"):
            symbol = {"eq": "==", "le": "<=", "lt": "<", "ge": ">=", "gt": ">"}[op]
            return b.icmp_signed(symbol, args[0], args[1])
        if op in ("and", "or", "select"):  # isl may give a constant as a condition: "|| 1"
            args[:2 if op != "select" else 1] = [
                a if a.type == ir.IntType(1) else b.icmp_signed("!=", a, ir.Constant(a.type, 0))
                for a in args[:2 if op != "select" else 1]]
        if op in ("and", "or"):
            return (b.and_ if op == "and" else b.or_)(args[0], args[1])
        if op == "select":
            return b.select(args[0], args[1], args[2])
        raise InternalError(f"unsupported AST operation '{op}'")


class _FlushingBuilder(ir.IRBuilder):
    """An IRBuilder that calls ``flush`` before each instruction ending a block."""

    def __init__(self, block: ir.Block, flush):
        super().__init__(block)
        self._flush = flush

    def branch(self, target):
        self._flush()
        return super().branch(target)

    def cbranch(self, cond, truebr, falsebr):
        self._flush()
        return super().cbranch(cond, truebr, falsebr)

    def ret(self, value):
        self._flush()
        return super().ret(value)


def _value_id(value) -> object:
    """What identifies a value in generated code: a constant by its number."""
    return ("constant", value.constant) if isinstance(value, ir.Constant) else id(value)


def _has_loop(node: Node, kinds: frozenset[str]) -> bool:
    """Whether ``node`` holds a loop of one of ``kinds``."""
    return any(loop.kind in kinds for loop in loops(node))


def _constant_size(array: Array) -> int | None:
    """The size in bytes of an array of constant shape (None if a dimension is symbolic)."""
    size = _itemsize(array.dtype)
    for extent in array.shape:
        if not (isinstance(extent, Const) and isinstance(extent.value, int)):
            return None
        size *= extent.value
    return size


def _itemsize(dtype: str) -> int:
    from ...dtypes import numpy_dtype

    return numpy_dtype(dtype).itemsize
