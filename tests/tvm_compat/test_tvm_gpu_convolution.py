"""The "how to optimize convolution on GPU" tutorial, ported by changing the imports
only, at small sizes.  The tutorial's own schedule attaches its shared-memory copies
at a reduction loop inside the thread loops (a load shared by the work-items of a
group): polyopt moves the thread loops of that stage inside its reduction loops (the
same kernel on OpenCL), so each copy has one footprint per group and step, loaded by
all the work-items, with barriers placed by the exact analysis.  Writing the reduction
loops outside the thread loops directly works too.  The padding stage is inlined before
its shared copy is made, as the tutorial does."""

import numpy as np
import pytest

import polyopt as te
from polyopt import tvm
from testlib.numeric import assert_numbers
from testlib.tvm_compat import opencl  # noqa: F401  (a fixture)

batch, in_channel, out_channel, in_size, kernel, pad, stride = 32, 8, 32, 4, 3, 1, 1
out_size = (in_size - kernel + 2 * pad) // stride + 1


def convolution():
    A = te.placeholder((in_size, in_size, in_channel, batch), name="A")
    W = te.placeholder((kernel, kernel, in_channel, out_channel), name="W")
    Apad = te.compute(
        (in_size + 2 * pad, in_size + 2 * pad, in_channel, batch),
        lambda yy, xx, cc, nn: tvm.tir.if_then_else(
            tvm.tir.all(yy >= pad, yy - pad < in_size, xx >= pad, xx - pad < in_size),
            A[yy - pad, xx - pad, cc, nn], tvm.tir.const(0.0, "float32")),
        name="Apad")
    rc = te.reduce_axis((0, in_channel), name="rc")
    ry = te.reduce_axis((0, kernel), name="ry")
    rx = te.reduce_axis((0, kernel), name="rx")
    B = te.compute(
        (out_size, out_size, out_channel, batch),
        lambda yy, xx, ff, nn: te.sum(
            Apad[yy * stride + ry, xx * stride + rx, rc, nn] * W[ry, rx, rc, ff],
            axis=[ry, rx, rc]),
        name="B")
    return A, W, Apad, B


def check(func, A, W, B):
    a_np = np.random.uniform(size=(in_size, in_size, in_channel, batch)).astype("float32")
    w_np = np.random.uniform(size=(kernel, kernel, in_channel, out_channel)).astype("float32")
    b = tvm.nd.array(np.zeros((out_size, out_size, out_channel, batch), dtype="float32"))
    func(tvm.nd.array(a_np), tvm.nd.array(w_np), b)
    padded = np.pad(a_np, ((pad, pad), (pad, pad), (0, 0), (0, 0)))
    expected = np.zeros_like(b.numpy())
    for y in range(kernel):
        for x in range(kernel):
            expected += np.einsum("hwcn,cf->hwfn", padded[y:y + out_size, x:x + out_size],
                                  w_np[y, x])
    assert_numbers(b.numpy(), expected, rtol=1e-4, atol=1e-7)  # (TVM's atol)


def tutorial_schedule(A, W, Apad, B):
    """The tutorial's schedule, as written: the shared copies are computed at a reduction
    loop inside the thread loops and loaded by all the work-items of a group."""
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    AL = s.cache_read(AA, "local", [B])
    WL = s.cache_read(WW, "local", [B])
    BL = s.cache_write(B, "local")
    tile, num_thread, step, vthread = 4, 4, 4, 2
    block_factor = tile * num_thread
    block_x = te.thread_axis("blockIdx.x")
    block_y = te.thread_axis("blockIdx.y")
    block_z = te.thread_axis("blockIdx.z")
    thread_x = te.thread_axis((0, num_thread), "threadIdx.x")
    thread_y = te.thread_axis((0, num_thread), "threadIdx.y")
    thread_xz = te.thread_axis((0, vthread), "vthread", name="vx")
    thread_yz = te.thread_axis((0, vthread), "vthread", name="vy")
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    s[B].bind(bz, block_z)
    s[B].bind(by, block_y)
    s[B].bind(bx, block_x)
    tyz, fi = s[B].split(fi, nparts=vthread)
    txz, ni = s[B].split(ni, nparts=vthread)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    s[B].reorder(bz, by, bx, tyz, txz, ty, tx, fi, ni)
    s[B].bind(tyz, thread_yz)
    s[B].bind(txz, thread_xz)
    s[B].bind(ty, thread_y)
    s[B].bind(tx, thread_x)
    s[BL].compute_at(s[B], tx)
    yi, xi, fi, ni = s[BL].op.axis
    ry, rx, rc = s[BL].op.reduce_axis
    rco, rci = s[BL].split(rc, factor=step)
    s[BL].reorder(rco, ry, rx, rci, fi, ni)
    s[AA].compute_at(s[BL], rx)
    s[WW].compute_at(s[BL], rx)
    s[AL].compute_at(s[BL], rci)
    s[WL].compute_at(s[BL], rci)
    yi, xi, ci, ni = s[AA].op.axis
    ty, ci = s[AA].split(ci, nparts=num_thread)
    tx, ni = s[AA].split(ni, nparts=num_thread)
    _, ni = s[AA].split(ni, factor=4)
    s[AA].reorder(ty, tx, yi, xi, ci, ni)
    s[AA].bind(ty, thread_y)
    s[AA].bind(tx, thread_x)
    s[AA].vectorize(ni)
    yi, xi, ci, fi = s[WW].op.axis
    ty, ci = s[WW].split(ci, nparts=num_thread)
    tx, fi = s[WW].split(fi, nparts=num_thread)
    _, fi = s[WW].split(fi, factor=4)
    s[WW].reorder(ty, tx, yi, xi, ci, fi)
    s[WW].bind(ty, thread_y)
    s[WW].bind(tx, thread_x)
    s[WW].vectorize(fi)
    return s


def test_the_tutorials_cooperative_load_runs_as_written(opencl):
    A, W, Apad, B = convolution()
    s = tutorial_schedule(A, W, Apad, B)
    text = str(tvm.lower(s, [A, W, B], simple_mode=True))
    # the thread loops of B_local now run inside its reduction loops, and the copies
    # (one footprint per group and reduction step) are loaded by all the work-items
    assert text.index("for (rx = 0") < text.index("Apad_shared[0, 0, ax2_outer")
    assert "scope shared: per work-group" in text
    func = tvm.build(s, [A, W, B], "opencl")
    source = func.imported_modules[0].get_source()
    assert "__local float Apad_shared" in source and "barrier(" in source
    check(func, A, W, B)


def test_a_shared_copy_inside_thread_loops_without_a_serial_loop_is_still_refused():
    A, W, Apad, B = convolution()
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=16)
    tx, fi = s[B].split(fi, nparts=4)
    s[B].bind(bz, te.thread_axis("blockIdx.z"))
    s[B].bind(tx, te.thread_axis("threadIdx.x"))
    with pytest.raises(te.LoopRaceError) as err:
        s[AA].compute_at(s[B], tx)   # per work-item copies of one per-group buffer
    assert type(err.value) is te.LoopRaceError and err.value.loop == tx.name
    assert "(TVM's cooperative load)" in err.value.repair  # the repair names TVM's way


def test_the_suggested_schedule_loads_the_shared_copies_with_all_work_items(opencl):
    A, W, Apad, B = convolution()
    s = te.create_schedule(B.op)
    s[Apad].compute_inline()
    AA = s.cache_read(Apad, "shared", [B])
    WW = s.cache_read(W, "shared", [B])
    num_thread, block_factor, step = 4, 16, 4
    hi, wi, fi, ni = s[B].op.axis
    bz = s[B].fuse(hi, wi)
    by, fi = s[B].split(fi, factor=block_factor)
    bx, ni = s[B].split(ni, factor=block_factor)
    ty, fi = s[B].split(fi, nparts=num_thread)
    tx, ni = s[B].split(ni, nparts=num_thread)
    ry, rx, rc = s[B].op.reduce_axis
    rco, rci = s[B].split(rc, factor=step)
    s[B].reorder(bz, by, bx, rco, ry, rx, ty, tx, rci, fi, ni)
    for loop, tag in ((bz, "blockIdx.z"), (by, "blockIdx.y"), (bx, "blockIdx.x"),
                      (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[B].bind(loop, te.thread_axis(tag))
    for cache in (AA, WW):
        s[cache].compute_at(s[B], rx)
        a0, a1, a2, a3 = s[cache].op.axis
        cy, a2 = s[cache].split(a2, nparts=num_thread)
        cx, a3 = s[cache].split(a3, nparts=num_thread)
        s[cache].reorder(cy, cx, a0, a1, a2, a3)
        s[cache].bind(cy, te.thread_axis("threadIdx.y"))
        s[cache].bind(cx, te.thread_axis("threadIdx.x"))
    func = tvm.build(s, [A, W, B], "opencl")
    source = func.imported_modules[0].get_source()
    assert "__local float Apad_shared" in source and "barrier(" in source
    check(func, A, W, B)
