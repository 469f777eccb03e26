"""The floating-point promise (issue 12, item 5): every accepted schedule computes bit for
bit what the default schedule computes, except that a reduction's combining operator may
be reassociated (``rfactor``; LLVM's ``reassoc contract nsz`` on accumulations).

The generated cases (tests/property/test_generated.py) use small integers in float
arrays so that reductions stay exact; here the inputs are arbitrary floats (rounding in
every operation, NaN, infinities, signed zeros, subnormals, huge values), on programs
without reductions, and the numbers must be identical bit for bit to the default
schedule's and to NumPy's (one IEEE rounding per operation, no contraction).
"""

from __future__ import annotations

import numpy as np
import pytest

import polyopt as po

SPECIAL = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-40, -1e-42, 3e38, -3e38, 1.0 / 3],
                   dtype="float32")


def _inputs(shape, seed):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * rng.choice([1e-3, 1.0, 7.0, 1e5], size=shape)) \
        .astype("float32")
    flat = a.reshape(-1)
    flat[rng.choice(flat.size, size=min(len(SPECIAL), flat.size), replace=False)] = \
        SPECIAL[:min(len(SPECIAL), flat.size)]
    return a


def _program():
    n, m = po.var("n"), po.var("m")
    A = po.placeholder((n, m), name="A", dtype="float32")
    B = po.placeholder((n, m), name="B", dtype="float32")
    T = po.compute((n, m), lambda i, j: A[i, j] * 1.1 + B[i, j] / 3.0, name="T")
    U = po.compute((n, m), lambda i, j: po.if_then_else(
        j + 1 < m, T[i, j] * B[i, j] - T[i, po.minimum(j + 1, m - 1)], T[i, j] + 0.5), name="U")
    V = po.compute((n, m), lambda i, j: po.sqrt(po.abs(U[i, j])) - U[i, j] * A[i, j],
                   name="V")
    return (A, B), V


def _twin(a, b):
    t = a * np.float32(1.1) + b / np.float32(3.0)
    shifted = np.concatenate([t[:, 1:], t[:, -1:]], axis=1)
    u = np.where(np.arange(a.shape[1])[None, :] + 1 < a.shape[1], t * b - shifted,
                 t + np.float32(0.5))
    return np.sqrt(np.abs(u)) - u * a


SCHEDULES = {
    "tile+vectorize+parallel": lambda s: (s["V"].tile("i", "j", 4, 8),
                                          s["V"].vectorize("j.inner"),
                                          s["V"].parallel("i.outer")),
    "compute_at": lambda s: (s["V"].split("i", factor=3), s["U"].compute_at(s["V"], "i.outer"),
                             s["T"].compute_at(s["V"], "i.outer")),
    "inline+unroll": lambda s: (s["T"].compute_inline(), s["V"].split("j", factor=5),
                                s["V"].unroll("j.inner")),
    "cache_read layout": lambda s: s.cache_read("A", "global", ["V"],
                                                layout="{ [d0, d1] -> [d1, d0] }"),
    "reverse+reorder": lambda s: (s["V"].reverse("j"), s["V"].reorder("j", "i"),
                                  s["U"].reverse("i")),
}


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_non_reduction_schedules_are_bit_identical(name):
    inputs, V = _program()
    default = po.build(po.create_schedule(V), [*inputs, V])
    s = po.create_schedule(V)
    SCHEDULES[name](s)
    scheduled = po.build(s, [*inputs, V])
    for shape, seed in (((7, 13), 1), ((5, 1), 2), ((16, 32), 3)):
        a, b = _inputs(shape, seed), _inputs(shape, seed + 100)
        want, got = np.full(shape, 7, "float32"), np.full(shape, 7, "float32")
        default(a, b, want)
        scheduled(a, b, got)
        assert got.tobytes() == want.tobytes(), f"{name}: not bit-identical at {shape}"
        with np.errstate(all="ignore"):
            twin = _twin(a, b)
        assert want.tobytes() == twin.tobytes(), f"default schedule vs NumPy at {shape}"


N, T = po.var("N"), po.var("T")


@po.kernel
def seidel_1d(A: po.f64[N]):
    for t in range(T):
        for i in range(1, N - 1):
            A[i] = (A[i - 1] * 0.3 + A[i] * 0.5) + A[i + 1] * 0.2


def test_kernel_skewed_tiles_are_bit_identical():
    s = po.create_schedule(seidel_1d)
    s["S0"].skew("t", "i", 2)
    s["S0"].tile("t", "i", 3, 5)
    a = np.random.default_rng(4).standard_normal(40) * 1e3
    a[[3, 7, 11]] = [-0.0, 1e-310, 1e300]
    want, got = a.copy(), a.copy()
    po.build(po.create_schedule(seidel_1d))(want, T=6)
    po.build(s)(got, T=6)
    assert got.tobytes() == want.tobytes()
    twin = a.copy()
    for _ in range(6):
        for i in range(1, len(twin) - 1):
            twin[i] = (twin[i - 1] * 0.3 + twin[i] * 0.5) + twin[i + 1] * 0.2
    assert want.tobytes() == twin.tobytes()
