"""Every instance a loop nest runs, as NumPy columns: the accelerator's compiler turns
the instances of one stage's nest into a few instructions at once (one NumPy operation
per nest, not a Python step per instance).

>>> from polyopt.ast.nodes import For, Int, Name, Op, Run
>>> nest = For("i", Int(0), Op("lt", (Name("i"), Int(3))), 1,
...            For("j", Name("i"), Op("le", (Name("j"), Int(2))), 1, Run("S", (Name("i"), Name("j")))))
>>> [(run.stmt, cols["i"].tolist(), cols["j"].tolist()) for run, cols in instances(nest, {})]
[('S', [0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2])]
"""

from __future__ import annotations

import numpy as np

from ...ast.nodes import Block, For, If, Int, Name, Op, Run
from ...errors import BackendError
from ...te.expr import BinOp, Call, Cast, Compare, Const, Logical, Select, Var

_AST_OPS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "min": np.minimum,
    "max": np.maximum, "fdiv_q": np.floor_divide, "pdiv_q": np.floor_divide,
    "div": np.floor_divide, "pdiv_r": np.mod, "zdiv_r": np.fmod, "eq": np.equal,
    "le": np.less_equal, "lt": np.less, "ge": np.greater_equal, "gt": np.greater,
    "and": np.logical_and, "or": np.logical_or}


def index_value(expr, cols: dict, rows: int) -> np.ndarray:
    """An AST index expression (:mod:`polyopt.ast.nodes`) on every row."""
    if isinstance(expr, Int):
        return np.full(rows, expr.value, np.int64)
    if isinstance(expr, Name):
        if expr.name not in cols:
            raise BackendError(f"the accelerator compiler met '{expr.name}', which is not a "
                               "loop variable (symbolic sizes are not supported there)")
        return np.broadcast_to(cols[expr.name], (rows,))
    args = [index_value(a, cols, rows) for a in expr.args]
    if expr.op == "neg":
        return -args[0]
    if expr.op == "select":
        return np.where(args[0], args[1], args[2])
    if expr.op not in _AST_OPS:
        raise BackendError(f"the accelerator compiler cannot evaluate the operation "
                           f"{expr.op!r} in a loop bound")
    result = args[0]
    for other in args[1:]:
        result = _AST_OPS[expr.op](result, other)
    return result


def instances(node, cols: dict, rows: int = 1):
    """``(run, columns)`` for each statement call under ``node``, in program order, its
    columns the values of the enclosing loop variables on each instance (``cols``: the
    outer ones, each an array of ``rows`` values or a scalar)."""
    cols = {k: np.broadcast_to(np.asarray(v, np.int64), (rows,)) for k, v in cols.items()}
    yield from _walk(node, cols, rows)


def _walk(node, cols: dict, rows: int):
    if rows == 0:
        return
    if isinstance(node, Block):
        for item in node.items:
            yield from _walk(item, cols, rows)
    elif isinstance(node, If):
        keep = index_value(node.cond, cols, rows).astype(bool)
        yield from _walk(node.then, _take(cols, keep), int(keep.sum()))
        if node.otherwise is not None:
            yield from _walk(node.otherwise, _take(cols, ~keep), int((~keep).sum()))
    elif isinstance(node, For):
        yield from _walk(node.body, *_expand(node, cols, rows))
    elif isinstance(node, Run):
        yield node, cols
    else:
        raise BackendError(f"the accelerator compiler cannot run a {type(node).__name__} "
                           "node (build the schedule for target 'accel' without unroll, "
                           "parallel or vectorize marks)")


def loop_values(loop: For, cols: dict, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the first value of ``loop`` and its trip count."""
    low = index_value(loop.init, cols, rows)
    cond = loop.cond
    if not (isinstance(cond, Op) and cond.op in ("lt", "le") and cond.args[0] == Name(loop.var)):
        raise BackendError(f"the accelerator compiler needs loop bounds 'v < e' or 'v <= e', "
                           f"got a loop over {loop.var} ending when {cond} fails")
    high = index_value(cond.args[1], cols, rows) + (1 if cond.op == "le" else 0)
    trips = np.maximum(0, -(-(high - low) // loop.step))
    return low, trips


def _expand(loop: For, cols: dict, rows: int):
    low, trips = loop_values(loop, cols, rows)
    total = int(trips.sum())
    parent = np.repeat(np.arange(rows), trips)
    starts = np.cumsum(trips) - trips
    ordinal = np.arange(total) - np.repeat(starts, trips)
    new = {k: v[parent] for k, v in cols.items()}
    new[loop.var] = low[parent] + ordinal * loop.step
    return new, total


def _take(cols: dict, keep: np.ndarray) -> dict:
    return {k: v[keep] for k, v in cols.items()}


def expr_value(expr, values: dict, rows: int) -> np.ndarray:
    """A tensor-expression integer expression (indices, conditions) on every row, the
    variables by name from ``values``."""
    if isinstance(expr, Const):
        return np.full(rows, expr.value)
    if isinstance(expr, Var) or hasattr(expr, "lo") and hasattr(expr, "name"):
        if expr.name not in values:
            raise BackendError(f"the accelerator compiler cannot evaluate '{expr.name}'")
        return values[expr.name]
    if isinstance(expr, Cast):
        return expr_value(expr.value, values, rows)
    if isinstance(expr, BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        a, b = expr_value(expr.a, values, rows), expr_value(expr.b, values, rows)
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "//": np.floor_divide,
                "%": np.mod}[expr.op](a, b)
    if isinstance(expr, Compare):
        a, b = expr_value(expr.a, values, rows), expr_value(expr.b, values, rows)
        return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                "==": np.equal, "!=": np.not_equal}[expr.op](a, b)
    if isinstance(expr, Logical):
        args = [expr_value(a, values, rows).astype(bool) for a in expr.args]
        if expr.op == "not":
            return ~args[0]
        result = args[0]
        for other in args[1:]:
            result = (result & other) if expr.op == "and" else (result | other)
        return result
    if isinstance(expr, Call) and expr.func in ("maximum", "minimum"):
        a, b = (expr_value(x, values, rows) for x in expr.args)
        return np.maximum(a, b) if expr.func == "maximum" else np.minimum(a, b)
    if isinstance(expr, Select):
        return np.where(expr_value(expr.cond, values, rows).astype(bool),
                        expr_value(expr.then, values, rows),
                        expr_value(expr.otherwise, values, rows))
    raise BackendError(f"the accelerator compiler cannot evaluate the index '{expr}'")
