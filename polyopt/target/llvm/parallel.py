"""Parallel loops on polyopt's thread pool (:mod:`.threadpool`): the loop is outlined
and run by ``polyopt_parallel``.

The outlined function receives every value the loop body may use (parameters,
enclosing loop variables, array pointers and strides) in a struct; the threads take
the iterations in about 8 pieces per thread from a counter in that struct (a dynamic
schedule: on a shared machine a thread that loses its core for a while takes fewer, and
the calling thread alone takes them all when the workers are still asleep).  The thread
count comes from the build option ``num_threads``, else ``OMP_NUM_THREADS``, else the
CPUs.  Which loops are outlined is decided on the loop AST by the ``outline_parallel``
pass (:mod:`.passes`): an :class:`~polyopt.ast.nodes.Outlined` loop; a parallel loop
inside one runs serially in each thread.

Parallel only above a minimum of work (OpenMP's ``if`` clause, decided at build time):
a region whose loops have constant trip counts and run fewer than ``parallel_min_work``
statement instances in all (the build option of the LLVM target, by default
:data:`PARALLEL_MIN_WORK`) runs on the calling thread alone: starting a region costs a
few microseconds (publishing it, the futex that wakes a sleeping worker, waiting for the
last piece), more than a small loop saves.  ``po.build(..., parallel_min_work=0)``
runs every parallel loop on the threads; :func:`region_work` says what a loop counts.

>>> CHUNKS_PER_THREAD  # pieces per thread of a parallel loop
8
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.intrinsic_calls import IntrinsicCall
from ...ast.nodes import (Block, For, If, Int, Intrinsic, Outlined, Run, Unrolled, Widened,
                          upper_bound)
from ...ast.tiles import most_trips
from .threadpool import REGION_FN
from .values import I64

I32 = ir.IntType(32)
I8 = ir.IntType(8)
CHUNKS_PER_THREAD = 8
# statement instances below which a parallel region runs on its caller: 3 to 30 us on
# this machine kind (vectorized or not), against a few us to start a region
PARALLEL_MIN_WORK = 1 << 15


def region_work(node) -> int | None:
    """The statement instances ``node`` runs (each loop at its most trips), or None when
    a loop's trip count is not a constant or a tensorized call is inside (then the
    region is taken as large enough).

    >>> from polyopt.ast.nodes import For, Int, Name, Op, Run
    >>> inner = For("j", Int(0), Op("lt", (Name("j"), Int(64))), 1, Run("S", ()))
    >>> region_work(For("i", Int(0), Op("lt", (Name("i"), Int(10))), 1, inner))
    640
    """
    if isinstance(node, IntrinsicCall):
        return None
    if isinstance(node, Run):
        return 1
    if isinstance(node, Block):
        counts = [region_work(item) for item in node.items]
        return None if None in counts else sum(counts)
    if isinstance(node, If):
        counts = [region_work(node.then)] + (
            [] if node.otherwise is None else [region_work(node.otherwise)])
        return None if None in counts else max(counts)
    if isinstance(node, (Outlined, Unrolled, Widened)):
        return region_work(node.loop)
    if isinstance(node, Intrinsic):
        return region_work(node.body)
    if isinstance(node, For):
        found = most_trips(node)
        inner = region_work(node.body)
        return None if found is None or inner is None else found[0] * inner
    return None


def runs_on_threads(region: Outlined, min_work: int | None = None) -> bool:
    """Whether the parallel ``region`` runs on the thread pool, or on its caller alone
    because it does less than ``min_work`` (default :data:`PARALLEL_MIN_WORK`) work."""
    work = region_work(region.loop)
    return work is None or work >= (PARALLEL_MIN_WORK if min_work is None else min_work)


def can_outline(loop: For) -> bool:
    """Whether :func:`emit_parallel_for` can run ``loop`` in parallel (its bounds allow it)."""
    return upper_bound(loop) is not None and loop.step > 0


def runs_several_regions(node, min_work: int | None = None) -> bool:
    """Whether a function body runs more than one parallel region per call on the
    threads (two outlined loops, or one inside another loop; see :func:`runs_on_threads`):
    such a function keeps the pool's workers awake from its start to its end
    (:func:`emit_session`), so that a worker woken for one region is there for the next."""
    return _regions(node, False, min_work) > 1


def _regions(node, in_loop: bool, min_work) -> int:
    if isinstance(node, Outlined):
        return 0 if not runs_on_threads(node, min_work) else 2 if in_loop else 1
    if isinstance(node, Block):
        return sum(_regions(item, in_loop, min_work) for item in node.items)
    if isinstance(node, If):
        return _regions(node.then, in_loop, min_work) + (
            0 if node.otherwise is None else _regions(node.otherwise, in_loop, min_work))
    if isinstance(node, For):
        return _regions(node.body, True, min_work)
    if isinstance(node, (Unrolled, Widened)):
        return _regions(node.loop.body, True, min_work)
    if isinstance(node, Intrinsic):
        return _regions(node.body, in_loop, min_work)
    return 0


def emit_session(builder, module, which: str) -> None:
    """Call the pool's ``polyopt_session_begin`` or ``polyopt_session_end``."""
    builder.call(_declare(module, f"polyopt_session_{which}", ir.VoidType(), []), [])


def emit_parallel_for(emitter, region: Outlined, num_threads: int,
                      min_work: int | None = None) -> None:
    """Emit ``region``'s loop as a parallel loop on the thread pool (on its caller alone
    below ``min_work``, see :func:`runs_on_threads`)."""
    on_threads = runs_on_threads(region, min_work)
    loop = region.loop
    bound = upper_bound(loop)
    b = emitter.builder
    lo = emitter._index(loop.init)
    hi = emitter._index(bound[0])
    if bound[1]:
        hi = b.sub(hi, ir.Constant(I64, 1))
    captured = _captures(emitter)
    threads = b.call(_declare(emitter.module, "polyopt_threads", I32, [I32]),
                     [ir.Constant(I32, num_threads)]) if on_threads else ir.Constant(I32, 1)
    trips = _trips(b, loop, lo, hi)
    size = _piece_size(b, trips, threads) if on_threads else trips  # alone: one piece
    struct = ir.LiteralStructType([I64, I64, I64, I64] + [v.type for _, v in captured])
    with b.goto_entry_block():
        slot = b.alloca(struct, name="region.data")
    slot.type = ir.PointerType()  # an opaque pointer, as everywhere else in the module
    start = [lo, trips, size, ir.Constant(I64, 0)]  # the last: the next piece's first trip
    for index, value in enumerate(start + [v for _, v in captured]):
        b.store(value, b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, index)],
                             source_etype=struct))
    outlined = _outline(emitter, region, struct, captured)
    if not on_threads:  # the caller takes every piece
        b.call(outlined, [slot])
        return
    run = _declare(emitter.module, "polyopt_parallel", ir.VoidType(),
                   [REGION_FN, ir.PointerType(), I32])
    b.call(run, [outlined, slot, threads])


def _trips(b, loop: For, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """The loop's trip count from ``lo`` to ``hi`` (inclusive), 0 when ``hi < lo`` (the
    division alone rounds ``hi - lo`` between ``-step`` and 0 up to one trip)."""
    trips = b.add(b.sdiv(b.sub(hi, lo), ir.Constant(I64, loop.step)), ir.Constant(I64, 1))
    return b.select(b.icmp_signed("<", hi, lo), ir.Constant(I64, 0), trips)


def _piece_size(b, trips: ir.Value, threads: ir.Value) -> ir.Value:
    """Trips per piece: about CHUNKS_PER_THREAD pieces per thread, balance at a small
    cost per piece."""
    pieces = b.mul(b.sext(threads, I64), ir.Constant(I64, CHUNKS_PER_THREAD))
    size = b.sdiv(b.add(trips, b.sub(pieces, ir.Constant(I64, 1))), pieces)
    return b.select(b.icmp_signed("<", size, ir.Constant(I64, 1)), ir.Constant(I64, 1), size)


def _captures(emitter) -> list[tuple[tuple, ir.Value]]:
    found = [(("status",), emitter.status)]
    found += [(("scalar", k), v) for k, v in emitter.scalars.items()]
    found += [(("pointer", k), v) for k, v in emitter.pointers.items()]
    for name, strides in emitter.strides.items():
        # constant strides stay constants in the body (LLVM then sees a register tile's
        # constant offsets)
        found += [(("stride", name, d), v) for d, v in enumerate(strides)
                  if v is not None and not isinstance(v, ir.Constant)]
    return found


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    if name in module.globals:
        return module.globals[name]
    return ir.Function(module, ir.FunctionType(ret, args), name=name)


def _outline(emitter, region: Outlined, struct, captured) -> ir.Function:
    """``void name.ompN(ptr data)``: unpacks the struct, picks this thread's block of
    iterations and calls ``name.ompN.body`` on it.  The body receives the array pointers
    as ``noalias`` arguments (they are distinct arrays), so that LLVM vectorizes it as
    well as the serial code; it is inlined into the wrapper."""
    module = emitter.module
    count = sum(1 for g in module.globals if g.startswith(f"{emitter.fn.name}.omp")
                and not g.endswith(".body"))
    name = f"{emitter.fn.name}.omp{count}"
    body = _body_function(emitter, region, name, captured)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.PointerType()]), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fields = [b.load(b.gep(fn.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)],
                           source_etype=struct), typ=struct.elements[k])
              for k in range(3)]
    following = b.gep(fn.args[0], [ir.Constant(I32, 0), ir.Constant(I32, 3)],
                      source_etype=struct)
    captures = [b.load(b.gep(fn.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)],
                             source_etype=struct), typ=struct.elements[k])
                for k in range(4, len(struct.elements))]
    b.call(body, captures + fields + [following])
    b.ret_void()
    return fn


def _claimed_pieces(emitter, loop: For, lo: ir.Value, trips: ir.Value, size: ir.Value,
                    following: ir.Value, failed: ir.Value) -> None:
    """Run the pieces of the loop's ``trips`` from ``lo`` that this thread claims from the
    counter ``following`` (an atomic add of ``size`` trips each) until none is left.  A
    thread whose buffers could not be allocated claims its pieces without running them
    and reports the failure."""
    b, fn = emitter.builder, emitter.fn
    step = ir.Constant(I64, loop.step)
    claim, work, skip = (fn.append_basic_block(n) for n in ("claim", "work", "skip"))
    piece, done = fn.append_basic_block("piece"), fn.append_basic_block("done")
    b.branch(claim)
    b.position_at_end(claim)
    taken = b.atomic_rmw("add", following, size, "monotonic")
    b.cbranch(b.icmp_signed(">=", taken, trips), done, piece)
    b.position_at_end(piece)
    end = b.add(taken, size)
    end = b.select(b.icmp_signed("<", end, trips), end, trips)
    first = b.add(lo, b.mul(taken, step))
    last = b.add(lo, b.mul(b.sub(end, ir.Constant(I64, 1)), step))
    b.cbranch(failed, skip, work)
    b.position_at_end(skip)
    b.store(ir.Constant(I32, 1), emitter.status)  # threads only ever store 1 there
    b.branch(claim)
    b.position_at_end(work)
    _assume_within(emitter, loop, first, last)
    emitter._serial_loop(loop, first, last)
    b.branch(claim)
    b.position_at_end(done)


def _assume_within(emitter, loop: For, first: ir.Value, last: ir.Value) -> None:
    """Tell LLVM that a piece ``first..last`` lies within the loop's constant bounds:
    without that, divisions of the loop variable (a fused loop's ``fused / 28``) stay
    signed and unbounded, and LLVM stored an int8 conv's register tile with scatters
    (the serial loop, whose range it sees, with vector stores)."""
    found = most_trips(loop)
    if not isinstance(loop.init, Int) or found is None or found[1]:
        return
    b = emitter.builder
    assume = _declare(emitter.module, "llvm.assume", ir.VoidType(), [ir.IntType(1)])
    low, high = loop.init.value, loop.init.value + (found[0] - 1) * loop.step
    b.call(assume, [b.icmp_signed(">=", first, ir.Constant(I64, low))])
    b.call(assume, [b.icmp_signed("<=", last, ir.Constant(I64, high))])


def _body_function(emitter, region: Outlined, name: str, captured) -> ir.Function:
    module = emitter.module
    types = [v.type for _, v in captured] + [I64, I64, I64, ir.PointerType()]
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), types), name=f"{name}.body")
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    saved = (emitter.fn, emitter.builder, emitter.values, emitter.scalars, emitter.pointers,
             emitter.strides, emitter.status, emitter.counters)
    emitter.counters = {}  # the enclosing loops' counters live in the calling function
    b = emitter.new_builder(fn.append_basic_block("entry"))
    emitter.fn, emitter.builder = fn, b
    emitter.values = emitter.new_values(b)
    emitter.scalars, emitter.pointers = {}, {}
    emitter.strides = {array: list(strides) for array, strides in saved[5].items()}
    for ((kind, *key), _), arg in zip(captured, fn.args):
        if kind == "status":
            emitter.status = arg
        elif kind == "scalar":
            emitter.scalars[key[0]] = arg
        elif kind == "pointer":
            arg.add_attribute("noalias")
            emitter.pointers[key[0]] = arg
        else:
            emitter.strides[key[0]][key[1]] = arg
    # one buffer per thread for temporaries private to the iterations; when one cannot
    # be allocated, the thread does nothing and the kernel reports the failure
    heap, failed = emitter.allocate_temps(
        [t for t in emitter.func.temps if t.name in region.private])
    _claimed_pieces(emitter, region.loop, *fn.args[-4:], failed)
    emitter.free(heap)
    b.ret_void()
    (emitter.fn, emitter.builder, emitter.values, emitter.scalars, emitter.pointers,
     emitter.strides, emitter.status, emitter.counters) = saved
    return fn
