"""One build path and one bounded cache: ``po.build``, the graph layer and operator
libraries build through ``build_kernel``; their kernels share ``po.build_cache`` (least
recently used out, size settable); the graph layer and libraries write one verified disk
entry format."""

import json

import numpy as np
import pytest

import polyopt as po
from testlib.numeric import assert_numbers
from polyopt.aot.cache import DiskCache as LibraryDiskCache
from polyopt.errors import InvalidArgumentError
from polyopt.kernels import DiskCache, build_cache, build_kernel, load_kernel, memory_key
from polyopt.target.base import get_target


def _func(n=8, factor=2.0):
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * factor, name="B")
    return po.lower(po.create_schedule(B), [A, B], target="llvm")


def _graph(width=8):
    b = po.graph.GraphBuilder()
    x = b.input("x", (2, width))
    y = b.op("Relu", [b.op("Add", [x, b.constant("c", np.ones(width, "float32"))])])
    return b.build([y]), y


@pytest.fixture
def fresh_cache():
    size = build_cache.size
    build_cache.clear()
    yield build_cache
    build_cache.set_size(size)
    build_cache.clear()


def _check_doubles(kernel, n=8):
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    kernel(a, b)
    assert_numbers(b, a * 2, exact=True)


def test_po_build_and_build_kernel_share_one_entry(fresh_cache):
    A = po.placeholder((8,), name="A")
    B = po.compute((8,), lambda i: A[i] * 2.0, name="B")
    f = po.build(po.create_schedule(B), [A, B], num_threads=1)
    built = build_kernel(_func(), "llvm", {"num_threads": 1})
    assert built.source == "memory" and built.kernel is f and built.key == f.content_hash
    _check_doubles(built.kernel)
    with pytest.raises(InvalidArgumentError, match="form"):
        build_kernel(_func(), "llvm", form="shared library")


def test_graph_kernels_live_in_the_shared_bounded_cache(fresh_cache):
    g, y = _graph()
    first = po.graph.compile(g, num_threads=1, cache=False)
    kernels = [s.kernel for s in first.steps if s.kernel is not None]
    assert kernels and len(fresh_cache) >= len(kernels)
    again = po.graph.compile(_graph()[0], num_threads=1, cache=False)  # built again: hits
    assert [s.kernel for s in again.steps if s.kernel is not None] == kernels
    fresh_cache.clear()
    third = po.graph.compile(_graph()[0], num_threads=1, cache=False)
    assert all(s.kernel is not k for s, k in zip(
        [s for s in third.steps if s.kernel is not None], kernels))
    fresh_cache.set_size(0)  # nothing kept: the graph layer holds no cache of its own
    po.graph.compile(_graph()[0], num_threads=1, cache=False)
    assert len(fresh_cache) == 0
    out = third.run({"x": np.full((2, 8), -3.0, "float32")})[y]
    np.testing.assert_array_equal(out, np.zeros((2, 8), "float32"))


def test_least_recently_used_graph_kernels_leave_first(fresh_cache):
    fresh_cache.set_size(1)
    for width in (3, 5, 7):
        po.graph.compile(_graph(width)[0], num_threads=1, cache=False)
    assert len(fresh_cache) == 1 and fresh_cache.info()["evictions"] >= 2


def test_an_entry_written_for_a_library_links_for_the_graph_layer(tmp_path, fresh_cache):
    disk = DiskCache(str(tmp_path / "cache"))
    assert LibraryDiskCache is DiskCache  # one class, one entry format
    made = build_kernel(_func(), "llvm", {"num_threads": 1}, form="object", disk=disk)
    assert made.source == "built" and made.code[:4] == b"\x7fELF" and made.kernel is None
    linked = load_kernel(made.key, get_target("llvm"), disk)
    assert linked.source == "disk"
    _check_doubles(linked.kernel)
    assert build_cache.get(memory_key(made.key, "linked")) is not None
    again = build_kernel(_func(), "llvm", {"num_threads": 1}, form="linked", disk=disk)
    assert again.source == "memory" and again.kernel is linked.kernel


@pytest.mark.parametrize("damage", ["object", "signature", "integrity", "swap"])
def test_a_damaged_entry_is_refused_and_built_again(tmp_path, fresh_cache, damage):
    disk = DiskCache(str(tmp_path / "cache"))
    keys = [build_kernel(_func(n), "llvm", {"num_threads": 1}, form="object", disk=disk).key
            for n in (8, 64)]
    objects = [tmp_path / "cache" / "objects" / k[:2] / f"{k}.o" for k in keys]
    metas = [p.with_suffix(".json") for p in objects]
    if damage == "object":
        objects[0].write_bytes(objects[0].read_bytes()[:100])
    elif damage == "swap":
        first, second = objects[0].read_bytes(), objects[1].read_bytes()
        objects[0].write_bytes(second)
        objects[1].write_bytes(first)
    else:
        meta = json.loads(metas[0].read_text())
        if damage == "signature":
            meta["signature"]["args"][0]["shape"] = [64]  # a larger buffer than it was built for
        else:
            meta["integrity"]["object_sha256"] = "0" * 64
        metas[0].write_text(json.dumps(meta))
    assert disk.get(keys[0]) is None and not objects[0].exists()  # refused and removed
    assert load_kernel(keys[0], get_target("llvm"), disk) is None
    rebuilt = build_kernel(_func(8), "llvm", {"num_threads": 1}, form="linked", disk=disk)
    assert rebuilt.source == "built" and disk.get(keys[0]) is not None
    _check_doubles(rebuilt.kernel)


def test_request_records_are_bound_to_their_key(tmp_path):
    disk = DiskCache(str(tmp_path / "cache"))
    made = build_kernel(_func(), "llvm", {"num_threads": 1}, form="object", disk=disk)
    disk.remember("1" * 64, made.key)
    assert disk.lookup("1" * 64) == made.key
    record = tmp_path / "cache" / "requests" / "11" / ("1" * 64)
    (tmp_path / "cache" / "requests" / "22").mkdir()
    (tmp_path / "cache" / "requests" / "22" / ("2" * 64)).write_bytes(record.read_bytes())
    assert disk.lookup("2" * 64) is None  # a record copied onto another request
    with pytest.raises(InvalidArgumentError, match="request key"):
        disk.remember("not hex", made.key)


def test_a_group_request_keys_arrays_in_full(tmp_path):
    """A group's description holds attribute tensors and constants read at compile time:
    one element changed, past what NumPy prints, or another dtype, is another request."""
    from polyopt.graph.kernel_cache import KernelCache

    cache = KernelCache(str(tmp_path / "cache"))
    values = np.arange(5000, dtype="float32")
    changed = values.copy()
    changed[2500] = -1.0
    assert repr(values) == repr(changed)  # (what a printed key would have seen)
    key = cache.request(("Add", values), 1)
    assert key == cache.request(("Add", values.copy()), 1)
    assert key != cache.request(("Add", changed), 1)
    assert key != cache.request(("Add", values.view("int32")), 1)
    assert key != cache.request(("Add", values), 2)
