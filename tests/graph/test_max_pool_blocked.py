"""The max pool on blocked tensors combines its taps as a balanced tree of ``maximum``
(``polyopt.graph.blocked.maximum_tree``): the same bits as the chain of taps, NaN and
signed zeros included, and the same numbers as onnxruntime."""

import numpy as np
import pytest

import polyopt as po
from polyopt.graph.blocked import maximum_tree
from polyopt.te.tensor import compute, maximum, placeholder


@pytest.mark.parametrize("taps", [1, 2, 3, 4, 9])
def test_the_tree_gives_the_bits_of_the_chain(taps):
    X = placeholder((taps, 64), name="X")
    tree = compute((64,), lambda i: maximum_tree([X[k, i] for k in range(taps)]), name="tree")

    def chain(i):
        result = X[0, i]
        for k in range(1, taps):
            result = maximum(result, X[k, i])
        return result
    chained = compute((64,), chain, name="chained")
    special = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, 1.5, -2.0], np.float32)
    x = np.random.default_rng(taps).choice(special, (taps, 64)).astype(np.float32)
    x[:, :8] = np.random.default_rng(0).standard_normal((taps, 8))
    results = []
    for out in (tree, chained):
        s = po.create_schedule(out)
        s[out].vectorize(out.op.axis[0])
        y = np.empty(64, np.float32)
        po.build(s, [X, out], target="llvm")(x, y)
        results.append(y.view(np.uint32))
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("size, kernel, stride, pad", [
    (28, 3, 2, 1), (15, 3, 2, 1), (7, 2, 2, 0), (7, 3, 1, 1)])  # (the stem blocked with
    # 8 lanes (AVX2) as with 16: 9 or 11 columns are narrow for 16 lanes only)
def test_the_blocked_max_pool_equals_onnxruntime(size, kernel, stride, pad):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from testlib.onnx_models import ModelBuilder, ort_run

    m = ModelBuilder(size)
    x = m.input("x", (1, 8, size, size))
    stem = m.add("Relu", [m.add("Conv", [x, m.weight(32, 8, 3, 3)], pads=[1] * 4)])
    pool = m.add("MaxPool", [stem], kernel_shape=[kernel] * 2, strides=[stride] * 2,
                 pads=[pad] * 4)
    out = m.add("Conv", [pool, m.weight(32, 32, 1, 1)])
    model = m.model([out])  # (a graph output stays NCHW: the pool is read by a conv only)
    compiled = po.graph.compile(po.graph.from_onnx(model), num_threads=1, cache=False)
    assert "pool_blocked" in [s.template for s in compiled.steps]
    feeds = {"x": np.random.default_rng(1).standard_normal((1, 8, size, size), np.float32)}
    got, expected = compiled.run(feeds), ort_run(model, feeds)
    np.testing.assert_allclose(got[out], expected[out], rtol=1e-4, atol=1e-4)
