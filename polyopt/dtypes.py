"""Data types and the promotion rules of polyopt expressions.

Supported tensor dtypes: float32, float64, int8, uint8, int16, uint16, int32, uint32,
int64, uint64,
and float16 and bfloat16 as storage types.  Comparisons produce the internal dtype ``bool``, which only conditions use.

``bfloat16`` (the upper 16 bits of a float32) is for storage and conversion only:
NumPy has no bfloat16, so such arrays are passed as ``uint16`` arrays holding the bits
(``to_bfloat16_bits``); computations convert first (``A[i].astype("float32")``, exact),
and a float32 stored to bfloat16 rounds to nearest even.  ``float16`` (IEEE half) is a
storage type the same way, with NumPy's ``float16`` arrays: ``A[i].astype("float32")``
is exact, and a value stored to float16 (``.astype("float16")``) is rounded to nearest
even from float32 (a float64 goes through float32), with overflow to infinity and
subnormals, as NumPy rounds a float32.

Promotion of a binary operation between two typed operands (tensors, casts, math
results) picks the smallest supported dtype that holds every value of both:

* the same dtype gives that dtype;
* two integers give NumPy's result: the wider one, a signed one wide enough for
  both when the signs differ (``uint32`` with ``int32`` gives ``int64``; but ``uint8``
  with ``int8`` gives ``int32``, as before polyopt had ``int16``); ``uint64`` with a
  signed integer gives ``float64``, as in NumPy;
* an integer and a float give the float when it holds the integer exactly
  (8- and 16-bit integers with ``float32`` give ``float32``), else ``float64``;
* ``float32`` with ``float64`` gives ``float64``.

Python numbers are *weak*: ``A * 2`` and ``A * 0.5`` keep a float ``A``'s dtype, an
``int`` keeps an integer operand's dtype, and a ``float`` with an integer operand
gives ``float64`` (as NumPy 2 does).  A Python ``int`` that the integer operand's dtype
cannot hold (``A_int8[i] + 200``) is refused with :class:`DTypeError`, as in NumPy 2;
comparisons of integer data with Python ints or index arithmetic are done exactly, in
int64 (``A_uint8[i] > -1`` is true).  True division ``/`` of two integers gives
``float64``; ``//`` and ``%`` are floor division and floor modulo as in Python.
Index arithmetic (axes, vars, integer constants) is exact 64-bit integer arithmetic.

>>> promote("int8", "float32"), promote("int32", "float32"), promote("uint8", "int8")
('float32', 'float64', 'int32')
>>> promote("uint32", "int32"), promote("uint64", "int64"), promote("uint64", "uint8")
('int64', 'float64', 'uint64')
"""

from __future__ import annotations

import numpy as np

from .errors import DTypeError

FLOATS = ("float32", "float64")
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
BFLOAT16 = "bfloat16"  # a storage type: see the module's doc
FLOAT16 = "float16"  # IEEE half, a storage type too
STORAGE = (FLOAT16, BFLOAT16)
SUPPORTED = FLOATS + INTS + STORAGE
BOOL = "bool"
INDEX = "int64"  # dtype of axes, vars and integer index arithmetic

_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64,
         "float32": 32, "float64": 64, BFLOAT16: 16, FLOAT16: 16}


def normalize(dtype) -> str:
    """Return the canonical name of ``dtype`` or raise :class:`DTypeError`.

    >>> normalize(np.float32), normalize("f8")
    ('float32', 'float64')
    """
    if dtype in (BFLOAT16, "bf16"):
        return BFLOAT16
    try:
        name = np.dtype(dtype).name
    except TypeError:
        name = None
    if name not in SUPPORTED:
        raise DTypeError(
            f"unsupported dtype {dtype!r}; use one of {', '.join(SUPPORTED)}"
        )
    return name


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


def is_int(dtype: str) -> bool:
    return dtype in INTS


def is_signed(dtype: str) -> bool:
    return not dtype.startswith("uint")


def bits(dtype: str) -> int:
    return _BITS[dtype]


def promote(a: str, b: str) -> str:
    """The dtype of a binary operation between operands of dtypes ``a`` and ``b``."""
    for storage in STORAGE:
        if storage in (a, b):
            raise DTypeError(f"{storage} is a storage type: convert it first, e.g. "
                             "A[i].astype('float32') * B[i].astype('float32')")
    if a == b:
        return a
    if BOOL in (a, b):
        raise DTypeError(
            f"cannot combine a condition (bool) with a {b if a == BOOL else a} value; "
            "use po.if_then_else(cond, x, y) to turn a condition into a value"
        )
    if is_float(a) and is_float(b):
        return "float64"
    if is_int(a) and is_int(b):
        name = np.promote_types(a, b).name
        # (int8 with uint8: int32, as it was before int16 existed; NumPy says int16)
        return "int32" if name == "int16" and max(bits(a), bits(b)) == 8 else name
    int_t, float_t = (a, b) if is_int(a) else (b, a)
    if float_t == "float32" and bits(int_t) <= 16:
        return "float32"
    return "float64"


def numpy_dtype(dtype: str) -> np.dtype:
    """The NumPy dtype of arrays holding ``dtype`` (``uint16`` bits for bfloat16)."""
    return np.dtype(np.uint16) if dtype == BFLOAT16 else np.dtype(dtype)


def to_bfloat16_bits(values) -> np.ndarray:
    """float32 values -> their bfloat16 bits as uint16, rounded to nearest even.

    >>> to_bfloat16_bits(np.array([1.0, 1.00390625, -2.5], np.float32)).tolist()
    [16256, 16256, 49184]
    """
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def from_bfloat16_bits(bits) -> np.ndarray:
    """bfloat16 bits (uint16) -> float32 values (exact)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)
