"""A chain of 2-D stencil computes, shared by tests/scale and benchmarks/bench_scale.py.

>>> A, out = stencil_chain(3, 4)
>>> out.name
'S2'
"""

import polyopt as po


def stencil_chain(stages: int, n: int):
    """``stages`` computes, each the mean of the previous one at (i, j), (i-1, j) and
    (i, j-1) (its own value on the first row and column)."""
    A = po.placeholder((n, n), name="A")
    previous = A
    for k in range(stages):
        previous = po.compute((n, n), _mean_of_three(previous), name=f"S{k}")
    return A, previous


def _mean_of_three(p):
    return lambda i, j: po.if_then_else(
        po.all(i > 0, j > 0), (p[i, j] + p[i - 1, j] + p[i, j - 1]) * 0.25, p[i, j])
