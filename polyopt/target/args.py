"""Check a call's NumPy arguments against a lowered function and bind the vars.

Shared by every target.  Vars are bound from the arrays' shapes (a dimension that is
exactly a var binds it; ``n + 2`` binds ``n`` when nothing else does); every shape
is then checked.  A var that no shape determines is passed by keyword.

>>> import numpy as np, polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> func = po.lower(po.create_schedule(B), [A, B])
>>> arrays, values = bind_arguments(func, (np.zeros(5, "float32"), np.zeros(5, "float32")), {})
>>> values
{'n': 5}
"""

from __future__ import annotations

import numbers

import numpy as np

from ..domain.program import Array
from ..errors import InvalidArgumentError
from ..te.evaluate import evaluate
from ..te.expr import BinOp, Const, Expr, Var


def bind_arguments(func, args: tuple, kwargs: dict, *, device_types: tuple = ()
                   ) -> tuple[list[np.ndarray], dict[str, int]]:
    """The arrays in argument order and the value of every program parameter.

    ``device_types`` are array types accepted besides NumPy's (a backend's device
    arrays, e.g. ``pyopencl.array.Array``): they need the same dtype, rank and layout."""
    expected = func.args
    if len(args) != len(expected):
        names = ", ".join(a.name for a in expected)
        raise InvalidArgumentError(
            f"{func.name} takes {len(expected)} argument(s) ({names}), got {len(args)}"
        )
    values: dict[str, int] = {}
    arrays: list[np.ndarray] = []
    for spec, value in zip(expected, args):
        if isinstance(spec, Var):
            values[spec.name] = _size_value(spec.name, value)
        else:
            arrays.append(_check_array(spec, value, device_types))
    params = {p.name for p in func.program.params}
    for name, value in kwargs.items():
        if name not in params:
            raise InvalidArgumentError(
                f"{func.name} got the keyword '{name}', which is not one of its vars "
                f"({', '.join(sorted(params)) or 'none'})"
            )
        values[name] = _size_value(name, value)
    _bind_from_shapes(func.arrays, arrays, values)
    missing = [p.name for p in func.program.params if p.name not in values]
    if missing:
        raise InvalidArgumentError(
            f"var(s) {', '.join(missing)} of {func.name} are not determined by any argument's "
            f"shape; pass them by keyword, e.g. f(..., {missing[0]}=10)"
        )
    _check_shapes(func, arrays, values)
    _check_no_overlap(func, arrays)
    return arrays, values


def _size_value(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"var '{name}' must be an integer, got {value!r}")
    if value < 0:
        raise InvalidArgumentError(f"var '{name}' is a size and must be >= 0, got {value}")
    return int(value)


def _check_array(spec: Array, value, device_types: tuple = ()) -> np.ndarray:
    if not isinstance(value, (np.ndarray, *device_types)):
        raise InvalidArgumentError(
            f"argument '{spec.name}' must be a numpy.ndarray, got {type(value).__name__}; "
            f"convert it with numpy.asarray(x, dtype='{spec.dtype}')"
        )
    if value.dtype != np.dtype(spec.dtype):
        raise InvalidArgumentError(
            f"argument '{spec.name}' must have dtype {spec.dtype}, got {value.dtype}; "
            f"convert it with x.astype(numpy.{spec.dtype})"
        )
    if value.ndim != spec.ndim:
        raise InvalidArgumentError(
            f"argument '{spec.name}' must have {spec.ndim} dimension(s), got an array of "
            f"shape {value.shape}"
        )
    if not value.flags.c_contiguous:
        raise InvalidArgumentError(
            f"argument '{spec.name}' is not C-contiguous (a transposed or sliced view?); "
            "pass numpy.ascontiguousarray(x)"
        )
    if spec.written and not getattr(value.flags, "writeable", True):
        raise InvalidArgumentError(f"output '{spec.name}' is read-only; pass a writable array")
    return value


def _bind_from_shapes(specs, arrays, values: dict[str, int]) -> None:
    pending = []
    for spec, array in zip(specs, arrays):
        for dim, (extent, actual) in enumerate(zip(spec.shape, array.shape)):
            if isinstance(extent, Var) and extent.name not in values:
                values[extent.name] = actual
            else:
                pending.append((extent, actual))
    for extent, actual in pending:  # n + c, c * n and n // c cannot all be inverted; try a + b*n
        solved = _solve_linear(extent, actual, values)
        if solved is not None:
            values[solved[0]] = solved[1]


def _solve_linear(extent: Expr, actual: int, values: dict[str, int]):
    unknown = [v for v in _vars(extent) if v.name not in values]
    if len({v.name for v in unknown}) != 1:
        return None
    name = unknown[0].name
    try:
        at0 = evaluate(extent, {**values, name: 0})
        at1 = evaluate(extent, {**values, name: 1})
    except InvalidArgumentError:
        return None
    slope = at1 - at0
    if slope == 0 or (actual - at0) % slope:
        return None
    guess = (actual - at0) // slope
    if guess >= 0 and evaluate(extent, {**values, name: guess}) == actual:
        return name, guess
    return None


def _vars(expr: Expr):
    if isinstance(expr, Var):
        yield expr
    elif isinstance(expr, BinOp):
        yield from _vars(expr.a)
        yield from _vars(expr.b)
    elif not isinstance(expr, Const):
        for child in getattr(expr, "args", ()):
            yield from _vars(child)


def _check_shapes(func, arrays, values: dict[str, int]) -> None:
    for spec, array in zip(func.arrays, arrays):
        for dim, (extent, actual) in enumerate(zip(spec.shape, array.shape)):
            want = evaluate(extent, values)
            if want != actual:
                bound = ", ".join(f"{k}={v}" for k, v in values.items())
                raise InvalidArgumentError(
                    f"dimension {dim} of '{spec.name}' has size {actual}, but its shape says "
                    f"{extent} = {want} (with {bound}); pass arrays whose shapes agree"
                )
    for temp in func.temps:
        for extent in temp.shape:
            if evaluate(extent, values) < 0:
                raise InvalidArgumentError(
                    f"the intermediate tensor '{temp.name}' would have the negative size "
                    f"{extent} = {evaluate(extent, values)}; the inputs are too small"
                )


def _check_no_overlap(func, arrays) -> None:
    specs = func.arrays
    for i, (spec, array) in enumerate(zip(specs, arrays)):
        if not spec.written:  # outputs and arrays updated in place
            continue
        for j, other in enumerate(arrays):
            if j != i and array.size and other.size and _share_memory(array, other):
                raise InvalidArgumentError(
                    f"output '{spec.name}' shares memory with argument '{specs[j].name}'; "
                    "the kernel needs separate arrays (pass a copy)"
                )


def _share_memory(a, b) -> bool:
    """Whether two arguments may overlap: NumPy arrays by their memory, device arrays
    (which have no host address) by their buffer."""
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return np.may_share_memory(a, b)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False
    return getattr(a, "base_data", a) is getattr(b, "base_data", b)
