"""An operator library: ``polyopt lib build examples/ops_spec.py -o build/ops``.

``kernels()`` yields one ``Kernel`` per operator: a name, a function that returns
``(schedule, arguments)`` for one set of parameters, and the grid of parameters to
build.  Each variant becomes one C function, ``<name>_<params>`` (``scale_n64_float32``),
in ``libops_spec.so`` / ``.a``, declared in ``ops_spec.h``.
"""

import polyopt as po
from polyopt.aot import Kernel, grid


def scale(n, dtype):
    """Y = 2 X + 1, vectorized."""
    X = po.placeholder((n,), name="X", dtype=dtype)
    Y = po.compute((n,), lambda i: X[i] * 2 + 1, name="Y")
    s = po.create_schedule(Y)
    outer, inner = s[Y].split(Y.op.axis[0], factor=8)
    s[Y].vectorize(inner)
    return s, [X, Y]


def matmul(n, dtype):
    """C = A B with square sizes, the default schedule."""
    A = po.placeholder((n, n), name="A", dtype=dtype)
    B = po.placeholder((n, n), name="B", dtype=dtype)
    C = po.ops.matmul(A, B)
    return po.create_schedule(C), [A, B, C]


def kernels():
    yield Kernel("scale", scale, grid(n=[64, 256], dtype=["float32", "float64"]))
    yield Kernel("matmul", matmul, grid(n=[32, 64], dtype=["float32"]))
