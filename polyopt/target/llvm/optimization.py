"""The LLVM target's ``choose_optimization`` pass: LLVM's optimization level, from the
size of the code the loop AST emits.

LLVM's O3 costs more than its code is worth on large functions, and LLVM's own
unrolling heuristics cost most on large in-place kernels.  The size that matters is the
code emitted: :func:`emitted_size` counts, on the loop AST after the LLVM passes, the
operations of every statement copy (an unrolled loop copies its body; a read or a store
counts its address arithmetic) and the loops.  It is calibrated in units of about one
line of generated IR (the benchmark kernels were within 15% of their line counts).

* Over :data:`O2_FIRST_SIZE`, the function is optimized at O2 when that vectorizes every
  loop marked vectorized: O3 costs 4-8x the time there for code within about 5% of its
  speed (PolyBench 2mm 3.9 -> 1.0 s of CPU, 20.4x gcc instead of 21.0x; 3mm 6.3 ->
  0.8 s: O3's unswitching copies the loops of many nests with partial tiles); else, and
  below, at O3 (O3's unswitching keeps a partial register tile's sums in registers: the
  matmul and conv2d templates stay below).
* An in-place kernel (``po.kernel``, ``po.from_c``) over :data:`OWN_UNROLL_SIZE` is
  optimized without LLVM's own unrolling heuristics (the loops polyopt marks unrolled,
  ``llvm.loop.unroll.full``, still are): on PolyBench's tiled nests they took half of
  O3's time (gemm 1.03 -> 0.39 s of CPU) for code of the same speed (gemm, covariance,
  jacobi-2d, seidel-2d, lu, fdtd-2d, atax, trisolv).  Not tensor expressions: the
  28-column rows of a 3x3 conv2d template ran 10x slower without.

The decision is ``func.decision("optimization")`` (an :class:`Optimization`), printed
with the function:

>>> import polyopt as po
>>> A = po.placeholder((64,), name="A")
>>> B = po.compute((64,), lambda i: A[i] * 2.0, name="B")
>>> func = po.lower(po.create_schedule(B), [A, B], target="llvm")
>>> print(func.decision("optimization"))
O3 (size 17 <= 3000), LLVM's own unrolling
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ast.nodes import (Block, For, If, Intrinsic, Name, Node, Op, Run, Unrolled, Wrapped,
                          walk as walk_nodes)
from ...te.expr import Const, IterVar, TensorRead, Var
from ...te.tensor import children, walk

O2_FIRST_SIZE = 3000
OWN_UNROLL_SIZE = 500
# emitted-size units (about lines of IR) of: an operation of a statement, the address
# arithmetic and the load or store of a tensor access, a loop (header, latch, hints)
OPERATION, ACCESS, LOOP, BRANCH = 1, 3, 8, 4


@dataclass(frozen=True)
class Optimization:
    """``o2_first``: try O2 first (kept when every loop marked vectorized is
    vectorized); ``own_unrolling``: LLVM's own unrolling heuristics run; ``size``: the
    emitted size the choice was made from."""

    o2_first: bool
    own_unrolling: bool
    size: int

    def __str__(self) -> str:
        level = f"O2 if it vectorizes every marked loop, else O3 (size {self.size} > " \
            f"{O2_FIRST_SIZE})" if self.o2_first else f"O3 (size {self.size} <= {O2_FIRST_SIZE})"
        unroll = "LLVM's own unrolling" if self.own_unrolling else \
            "only the unrolling polyopt marks (an in-place kernel)"
        return f"{level}, {unroll}"


DEFAULT = Optimization(False, True, 0)  # a function lowered without the pass


def choose_optimization(func):
    """The ``choose_optimization`` pass: records :class:`Optimization` (see the module)."""
    size = emitted_size(func.program, func.body)
    in_place = any(a.role == "inout" for a in func.program.arrays)
    return func.decide("optimization", Optimization(
        o2_first=size > O2_FIRST_SIZE, own_unrolling=not in_place or size <= OWN_UNROLL_SIZE,
        size=size))


def tiled_nests(body: Node) -> int:
    """The outermost loop nests of ``body`` holding a register tile (an unrolled loop
    around a vectorized one)."""
    items = body.items if isinstance(body, Block) else (body,)
    return sum(any(isinstance(n, Unrolled) and any(
        isinstance(m, (For, Wrapped)) and getattr(m, "kind", "vectorized") == "vectorized"
        for m in walk_nodes(n.loop.body)) for n in walk_nodes(item)) for item in items)


def emitted_size(program, node: Node, unrolled: tuple = (), memo: dict | None = None) -> int:
    """The size of the code emitted for ``node`` (see the module), in about lines of IR,
    inside the copies of the unrolled loops ``unrolled`` (``(var, copies)`` pairs):
    there a statement's operations repeat in every copy, but an element read or written
    is addressed and loaded once per basic block (:mod:`.memory`), so an access counts
    once per copy of the unrolled loops its indices use."""
    memo = {} if memo is None else memo
    copies = 1
    for _, trips in unrolled:
        copies *= trips
    if isinstance(node, Block):
        return sum(emitted_size(program, n, unrolled, memo) for n in node.items)
    if isinstance(node, If):
        other = 0 if node.otherwise is None else \
            emitted_size(program, node.otherwise, unrolled, memo)
        return copies * BRANCH + emitted_size(program, node.then, unrolled, memo) + other
    if isinstance(node, Unrolled):
        inside = unrolled + ((node.loop.var, node.trips),)
        return emitted_size(program, node.loop.body, inside, memo)
    if isinstance(node, Wrapped):  # widened, outlined: one loop
        return copies * LOOP + emitted_size(program, node.loop, unrolled, memo)
    if isinstance(node, For):  # a loop: new basic blocks
        return copies * (LOOP + emitted_size(program, node.body, (), memo))
    if isinstance(node, Intrinsic):
        return emitted_size(program, node.body, unrolled, memo)
    if isinstance(node, Run):
        if node.stmt not in memo:
            memo[node.stmt] = _statement_parts(program.statement(node.stmt))
        operations, accesses = memo[node.stmt]
        size = copies * OPERATION * operations
        for positions in accesses:  # the copies of the loops an access's indices use
            used = {name for k in positions for name in _names(node.args[k])}
            size += ACCESS * _product(t for var, t in unrolled if var in used)
        return size
    return 0


def _statement_parts(stmt) -> tuple[int, list[frozenset[int]]]:
    """``stmt``'s operations, and per access (reads, then the target) the positions of
    the statement dimensions its indices use."""
    position = {id(axis): k for k, axis in enumerate(stmt.index_vars)}
    reads, operations, stack = [], 0, [stmt.value]
    while stack:  # the value's nodes, not the indices of its reads
        node = stack.pop()
        if isinstance(node, TensorRead):
            reads.append(node)
        elif not isinstance(node, (Const, Var, IterVar)):
            operations += 1
            stack.extend(children(node))
    used = [frozenset(position[id(v)] for index in access.indices for v in walk(index)
                      if id(v) in position) for access in reads + [stmt.target]]
    return operations, used


def _names(expr) -> set[str]:
    if isinstance(expr, Name):
        return {expr.name}
    if isinstance(expr, Op):
        return set().union(*(_names(a) for a in expr.args))
    return set()


def _product(values) -> int:
    result = 1
    for value in values:
        result *= value
    return result
