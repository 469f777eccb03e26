"""Long programs: each loop nest at the top of the function in its own LLVM function.

LLVM's loop passes recompute function-wide analyses after changing a loop, so the O3
time of one function holding K loop nests grows with K squared (a chain of 200
stencils: 5 s, of 500: about a minute).  Above :data:`OUTLINE_FROM` nests, each
top-level nest becomes an internal ``noinline`` function of the arrays it touches
(``noalias``, as in the kernel itself), the sizes and the strides it needs, which the
kernel calls in order: each is optimized on its own, in time linear in K.  Nests that
compile to the same code (a chain of identical stencils on different arrays) share
one function, so LLVM optimizes and compiles it once.  The kernel itself, then only
allocations and calls, is left unoptimized.
"""

from __future__ import annotations

from llvmlite import ir

from ...ast.nodes import Block, For, Node, loops, runs
from .values import I64

OUTLINE_FROM = 16  # top-level nests from which they are outlined


def emit_top_level(emitter, body: Node) -> None:
    """Emit the function body ``body``: nest by nest in functions when it is long."""
    items = body.items if isinstance(body, Block) else (body,)
    nests = [item for item in items if next(loops(item), None) is not None]
    if len(nests) < OUTLINE_FROM:
        emitter._node(body)
        return
    # the kernel itself is now a driver (allocations, calls): LLVM's SLP vectorizer would
    # spend seconds on its long straight-line code of K allocations for nothing
    emitter.fn.attributes.add("noinline")
    emitter.fn.attributes.add("optnone")
    shared: dict[str, ir.Function] = {}
    for item in items:
        if next(loops(item), None) is None:
            emitter._node(item)
            continue
        emitter._write_pending()
        fn, args = _outline(emitter, item)
        text = _text_without_names(fn)
        if text is not None and text in shared:
            _discard(emitter, fn)
            fn = shared[text]
        elif text is not None:
            shared[text] = fn
        emitter.builder.call(fn, args)
        emitter._known_in = (0, {})  # the nest wrote memory: nothing is known


def _outline(emitter, item: Node) -> tuple[ir.Function, list[ir.Value]]:
    """``item`` as a new internal function, and the values to call it with."""
    used = {access.array for run in runs(item)
            for access in emitter.program.statement(run.stmt).accesses}
    captured = [("status", None, emitter.status)]
    captured += [("scalar", name, value) for name, value in emitter.scalars.items()]
    captured += [("pointer", name, emitter.pointers[name])
                 for name in sorted(used & emitter.pointers.keys(), key=_positions(emitter).get)]
    for name in sorted(used & set(emitter.strides)):
        captured += [("stride", (name, d), v) for d, v in enumerate(emitter.strides[name])
                     if v is not None and not isinstance(v, ir.Constant)]
    module = emitter.module
    count = getattr(emitter, "_outlined", 0)
    emitter._outlined = count + 1
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [v.type for *_, v in captured]),
                     name=f"{emitter.fn.name}.nest{count}")
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    saved = (emitter.fn, emitter.builder, emitter.values, emitter.scalars, emitter.pointers,
             emitter.strides, emitter.status, emitter.counters, emitter._known_in)
    emitter.fn = fn
    emitter.builder = emitter.new_builder(fn.append_basic_block("entry"))
    emitter.values = emitter.new_values(emitter.builder)
    emitter.scalars, emitter.pointers, emitter.counters = {}, {}, {}
    emitter.strides = {array: list(saved[5][array]) for array in used if array in saved[5]}
    for position, ((kind, key, _), arg) in enumerate(zip(captured, fn.args)):
        arg.name = f"a{position}"  # the same names in every nest: equal nests, equal text
        if kind == "status":
            emitter.status = arg
        elif kind == "scalar":
            emitter.scalars[key] = arg
        elif kind == "pointer":
            arg.add_attribute("noalias")
            emitter.pointers[key] = arg
        else:
            emitter.strides[key[0]][key[1]] = arg
    emitter._node(item)
    emitter._write_pending()
    emitter.builder.ret_void()
    (emitter.fn, emitter.builder, emitter.values, emitter.scalars, emitter.pointers,
     emitter.strides, emitter.status, emitter.counters, emitter._known_in) = saved
    return fn, [v for *_, v in captured]


def _positions(emitter) -> dict[str, int]:
    """Each array's position among the kernel's pointers (the order of a nest's
    arguments), computed once, not once per nest."""
    found = emitter.__dict__.get("_pointer_positions")
    if found is None or len(found) != len(emitter.pointers):
        found = {name: k for k, name in enumerate(emitter.pointers)}
        emitter._pointer_positions = found
    return found


def _text_without_names(fn: ir.Function) -> str | None:
    """The function's IR with its own name left out; None when it refers to metadata
    (loop hints are distinct per loop, so such nests are kept apart)."""
    text = str(fn)
    if "!" in text:
        return None
    return text.replace(f'@"{fn.name}"', "@nest", 1)


def _discard(emitter, fn: ir.Function) -> None:
    """Remove ``fn`` (a copy of an earlier nest) from the module.  It stays referenced:
    the emitter's caches are keyed by the identity of basic blocks, which must not be
    reused by the blocks of later nests."""
    del emitter.module.globals[fn.name]
    emitter.__dict__.setdefault("_discarded", []).append(fn)
