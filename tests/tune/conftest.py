"""Shared pieces of the tuning tests: a 64x64 matmul template with split/knob knobs."""

import pytest

import polyopt as po

N = 64


def matmul_template(cfg, n=N):
    A = po.placeholder((n, n), name="A")
    B = po.placeholder((n, n), name="B")
    k = po.reduce_axis((0, n), name="k")
    C = po.compute((n, n), lambda i, j: po.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = po.create_schedule(C)
    i, j = s[C].op.axis
    cfg.define_split("tile_i", n, num_outputs=2, policy="power2", max_factor=16)
    cfg.define_split("tile_j", n, num_outputs=2, policy="power2", max_factor=32)
    cfg.define_knob("vectorize", [False, True])
    io, ii = cfg["tile_i"].apply(s, C, i)
    jo, ji = cfg["tile_j"].apply(s, C, j)
    s[C].reorder(io, jo, s[C].op.reduce_axis[0], ii, ji)
    if cfg["vectorize"].val:
        s[C].vectorize(ji)
    return s, [A, B, C]


@pytest.fixture
def matmul_task():
    return po.tune.template_task("matmul", matmul_template, (N,))
