"""VTA-style schedules (packed layouts) for the accelerator tests and benchmark."""

import numpy as np

import polyopt as po
from polyopt.tensorize.accel import gemm_intrin


def matmul(config, m, n, k, *, tile_n, tile_k, threads=1, shift=8):
    """O (m x n tiles, int8) = clip((A @ W.T) >> shift) on packed tiles."""
    b, bi, bo = config.batch, config.block_in, config.block_out
    A = po.placeholder((m, k, b, bi), name="A", dtype="int8")
    W = po.placeholder((n, k, bo, bi), name="W", dtype="int8")
    ko = po.reduce_axis((0, k), name="ko")
    ki = po.reduce_axis((0, bi), name="ki")
    C = po.compute((m, n, b, bo), lambda i, j, x, y: po.sum(
        A[i, ko, x, ki].astype("int32") * W[j, ko, y, ki].astype("int32"), axis=[ko, ki]),
        name="C")
    R = po.compute(C.shape, lambda *a: po.maximum(po.minimum(C[a] // (1 << shift), 127),
                                                 -128), name="R")
    O = po.compute(C.shape, lambda *a: R[a].astype("int8"), name="O")
    s = po.create_schedule(O)
    s[C].set_scope("acc")
    s[R].set_scope("acc")
    AL = s.cache_read(A, "inp", [C])
    WL = s.cache_read(W, "wgt", [C])
    i, j, x, y = O.op.axis
    jo, ji = s[O].split(j, factor=tile_n)
    if threads > 1:
        jt, jo = s[O].split(jo, nparts=threads)
        s[O].reorder(jt, i, jo, x, ji, y)
        s[O].virtual_thread(jt)
    else:
        s[O].reorder(i, jo, x, ji, y)
    s[C].compute_at(s[O], jo)
    s[R].compute_at(s[O], jo)
    ci, cj, cx, cy = C.op.axis
    ko_o, ko_i = s[C].split(ko, factor=tile_k)
    s[C].reorder(ko_o, ci, cj, ko_i, cx, cy, ki)
    s[AL].compute_at(s[C], ko_o)
    s[WL].compute_at(s[C], ko_o)
    s[C].tensorize(cx, gemm_intrin(config))
    return s, [A, W, O]


def matmul_reference(a, w, shift=8):
    acc = np.einsum("ikxl,jkyl->ijxy", a.astype(np.int32), w.astype(np.int32))
    return np.clip(acc >> shift, -128, 127).astype(np.int8)


def conv2d(config, size, cin, cout, kernel, stride, *, rows, cout_tile, cin_tile,
           threads=1, shift=8):
    """A same-padded convolution on packed NCHWnc data and OIHWoi weights, requantized
    (shift, clip) in the accumulators; output rows tiled by ``rows``.  A strided 1x1
    convolution loads only the input rows it reads."""
    b, bi, bo = config.batch, config.block_in, config.block_out
    ci_blocks, co_blocks = cin // bi, cout // bo
    pad = kernel // 2
    out = (size + 2 * pad - kernel) // stride + 1
    D = po.placeholder((1, ci_blocks, size, size, b, bi), name="D", dtype="int8")
    K = po.placeholder((co_blocks, ci_blocks, kernel, kernel, bo, bi), name="K", dtype="int8")
    if kernel == 1 and stride > 1:  # the rows a strided 1x1 window reads, and only them:
        # a 2-D DMA load skips rows (not pixels within a row)
        P = po.compute((1, ci_blocks, out, size, b, bi),
                       lambda n, c, yy, xx, x, i: D[n, c, yy * stride, xx, x, i], name="P")
        row_of = lambda yy, ry: yy  # noqa: E731
    else:
        P = po.compute((1, ci_blocks, size + 2 * pad, size + 2 * pad, b, bi),
                       lambda n, c, yy, xx, x, i: po.if_then_else(
                           (yy >= pad) & (yy < size + pad) & (xx >= pad) & (xx < size + pad),
                           D[n, c, yy - pad, xx - pad, x, i], po.const(0, "int8")), name="P")
        row_of = lambda yy, ry: yy * stride + ry  # noqa: E731
    rc = po.reduce_axis((0, ci_blocks), name="rc")
    ry = po.reduce_axis((0, kernel), name="ry")
    rx = po.reduce_axis((0, kernel), name="rx")
    ri = po.reduce_axis((0, bi), name="ri")
    C = po.compute((1, co_blocks, out, out, b, bo), lambda n, f, yy, xx, x, o: po.sum(
        P[n, rc, row_of(yy, ry), xx * stride + rx, x, ri].astype("int32")
        * K[f, rc, ry, rx, o, ri].astype("int32"), axis=[rc, ry, rx, ri]), name="C")
    R = po.compute(C.shape, lambda *a: po.maximum(po.minimum(C[a] // (1 << shift), 127),
                                                 -128), name="R")
    O = po.compute(C.shape, lambda *a: R[a].astype("int8"), name="O")
    s = po.create_schedule(O)
    s[P].set_scope("inp")
    s[C].set_scope("acc")
    s[R].set_scope("acc")
    KL = s.cache_read(K, "wgt", [C])
    n, f, yy, xx, x, o = O.op.axis
    fo, fi = s[O].split(f, factor=cout_tile)
    yo, yi = s[O].split(yy, factor=rows)
    if threads > 1:
        ft, fo = s[O].split(fo, nparts=threads)
        s[O].reorder(ft, n, fo, yo, yi, xx, fi, x, o)
        s[O].virtual_thread(ft)
    else:
        s[O].reorder(n, fo, yo, yi, xx, fi, x, o)
    s[C].compute_at(s[O], yo)
    s[R].compute_at(s[O], yo)
    cn, cf, cy, cxx, cx, co = C.op.axis
    rco, rci = s[C].split(rc, factor=cin_tile)
    s[C].reorder(rco, cn, rci, cf, cy, cxx, ry, rx, cx, co, ri)
    s[P].compute_at(s[C], rco)
    s[KL].compute_at(s[C], rco)
    s[C].tensorize(cx, gemm_intrin(config))
    return s, [D, K, O]


def conv2d_reference(d, k, stride, shift=8):
    """NumPy: d (1, CB, H, W, 1, bi), k (FB, CB, kh, kw, bo, bi) -> int8 packed."""
    kernel = k.shape[2]
    pad = kernel // 2
    _, cb, h, w, b, bi = d.shape
    x = d.transpose(0, 4, 1, 5, 2, 3).reshape(b, cb * bi, h, w).astype(np.int32)
    fb, _, _, _, bo, _ = k.shape
    wt = k.transpose(0, 4, 1, 5, 2, 3).reshape(fb * bo, cb * bi, kernel, kernel).astype(np.int32)
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = (h + 2 * pad - kernel) // stride + 1
    acc = np.zeros((b, fb * bo, out, out), np.int32)
    for dy in range(kernel):
        for dx in range(kernel):
            patch = xp[:, :, dy:dy + stride * out:stride, dx:dx + stride * out:stride]
            acc += np.einsum("bchw,fc->bfhw", patch, wt[:, :, dy, dx])
    res = np.clip(acc >> shift, -128, 127).astype(np.int8)
    return res.reshape(b, fb, bo, out, out).transpose(1, 3, 4, 0, 2)[None]
