"""Ready-made schedules: plain schedule code with a few tunable parameters.

Each template applies ordinary primitives (so every step is checked) and returns the
loops it made, to be refined further.  Read them, copy them, change them.

>>> import polyopt as po
>>> A = po.placeholder((100, 70), name="A"); B = po.placeholder((70, 90), name="B")
>>> C = po.ops.matmul(A, B)
>>> s = po.create_schedule(C)
>>> loops = matmul_template(s, C, tile_i=32, tile_j=32, tile_k=8)
>>> [loop.name for loop in s[C].axes]
['i.outer', 'j.outer', 'k.outer', 'i.inner', 'k.inner', 'j.inner']
"""

from __future__ import annotations


def matmul_template(s, C, *, tile_i: int = 64, tile_j: int = 64, tile_k: int = 16,
                    parallel: bool = True, vectorize: bool = True) -> dict:
    """Tile the two output loops and the reduction of a contraction ``C[i, j] = sum_k``,
    order them ``i.o, j.o, k.o, i.i, k.i, j.i`` (the innermost loop streams a row of B and
    of C), vectorize ``j.i`` and run the row tiles in parallel."""
    stage = s[C]
    i, j = C.op.axis[-2:]
    (k,) = C.op.reduce_axis[-1:]
    io, jo, ii, ji = stage.tile(i, j, tile_i, tile_j)
    ko, ki = stage.split(k, factor=tile_k)
    stage.reorder(io, jo, ko, ii, ki, ji)
    if vectorize:
        stage.vectorize(ji)
    if parallel:
        stage.parallel(io)
    return {"i.outer": io, "j.outer": jo, "k.outer": ko, "i.inner": ii, "k.inner": ki,
            "j.inner": ji}


def injective_template(s, T, *, vector: int = 16, parallel: bool = True) -> dict:
    """An elementwise (injective) compute: the innermost loop split by ``vector`` and
    vectorized, the outermost loop run in parallel."""
    stage = s[T]
    axes = T.op.axis
    outer, inner = stage.split(axes[-1], factor=vector)
    stage.vectorize(inner)
    first = outer if len(axes) == 1 else axes[0]
    if parallel:
        stage.parallel(first)
    return {"outer": first, "vector": inner}


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
