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
