"""Memory in the emitted function: addresses, loads and stores, kept per basic block.

The mixin :class:`MemoryAccess` of :class:`.codegen.FunctionEmitter` computes each
element's address once per basic block, remembers the value last stored to or loaded
from an address (so a heavily unrolled body reads each element once) and, in the copies
of an unrolled loop, delays stores until something may read them
(:class:`FlushingBuilder` writes them before a block ends).

>>> import polyopt as po
>>> from polyopt.target.llvm.codegen import module_for
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] * A[i], name="B")
>>> text = str(module_for(po.lower(po.create_schedule(B), [A, B], target="llvm")))
>>> text.count("load float")  # A[i] is read once for both factors
1
"""

from __future__ import annotations

from llvmlite import ir

from ...domain.program import Array
from ...te.expr import Expr, IterVar, TensorRead, Var
from ...te.tensor import walk
from .indices import value_id
from .values import I64, intrinsic, llvm_type, vector_suffix


class MemoryAccess:
    """Loads, stores and addresses of a :class:`.codegen.FunctionEmitter`."""

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
        align = ir.Constant(ir.IntType(32), itemsize(read.tensor.dtype))
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
        align = ir.Constant(ir.IntType(32), itemsize(target.tensor.dtype))
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
        return (id(expr),) + tuple(value_id(self._scalar(leaf))
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


class FlushingBuilder(ir.IRBuilder):
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


def itemsize(dtype: str) -> int:
    from ...dtypes import numpy_dtype

    return numpy_dtype(dtype).itemsize
