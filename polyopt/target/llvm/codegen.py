"""Translate a :class:`LoweredFunc` into an LLVM IR module.

The function is ``i32 name(ptr noalias A, ..., i64 param, ...)``: one pointer per
array argument (in argument order), then every program parameter; it returns 0, or
1 when a temporary buffer cannot be allocated.  Arrays are dense row-major; the
strides are computed once on entry.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
>>> ir_text = str(module_for(po.lower(po.create_schedule(B), [A, B])))
>>> 'define i32 @"B_kernel"(ptr noalias' in ir_text
True
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import Block, For, If, IndexExpr, Int, Name, Node, Run
from ...domain.program import Array
from ...errors import InternalError
from ...te.expr import Expr, TensorRead, Var
from ..accumulate import combination
from .parallel import emit_parallel_for
from .values import I1, I64, ValueEmitter, intrinsic, llvm_type

ALIGNMENT = 64
LOOP_HINTS = {"vectorized": "llvm.loop.vectorize.enable", "unrolled": "llvm.loop.unroll.full"}
HUGE_PAGE = 2 << 20
HUGE_THRESHOLD = 4 << 20
MADV_HUGEPAGE = 14  # Linux


def module_for(func, *, num_threads: int = 0) -> ir.Module:
    """The LLVM module holding ``func`` compiled to one function of the same name
    (``num_threads`` for parallel loops; 0 means ``OMP_NUM_THREADS`` or all cores)."""
    return FunctionEmitter(func, num_threads).module


class FunctionEmitter:
    def __init__(self, func, num_threads: int = 0):
        self.func = func
        self.num_threads = num_threads
        self.in_parallel = False
        self.program = func.program
        self.module = ir.Module(name=func.name)
        arrays, params = func.arrays, self.program.params
        fn_type = ir.FunctionType(ir.IntType(32), [ir.PointerType()] * len(arrays)
                                  + [I64] * len(params))
        self.fn = ir.Function(self.module, fn_type, name=func.name)
        self.builder = ir.IRBuilder(self.fn.append_basic_block("entry"))
        self.values = ValueEmitter(self.builder, self.module, self._scalar, self._address)
        self.scalars: dict[object, ir.Value] = {}
        for param, arg in zip(params, self.fn.args[len(arrays):]):
            arg.name = param.name
            self.scalars[param.name] = arg
        self.pointers: dict[str, ir.Value] = {}
        for array, arg in zip(arrays, self.fn.args):
            arg.name = array.name
            arg.add_attribute("noalias")
            self.pointers[array.name] = arg
        self.strides = {a.name: self._strides(a) for a in self.program.arrays}
        self._emit_body()

    # -- values the statement emitter asks for -------------------------------------
    def _scalar(self, expr: Expr) -> ir.Value:
        key = expr.name if isinstance(expr, Var) else id(expr)
        try:
            return self.scalars[key]
        except KeyError:
            raise InternalError(f"'{expr}' has no value in generated code") from None

    def _address(self, read: TensorRead) -> ir.Value:
        array = self.program.array_of(read.tensor)
        offset = None
        for index, stride in zip(read.indices, self.strides[array.name]):
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
            running = extent if running is None else self.builder.mul(running, extent,
                                                                       flags=("nsw",))
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

    def _size_in_bytes(self, array: Array) -> ir.Value:
        size = ir.Constant(I64, _itemsize(array.dtype))
        for extent in array.shape:
            size = self.builder.mul(size, self.values.emit(extent, "int64"), flags=("nsw",))
        rounded = self.builder.add(size, ir.Constant(I64, ALIGNMENT))  # never 0, room to round
        return self.builder.and_(rounded, ir.Constant(I64, -ALIGNMENT))

    # -- function body ---------------------------------------------------------------
    def _emit_body(self) -> None:
        b = self.builder
        free = intrinsic(self.module, "free", ir.VoidType(), [ir.PointerType()])
        failed = ir.Constant(I1, 0)
        for temp in self.func.temps:
            pointer = self._allocate(temp)
            self.pointers[temp.name] = pointer
            failed = b.or_(failed, b.icmp_unsigned("==", pointer, ir.Constant(ir.PointerType(),
                                                                              None)))
        run_block = b.append_basic_block("run")
        fail_block = b.append_basic_block("out_of_memory")
        b.cbranch(failed, fail_block, run_block)
        b.position_at_end(fail_block)
        for temp in self.func.temps:
            b.call(free, [self.pointers[temp.name]])
        b.ret(ir.Constant(ir.IntType(32), 1))
        b.position_at_end(run_block)
        self._node(self.func.body)
        for temp in self.func.temps:
            b.call(free, [self.pointers[temp.name]])
        b.ret(ir.Constant(ir.IntType(32), 0))

    def _node(self, node: Node) -> None:
        if isinstance(node, Block):
            for item in node.items:
                self._node(item)
        elif isinstance(node, For):
            self._for(node)
        elif isinstance(node, If):
            self._if(node)
        elif isinstance(node, Run):
            self._run(node)
        else:
            raise InternalError(f"unknown AST node {node!r}")

    def _for(self, loop: For) -> None:
        if loop.kind == "parallel" and not self.in_parallel:
            if emit_parallel_for(self, loop, self.num_threads):
                return
        self._serial_loop(loop, self._index(loop.init))

    def _serial_loop(self, loop: For, start: ir.Value, last: ir.Value | None = None) -> None:
        """The loop from ``start`` while its condition holds (or up to ``last``)."""
        b = self.builder
        preheader = b.block
        header = b.append_basic_block(f"{loop.var}.header")
        body = b.append_basic_block(f"{loop.var}.body")
        exit_block = b.append_basic_block(f"{loop.var}.exit")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name=loop.var)
        iv.add_incoming(start, preheader)
        self.scalars[loop.var] = iv
        cond = self._index(loop.cond) if last is None else b.icmp_signed("<=", iv, last)
        b.cbranch(cond, body, exit_block)
        b.position_at_end(body)
        self._node(loop.body)
        step = b.add(iv, ir.Constant(I64, loop.step), flags=("nsw",))
        iv.add_incoming(step, b.block)
        latch = b.branch(header)
        if loop.kind in LOOP_HINTS:
            latch.set_metadata("llvm.loop", self._loop_metadata(loop.kind))
        b.position_at_end(exit_block)
        del self.scalars[loop.var]

    def _loop_metadata(self, kind: str):
        """A distinct ``!llvm.loop`` node asking LLVM to vectorize or fully unroll."""
        m = self.module
        self._loop_ids = getattr(self, "_loop_ids", 0) + 1
        hint = m.add_metadata([ir.MetaDataString(m, LOOP_HINTS[kind]), ir.Constant(I1, 1)])
        unique = m.add_metadata([ir.MetaDataString(m, "polyopt.loop"),
                                 ir.Constant(ir.IntType(32), self._loop_ids)])
        node = m.add_metadata([hint, unique])
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

    def _run(self, run: Run) -> None:
        stmt = self.program.statement(run.stmt)
        bound = []
        for axis, arg in zip(stmt.iter_vars, run.args):
            self.scalars[id(axis)] = self._index(arg)
            bound.append(axis)
        self.values.reduction = combination(stmt)
        value = self.values.emit(stmt.value, stmt.target.dtype)
        self.builder.store(value, self._address(stmt.target))
        for axis in bound:
            del self.scalars[id(axis)]

    def _index(self, expr: IndexExpr) -> ir.Value:
        """An isl AST expression as an i64 (or i1 for conditions)."""
        b = self.builder
        if isinstance(expr, Int):
            return ir.Constant(I64, expr.value)
        if isinstance(expr, Name):
            return self.scalars[expr.name]
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
        if op in ("and", "or"):
            return (b.and_ if op == "and" else b.or_)(args[0], args[1])
        if op == "select":
            return b.select(args[0], args[1], args[2])
        raise InternalError(f"unsupported AST operation '{op}'")


def _itemsize(dtype: str) -> int:
    import numpy as np

    return np.dtype(dtype).itemsize
