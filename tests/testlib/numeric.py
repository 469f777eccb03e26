"""Helpers of the numerical tests of tensor expressions against NumPy (tests/te).

Every kernel there is built with fixed sizes and with symbolic ones (``po.var``):
``SYMBOLIC`` parametrizes a test over both, ``extents`` gives the sizes in either form,
``run`` builds the kernel and calls it on NumPy arrays, and ``random_arrays`` makes a
module's ``rand`` from that module's own seeded generator.
"""

import numpy as np
import pytest

import polyopt as po
from polyopt.te.evaluate import evaluate
from polyopt.te.tensor import ComputeOp

SYMBOLIC = pytest.mark.parametrize("symbolic", [False, True], ids=["fixed", "symbolic"])


def extents(symbolic: bool, **sizes):
    """The sizes as po.var (bound from the arrays at call time) or as fixed integers."""
    return [po.var(name) if symbolic else value for name, value in sizes.items()]


def run(args, inputs, **sizes):
    """Build ``args`` (inputs first, then outputs), call the kernel on ``inputs`` and
    return the outputs, which start filled with a sentinel so unwritten elements show."""
    outputs = [t for t in args if isinstance(t.op, ComputeOp)]
    kernel = po.build(po.create_schedule(outputs), args, target="llvm")
    results = [np.full(tuple(evaluate(e, sizes) for e in t.shape),
                       np.nan if t.dtype.startswith("float") else 99, dtype=t.dtype)
               for t in outputs]
    kernel(*inputs, *results)
    return results[0] if len(results) == 1 else results


def random_arrays(rng: np.random.Generator):
    """``rand(*shape, dtype="float32")``: standard-normal arrays drawn from ``rng``, so that
    each test module keeps its own reproducible stream."""
    def rand(*shape, dtype="float32"):
        return rng.standard_normal(shape).astype(dtype)
    return rand
