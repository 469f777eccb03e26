"""Temporaries of the emitted function: stack or heap buffers, one per thread if private.

The mixin :class:`Temporaries` of :class:`.codegen.FunctionEmitter` allocates each
temporary once per call: small ones of constant size on the stack (``alloca``, so LLVM
may keep a register tile in registers, up to :data:`STACK_BUDGET` per function), others
with ``aligned_alloc`` (large ones on transparent huge pages), freed on every path.

>>> import polyopt as po
>>> from polyopt.target.llvm.codegen import module_for
>>> A = po.placeholder((64,), name="A")
>>> T = po.compute((64,), lambda i: A[i] + 1.0, name="T")
>>> B = po.compute((64,), lambda i: T[i] * 2.0, name="B")
>>> text = str(module_for(po.lower(po.create_schedule(B), [A, B], target="llvm")))
>>> "alloca [256 x i8]" in text  # T: 64 floats on the stack
True
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import Block, If, Node, Outlined, Run, Wrapped
from ...domain.program import Array
from ...te.expr import Const
from .memory import itemsize
from .values import I1, I64, intrinsic, ir_name

ALIGNMENT = 64
STACK_LIMIT = 32 << 10  # constant-size temporaries up to this size live on the stack
STACK_BUDGET = 512 << 10  # of all of one function's (the rest go to the heap: a chain
                          # of 500 64x64 temporaries would overflow an 8 MiB stack)
HUGE_PAGE = 2 << 20
HUGE_THRESHOLD = 4 << 20
MADV_HUGEPAGE = 14  # Linux


class Temporaries:
    """Allocation of the temporaries of a :class:`.codegen.FunctionEmitter`."""

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
        with b.if_then(big):  # a branch, not a select: small temporaries make no system call
            b.call(madvise, [pointer, size, ir.Constant(ir.IntType(32), MADV_HUGEPAGE)])
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
        size = ir.Constant(I64, itemsize(array.dtype))
        for extent in array.shape:
            size = self.builder.mul(size, self.values.emit(extent, "int64"), flags=("nsw",))
        rounded = self.builder.add(size, ir.Constant(I64, ALIGNMENT))  # never 0, room to round
        return self.builder.and_(rounded, ir.Constant(I64, -ALIGNMENT))


def _constant_size(array: Array) -> int | None:
    """The size in bytes of an array of constant shape (None if a dimension is symbolic)."""
    size = itemsize(array.dtype)
    for extent in array.shape:
        if not (isinstance(extent, Const) and isinstance(extent.value, int)):
            return None
        size *= extent.value
    return size

