"""Check a call's NumPy arguments against a kernel's signature and bind the vars.

Shared by every target and by saved kernels loaded back (:mod:`.native`): each takes a
:class:`~.signature.Signature` (or a lowered function, whose signature is taken).

Vars are bound from the arrays' shapes (a dimension that is
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

import ctypes
import functools
import numbers
import threading
from typing import Callable

import numpy as np

from ..dtypes import numpy_dtype
from ..errors import InvalidArgumentError
from ..te.evaluate import evaluate
from ..te.expr import BinOp, Const, Expr, Var
from .signature import as_signature


def bind_arguments(func, args: tuple, kwargs: dict, *, device_types: tuple = ()
                   ) -> tuple[list[np.ndarray], dict[str, int]]:
    """The arrays in argument order and the value of every program parameter.

    ``device_types`` are array types accepted besides NumPy's (a backend's device
    arrays, e.g. ``pyopencl.array.Array``): they need the same dtype, rank and layout."""
    func = as_signature(func)
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
    params = set(func.params)
    for name, value in kwargs.items():
        if name not in params:
            raise InvalidArgumentError(
                f"{func.name} got the keyword '{name}', which is not one of its vars "
                f"({', '.join(sorted(params)) or 'none'})"
            )
        values[name] = _size_value(name, value)
    _bind_from_shapes(func.arrays, arrays, values)
    missing = [p for p in func.params if p not in values]
    if missing:
        raise InvalidArgumentError(
            f"var(s) {', '.join(missing)} of {func.name} are not determined by any argument's "
            f"shape; pass them by keyword, e.g. f(..., {missing[0]}=10)"
        )
    _check_least_sizes(func, values)
    _check_valid_range(func, values)
    _check_shapes(func, arrays, values)
    _check_no_overlap(func, arrays)
    return arrays, values


def _check_least_sizes(func, values: dict[str, int]) -> None:
    """A var declared with ``po.var(name, min=...)`` must be at least that."""
    for name, least in func.minimums:
        if values[name] < least:
            raise InvalidArgumentError(
                f"{func.name} was built for {name} >= {least} (po.var({name!r}, "
                f"min={least})), got {name}={values[name]}")


def _check_valid_range(func, values: dict[str, int]) -> None:
    """The sizes must lie in the range the kernel was built for (where every access stays
    inside its arrays): outside it the native code would read or write past them."""
    if func.valid_range and not _in_range(func.valid_range, tuple(sorted(values.items()))):
        given = ", ".join(f"{k}={v}" for k, v in values.items())
        constraints = func.valid_range.split("->", 1)[-1].strip(" {}").lstrip(": ")
        raise InvalidArgumentError(
            f"{func.name} is valid for the sizes {constraints} (where every access stays "
            f"inside its arrays), got {given}; pass sizes in that range")


_ISL_LOCK = threading.Lock()  # isl objects are not shared between threads unguarded


@functools.lru_cache(maxsize=256)
def _in_range(text: str, values: tuple[tuple[str, int], ...]) -> bool:
    import islpy as isl

    with _ISL_LOCK:
        point = isl.Set(text)
        for name, value in values:
            position = point.find_dim_by_name(isl.dim_type.param, name)
            if position >= 0:
                point = point.fix_val(isl.dim_type.param, position, isl.Val(str(value)))
        return not point.is_empty()


def _size_value(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentError(f"var '{name}' must be an integer, got {value!r}")
    if value < 0:
        raise InvalidArgumentError(f"var '{name}' is a size and must be >= 0, got {value}")
    if value >= 2 ** 63:
        raise InvalidArgumentError(f"var '{name}' is passed as a 64-bit integer; {value} is "
                                   "too large")
    return int(value)


def _check_array(spec, value, device_types: tuple = ()) -> np.ndarray:
    if spec.ndim == 0 and isinstance(value, numbers.Number) and not spec.written:
        value = np.asarray(value, dtype=spec.dtype)  # a scalar input (a float po.var)
    if not isinstance(value, (np.ndarray, *device_types)):
        raise InvalidArgumentError(
            f"argument '{spec.name}' must be a numpy.ndarray, got {type(value).__name__}; "
            f"convert it with numpy.asarray(x, dtype='{spec.dtype}')"
        )
    if value.dtype != numpy_dtype(spec.dtype):
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
                says = str(want)
                if not isinstance(extent, Const):
                    bound = ", ".join(f"{k}={v}" for k, v in values.items())
                    says = f"{extent} = {want} (with {bound})"
                raise InvalidArgumentError(
                    f"dimension {dim} of '{spec.name}' has size {actual}, but its shape says "
                    f"{says}; pass arrays whose shapes agree"
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


_NO_BYTES = ctypes.c_char * 0


def data_pointer(array: np.ndarray) -> int:
    """The address of a contiguous array's first element (``array.ctypes.data``, without
    its microsecond of overhead when the array is writable)."""
    try:
        return ctypes.addressof(_NO_BYTES.from_buffer(array))
    except (TypeError, ValueError):  # read-only
        return array.ctypes.data


def fixed_binder(func) -> Callable[[tuple], list[int] | None] | None:
    """For a function without vars: a check of a call's arrays that costs a few hundred
    nanoseconds per array.  It returns their data pointers when every array has the
    exact dtype, shape and layout wanted and no output overlaps another argument, else
    ``None``: the caller then takes :func:`bind_arguments`, which says what is wrong.

    >>> import numpy as np, polyopt as po
    >>> A = po.placeholder((4,), name="A"); B = po.compute((4,), lambda i: A[i] * 2.0, name="B")
    >>> bind = fixed_binder(po.lower(po.create_schedule(B), [A, B]))
    >>> len(bind((np.zeros(4, "float32"), np.zeros(4, "float32"))))
    2
    >>> bind((np.zeros(4, "float32"), np.zeros(5, "float32"))) is None
    True
    """
    func = as_signature(func)
    if func.params or len(func.args) != len(func.arrays):
        return None
    wanted = [(numpy_dtype(a.dtype), tuple(evaluate(e, {}) for e in a.shape), a.written)
              for a in func.arrays]
    if any(evaluate(e, {}) < 0 for t in func.temps for e in t.shape):
        return None
    written_positions = [i for i, (_, _, written) in enumerate(wanted) if written]

    def bind(args: tuple) -> list[int] | None:
        if len(args) != len(wanted):
            return None
        pointers, spans = [], []
        for array, (dtype, shape, written) in zip(args, wanted):
            if (type(array) is not np.ndarray or array.dtype != dtype
                    or array.shape != shape or not array.flags.c_contiguous
                    or (written and not array.flags.writeable)):
                return None
            pointer = data_pointer(array)
            pointers.append(pointer)
            spans.append((pointer, pointer + array.nbytes))
        for i in written_positions:
            if any(j != i and _overlap(spans[i], span) for j, span in enumerate(spans)):
                return None
        return pointers

    return bind


class LayoutCache:
    """For a function with vars: the layouts (dtypes, shapes, flags of the arrays and
    the keyword values) that :func:`bind_arguments` accepted, with the vars' values they
    bound, so that a call with a layout seen before costs about a microsecond per array
    instead of the general binding's tens (the PolyBench calls: 22 -> 3 us).

    >>> import numpy as np, polyopt as po
    >>> n = po.var("n"); A = po.placeholder((n,), name="A")
    >>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
    >>> cache = LayoutCache(po.lower(po.create_schedule(B), [A, B]))
    >>> a, b = np.zeros(5, "float32"), np.zeros(5, "float32")
    >>> cache.bind((a, b), {}) is None
    True
    >>> cache.remember((a, b), {}, {"n": 5}); cache.bind((a, b), {})[2:]
    [5]
    """

    LIMIT = 16  # layouts remembered per kernel (then they are forgotten, all at once)

    def __init__(self, func):
        func = as_signature(func)
        self.params = list(func.params)
        self.sizes = len(func.args) - len(func.arrays)  # vars passed by position
        self.written = [i for i, a in enumerate(func.arrays) if a.written]
        self.known: dict = {}

    def _key(self, args: tuple, kwargs: dict):
        if self.sizes:
            return None
        parts = []
        for array in args:
            if type(array) is not np.ndarray:
                return None
            flags = array.flags
            parts.append((array.dtype, array.shape, flags.c_contiguous, flags.writeable))
        for value in kwargs.values():
            if type(value) is not int:
                return None
        return tuple(parts), tuple(kwargs.items())

    def bind(self, args: tuple, kwargs: dict) -> list[int] | None:
        """The call's arguments (data pointers, then the vars' values) when its layout
        was accepted before and no output overlaps another argument; else ``None``."""
        key = self._key(args, kwargs)
        values = self.known.get(key) if key is not None else None
        if values is None:
            return None
        pointers, spans = [], []
        for array in args:
            pointer = data_pointer(array)
            pointers.append(pointer)
            spans.append((pointer, pointer + array.nbytes))
        for i in self.written:
            if any(j != i and _overlap(spans[i], span) for j, span in enumerate(spans)):
                return None
        return pointers + values

    def remember(self, args: tuple, kwargs: dict, values: dict[str, int]) -> None:
        """Remember a layout :func:`bind_arguments` accepted, with the vars it bound."""
        key = self._key(args, kwargs)
        if key is None:
            return
        if len(self.known) >= self.LIMIT:
            self.known = {}  # (a new dict: safe while another thread reads the old one)
        self.known[key] = [values[p] for p in self.params]


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two non-empty address ranges ``[start, end)`` intersect."""
    return a[0] < a[1] and b[0] < b[1] and a[0] < b[1] and b[0] < a[1]
