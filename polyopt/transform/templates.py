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


from .nn_templates import (conv2d_template, injective_chain_template,  # noqa: E402,F401
                           layer_norm_template, row_reduction_template, softmax_template,
                           vectorize_and_parallelize)
