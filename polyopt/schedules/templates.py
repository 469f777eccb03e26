"""Ready-made schedules: plain schedule code with a few tunable parameters.

Each template applies ordinary primitives (so every step is checked) and returns the
loops it made, to be refined further.  Read them, copy them, change them.

>>> import polyopt as po
>>> A = po.placeholder((100, 70), name="A"); B = po.placeholder((70, 90), name="B")
>>> C = po.ops.matmul(A, B)
>>> s = po.create_schedule(C)
>>> loops = matmul_template(s, C, rows=4, cols=32)
>>> print(s.script())
s.cache_read("B", "global", ["C"])
s.cache_write("C", "local")
s["C"].tile("i", "j", 4, 32)
s["C"].reorder("j.outer", "i.outer", "i.inner", "j.inner")
s["C_local"].compute_at("C", "i.outer")
s["C_local"].reorder("k", "i", "j")
s["C_local"].unroll("i")
s["C_local"].vectorize("j")
s["B_global"].compute_at("C_local", "j.outer")
s["B_global"].vectorize("ax1")
s["C"].parallel("j.outer")
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, public
from ..machine import TargetInfo
from ..te.expr import TensorRead
from ..te.tensor import walk


@public
def matmul_template(s, C, *, rows: int | None = None, cols: int | None = None,
                    pack: bool = True, parallel: bool = True,
                    target_info: TargetInfo | None = None) -> dict:
    """A register-blocked schedule of a contraction ``C[..., i, j] = sum_k A[i, k] B[k, j]``
    (the BLIS/OpenBLAS structure, written with primitives):

    * ``cache_write(C, "local")``: each ``rows x cols`` tile of C is accumulated in a
      small buffer computed at the tile (``compute_at``) over the whole reduction, with
      ``k`` outside the tile, the tile's rows unrolled and its columns vectorized: the
      buffer lives in vector registers and each step of ``k`` is ``rows x cols / lanes``
      FMAs.  By default the tile is ``TargetInfo.register_tile`` of ``target_info`` (the
      host by default): 6 x 64 float32 (24 of 32 registers) with AVX-512, 6 x 16 (12 of
      16) with AVX2;
    * ``pack``: ``cache_read(B, "global")`` computed at the column block copies the
      ``K x cols`` panel of B that all the row tiles of that block read into one
      contiguous buffer (its exact footprint, allocated once per call);
    * ``parallel``: the column blocks (of every batch, for a batched ``C``) run in
      parallel, each thread with its own panel and accumulator.
    """
    info = target_facts(target_info)
    tile_rows, vectors = info.register_tile()
    rows = tile_rows if rows is None else rows
    cols = vectors * info.lanes("float32") if cols is None else cols
    stage = s[C]
    i, j = C.op.axis[-2:]
    if pack:  # (without packing, B may be read in any layout: weights packed already)
        panel = s.cache_read(_right_operand(C), "global", [C])
    local = s.cache_write(C, "local")
    io, jo, ii, ji = stage.tile(i, j, rows, cols)
    stage.reorder(jo, io, ii, ji)
    s[local].compute_at(stage, io)
    li, lj = local.op.axis[-2:]
    (k,) = local.op.reduce_axis[-1:]
    s[local].reorder(k, li, lj)
    s[local].unroll(li)
    s[local].vectorize(lj)
    loops = {"j.outer": jo, "i.outer": io, "i.inner": ii, "j.inner": ji, "local": local}
    if pack:
        s[panel].compute_at(s[local], jo)
        s[panel].vectorize(s[panel].axes[-1])
        loops["panel"] = panel
    if parallel:  # over the batches too: one column block per batch is common
        batch = list(C.op.axis[:-2])
        stage.parallel(stage.fuse(*batch, jo) if batch else jo)
    return loops


def _right_operand(C):
    """The tensor read as ``B[..., k, j]`` (the last reduce axis, then the last axis)."""
    if C.op.reduce_axis and len(C.op.axis) >= 2:
        k, j = C.op.reduce_axis[-1], C.op.axis[-1]
        for node in walk(C.op.body):
            if isinstance(node, TensorRead) and len(node.indices) >= 2 and \
                    node.indices[-2] is k and node.indices[-1] is j:
                return node.tensor
    raise InvalidArgumentError(
        f"matmul_template needs a contraction C[..., i, j] = sum_k A[..., i, k] * "
        f"B[..., k, j]; '{C.name}' reads no tensor as B[k, j]")


@public
def injective_template(s, T, *, vector: int | None = None, parallel: bool = True,
                       target_info: TargetInfo | None = None) -> dict:
    """An elementwise (injective) compute: the innermost loop split by ``vector`` (by
    default the float32 lanes of ``target_info``, the host by default) and vectorized,
    the outermost loop run in parallel."""
    vector = target_facts(target_info).lanes("float32") if vector is None else vector
    stage = s[T]
    axes = T.op.axis
    outer, inner = stage.split(axes[-1], factor=vector)
    stage.vectorize(inner)
    first = outer if len(axes) == 1 else axes[0]
    if parallel:
        stage.parallel(first)
    return {"outer": first, "vector": inner}


@public
def opencl_matmul_template(s, C, *, tile: int = 16, shared: bool = True) -> dict:
    """A contraction ``C[i, j] = sum_k A[i, k] * B[k, j]`` on OpenCL work-groups of
    ``tile x tile`` work-items, one element of C each.  With ``shared``, the tiles of A
    and B that a group needs for ``tile`` steps of k are first copied to ``__local``
    memory, each work-item loading one element of each (the classic tiled kernel);
    without, every work-item reads A and B from global memory (the naive kernel).

    >>> import polyopt as po
    >>> A = po.placeholder((64, 64), name="A"); B = po.placeholder((64, 64), name="B")
    >>> C = po.ops.matmul(A, B)
    >>> s = po.create_schedule(C)
    >>> loops = opencl_matmul_template(s, C, tile=8)
    >>> [(loop.name, loop.kind) for loop in s[C].axes][:3]
    [('i.outer', 'blockIdx.y'), ('j.outer', 'blockIdx.x'), ('k.outer', 'serial')]
    """
    reader = C.op.body.source
    A, B = (operand.tensor for operand in (reader.a, reader.b))
    copies = [s.cache_read(X, "shared", [C]) for X in (A, B)] if shared else []
    stage = s[C]
    i, j = C.op.axis[-2:]
    (k,) = C.op.reduce_axis[-1:]
    io, jo, ii, ji = stage.tile(i, j, tile, tile)
    loops = {"i.outer": io, "j.outer": jo, "i.inner": ii, "j.inner": ji}
    if shared:
        ko, ki = stage.split(k, factor=tile)
        stage.reorder(io, jo, ko, ii, ji, ki)
        loops.update({"k.outer": ko, "k.inner": ki})
    for loop, tag in ((io, "blockIdx.y"), (jo, "blockIdx.x"), (ii, "threadIdx.y"),
                      (ji, "threadIdx.x")):
        stage.bind(loop, tag)
    for copy in copies:
        s[copy].compute_at(stage, loops["k.outer"])
        rows, cols = s[copy].axes[-2:]
        s[copy].bind(rows, "threadIdx.y")
        s[copy].bind(cols, "threadIdx.x")
    return loops


@public
def opencl_injective_template(s, T, *, threads: int = 64) -> dict:
    """An elementwise compute on OpenCL: its last loop split by ``threads``, the inner
    part bound to work-items (threadIdx.x) and the outer part to work-groups
    (blockIdx.x); the other loops go to blockIdx.y and blockIdx.z (loops beyond the
    third are fused into the first, which needs constant extents).

    >>> import polyopt as po
    >>> A = po.placeholder((5, 100), name="A")
    >>> B = po.compute((5, 100), lambda i, j: A[i, j] + 1.0, name="B")
    >>> s = po.create_schedule(B)
    >>> [(loop.name, loop.kind) for loop in opencl_injective_template(s, B).values()]
    [('j.outer', 'blockIdx.x'), ('j.inner', 'threadIdx.x'), ('i', 'blockIdx.y')]
    """
    stage = s[T]
    outer, inner = stage.split(T.op.axis[-1], factor=threads)
    leading = list(T.op.axis[:-1])
    while len(leading) > 2:
        leading[:2] = [stage.fuse(leading[0], leading[1])]
    loops = {"groups": stage.bind(outer, "blockIdx.x"),
             "threads": stage.bind(inner, "threadIdx.x")}
    for axis, tag in zip(reversed(leading), ("blockIdx.y", "blockIdx.z")):
        loops[tag] = stage.bind(axis, tag)
    return loops


from .nn_templates import (injective_chain_template, layer_norm_template,  # noqa: E402,F401
                           row_reduction_template, softmax_template, target_facts,
                           vectorize_and_parallelize)
from .conv_templates import conv2d_template  # noqa: E402,F401
