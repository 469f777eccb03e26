"""The LLVM target's lowering passes: decisions on the loop AST that the emitter follows.

Appended to the common pipeline (``polyopt.lower.PIPELINE``) by ``LLVMTarget.passes``,
in this order:

* ``outline_parallel``: each outermost parallel loop whose bounds allow it becomes an
  :class:`Outlined` thread region (OpenMP, see :mod:`.parallel`), naming the temporaries
  that get one buffer per thread; a parallel loop inside one stays a loop, run serially
  by each thread.  First: the passes below ask whether a loop runs in a thread.
* ``transposed_copies``: an unrolled loop around a vectorized one copying a square
  block transposed becomes an :class:`Intrinsic` (see :mod:`.transpose`).  Before
  ``unroll``, which would copy the loop instead.
* ``unroll``: a loop marked unrolled with at most :data:`UNROLL_LIMIT` iterations
  becomes :class:`Unrolled` (one copy of the body per iteration, each guarded in a
  partial tile), as long as it and the unrolled loops inside it make at most
  :data:`UNROLL_BUDGET` copies of a statement, and at most :data:`UNROLL_BYTES` bytes
  written with the vectorized loops inside; other ones stay loops.
* ``widen_partial_tiles``: a partial vectorized tile whose extra iterations stay inside
  buffers the thread owns runs at full width with conditional stores
  (:class:`Widened`, see :func:`polyopt.ast.tiles.can_widen`).  After outlining (which
  buffers a thread owns) and after the transposed copies (which take their loops).
* ``parallel_accesses``: a vectorized loop (not widened) whose iterations are independent
  gets the hint :data:`INDEPENDENT`: its loads and stores join an access group that the
  loop lists in ``llvm.loop.parallel_accesses`` (see :mod:`.access_groups`).
* ``row_streams``: a serial or parallel loop around scheduled SIMD or unrolled code
  that holds only unrolled copies stepping along rows gets the hint :data:`ROW_STREAM`:
  LLVM may vectorize it (see :mod:`.row_streams`); other such loops forbid it.  After
  ``unroll`` (which loops stay loops).
* ``reassociate``: a statement accumulating ``C = C + x`` (also ``*``, maximum,
  minimum), or ``x[i] = x[i] - y`` summing along its innermost loop
  (:func:`.row_streams.reduces_innermost`), is marked ``reassociate`` unless the
  schedule asks for strict floating point: LLVM may reorder its sums.
* ``vector_math`` and ``choose_optimization`` (:mod:`.vecmath`, :mod:`.optimization`):
  the vector variants of ``exp``/``log``/``tanh`` calls and LLVM's optimization level,
  recorded in ``func.decisions``.

>>> import polyopt as po
>>> A = po.placeholder((6, 4), name="A")
>>> B = po.compute((6, 4), lambda i, j: A[i, j] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> _ = s[B].parallel(B.op.axis[0]); _ = s[B].unroll(B.op.axis[1])
>>> print(po.lower(s, [A, B], target="llvm"))
void B_kernel(float32 A[6][4], float32 B[6][4]) {
  // optimization: O3 (0 register-tiled nests < 3), LLVM's own unrolling
  #pragma parallel: outlined to a thread team
  for (i = 0; i < 6; i += 1)
    #pragma unrolled: 4 copies
    for (j = 0; j < 4; j += 1)
      B[i, j] = A[i, j] * 2.0;
}
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from ...ast.nodes import (Block, For, If, Intrinsic, Node, Outlined, Run, Unrolled, Widened,
                          Wrapped, loops, runs)
from ...ast.pipeline import Pass
from ...ast.tiles import can_widen, most_trips
from ...dtypes import bits
from ...te.expr import Const
from ..accumulate import combination
from .access_groups import has_independent_iterations
from .parallel import can_outline
from .row_streams import reduces_innermost, walks_rows
from .transpose import square_copy

UNROLL_LIMIT = 64  # loops marked unrolled with at most this many iterations are copied
UNROLL_BUDGET = 128  # ... when the copies of nested unrolled loops multiply to at most this
# ... and those copies times the iterations of the vectorized loops inside them (which LLVM
# flattens into straight-line vector code), times the widest element they write, to at
# most this many bytes: 64 copies of a 64-element float64 vector row (32 KiB) took 43 s of
# CPU to compile (te-auto 100616); auto_schedule's largest register tiles are 4 KiB (16
# rows x 4 vectors of 64 bytes: 4,096 int8, 1,024 float32 or 512 float64 elements)
UNROLL_BYTES = 8192
INDEPENDENT = "iterations independent"  # For.hints: llvm.loop.parallel_accesses
ROW_STREAM = "row stream"  # For.hints: LLVM may vectorize it around unrolled code
# loops whose code the schedule decided (SIMD here, straight-line scalar code there):
# LLVM must not vectorize a loop around them, unless it is a row stream
SCHEDULED_CODE = frozenset({"vectorized", "unrolled"})


def rewrite(node: Node, visit: Callable[[Node], Node | None]) -> Node:
    """``node`` rebuilt top-down: where ``visit`` returns a node, that node replaces the
    subtree (``visit`` rewrites its children itself); elsewhere children are rewritten."""
    found = visit(node)
    if found is not None:
        return found
    if isinstance(node, Block):
        return Block(tuple(rewrite(n, visit) for n in node.items))
    if isinstance(node, If):
        other = None if node.otherwise is None else rewrite(node.otherwise, visit)
        return If(node.cond, rewrite(node.then, visit), other)
    if isinstance(node, For):
        return dataclasses.replace(node, body=rewrite(node.body, visit))
    if isinstance(node, Wrapped):
        return dataclasses.replace(node, loop=rewrite(node.loop, visit))
    return node  # a Run; an Intrinsic's loops are the target's own


def outline_parallel(func):
    storage = func.storage
    private = [t.name for t in func.temps
               if storage.get(t.name) is not None and storage[t.name].private]

    def visit(node):
        if isinstance(node, For) and node.kind == "parallel" and can_outline(node):
            used = {a.array for run in runs(node.body)
                    for a in func.program.statement(run.stmt).accesses}
            return Outlined(node, tuple(name for name in private if name in used))
        return None

    return dataclasses.replace(func, body=rewrite(func.body, visit))


def transposed_copies(func):
    def visit(node):
        if isinstance(node, For) and node.kind == "unrolled" and \
                square_copy(func.program, node) is not None:
            return Intrinsic("transposed_copy", node)
        return None

    return dataclasses.replace(func, body=rewrite(func.body, visit))


def unroll(func):
    def visit(node):
        if not (isinstance(node, For) and node.kind == "unrolled"):
            return None
        found = most_trips(node)
        if found is None or found[0] > UNROLL_LIMIT or \
                found[0] * _copies_below(node.body) > UNROLL_BUDGET or \
                found[0] * _copies_below(node.body, _VECTOR) * _widest(func.program, node) \
                > UNROLL_BYTES:
            return None  # a loop (LLVM unrolls it by a few: serial_loops.UNROLL_LEFTOVER)
        return Unrolled(dataclasses.replace(node, body=rewrite(node.body, visit)), *found)

    return dataclasses.replace(func, body=rewrite(func.body, visit))


_VECTOR = frozenset({"unrolled", "vectorized"})


def _widest(program, node: Node) -> int:
    """The bytes of the widest element the statements in ``node`` write."""
    return max((bits(program.array(program.statement(run.stmt).writes[0].array).dtype)
                for run in runs(node)), default=8) // 8 or 1


def _copies_below(node: Node, kinds: frozenset = frozenset({"unrolled"})) -> int:
    """The most copies of one statement that the loops of ``kinds`` (by default those
    marked unrolled) below ``node`` make together (43 x 6 nested copies around a vector
    tile took minutes to compile); with :data:`_VECTOR`, the elements the vectorized
    loops add in each copy too."""
    if isinstance(node, Block):
        return max((_copies_below(n, kinds) for n in node.items), default=1)
    if isinstance(node, If):
        return max(_copies_below(node.then, kinds),
                   1 if node.otherwise is None else _copies_below(node.otherwise, kinds))
    if isinstance(node, For):
        inner = _copies_below(node.body, kinds)
        found = most_trips(node) if node.kind in kinds else None
        if found is None or (node.kind == "unrolled" and found[0] > UNROLL_LIMIT):
            return inner
        return inner * found[0]
    if isinstance(node, Wrapped):
        return _copies_below(node.loop, kinds)
    if isinstance(node, Intrinsic):
        return _copies_below(node.body, kinds)
    return 1


def widen_partial_tiles(func):
    storage = func.storage
    constant = {t.name: tuple(e.value for e in t.shape) for t in func.temps
                if all(isinstance(e, Const) for e in t.shape)}
    # in a thread, only its own (private) buffers may take the extra iterations' stores
    in_thread = {name: shape for name, shape in constant.items()
                 if storage.get(name) is not None and storage[name].private}

    def visitor(buffers):
        def visit(node):
            if isinstance(node, Outlined) and buffers is not in_thread:
                return dataclasses.replace(node, loop=rewrite(node.loop, visitor(in_thread)))
            if isinstance(node, For) and node.kind == "vectorized" and \
                    can_widen(node, func.program, buffers):
                return Widened(node, most_trips(node)[0])
            return None
        return visit

    return dataclasses.replace(func, body=rewrite(func.body, visitor(constant)))


def parallel_accesses(func):
    memo: dict = {}

    def visit(node):
        if isinstance(node, Widened):  # its extra iterations are outside the dependences
            return node
        if isinstance(node, For) and node.kind == "vectorized" and \
                has_independent_iterations(func.program, node, memo):
            return _with_hint(node, INDEPENDENT, rewrite(node.body, visit))
        return None

    return dataclasses.replace(func, body=rewrite(func.body, visit))


def row_streams(func):
    memo: dict = {}

    def visit(node):
        if isinstance(node, For) and node.kind in ("serial", "parallel") and \
                any(loop.kind in SCHEDULED_CODE for loop in loops(node.body)) and \
                walks_rows(func.program, node, memo):
            return _with_hint(node, ROW_STREAM, rewrite(node.body, visit))
        return None

    return dataclasses.replace(func, body=rewrite(func.body, visit))


def _with_hint(loop: For, hint: str, body: Node) -> For:
    return dataclasses.replace(loop, body=body, hints=loop.hints + (hint,))


def reassociate(func):
    if func.strict_fp:
        return func
    memo: dict = {}
    decided: dict[str, bool] = {}

    def may_reassociate(name: str) -> bool:
        if name not in decided:
            decided[name] = combination(func.program.statement(name)) is not None or \
                reduces_innermost(func.program, name, memo)
        return decided[name]

    def visit(node):
        if isinstance(node, Run) and not hasattr(node, "match") and \
                may_reassociate(node.stmt):  # (not an IntrinsicCall: the intrinsic's code)
            return dataclasses.replace(node, reassociate=True)
        return None

    return dataclasses.replace(func, body=rewrite(func.body, visit))


def llvm_passes(pipeline, cpu=None):
    """The common pipeline with the LLVM target's passes appended (see the module), for
    the CPU ``cpu`` (a ``jit.CPU``; None: the host)."""
    from .optimization import choose_optimization
    from .vecmath import vector_math_for

    return pipeline.append(Pass("outline_parallel", outline_parallel),
                           Pass("transposed_copies", transposed_copies),
                           Pass("unroll", unroll),
                           Pass("widen_partial_tiles", widen_partial_tiles),
                           Pass("parallel_accesses", parallel_accesses),
                           Pass("row_streams", row_streams),
                           Pass("reassociate", reassociate),
                           Pass("vector_math", vector_math_for(cpu)),
                           Pass("choose_optimization", choose_optimization))
