"""The build cache: keyed on content, least recently used first out, kernels releasable;
signatures; the target's CPU in the key."""

import importlib

import numpy as np
import pytest

import polyopt as po
from polyopt.build import BuildCache
from polyopt.errors import InvalidArgumentError, ReleasedKernelError
from polyopt.target.signature import Signature, signature_of


def _doubler(size=8, name="B"):
    A = po.placeholder((size,), name="A")
    B = po.compute((size,), lambda i: A[i] * 2.0, name=name)
    return po.create_schedule(B), [A, B]


@pytest.fixture
def small_cache():
    cache = po.build_cache
    size = cache.size
    cache.clear()
    yield cache
    cache.set_size(size)
    cache.clear()


def test_a_hit_returns_the_same_kernel_and_counts(small_cache):
    s, args = _doubler()
    before = small_cache.info()
    f = po.build(s, args)
    assert po.build(s, args) is f
    # the same program built again from new tensors hashes the same: a hit by content
    s2, args2 = _doubler()
    assert po.build(s2, args2) is f
    after = small_cache.info()
    assert after["misses"] - before["misses"] == 1
    assert after["hits"] - before["hits"] >= 1
    b = np.zeros(8, "float32")
    f(np.arange(8, dtype="float32"), b)
    np.testing.assert_array_equal(b, np.arange(8) * 2)


def test_a_repeated_build_neither_lowers_nor_prints(small_cache, monkeypatch):
    s, args = _doubler()
    f = po.build(s, args)
    def fail(*a, **k):
        raise AssertionError("lowered again on a hit")

    monkeypatch.setattr(importlib.import_module("polyopt.build"), "lower", fail)
    assert po.build(s, args) is f


def test_least_recently_used_is_evicted(small_cache):
    small_cache.set_size(2)
    kernels = [po.build(*_doubler(size)) for size in (3, 4)]
    po.build(*_doubler(3))  # 3 becomes the most recent
    po.build(*_doubler(5))  # evicts 4
    assert len(small_cache) == 2
    assert kernels[0].content_hash in small_cache
    assert kernels[1].content_hash not in small_cache
    assert small_cache.info()["evictions"] >= 1
    assert po.build(*_doubler(4)) is not kernels[1]
    b = np.zeros(4, "float32")
    kernels[1](np.ones(4, "float32"), b)  # an evicted kernel still runs
    np.testing.assert_array_equal(b, 2.0)


def test_size_zero_caches_nothing_and_bad_sizes_are_refused(small_cache):
    small_cache.set_size(0)
    s, args = _doubler()
    assert po.build(s, args) is not po.build(s, args)
    with pytest.raises(InvalidArgumentError, match=">= 0"):
        small_cache.set_size(-1)
    with pytest.raises(InvalidArgumentError):
        BuildCache("ten")


def test_release_frees_the_kernel_and_the_cache_builds_it_again(small_cache):
    s, args = _doubler()
    f = po.build(s, args)
    f.release()
    f.release()  # twice is harmless
    assert f.released
    with pytest.raises(ReleasedKernelError, match="released"):
        f(np.zeros(8, "float32"), np.zeros(8, "float32"))
    g = po.build(s, args)
    assert g is not f and not g.released
    b = np.zeros(8, "float32")
    g(np.ones(8, "float32"), b)
    np.testing.assert_array_equal(b, 2.0)


def test_the_target_cpu_is_part_of_the_key(small_cache):
    s, args = _doubler()
    host = po.build(s, args)
    haswell = po.build(s, args, target="llvm -mcpu=haswell")
    no_avx512 = po.build(s, args, target="llvm -mattr=-avx512f")
    hashes = {host.content_hash, haswell.content_hash, no_avx512.content_hash}
    assert len(hashes) == 3
    assert haswell.cpu.name == "haswell"
    for kernel in (haswell, no_avx512):
        b = np.zeros(8, "float32")
        kernel(np.arange(8, dtype="float32"), b)
        np.testing.assert_array_equal(b, np.arange(8) * 2)


def test_named_cpu_changes_the_code():
    A = po.placeholder((256,), name="A")
    B = po.compute((256,), lambda i: A[i] * 2.0, name="B")
    s = po.create_schedule(B)
    s[B].vectorize(B.op.axis[0])
    sse = po.build(s, [A, B], target="llvm -mcpu=x86-64")
    avx2 = po.build(s, [A, B], target="llvm -mcpu=haswell")
    assert "zmm" not in sse.assembly and "ymm" not in sse.assembly
    assert "ymm" in avx2.assembly and "zmm" not in avx2.assembly
    b = np.zeros(256, "float32")
    sse(np.arange(256, dtype="float32"), b)
    np.testing.assert_array_equal(b, np.arange(256) * 2)


@pytest.mark.parametrize("target, message", [
    ("llvm -mcpu", "-key=value"),
    ("llvm -mattr=avx2", "each with \\+ or -"),
    ("llvm -mcpu=notacpu", "not a recognized processor"),
    ("llvm -mattr=+notafeature", "not a recognized feature"),
    ("llvm -mcpu=zn ver4", "-key=value"),
    ("llvm -opt=3", "does not take"),
    ("", "a target is a string"),
])
def test_bad_target_strings_are_refused(target, message):
    s, args = _doubler()
    with pytest.raises(InvalidArgumentError, match=message):
        po.build(s, args, target=target)


def test_signature_round_trips_and_checks_like_the_function():
    n = po.var("n")
    A = po.placeholder((n, n + 2), name="A")
    m = po.var("m")
    B = po.compute((n, m), lambda i, j: A[i, 0] + j, name="B")
    func = po.lower(po.create_schedule(B), [A, B, m])
    sig = signature_of(func)
    again = Signature.from_json(sig.to_json())
    assert again == sig
    assert set(again.params) == {"n", "m"}
    assert [a.name for a in again.args] == ["A", "B", "m"]
    assert [str(e) for e in again.arrays[0].shape] == ["n", "n + 2"]
    with pytest.raises(InvalidArgumentError, match="format"):
        Signature.from_json({"format": 99})
    with pytest.raises(InvalidArgumentError, match="not a polyopt kernel signature"):
        Signature.from_json({"format": 1, "name": "x"})
