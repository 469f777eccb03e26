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
    >>> structural_hash((1, 2)) == structural_hash([1, 2])
    False
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
    """One hashing walk, iterative (a deep expression does not exhaust Python's stack):
    each object's digest is computed once (shared sub-objects, such as iteration
    variables, are not walked again); a cycle hashes as its type."""

    def __init__(self):
        self._memo: dict[int, tuple[bytes, object]] = {}
        self._active: set[int] = set()

    def digest(self, root) -> bytes:
        done = self._simple(root)
        if done is not None:
            return done
        stack = [self._frame(root)]
        while True:
            value, children, combine, digests = stack[-1]
            if len(digests) < len(children):
                child = children[len(digests)]
                done = self._simple(child)
                if done is not None:
                    digests.append(done)
                else:
                    stack.append(self._frame(child))
                continue
            stack.pop()
            result = combine(digests)
            self._active.discard(id(value))
            self._memo[id(value)] = (result, value)  # (kept alive: ids stay unique)
            if not stack:
                return result
            stack[-1][3].append(result)

    def _simple(self, value) -> bytes | None:
        """The digest of ``value`` when it needs no walk (a primitive, a value hashed
        already, a cycle, an opaque leaf); None when its children must be hashed."""
        kind = type(value)
        if kind in _PRIMITIVES:
            return _leaf(kind.__name__, value if kind is bytes else repr(value).encode())
        found = self._memo.get(id(value))
        if found is not None:
            return found[0]
        if id(value) in self._active:
            return _leaf("cycle", _qualname(kind).encode())
        if isinstance(value, enum.Enum):
            return _leaf(_qualname(kind), value.name.encode())
        if kind.__module__.startswith("islpy"):  # immutable, printed canonically
            return _leaf(_qualname(kind), str(value).encode())
        if kind.__module__ == "numpy":
            return _numpy(value, kind)
        if isinstance(value, type):
            return _leaf("type", _qualname(value).encode())
        return None

    def _frame(self, value) -> list:
        """``[value, children, combine, digests so far]``: ``combine`` makes the value's
        digest from its children's."""
        self._active.add(id(value))
        kind = type(value)
        if isinstance(value, (tuple, list)):
            return [value, list(value), _combined(_qualname(kind)), []]
        if isinstance(value, dict):
            items = [part for pair in value.items() for part in pair]
            return [value, items, _pairs_sorted, []]
        if isinstance(value, (set, frozenset)):
            return [value, list(value), lambda digests: _node("set", sorted(digests)), []]
        if isinstance(value, Tensor):
            op = value.op
            return [value, [type(op).__name__, op.name, tuple(op.shape), op.dtype],
                    _combined("Tensor"), []]
        if isinstance(value, types.MethodType):
            return [value, [value.__self__, value.__func__], _combined("method"), []]
        if isinstance(value, types.FunctionType):  # by code, constants, captured values
            code = value.__code__
            cells = tuple(c.cell_contents for c in value.__closure__ or () if _has_contents(c))
            children = [f"{value.__module__}.{value.__qualname__}", code.co_code,
                        code.co_consts, value.__defaults__, cells]
            return [value, children, _combined("function"), []]
        names = _field_names(kind) if dataclasses.is_dataclass(kind) else _attributes(value)
        if names is None:  # no fields to walk: what it prints (a miss at worst)
            return [value, [repr(value)], _combined(_qualname(kind)), []]
        children = [part for name in names for part in (name, getattr(value, name))]
        return [value, children, _combined(_qualname(kind)), []]


def _combined(tag: str):
    return lambda digests: _node(tag, digests)


def _pairs_sorted(digests: list[bytes]) -> bytes:
    """A dict's digest: its (key, value) pairs in an order of their own."""
    pairs = sorted(digests[k] + digests[k + 1] for k in range(0, len(digests), 2))
    return _node("dict", pairs)


def _numpy(value, kind: type) -> bytes:
    import numpy as np

    if isinstance(value, np.ndarray):
        return _node("ndarray", [_leaf("dtype", value.dtype.str.encode()),
                                 _leaf("shape", repr(value.shape).encode()),
                                 _leaf("data", np.ascontiguousarray(value).tobytes())])
    if isinstance(value, np.generic):
        return _leaf(_qualname(kind), repr(value.item()).encode())
    return _leaf(_qualname(kind), str(value).encode())


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
