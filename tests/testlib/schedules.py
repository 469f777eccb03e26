"""Helpers of the schedule-primitive tests (tests/transform): building and running a
schedule on NumPy arrays, its lowered text, and its loops as an isl map."""

from __future__ import annotations

import islpy as isl
import numpy as np

import polyopt as po
from polyopt.te.evaluate import evaluate
from polyopt.te.tensor import ComputeOp

from testlib.numeric import assert_numbers

RNG = np.random.default_rng(1234)


def rand(*shape, dtype="float32"):
    if dtype.startswith("int"):
        return RNG.integers(-5, 6, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def run(s, args, inputs, **sizes):
    """Build ``s`` for ``args``, call it on ``inputs`` (the placeholders' arrays in the
    order of ``args``) and freshly allocated outputs filled with a sentinel (so that
    unwritten elements show); returns the outputs."""
    outputs = [t for t in args if isinstance(t.op, ComputeOp)]
    results = [np.full(tuple(evaluate(e, sizes) for e in t.shape),
                       np.nan if t.dtype.startswith("float") else -999, dtype=t.dtype)
               for t in outputs]
    po.build(s, args)(*inputs, *results)
    return results[0] if len(results) == 1 else results


def lowered(s, args=None) -> str:
    return str(po.lower(s, args))


def loop_map(s, stmt: str) -> isl.Map:
    """The schedule of ``stmt`` with only its loop dimensions (static ones projected out)."""
    program = s.program
    row = program.schedule_of(stmt)
    axes = dict(program.loop_axes)[stmt]
    for dim in reversed(range(row.dim(isl.dim_type.out))):
        if dim >= len(axes) or axes[dim] is None:
            row = row.project_out(isl.dim_type.out, dim, 1)
    return row


def assert_loops(s, stmt: str, expected: str) -> None:
    """The loops of ``stmt`` are the isl map ``expected`` (on the statement's domain)."""
    actual = loop_map(s, stmt)
    wanted = isl.Map(expected).intersect_domain(s.program.statement(stmt).domain)
    wanted = wanted.intersect_params(s.program.context)
    actual = actual.intersect_params(s.program.context)
    assert actual.is_equal(wanted), f"loops of {stmt}: {actual}\nexpected {wanted}"


def axis_names(stage) -> list[str]:
    return [a.name for a in stage.axes]


def irand(*shape, dtype="float32"):
    """Small integers in a float array: sums of products are exact in any order (and
    with or without fused multiply-adds), so schedules can be compared bit for bit."""
    return RNG.integers(-4, 5, size=shape).astype(dtype)


def assert_matmul_kernel(f, sizes) -> None:
    """Call a built ``C = A @ B`` kernel on each ``(m, n, k)`` of ``sizes`` (small
    integers, outputs starting as NaN) and check it against NumPy exactly."""
    for m, n, k in sizes:
        a, b = irand(m, k), irand(k, n)
        c = np.full((m, n), np.nan, np.float32)
        f(a, b, c)
        assert_numbers(c, a @ b, exact=True)
