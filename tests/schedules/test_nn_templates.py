"""Templates for conv2d, elementwise chains and row reductions: the numbers of NumPy on
dividing and non-dividing sizes, on 1 and 2 threads, with packed SIMD in the assembly."""

import re

import numpy as np
import pytest

import polyopt as po
from polyopt.schedules.nn_templates import producers
from polyopt.schedules.conv_templates import conv2d_channel_template

from testlib.machine import WIDE, builds_for, machine_for, vector_of
from testlib.numeric import assert_numbers

THREADS = [1, 2]
PACKED = re.compile(r"\bv(?:fmadd\w*|add|mul|sub|div|max|min)ps\b[^\n]*%[xyz]mm")


def _rand(rng, shape):
    return rng.standard_normal(shape, dtype=np.float32)


def _assert_packed_simd(f):
    assert PACKED.search(f.assembly), "no packed float32 vector instruction in the assembly"


def numpy_conv2d(x, w, padding, stride):
    """Reference NCHW convolution (im2col + matmul)."""
    n, c, h, wd = x.shape
    k, _, r, s = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = (h + 2 * padding - r) // stride + 1, (wd + 2 * padding - s) // stride + 1
    cols = np.empty((n, c, r, s, oh, ow), x.dtype)
    for dy in range(r):
        for dx in range(s):
            cols[:, :, dy, dx] = xp[:, :, dy:dy + stride * oh:stride, dx:dx + stride * ow:stride]
    out = np.einsum("kq,nqp->nkp", w.reshape(k, -1), cols.reshape(n, c * r * s, oh * ow))
    return out.reshape(n, k, oh, ow)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("batch, c, f, size, kernel, padding, stride, tile_f, path", [
    (1, 8, 8, 16, 3, 1, 1, 4, "tiled"),       # register tile 4 x 4 rows x 16
    (2, 4, 16, 16, 3, 1, 1, 8, "tiled"),      # batch 2, 8 x 16
    (1, 2, 4, 100, 3, 1, 1, 2, "tiled"),      # a wide row: tiles of 50 columns, unrolled
    (1, 2, 4, 67, 3, 1, 1, 2, "rows"),        # a prime width over 64: vectorized rows
    (1, 5, 7, 23, 3, 1, 1, 4, "rows"),        # nothing divides: vectorized rows
    (1, 8, 16, 31, 1, 0, 2, 8, "pointwise"),  # strided 1x1 (a downsample): input packed
    (2, 3, 8, 40, 1, 0, 2, 4, "pointwise"),   # strided 1x1, batch 2, width 20
    (1, 5, 9, 33, 1, 0, 2, 4, "pointwise"),   # strided 1x1, 9 channels (tile 1), width 17
    (1, 4, 8, 50, 1, 0, 3, 4, "pointwise"),   # stride 3 1x1, width 17
    (1, 6, 24, 12, 1, 0, 1, 4, "pointwise"),  # 1x1, stride 1: no copy; 144 = 3 tiles
    (1, 3, 10, 5, 1, 1, 1, 4, "pointwise"),   # 1x1 with padding: 49 points, one tile + 1
    (1, 4, 8, 5, 1, 0, 2, 4, "pointwise"),    # 3 x 3 output: less than one vector
    (1, 4, 16, 7, 3, 1, 1, 8, "channels"),    # 7 x 7: vectorized across channels
    (1, 4, 8, 14, 3, 1, 1, 8, "channels"),    # 14 x 14, 8 channels in a 32-channel tile
    (2, 6, 10, 9, 3, 1, 2, 3, "channels"),    # stride 2, width 5, batch 2
    (1, 8, 12, 14, 1, 0, 2, 8, "pointwise"),  # strided 1x1, 7 x 7
    (1, 20, 20, 5, 3, 1, 1, 4, "channels"),   # 20 channels, 5 x 5 (no divisor of 32)
    (1, 20, 36, 5, 3, 1, 2, 4, "channels"),   # 36 channels (32 + 4), 5 x 5, stride 2
    (1, 20, 20, 11, 1, 0, 2, 4, "pointwise"),  # 1x1 stride 2, width 6
    (1, 6, 12, 56, 1, 0, 2, 8, "pointwise"),  # 784 points = 16 x 48 + 16; 12 channels: 4
    (1, 5, 24, 28, 1, 0, 1, 8, "pointwise"),  # the same points, stride 1
    (1, 3, 20, 13, 5, 2, 1, 4, "channels"),   # 5x5 kernel, prime width 13
    (1, 72, 40, 7, 3, 1, 1, 4, "channels"),   # 72 input channels: 32 + 32 + 8 packed
    (1, 64, 48, 14, 3, 1, 1, 4, "channels"),  # 64 = 2 x 32 input channels, 14 x 14
])
def test_conv2d_template(threads, batch, c, f, size, kernel, padding, stride, tile_f, path,
                         capfd):
    X = po.placeholder((batch, c, size, size), name="X")
    W = po.placeholder((f, c, kernel, kernel), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=padding, stride=stride, name="Y")
    s = po.create_schedule(Y)
    # the paths are those of an AVX-512 machine (16 lanes); the kernel runs on the host
    loops = po.templates.conv2d_template(s, Y, tile_f=tile_f, target_info=WIDE)
    assert loops["f.outer"].kind == "parallel"
    if path == "tiled":
        x_inner = loops.get("x.inner", loops.get("x"))
        assert loops["f.inner"].kind == "unrolled" and x_inner.kind in ("unrolled", "vectorized")
        assert loops["rc"].kind == "serial"
    elif path == "rows":
        assert loops["x"].kind == "vectorized"
    elif path == "pointwise":  # output points fused: vectors span rows
        kinds = [a.kind for a in s[Y].axes][-3:]
        assert kinds == ["unrolled", "unrolled", "vectorized"]
        assert ("packed" in loops) == (stride > 1)
    else:
        kinds = [a.kind for a in s[loops["local"]].axes][-2:]
        assert kinds == ["unrolled", "vectorized"]
    _check_conv_kernel(po.build(s, [X, W, Y], num_threads=threads, parallel_min_work=0), (batch, c, size, size),
                       (f, c, kernel, kernel), padding, stride,
                       parallel=path != "channels" or f > 32)
    assert "loop not unrolled" not in capfd.readouterr().err


def _check_conv_kernel(f_, x_shape, w_shape, padding, stride, parallel=True):
    """The kernel's numbers are NumPy's; it has packed SIMD and (``parallel``: more than
    one block of output channels) runs in parallel."""
    rng = np.random.default_rng(0)
    x, w = _rand(rng, x_shape), _rand(rng, w_shape)
    expected = numpy_conv2d(x, w, padding, stride)
    y = np.full(expected.shape, np.nan, np.float32)
    f_(x, w, y)
    assert_numbers(y, expected, rtol=1e-4, atol=1e-4 * np.sqrt(w[0].size))
    assert "polyopt_parallel" in f_.llvm_ir or not parallel
    _assert_packed_simd(f_)


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_pointwise_template_tail_tile_keeps_its_vectors(stride):
    """784 points: 16 tiles of 8 channels x 3 vectors and a tail of 8 x 1 vector, whose
    code LLVM once rebuilt from shuffled pieces of loads (the sums stored every step)."""
    X = po.placeholder((1, 16, 28 * stride, 28 * stride), name="X")
    W = po.placeholder((16, 16, 1, 1), name="W")
    Y = po.ops.conv2d_nchw(X, W, stride=stride, padding=0, name="Y")
    s = po.create_schedule(Y)
    po.templates.conv2d_template(s, Y, target_info=machine_for("avx512f"))
    inspected, f_ = builds_for(s, [X, W, Y], "avx512f", num_threads=1)
    functions = inspected.assembly.split("@function")
    products = [text for text in functions if "vfmadd" in text]
    assert len(products) == 1 and products[0].count("vfmadd") == 24 + 8
    assert not re.search(r"vinsert|vperm|vshuf|vextract", products[0]), products[0]
    _check_conv_kernel(f_, (1, 16, 28 * stride, 28 * stride), (16, 16, 1, 1), 0, stride)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("c, f, size, kernel, padding, stride", [
    (256, 256, 14, 3, 1, 1), (512, 512, 7, 3, 1, 1), (64, 128, 56, 1, 0, 2)])
def test_conv2d_template_resnet_narrow_layers(threads, c, f, size, kernel, padding, stride):
    """The ResNet-18 layers that pack an operand: the channel-vectorized ones (the
    weights) and the strided 1x1 downsample (the input points it reads)."""
    X = po.placeholder((1, c, size, size), name="X")
    W = po.placeholder((f, c, kernel, kernel), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=padding, stride=stride, name="Y")
    s = po.create_schedule(Y)
    loops = po.templates.conv2d_template(s, Y, target_info=WIDE)  # AVX-512's choice
    assert "packed" in loops
    _check_conv_kernel(po.build(s, [X, W, Y], num_threads=threads, parallel_min_work=0), (1, c, size, size),
                       (f, c, kernel, kernel), padding, stride)


def test_conv2d_channel_template_packs_the_weights_per_reduce_tile():
    """The sums of a 32-channel block are one buffer over all rows and columns; the
    weights are packed 32 input channels at a time, transposed in 16 x 16 blocks
    through registers (72 channels: the last blocks, of 8 channels, are partial)."""
    X = po.placeholder((1, 72, 7, 7), name="X")
    W = po.placeholder((64, 72, 3, 3), name="W")
    Y = po.ops.conv2d_nchw(X, W, padding=1, name="Y")
    s = po.create_schedule(Y)
    loops = conv2d_channel_template(s, Y, reduce_tile=32, target_info=machine_for("avx512f"))
    text = str(po.lower(s, [X, W, Y]))
    assert "float32 W_global[1][32][3][3][32];" in text
    assert "float32 Y_local[1][7][7][32];" in text
    assert [a.name for a in s[loops["local"]].axes][-7:] == [
        "rc.outer", "y", "rc.inner", "ry", "rx", "x", "f"]
    assert [(a.name, a.kind) for a in s[loops["packed"]].axes][-4:] == [
        ("ax0.outer", "serial"), ("ax1.ax2.fused.ax3.fused.outer", "serial"),
        ("ax1.ax2.fused.ax3.fused.inner", "unrolled"), ("ax0.inner", "vectorized")]
    inspected, f_ = builds_for(s, [X, W, Y], "avx512f")
    assert "llvm.masked.load.v16f32" in inspected.llvm_ir  # the partial blocks, masked
    assert "vgatherqps" not in inspected.assembly and "vgatherqps" not in f_.assembly
    _check_conv_kernel(f_, (1, 72, 7, 7), (64, 72, 3, 3), 1, 1)


def test_conv2d_template_refuses_other_computes():
    A = po.placeholder((4, 4), name="A")
    B = po.compute((4, 4), lambda i, j: A[i, j] + 1, name="B")
    with pytest.raises(po.InvalidArgumentError, match="conv2d_nchw"):
        po.templates.conv2d_template(po.create_schedule(B), B)


def _chain(n):
    """``minimum(log(|a - b| * c + 1), 2)`` as 5 computes; ``numpy_chain`` is NumPy's."""
    a, b, c = (po.placeholder((n,), name=x) for x in "abc")
    t1 = po.compute((n,), lambda i: a[i] - b[i], name="t1")
    t2 = po.compute((n,), lambda i: po.abs(t1[i]) * c[i], name="t2")
    t3 = po.compute((n,), lambda i: t2[i] + 1.0, name="t3")
    t4 = po.compute((n,), lambda i: po.log(t3[i]), name="t4")
    return [a, b, c, po.compute((n,), lambda i: po.minimum(t4[i], 2.0), name="out")]


def numpy_chain(a, b, c):
    return np.minimum(np.log(np.abs(a - b) * c + np.float32(1)), np.float32(2))


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("n", [1, 15, 64, 1001])
def test_injective_chain_template(threads, n):
    N = po.var("N")
    args = _chain(N)
    out = args[-1]
    s = po.create_schedule(out)
    po.templates.injective_chain_template(s, out, vector=16)
    assert [st.name for st in s.stages] == ["out"]          # no temporaries left
    f = po.build(s, args, num_threads=threads)
    rng = np.random.default_rng(1)
    a, b, c = (np.abs(_rand(rng, n)) for _ in range(3))
    result = np.full(n, np.nan, np.float32)
    f(a, b, c, result)
    np.testing.assert_allclose(result, numpy_chain(a, b, c), rtol=1e-5, atol=1e-6)
    _assert_packed_simd(f)


def test_injective_chain_template_vectorizes_the_inner_loop():
    """A constant 16-iteration vectorized loop is vectorized itself: LLVM used to unroll
    it fully first and then widen the parallel loop around it, with gathers."""
    args = _chain(4096)
    s = po.create_schedule(args[-1])
    po.templates.injective_chain_template(s, args[-1], vector=16)
    f = po.build(s, args)
    assert vector_of("float32") in f.optimized_ir and "gather" not in f.optimized_ir


@pytest.mark.parametrize("shape", [(1, 3, 5, 7), (2, 4, 16, 16)])
def test_injective_chain_template_many_dims(shape):
    A = po.placeholder(shape, name="A")
    T = po.compute(shape, lambda n, c, h, w: A[n, c, h, w] * 3.0, name="T")
    out = po.compute(shape, lambda n, c, h, w: po.tanh(T[n, c, h, w]), name="out")
    s = po.create_schedule(out)
    loops = po.templates.injective_chain_template(s, out, vector=8)
    assert loops["outer"].name == "n.c.fused.h.fused" and loops["outer"].kind == "parallel"
    f = po.build(s, [A, out])
    a = _rand(np.random.default_rng(2), shape)
    result = np.zeros(shape, np.float32)
    f(a, result)
    np.testing.assert_allclose(result, np.tanh(a * np.float32(3)), rtol=1e-5, atol=1e-6)


def test_injective_chain_template_refuses_reductions():
    X = po.placeholder((4, 8), name="X")
    Y = po.ops.softmax(X)
    with pytest.raises(po.InvalidArgumentError, match="row_reduction_template"):
        po.templates.injective_chain_template(po.create_schedule(Y), Y)


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_layer_norm(x, g, b, eps):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * g + b


SIZES = [(4, 32), (7, 33), (1, 1), (5, 1000)]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("rows, cols", SIZES)
def test_softmax_template(threads, rows, cols):
    R, C = po.var("R"), po.var("C")
    X = po.placeholder((R, C), name="X")
    Y = po.ops.softmax(X)
    s = po.create_schedule(Y)
    po.templates.softmax_template(s, Y, vector=16)
    text = str(po.lower(s, [X, Y]))
    assert text.count("#pragma parallel") == 1 and "#pragma vectorized" in text
    f = po.build(s, [X, Y], num_threads=threads)
    x = _rand(np.random.default_rng(3), (rows, cols)) * 4
    y = np.full((rows, cols), np.nan, np.float32)
    f(x, y)
    np.testing.assert_allclose(y, numpy_softmax(x), rtol=1e-5, atol=1e-7)
    _assert_packed_simd(f)


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("rows, cols", SIZES)
def test_layer_norm_template(threads, rows, cols):
    R, C = po.var("R"), po.var("C")
    X = po.placeholder((R, C), name="X")
    g, b = po.placeholder((C,), name="g"), po.placeholder((C,), name="b")
    Y = po.ops.layer_norm(X, g, b, eps=1e-5)
    s = po.create_schedule(Y)
    po.templates.layer_norm_template(s, Y, vector=16)
    f = po.build(s, [X, g, b, Y], num_threads=threads)
    rng = np.random.default_rng(4)
    x, gv, bv = _rand(rng, (rows, cols)) + 3, _rand(rng, cols), _rand(rng, cols)
    y = np.full((rows, cols), np.nan, np.float32)
    f(x, gv, bv, y)
    np.testing.assert_allclose(y, numpy_layer_norm(x, gv, bv, np.float32(1e-5)),
                               rtol=1e-4, atol=1e-4)
    _assert_packed_simd(f)
    # the row sums, in per-row buffers (S[0] = S[0] + x), still vectorize
    assert "vector.reduce.fadd" in f.optimized_ir


def test_row_reduction_template_row_max():
    X = po.placeholder((9, 21), name="X")
    k = po.reduce_axis((0, 21), name="k")
    M = po.compute((9,), lambda i: po.max(X[i, k], axis=k), name="M")
    Y = po.compute((9, 21), lambda i, j: X[i, j] - M[i], name="Y")
    s = po.create_schedule(Y)
    loops = po.templates.row_reduction_template(s, Y, vector=8)
    assert loops["rows"].kind == "parallel"
    f = po.build(s, [X, Y])
    x = _rand(np.random.default_rng(5), (9, 21))
    y = np.zeros((9, 21), np.float32)
    f(x, y)
    np.testing.assert_array_equal(y, x - x.max(axis=1, keepdims=True))


def test_row_reduction_template_needs_rows():
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2, name="B")
    with pytest.raises(po.InvalidArgumentError, match="2-D output"):
        po.templates.row_reduction_template(po.create_schedule(B), B)


def test_template_parameters_are_checked():
    X = po.placeholder((4, 8), name="X")
    Y = po.ops.softmax(X)
    with pytest.raises(po.InvalidArgumentError, match="vector must be a positive integer"):
        po.templates.softmax_template(po.create_schedule(Y), Y, vector=0)


def test_producers_in_definition_order():
    X = po.placeholder((4, 8), name="X")
    Y = po.ops.softmax(X)
    assert [t.name for t in producers(Y)] == ["softmax_max", "softmax_exp", "softmax_sum"]
