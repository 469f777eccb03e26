"""The LLVM target's ``choose_optimization`` pass: LLVM's optimization level and
unrolling, decided on the loop AST after the LLVM passes.

* A function with :data:`O2_FIRST_NESTS` or more register-tiled nests (outermost loop
  nests holding an unrolled loop around a vectorized one, :func:`tiled_nests`) is
  optimized at O2 when that vectorizes every loop marked vectorized, else at O3: there
  O3's unswitching copies the loops of every nest's partial tiles for code within about
  5% of O2's (PolyBench 3mm: 6.3 -> 0.8 s of CPU, 3,500 lines of IR); with fewer, at O3
  (its unswitching keeps a partial register tile's sums in registers: the matmul and
  conv2d templates, 2mm).
* An in-place kernel (``po.kernel``, ``po.from_c``) whose :func:`emitted_size` is over
  :data:`OWN_UNROLL_SIZE` is optimized without LLVM's own unrolling heuristics (the
  loops polyopt marks unrolled, ``llvm.loop.unroll.full``, still are): on PolyBench's
  tiled nests they took half of O3's time (gemm 1.03 -> 0.39 s of CPU) for code of the
  same speed (gemm, covariance, jacobi-2d, seidel-2d, lu, fdtd-2d, atax, trisolv).  Not
  tensor expressions: the 28-column rows of a 3x3 conv2d template ran 10x slower
  without.

(Both replaced counting the lines of the generated IR, 3,000 and 500: on the 30
PolyBench kernels at two sizes and the matmul and 3x3 conv2d templates they decide as
the line counts did, except seidel-2d at PolyBench's size (515 lines, the same loop AST
as at 495: now with LLVM's unrolling) and the 7x7 stem convolution (3,300 lines, one
tiled nest: now O3, not O2; 111-123 ms instead of 138 ms on the Zen 3, 1 thread).)

The decision is ``func.decision("optimization")`` (an :class:`Optimization`), printed
with the function:

>>> import polyopt as po
>>> A = po.placeholder((64,), name="A")
>>> B = po.compute((64,), lambda i: A[i] * 2.0, name="B")
>>> func = po.lower(po.create_schedule(B), [A, B], target="llvm")
>>> print(func.decision("optimization"))
O3 (0 register-tiled nests < 3), LLVM's own unrolling
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ast.nodes import (Block, For, If, Intrinsic, Name, Node, Op, Run, Unrolled, Wrapped,
                          walk as walk_nodes)
from ...te.expr import Const, IterVar, TensorRead, Var
from ...te.tensor import children, walk

O2_FIRST_NESTS = 3
OWN_UNROLL_SIZE = 175
# the weights in :func:`emitted_size` of: an operation of a statement, a tensor access
# (its address arithmetic and load or store), a loop (header, latch, hints), a branch
OPERATION, ACCESS, LOOP, BRANCH = 1, 3, 8, 4


@dataclass(frozen=True)
class Optimization:
    """``o2_first``: try O2 first (kept when every loop marked vectorized is
    vectorized); ``own_unrolling``: LLVM's own unrolling heuristics run; ``nests`` and
    ``size``: the register-tiled nests and the emitted size of an in-place kernel
    (None: not one) the choice was made from."""

    o2_first: bool
    own_unrolling: bool
    nests: int = 0
    size: int | None = None

    def __str__(self) -> str:
        level = f"O2 if it vectorizes every marked loop, else O3 ({self.nests} register-" \
            f"tiled nests >= {O2_FIRST_NESTS})" if self.o2_first else \
            f"O3 ({self.nests} register-tiled nests < {O2_FIRST_NESTS})"
        if self.own_unrolling:
            unroll = "LLVM's own unrolling" + ("" if self.size is None else
                                               f" (size {self.size} <= {OWN_UNROLL_SIZE})")
        else:
            unroll = f"only the unrolling polyopt marks (size {self.size} > {OWN_UNROLL_SIZE})"
        return f"{level}, {unroll}"


def choose_optimization(func):
    """The ``choose_optimization`` pass: records :class:`Optimization` (see the module)."""
    nests = tiled_nests(func.body)
    in_place = any(a.role == "inout" for a in func.program.arrays)
    size = emitted_size(func.program, func.body) if in_place else None
    return func.decide("optimization", Optimization(
        o2_first=nests >= O2_FIRST_NESTS,
        own_unrolling=size is None or size <= OWN_UNROLL_SIZE, nests=nests, size=size))


def tiled_nests(body: Node) -> int:
    """The outermost loop nests of ``body`` holding a register tile (an unrolled loop
    around a vectorized one)."""
    items = body.items if isinstance(body, Block) else (body,)
    return sum(any(isinstance(n, Unrolled) and any(
        isinstance(m, For) and m.kind == "vectorized" for m in walk_nodes(n.loop.body))
        for n in walk_nodes(item)) for item in items)


def emitted_size(program, node: Node, unrolled: tuple = (), memo: dict | None = None) -> int:
    """The size of the code emitted for ``node``: its statements' operations, accesses
    (each with its address arithmetic), loops and branches, weighted by
    :data:`OPERATION`, :data:`ACCESS`, :data:`LOOP`, :data:`BRANCH`, inside the copies of the unrolled loops ``unrolled`` (``(var, copies)`` pairs):
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
