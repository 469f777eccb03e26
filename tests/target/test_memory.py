"""Kernels free their temporaries on every call: repeated calls do not grow memory."""

import numpy as np

import polyopt as po


def _resident_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_repeated_calls_do_not_leak():
    n = po.var("n")
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")      # temporaries of 8 MB
    C = po.compute((n,), lambda i: B[i] + 1.0, name="C")
    D = po.compute((n,), lambda i: C[i] * C[i], name="D")
    f = po.build(po.create_schedule(D), [A, D])
    a = np.ones(2_000_000, np.float32)
    d = np.empty_like(a)
    for _ in range(5):
        f(a, d)
    before = _resident_bytes()
    for _ in range(200):  # 200 calls x 16 MB of temporaries = 3.2 GB if they leaked
        f(a, d)
    grown = _resident_bytes() - before
    assert grown < 64 << 20, f"resident memory grew by {grown >> 20} MB over 200 calls"
    np.testing.assert_array_equal(d, np.full_like(a, 9.0))


def test_repeated_parallel_calls_free_their_per_thread_buffers():
    """The packed panel (K x 64 floats, on the heap) is allocated in each thread of each
    call and freed there."""
    M, N, K = po.var("M"), po.var("N"), po.var("K")
    A, B = po.placeholder((M, K), name="A"), po.placeholder((K, N), name="B")
    C = po.ops.matmul(A, B)
    s = po.create_schedule(C)
    po.templates.matmul_template(s, C)
    f = po.build(s, [A, B, C], num_threads=2)
    a = np.ones((12, 20_000), np.float32)  # panel: 20000 x 64 floats = 5 MB per thread
    b = np.ones((20_000, 128), np.float32)
    c = np.empty((12, 128), np.float32)
    for _ in range(5):
        f(a, b, c)
    before = _resident_bytes()
    for _ in range(100):  # 100 calls x 2 threads x 5 MB = 1 GB if they leaked
        f(a, b, c)
    grown = _resident_bytes() - before
    assert grown < 64 << 20, f"resident memory grew by {grown >> 20} MB over 100 calls"
    np.testing.assert_array_equal(c, np.full_like(c, 20_000.0))


def _heap_temporary_kernel(n: int):
    """A chain whose middle tensor is a heap temporary of ``n`` floats (constant size)."""
    A = po.placeholder((n,), name="A")
    B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    C = po.compute((n,), lambda i: B[i] + 1.0, name="C")
    return po.build(po.create_schedule(C), [A, C]), A


def test_only_temporaries_of_huge_page_size_are_advised():
    """madvise is called for a temporary of 4 MB or more and not at all below (a small
    temporary's call would be a failing system call on every run)."""
    small, _ = _heap_temporary_kernel(64 << 10)  # 256 KB: on the heap, below 4 MB
    large, _ = _heap_temporary_kernel(2 << 20)   # 8 MB
    assert "aligned_alloc" in small.optimized_ir
    assert "@madvise" not in small.optimized_ir
    assert "@madvise(" in large.optimized_ir
    for f, n in [(small, 64 << 10), (large, 2 << 20)]:
        a = np.arange(n, dtype=np.float32)
        c = np.empty_like(a)
        f(a, c)
        np.testing.assert_array_equal(c, a * 2 + 1)
