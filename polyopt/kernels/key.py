"""The key of a kernel: a structural hash of the lowered program, the target and the options.

:func:`structural_hash` hashes a value by its structure, not by how it prints: the
dataclasses of the loop AST, the lowered function, the program (statements, arrays with
their dtypes and shapes, parameters, stages) field by field; tuples, lists, dicts and sets
item by item; isl objects by their isl text (their canonical form); a tensor by its
operation's kind, name, shape and dtype (what it computes is in the program's
statements).  Two values built separately with the same structure hash the same.

:func:`kernel_key` names what a build produces: the structural hash of the lowered
function, the target key (the backend with the CPU and every feature the code is
compiled for, as :func:`polyopt.target.base.target_key` resolves them), the build options
and the versions of polyopt's sources, islpy and llvmlite.

>>> from polyopt.ast.nodes import For, Int, Name, Op, Run
>>> def loop(kind="serial"):
...     return For("i", Int(0), Op("lt", (Name("i"), Int(8))), 1, Run("S", (Name("i"),)), kind)
>>> structural_hash(loop()) == structural_hash(loop())
True
>>> structural_hash(loop()) == structural_hash(loop("parallel"))
False
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import types

from ..target.signature import versions_text
from ..te.tensor import Tensor

_PRIMITIVES = (type(None), bool, int, float, complex, str, bytes)


def structural_hash(value) -> str:
    """A hex SHA-256 of ``value``'s structure (see the module docstring).

    >>> structural_hash({"b": 2, "a": 1}) == structural_hash({"a": 1, "b": 2})
    True
    >>> structural_hash((1, 2)) == structural_hash([1, 2]), structural_hash(1) == structural_hash(True)
    (False, False)
    """
    return _Hasher().digest(value).hex()


def kernel_key(func, target: str, options: dict | None = None) -> str:
    """The key of the kernel built from the lowered function ``func`` for ``target`` (a
    target key, :func:`~polyopt.target.base.target_key`) with ``options``: a hex SHA-256.

    >>> import polyopt as po
    >>> def doubler(dtype):
    ...     A = po.placeholder((8,), name="A", dtype=dtype)
    ...     B = po.compute((8,), lambda i: A[i] * 2, name="B")
    ...     return po.lower(po.create_schedule(B), [A, B])
    >>> key = kernel_key(doubler("float32"), "llvm -mcpu=znver3", {"num_threads": 1})
    >>> key == kernel_key(doubler("float32"), "llvm -mcpu=znver3", {"num_threads": 1})
    True
    >>> key == kernel_key(doubler("float64"), "llvm -mcpu=znver3", {"num_threads": 1})
    False
    >>> key == kernel_key(doubler("float32"), "llvm -mcpu=znver4", {"num_threads": 1})
    False
    """
    digest = hashlib.sha256()
    for part in (structural_hash(func), str(target), structural_hash(dict(options or {})),
                 versions_text()):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _node(tag: str, children) -> bytes:
    """The digest of a composite: its tag, then its children's (fixed-size) digests."""
    digest = hashlib.sha256(b"N" + tag.encode() + b"\0")
    for child in children:
        digest.update(child)
    return digest.digest()


def _leaf(tag: str, payload: bytes) -> bytes:
    return hashlib.sha256(b"L" + tag.encode() + b"\0" + payload).digest()


def _qualname(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


class _Hasher:
    """One hashing walk: each object's digest is computed once (shared sub-objects, such
    as iteration variables, are not walked again); a cycle hashes as its type."""

    def __init__(self):
        self._memo: dict[int, tuple[bytes, object]] = {}
        self._active: set[int] = set()

    def digest(self, value) -> bytes:
        kind = type(value)
        if kind in _PRIMITIVES:
            payload = value if kind is bytes else repr(value).encode()
            return _leaf(kind.__name__, payload)
        found = self._memo.get(id(value))
        if found is not None:
            return found[0]
        if id(value) in self._active:
            return _leaf("cycle", _qualname(kind).encode())
        self._active.add(id(value))
        try:
            result = self._compose(value, kind)
        finally:
            self._active.discard(id(value))
        self._memo[id(value)] = (result, value)  # (kept alive: ids stay unique)
        return result

    def _compose(self, value, kind: type) -> bytes:
        if isinstance(value, enum.Enum):
            return _leaf(_qualname(kind), value.name.encode())
        if isinstance(value, (tuple, list)):
            return _node(_qualname(kind), map(self.digest, value))
        if isinstance(value, dict):
            pairs = sorted(self.digest(k) + self.digest(v) for k, v in value.items())
            return _node("dict", pairs)
        if isinstance(value, (set, frozenset)):
            return _node("set", sorted(map(self.digest, value)))
        if isinstance(value, Tensor):
            op = value.op
            return _node("Tensor", [self.digest(type(op).__name__), self.digest(op.name),
                                    self.digest(tuple(op.shape)), self.digest(op.dtype)])
        if kind.__module__.startswith("islpy"):  # immutable, printed canonically
            return _leaf(_qualname(kind), str(value).encode())
        if kind.__module__ == "numpy":
            return self._numpy(value, kind)
        if isinstance(value, (types.FunctionType, types.MethodType)):
            return self._function(value)
        if isinstance(value, type):
            return _leaf("type", _qualname(value).encode())
        names = _field_names(kind) if dataclasses.is_dataclass(kind) else _attributes(value)
        if names is None:  # no fields to walk: what it prints (a miss at worst)
            return _leaf(_qualname(kind), repr(value).encode())
        return _node(_qualname(kind), [self.digest(name) + self.digest(getattr(value, name))
                                       for name in names])

    def _numpy(self, value, kind: type) -> bytes:
        import numpy as np

        if isinstance(value, np.ndarray):
            return _node("ndarray", [self.digest(value.dtype.str), self.digest(value.shape),
                                     _leaf("data", np.ascontiguousarray(value).tobytes())])
        if isinstance(value, np.generic):
            return _node(_qualname(kind), [self.digest(value.item())])
        return _leaf(_qualname(kind), str(value).encode())

    def _function(self, value) -> bytes:
        """A function by its code, constants, defaults and captured values."""
        if isinstance(value, types.MethodType):
            return _node("method", [self.digest(value.__self__), self._function(value.__func__)])
        code = value.__code__
        cells = tuple(c.cell_contents for c in value.__closure__ or ()
                      if _has_contents(c))
        return _node("function", [self.digest(f"{value.__module__}.{value.__qualname__}"),
                                   _leaf("code", code.co_code), self.digest(code.co_consts),
                                   self.digest(value.__defaults__), self.digest(cells)])


@functools.cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell
        return False
    return True


def _attributes(value) -> list[str] | None:
    """The attribute names of a plain object (its ``__dict__`` and ``__slots__``)."""
    names = set(getattr(value, "__dict__", {}) or {})
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        names.update((slots,) if isinstance(slots, str) else slots)
    names.discard("__weakref__")
    names.discard("__dict__")
    present = sorted(n for n in names if hasattr(value, n))
    return present or None
