"""A placeholder in the argument list that the computation never reads (TVM's unused
argument; a graph kernel whose operator ignores an input) is taken by the kernel and
left alone, instead of being refused as "not part of this program"."""

import numpy as np
import pytest

import polyopt as po
from polyopt.errors import InvalidArgumentError


def _doubled():
    A = po.placeholder((4,), name="A")
    unread = po.placeholder((3, 2), name="in1", dtype="int32")
    B = po.compute((4,), lambda i: A[i] * 2.0, name="B")
    return A, unread, B


def test_an_unread_placeholder_is_a_kernel_argument():
    A, unread, B = _doubled()
    f = po.build(po.create_schedule(B), [A, unread, B])
    a = np.arange(4, dtype="float32")
    u = np.full((3, 2), 7, "int32")
    b = np.zeros(4, "float32")
    f(a, u, b)
    np.testing.assert_array_equal(b, a * 2)
    np.testing.assert_array_equal(u, 7)  # left alone
    assert [arg.name for arg in f.signature.args] == ["A", "in1", "B"]


def test_an_unread_placeholder_is_checked_like_the_others():
    A, unread, B = _doubled()
    f = po.build(po.create_schedule(B), [A, unread, B])
    with pytest.raises(InvalidArgumentError, match="in1"):
        f(np.zeros(4, "float32"), np.zeros((2, 2), "int32"), np.zeros(4, "float32"))


def test_unread_placeholders_of_the_same_name_stay_apart():
    A = po.placeholder((4,), name="A")
    first, second = po.placeholder((2,), name="A"), po.placeholder((5,), name="A")
    B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
    f = po.build(po.create_schedule(B), [first, A, second, B])
    b = np.zeros(4, "float32")
    f(np.zeros(2, "float32"), np.ones(4, "float32"), np.zeros(5, "float32"), b)
    np.testing.assert_array_equal(b, 2.0)
    assert len({arg.name for arg in f.signature.args}) == 4


def test_an_unread_placeholder_of_a_size_the_computation_lacks_is_refused():
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n,), name="A")
    unread = po.placeholder((m,), name="U")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(InvalidArgumentError, match="'U' is not read"):
        po.lower(po.create_schedule(B), [A, unread, B])


def test_an_unread_placeholder_of_a_known_size_is_taken():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    unread = po.placeholder((n, 2), name="U")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    f = po.build(po.create_schedule(B), [A, unread, B])
    a, b = np.arange(5, dtype="float32"), np.zeros(5, "float32")
    f(a, np.zeros((5, 2), "float32"), b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_graph_kernel_ignoring_an_input_builds_and_links(tmp_path):
    pytest.importorskip("llvmlite")
    from polyopt.graph.kernel_cache import KernelCache
    from polyopt.graph.lowering import LoweredGroup, build_group

    x = po.placeholder((3, 4), name="in0")
    ignored = po.placeholder((2,), name="in1")
    out = po.compute((3, 4), lambda i, j: x[i, j] * 3.0, name="out")
    group = LoweredGroup(["x", "y"], [x, ignored], out, [(3, 4), (2,), (3, 4)])
    values = np.arange(12, dtype="float32").reshape(3, 4)
    for cache in (None, KernelCache(str(tmp_path / "cache"))):  # JIT, then linked object
        kernel = build_group(group, po.create_schedule(out), num_threads=1, cache=cache)
        result = np.zeros((3, 4), "float32")
        kernel(values, np.zeros(2, "float32"), result)
        np.testing.assert_array_equal(result, values * 3)
