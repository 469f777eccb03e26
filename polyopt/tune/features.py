"""Features of a lowered loop nest, for the cost model: one numeric vector per schedule.

Read from the lowered function (:func:`polyopt.lower`): the loops (extents, nesting,
``parallel``/``vectorized``/``unrolled``), and for the statement that runs most often,
each access's stride in elements along its innermost loops and the bytes it touches
within the innermost 1, 2 and 3 loops (its reuse).  Strides come from the access
relations (affine maps, read with isl) composed with the loop variables' steps.  The
vector has :data:`LENGTH` entries whatever the kernel, so records of other shapes of an
operator train the same model.

>>> import polyopt as po
>>> A = po.placeholder((64, 64), name="A")
>>> B = po.compute((64, 64), lambda i, j: A[j, i] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> vector = nest_features(po.lower(s, [A, B]))
>>> len(vector) == LENGTH, float(vector[ACCESSES + 2])  # B's write: stride 1 (contiguous)
(True, 1.0)
"""

from __future__ import annotations

import functools
import math

import islpy as isl
import numpy as np

from ..ast.nodes import Block, For, If, Int, Name, Op, Run
from ..errors import InvalidArgumentError, public
from ..te.evaluate import evaluate

__all__ = ["LENGTH", "nest_features"]

LEVELS = 6       # loops described, innermost first
MAX_ACCESSES = 4  # accesses of the main statement described
PER_ACCESS = 7
GLOBAL = 10
ACCESSES = GLOBAL + 4 * LEVELS  # where the accesses' features start (log2 stride, is 0, is 1...)
LENGTH = GLOBAL + 4 * LEVELS + PER_ACCESS * MAX_ACCESSES + 7
_KINDS = ("parallel", "vectorized", "unrolled")


def _log(value: float) -> float:
    return math.log2(1.0 + abs(value))


def _value(expr, env: dict) -> int:
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Name):
        return env.get(expr.name, 0)
    if isinstance(expr, Op):
        args = [_value(a, env) for a in expr.args]
        op = expr.op
        if op == "add":
            return args[0] + args[1]
        if op == "sub":
            return args[0] - args[1]
        if op == "mul":
            return args[0] * args[1]
        if op == "neg":
            return -args[0]
        if op == "min":
            return min(args)
        if op == "max":
            return max(args)
        if op in ("fdiv_q", "pdiv_q", "div"):
            return args[0] // args[1] if args[1] else 0
        if op in ("pdiv_r", "zdiv_r"):
            return args[0] % args[1] if args[1] else 0
        if op in ("lt", "le", "gt", "ge", "eq"):
            return int({"lt": args[0] < args[1], "le": args[0] <= args[1],
                        "gt": args[0] > args[1], "ge": args[0] >= args[1],
                        "eq": args[0] == args[1]}[op])
    return 0


def _extent(loop: For, env: dict) -> tuple[int, int]:
    """The loop's first value and trip count, its outer loops at their first values."""
    start = _value(loop.init, env)
    cond = loop.cond
    if isinstance(cond, Op) and cond.op in ("lt", "le") and cond.args[0] == Name(loop.var):
        end = _value(cond.args[1], env) + (cond.op == "le")
        return start, max(0, -(-(end - start) // max(loop.step, 1)))
    return start, 1


def _runs(node, env: dict, path: list, found: list) -> None:
    """Every statement instance (Run) with its enclosing loops, innermost last."""
    if isinstance(node, For):
        start, trips = _extent(node, env)
        inner = dict(env)
        inner[node.var] = start
        _runs(node.body, inner, path + [(node, trips, start)], found)
    elif isinstance(node, Block):
        for item in node.items:
            _runs(item, env, path, found)
    elif isinstance(node, If):
        _runs(node.then, env, path, found)
        if node.otherwise is not None:
            _runs(node.otherwise, env, path, found)
    elif isinstance(node, Run):
        found.append((node, path, env))
    else:  # (a target's wrapper: its loop or body)
        for attr in ("loop", "body"):
            if hasattr(node, attr):
                _runs(getattr(node, attr), env, path, found)
                break


@functools.lru_cache(maxsize=4096)
def _coefficients(relation_text: str) -> tuple | None:
    """The affine index map of an access: one row per array dimension."""
    try:
        relation = isl.Map(relation_text)
        pieces = []
        relation.as_pw_multi_aff().foreach_piece(lambda _s, ma: pieces.append(ma))
        multi = pieces[0]
        return tuple(tuple(multi.get_aff(d).get_coefficient_val(isl.dim_type.in_, k)
                           .to_python() for k in range(multi.dim(isl.dim_type.in_)))
                     for d in range(multi.dim(isl.dim_type.out)))
    except (isl.Error, IndexError):
        return None


def _row_strides(shape, sizes) -> list[int]:
    try:
        extents = [max(1, evaluate(e, sizes)) for e in shape]
    except Exception:  # noqa: BLE001  (a size not given: unit extents)
        extents = [1] * len(shape)
    strides, step = [], 1
    for extent in reversed(extents):
        strides.append(step)
        step *= extent
    return strides[::-1]


def _itemsize(dtype: str) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        return 2 if "16" in dtype else 4


@public
def nest_features(func, sizes: dict | None = None) -> np.ndarray:
    """The feature vector (:data:`LENGTH` floats) of a lowered function (see the module
    docstring); ``sizes`` gives symbolic sizes their values."""
    if not hasattr(func, "body") or not hasattr(func, "program"):
        raise InvalidArgumentError(f"nest_features takes what po.lower returns, got "
                                   f"{type(func).__name__}")
    sizes = dict(sizes or {})
    found: list = []
    _runs(func.body, dict(sizes), [], found)
    vector = np.zeros(LENGTH)
    if not found:
        return vector
    loops = {id(loop): (loop, trips) for _, path, _ in found for loop, trips, _ in path}
    counts = [math.prod(t for _, t, _ in path) for _, path, _ in found]
    kinds = [loop.kind for loop, _ in loops.values()]
    parallel = [t for loop, t in loops.values() if loop.kind == "parallel"]
    vector_loops = [t for loop, t in loops.values() if loop.kind == "vectorized"]
    unrolled = [math.prod(t for loop, t, _ in path if loop.kind == "unrolled")
                for _, path, _ in found]
    vector[:GLOBAL] = [_log(sum(counts)), len(found), len(loops),
                       max(len(p) for _, p, _ in found), kinds.count("parallel"),
                       kinds.count("vectorized"), kinds.count("unrolled"),
                       _log(parallel[0]) if parallel else 0.0,
                       _log(vector_loops[-1]) if vector_loops else 0.0, _log(max(unrolled))]
    main = int(np.argmax(counts))
    run, path, env = found[main]
    levels = path[::-1][:LEVELS]
    for k, (loop, trips, _) in enumerate(levels):
        base = GLOBAL + 4 * k
        vector[base] = _log(trips)
        for j, kind in enumerate(_KINDS):
            vector[base + 1 + j] = float(loop.kind == kind)
    _access_features(vector, func.program, run, levels, env, sizes)
    return vector


def _access_features(vector, program, run: Run, levels, env: dict, sizes: dict) -> None:
    """Strides, footprints and reuse of the main statement's accesses."""
    try:
        statement = program.statement(run.stmt)
    except Exception:  # noqa: BLE001  (a statement lowering added: no accesses known)
        return
    accesses = sorted(statement.accesses, key=lambda a: str(a.kind) != "AccessKind.WRITE")
    base_env = dict(env)
    for loop, _, start in levels:
        base_env[loop.var] = start
    base_args = [_value(a, base_env) for a in run.args]
    steps = []  # per level: how each statement dimension moves with that loop
    for loop, _, start in levels:
        moved = dict(base_env)
        moved[loop.var] = start + max(loop.step, 1)
        steps.append([_value(a, moved) - b for a, b in zip(run.args, base_args)])
    totals = np.zeros(4)
    offset = GLOBAL + 4 * LEVELS
    for number, access in enumerate(accesses):
        rows = _coefficients(str(access.relation))
        if rows is None:
            continue
        array = program.array(access.array)
        strides = _row_strides(array.shape, sizes)
        item = _itemsize(array.dtype)
        moves = []
        for step in steps:
            index = [sum(c * s for c, s in zip(row, step)) for row in rows]
            moves.append(sum(i * s for i, s in zip(index, strides)))
        footprints = []
        for depth in range(1, 5):
            elements = math.prod(trips for (_, trips, _), move in
                                 zip(levels[:depth], moves[:depth]) if move)
            footprints.append(elements * item)
        totals += footprints
        if number < MAX_ACCESSES:
            first = moves[0] if moves else 0
            base = offset + PER_ACCESS * number
            vector[base:base + PER_ACCESS] = [
                _log(first), float(first == 0), float(abs(first) == 1),
                _log(moves[1]) if len(moves) > 1 else 0.0,
                _log(footprints[0]), _log(footprints[1]), _log(footprints[2])]
    tail = offset + PER_ACCESS * MAX_ACCESSES
    vector[tail:tail + 4] = [_log(t) for t in totals]
    for k, depth in enumerate((2, 3, 4)):
        iterations = math.prod(t for _, t, _ in levels[:depth])
        vector[tail + 4 + k] = _log(iterations * 4 / max(totals[depth - 1], 1.0))
