"""Programs with OpenCL schedules and their NumPy references, shared by the PoCL tests of
tests/target/opencl and the Oclgrind runs (which import this module in a subprocess).

Each ``*_case`` function returns a :class:`Case`: the schedule, its argument list,
a function making the inputs for given sizes, and the NumPy reference.  ``check``
builds a case for a device and compares it with NumPy on several sizes (outputs start
as NaN, so unwritten elements show).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

import polyopt as po
from polyopt.te.tensor import ComputeOp

RNG = np.random.default_rng(7)
TILE = 8


@dataclass
class Case:
    schedule: po.Schedule
    args: list
    inputs: Callable[..., list]        # sizes -> the input arrays
    reference: Callable[..., list]     # inputs -> the expected outputs
    sizes: list                        # the sizes tests run by default
    tol: float = 1e-4
    in_place: bool = False             # a po.kernel: the inputs are the outputs

    @property
    def outputs(self):
        return [t for t in self.args if isinstance(t.op, ComputeOp)]


def run(case: Case, f, sizes: dict) -> float:
    """Largest error of ``f`` against NumPy for ``sizes``."""
    inputs = case.inputs(**sizes)
    expected = case.reference(*[a.copy() for a in inputs])
    if case.in_place:
        f(*inputs)
        results = inputs
    else:
        results = [np.full(e.shape, np.nan, e.dtype) for e in expected]
        f(*inputs, *results)
    return max(float(np.max(np.abs(r - e), initial=0.0)) for r, e in zip(results, expected))


def check(case: Case, device=None, sizes=None) -> None:
    """Build ``case`` for ``device`` (or take a built kernel) and compare with NumPy."""
    f = device if callable(device) else po.build(case.schedule, case.args,
                                                 target="opencl", device=device)
    for size in sizes or case.sizes:
        error = run(case, f, size)
        assert error <= case.tol, f"error {error} for sizes {size}"


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def matmul_case(*, shared: bool = True, tile: int = TILE) -> Case:
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.opencl_matmul_template(s, C, tile=tile, shared=shared)
    return Case(s, [A, B, C], lambda m, n, k: [rand(m, k), rand(k, n)],
                lambda a, b: [a @ b],
                [dict(m=16, n=16, k=16), dict(m=19, n=23, k=13)])


def conv2d_case(n=2, c=3, h=9, w=13, f=4) -> Case:
    """conv2d (3x3, zero padding 1): the padding inlined, the output channel and batch
    fused onto blockIdx.z, 4x8 spatial tiles of work-items."""
    data = po.placeholder((n, c, h, w), name="data")
    weight = po.placeholder((f, c, 3, 3), name="weight")
    out = po.ops.conv2d_nchw(data, weight, padding=1)
    s = po.create_schedule(out)
    s["padded"].compute_inline()
    nn, ff, yy, xx = out.op.axis
    fused = s[out].fuse(nn, ff)
    yo, xo, yi, xi = s[out].tile(yy, xx, 4, 8)
    for loop, tag in ((fused, "blockIdx.z"), (yo, "blockIdx.y"), (xo, "blockIdx.x"),
                      (yi, "threadIdx.y"), (xi, "threadIdx.x")):
        s[out].bind(loop, tag)

    def reference(d, wt):
        padded = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
        result = np.zeros((n, f, h, w), "float32")
        for ry in range(3):
            for rx in range(3):
                result += np.einsum("nchw,fc->nfhw", padded[:, :, ry:ry + h, rx:rx + w],
                                    wt[:, :, ry, rx])
        return [result]

    return Case(s, [data, weight, out], lambda: [rand(n, c, h, w), rand(f, c, 3, 3)],
                reference, [{}])


def softmax_case(m: int, n: int, threads: int = 16) -> Case:
    """Row softmax, one work-group per row: the max and the sum are reduced across the
    group's work-items (each reduces a chunk of the row, then a tree in __local memory)."""
    X = po.placeholder((m, n), name="X")
    k1, k2 = po.reduce_axis((0, n), name="k1"), po.reduce_axis((0, n), name="k2")
    mx = po.compute((m,), lambda i: po.max(X[i, k1], axis=k1), name="mx")
    e = po.compute((m, n), lambda i, j: po.exp(X[i, j] - mx[i]), name="e")
    sm = po.compute((m,), lambda i: po.sum(e[i, k2], axis=k2), name="sm")
    out = po.compute((m, n), lambda i, j: e[i, j] / sm[i], name="out")
    s = po.create_schedule(out)
    row = out.op.axis[0]
    for stage in (sm, e, mx):
        s[stage].compute_with(s[out], row)
    s[out].bind(row, "blockIdx.x")
    for stage in (mx, e, sm, out):
        chunks, _ = s[stage].split(s[stage].axes[1], nparts=threads)
        s[stage].bind(chunks, "threadIdx.x")

    def reference(x):
        y = np.exp(x - x.max(axis=1, keepdims=True))
        return [y / y.sum(axis=1, keepdims=True)]

    return Case(s, [X, out], lambda: [rand(m, n)], reference, [{}], tol=1e-6)


def elementwise_chain_case() -> Case:
    """Three elementwise stages, each its own kernel (launched in order), the
    intermediate results in global memory."""
    N, W = po.var("N"), po.var("W")
    A = po.placeholder((N, W), name="A")
    B = po.compute((N, W), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    C = po.compute((N, W), lambda i, j: po.tanh(B[i, j]) - A[i, j], name="C")
    D = po.compute((N, W), lambda i, j: po.maximum(C[i, j], 0.0) + B[i, j], name="D")
    s = po.create_schedule(D)
    for stage in (B, C, D):
        po.templates.opencl_injective_template(s, stage, threads=16)

    def reference(a):
        b = a * 2 + 1
        c = np.tanh(b) - a
        return [np.maximum(c, 0) + b]

    return Case(s, [A, D], lambda n, w: [rand(n, w)], reference,
                [dict(n=3, w=16), dict(n=5, w=37)], tol=1e-5)


def scan_case() -> Case:
    """A running sum along t (``po.scan``), parallel over the other axis: i is split
    onto work-groups and work-items, t stays a loop inside each work-item."""
    T, N = po.var("T"), po.var("N")
    X = po.placeholder((T, N), name="X")
    state = po.placeholder((T, N), name="state")
    init = po.compute((1, N), lambda t, i: X[0, i], name="init")
    update = po.compute((T, N), lambda t, i: state[t - 1, i] + X[t, i], name="update")
    Y = po.scan(init, update, state, inputs=[X])
    s = po.create_schedule(Y)
    for stage in s.stages:
        t, i = stage.axes
        stage.reorder(i, t)
        io, ii = stage.split(i, factor=TILE)
        stage.bind(io, "blockIdx.x")
        stage.bind(ii, "threadIdx.x")
    return Case(s, [X, Y], lambda t, n: [rand(t, n)], lambda x: [np.cumsum(x, axis=0)],
                [dict(t=6, n=8), dict(t=5, n=21)])


M_ROWS, N_COLS = po.var("M"), po.var("N")


@po.kernel
def cumsum_rows(X: po.f32[M_ROWS, N_COLS]):
    for i in range(M_ROWS):
        for j in range(1, N_COLS):
            X[i, j] = X[i, j] + X[i, j - 1]


def row_scan_case() -> Case:
    """An in-place prefix sum along the second axis (``po.kernel``): the rows go to
    work-groups and work-items, each work-item scans its row (binding ``j`` is refused:
    it carries the scan's dependence)."""
    s = po.create_schedule(cumsum_rows)
    stage = s.stages[0]
    rows, lanes = stage.split("i", factor=TILE)
    stage.bind(rows, "blockIdx.x")
    stage.bind(lanes, "threadIdx.x")
    return Case(s, list(cumsum_rows.args), lambda m, n: [rand(m, n)],
                lambda x: [np.cumsum(x, axis=1)], [dict(m=13, n=9), dict(m=8, n=1)],
                tol=1e-5, in_place=True)


def local_accumulator_case() -> Case:
    """Matrix-vector product with the accumulator in private memory
    (``cache_write(..., "local")``), one work-item per row."""
    M, K = po.var("M"), po.var("K")
    A, x = po.placeholder((M, K), name="A"), po.placeholder((K,), name="x")
    k = po.reduce_axis((0, K), name="k")
    y = po.compute((M,), lambda i: po.sum(A[i, k] * x[k], axis=k), name="y")
    s = po.create_schedule(y)
    yl = s.cache_write(y, "local")
    io, ii = s[y].split(y.op.axis[0], factor=TILE)
    s[y].bind(io, "blockIdx.x")
    s[y].bind(ii, "threadIdx.x")
    s[yl].compute_at(s[y], ii)
    return Case(s, [A, x, y], lambda m, k: [rand(m, k), rand(k)], lambda a, v: [a @ v],
                [dict(m=8, k=5), dict(m=13, k=7)])


def rfactor_rows_case(m: int = 6, n: int = 100, threads: int = 16) -> Case:
    """Row sums after ``rfactor``: each work-item sums a chunk of its group's row into
    the partial results, then the group reduces the partials (a tree in __local)."""
    A = po.placeholder((m, n), name="A")
    k = po.reduce_axis((0, n), name="k")
    S = po.compute((m,), lambda i: po.sum(A[i, k], axis=k), name="S")
    s = po.create_schedule(S)
    chunks, _ = s[S].split(k, nparts=threads)
    SF = s.rfactor(S, chunks)
    part, row, inner = s[SF].axes
    s[SF].reorder(row, part, inner)
    s[SF].compute_with(s[S], S.op.axis[0])
    s[S].bind(S.op.axis[0], "blockIdx.x")
    s[SF].bind(part, "threadIdx.x")
    s[S].bind(s[S].axes[1], "threadIdx.x")
    return Case(s, [A, S], lambda: [rand(m, n)], lambda a: [a.sum(axis=1)], [{}], tol=1e-4)


def neighbours(columns: int = 16):
    """``C[i, j] = B[i, j] + B[i, j - 1]``, ``B = 2A``: rows are independent, columns not."""
    N = po.var("N")
    A = po.placeholder((N, columns), name="A")
    B = po.compute((N, columns), lambda i, j: A[i, j] * 2.0, name="B")
    C = po.compute((N, columns), lambda i, j: B[i, j] + po.if_then_else(j > 0, B[i, j - 1],
                                                                         0.0), name="C")
    return A, B, C


def neighbours_case() -> Case:
    """:func:`neighbours` with B computed by the same group just before C: the
    work-items exchange B through global memory, a barrier in between."""
    A, B, C = neighbours()
    s = po.create_schedule(C)
    i, j = C.op.axis
    s[B].compute_with(s[C], i)
    s[C].bind(i, "blockIdx.x")
    s[C].bind(j, "threadIdx.x")
    s[B].bind(s[B].axes[1], "threadIdx.x")

    def reference(a):
        b = 2 * a
        c = b.copy()
        c[:, 1:] += b[:, :-1]
        return [c]

    return Case(s, [A, C], lambda n: [rand(n, 16)], reference, [dict(n=3)])


def matmul_variant(ti: int, tj: int, tk: int, shared: bool, k_outside: bool,
                   threads: tuple, copy_at_k: bool, bind_copy: bool) -> Case:
    """``D = 2 (A @ B) + 1`` (two kernels) with a schedule chosen by the arguments:
    tile sizes, A staged in __local memory or not (computed at k.outer or j.outer),
    k.outer outside or inside the work-item loops, which of i.inner/j.inner go to
    work-items.  Many combinations are refused (a clean PolyoptError); the others must
    compute NumPy's numbers, race-free."""
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    D = po.compute((M, N), lambda i, j: C[i, j] * 2.0 + 1.0, name="D")
    s = po.create_schedule(D)
    AS = s.cache_read(A, "shared", [C]) if shared else None
    for stage in (C, D):
        io, jo, ii, ji = s[stage].tile(*stage.op.axis, ti, tj)
        if stage is C:
            ko, ki = s[C].split(C.op.reduce_axis[0], factor=tk)
            s[C].reorder(*((io, jo, ko, ii, ji, ki) if k_outside else (io, jo, ii, ji, ko, ki)))
        s[stage].bind(io, "blockIdx.y")
        s[stage].bind(jo, "blockIdx.x")
        for loop, tag, wanted in ((ii, "threadIdx.y", threads[0]), (ji, "threadIdx.x",
                                                                   threads[1])):
            if wanted:
                s[stage].bind(loop, tag)
    if AS is not None:
        s[AS].compute_at(s[C], ko if copy_at_k else jo)
        if bind_copy:
            rows, cols = s[AS].axes[-2:]
            s[AS].bind(rows, "threadIdx.y")
            s[AS].bind(cols, "threadIdx.x")
    return Case(s, [A, B, D], lambda m, n, k: [rand(m, k), rand(k, n)],
                lambda a, b: [2 * (a @ b) + 1],
                [dict(m=7, n=9, k=5), dict(m=1, n=4, k=11)])


CASES = {
    "matmul_shared": lambda: matmul_case(shared=True),
    "matmul_naive": lambda: matmul_case(shared=False),
    "conv2d": conv2d_case,
    "softmax": lambda: softmax_case(5, 37),
    "elementwise_chain": elementwise_chain_case,
    "scan": scan_case,
    "row_scan": row_scan_case,
    "local_accumulator": local_accumulator_case,
    "rfactor_rows": rfactor_rows_case,
    "neighbours": neighbours_case,
}
