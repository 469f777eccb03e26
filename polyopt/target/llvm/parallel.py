"""Parallel loops through OpenMP: the loop is outlined and run by ``GOMP_parallel``.

The outlined function receives every value the loop body may use (parameters,
enclosing loop variables, array pointers and strides) in a struct; the threads take
the iterations from libgomp in about 8 pieces per thread (a dynamic schedule: on a
shared machine a thread that loses its core for a while takes fewer).  The thread count
comes from ``OMP_NUM_THREADS`` or the build option ``num_threads``.  Which loops are
outlined is decided on the loop AST by the ``outline_parallel`` pass (:mod:`.passes`):
an :class:`~polyopt.ast.nodes.Outlined` loop; a parallel loop inside one runs serially
in each thread.

>>> load_openmp()
"""

from __future__ import annotations

import ctypes.util
import functools

from llvmlite import ir

from ...ast.nodes import For, Int, Outlined, upper_bound
from ...ast.tiles import most_trips
from ...errors import MissingBackendError
from .values import I64

I32 = ir.IntType(32)
I8 = ir.IntType(8)
CHUNKS_PER_THREAD = 8


@functools.cache
def load_openmp() -> None:
    """Make libgomp's symbols available to JIT-compiled code."""
    import llvmlite.binding as llvm

    path = ctypes.util.find_library("gomp")
    if path is None:
        raise MissingBackendError(
            "parallel loops need the OpenMP runtime libgomp, which was not found; install "
            "it (Debian: apt-get install libgomp1)")
    llvm.load_library_permanently(path)


def can_outline(loop: For) -> bool:
    """Whether :func:`emit_parallel_for` can run ``loop`` in parallel (its bounds allow it)."""
    return upper_bound(loop) is not None and loop.step > 0


def emit_parallel_for(emitter, region: Outlined, num_threads: int) -> None:
    """Emit ``region``'s loop as an OpenMP parallel loop."""
    loop = region.loop
    bound = upper_bound(loop)
    b = emitter.builder
    lo = emitter._index(loop.init)
    hi = emitter._index(bound[0])
    if bound[1]:
        hi = b.sub(hi, ir.Constant(I64, 1))
    captured = _captures(emitter)
    struct = ir.LiteralStructType([I64, I64] + [v.type for _, v in captured])
    with b.goto_entry_block():
        slot = b.alloca(struct, name="omp.data")
    slot.type = ir.PointerType()  # an opaque pointer, as everywhere else in the module
    for index, value in enumerate([lo, hi] + [v for _, v in captured]):
        b.store(value, b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, index)],
                             source_etype=struct))
    outlined = _outline(emitter, region, struct, captured)
    gomp = _declare(emitter.module, "GOMP_parallel", ir.VoidType(),
                    [ir.PointerType(), ir.PointerType(), I32, I32])
    b.call(gomp, [outlined, slot, ir.Constant(I32, num_threads), ir.Constant(I32, 0)])


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
              for k in range(len(struct.elements))]
    b.call(body, fields[2:] + fields[:2])
    b.ret_void()
    return fn


def _dynamic_chunks(emitter, loop: For, lo: ir.Value, hi: ir.Value, failed: ir.Value) -> None:
    """Run the iterations ``lo..hi`` of ``loop`` handed out in pieces by libgomp
    (``GOMP_loop_dynamic_*``): a thread slowed down (by another process on its core)
    takes fewer of them.  A thread whose buffers could not be allocated takes its share
    without running it and reports the failure."""
    module, b, fn = emitter.module, emitter.builder, emitter.fn
    slot = ir.PointerType()
    start = _declare(module, "GOMP_loop_dynamic_start", I8, [I64, I64, I64, I64, slot, slot])
    following = _declare(module, "GOMP_loop_dynamic_next", I8, [slot, slot])
    with b.goto_entry_block():
        first_slot = b.alloca(I64, name="chunk.first")
        end_slot = b.alloca(I64, name="chunk.end")
    for value in (first_slot, end_slot):
        value.type = slot
    step = ir.Constant(I64, loop.step)
    # about CHUNKS_PER_THREAD pieces per thread: balance at a small cost per piece
    threads = b.sext(b.call(_declare(module, "omp_get_num_threads", I32, []), []), I64)
    trips = b.add(b.sdiv(b.sub(hi, lo), step), ir.Constant(I64, 1))
    pieces = b.mul(threads, ir.Constant(I64, CHUNKS_PER_THREAD))
    size = b.sdiv(b.add(trips, b.sub(pieces, ir.Constant(I64, 1))), pieces)
    size = b.select(b.icmp_signed("<", size, ir.Constant(I64, 1)), ir.Constant(I64, 1), size)
    has = b.call(start, [lo, b.add(hi, ir.Constant(I64, 1)), step, size, first_slot,
                         end_slot])
    chunk, work = fn.append_basic_block("chunk"), fn.append_basic_block("work")
    skip, more = fn.append_basic_block("skip"), fn.append_basic_block("next")
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_unsigned("!=", has, ir.Constant(I8, 0)), chunk, done)
    b.position_at_end(chunk)
    first = b.load(first_slot, typ=I64)
    last = b.sub(b.load(end_slot, typ=I64), ir.Constant(I64, 1))
    b.cbranch(failed, skip, work)
    b.position_at_end(skip)
    b.store(ir.Constant(I32, 1), emitter.status)  # threads only ever store 1 there
    b.branch(more)
    b.position_at_end(work)
    _assume_within(emitter, loop, first, last)
    emitter._serial_loop(loop, first, last)
    b.branch(more)
    b.position_at_end(more)
    again = b.call(following, [first_slot, end_slot])
    b.cbranch(b.icmp_unsigned("!=", again, ir.Constant(I8, 0)), chunk, done)
    b.position_at_end(done)
    b.call(_declare(module, "GOMP_loop_end_nowait", ir.VoidType(), []), [])


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
    types = [v.type for _, v in captured] + [I64, I64]
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
    _dynamic_chunks(emitter, region.loop, fn.args[-2], fn.args[-1], failed)
    emitter.free(heap)
    b.ret_void()
    (emitter.fn, emitter.builder, emitter.values, emitter.scalars, emitter.pointers,
     emitter.strides, emitter.status, emitter.counters) = saved
    return fn
