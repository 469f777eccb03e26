"""Schedule templates built on the intrinsics: int8 matrix products with ``vpdpbusd``
register tiles (plain schedule code; every step checked, the tensorize matched exactly).

>>> import polyopt as po
>>> A = po.placeholder((12, 8), name="A", dtype="uint8")
>>> W = po.placeholder((2, 64, 4), name="W", dtype="int8")
>>> C = po.ops.matmul_u8s8(A, W)
>>> s = po.create_schedule(C)
>>> loops = int8_matmul_template(s, C, rows=6, cols=64, parallel=False)
>>> s.program.tensorized[0][:2]
('C_local', 'i')
"""

from __future__ import annotations

from .builtin import gemm_u8s8


def int8_matmul_template(s, C, *, rows: int | None = None, cols: int = 64,
                         parallel: bool = True) -> dict:
    """``C = po.ops.matmul_u8s8(A, Wp)``: a ``rows x cols`` int32 accumulator tile
    (``cache_write`` computed at the tile, in registers) updated by one
    :func:`~polyopt.tensorize.builtin.gemm_u8s8` call per group of 4 reduction elements
    (``rows * cols / 16`` ``vpdpbusd``); the column blocks run in parallel.

    C's width must be a multiple of ``cols`` (pack the weights with
    ``pack_vnni_numpy(w, columns=cols, blocked=True)``: the padded columns are zero, and
    the caller reads ``c[:, :N]``); ``rows`` defaults to the largest of 6, 4, 3, 2, 1
    that divides C's height (a partial tile of rows does not match the intrinsic: the
    refusal names the extent)."""
    stage = s[C]
    i, j = C.op.axis
    height = getattr(C.shape[0], "value", None)
    if rows is None:
        rows = next((r for r in (6, 4, 3, 2) if isinstance(height, int) and height % r == 0), 1)
    local = s.cache_write(C, "local")
    io, jo, ii, ji = stage.tile(i, j, rows, cols)
    stage.reorder(jo, io, ii, ji)
    s[local].compute_at(stage, io)
    li, lj = local.op.axis
    ko, ki = local.op.reduce_axis
    s[local].reorder(ko, li, lj, ki)
    s[local].tensorize(li, gemm_u8s8(rows, cols))
    s[C].vectorize(ji)
    if parallel:
        stage.parallel(jo)
    return {"j.outer": jo, "i.outer": io, "local": local, "rows": rows}
