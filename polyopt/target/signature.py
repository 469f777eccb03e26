"""What a compiled kernel takes, as a value that survives the process: its ``Signature``.

A kernel's native function is ``int32 NAME(void *array0, ..., int64 param0, ...)``: the
arrays in argument order, then every size (program parameter) in :attr:`Signature.params`
order; it returns 0, or 1 when it could not allocate its intermediate buffers.  The
signature says which arrays (name, dtype, shape in terms of the sizes, written or not),
which sizes the caller passes as arguments, and the sizes of the buffers the kernel
allocates; it is written beside saved kernels as JSON and read back to check calls
(:mod:`.args`) without the program that made it.

>>> import polyopt as po
>>> n = po.var("n"); A = po.placeholder((n, n + 2), name="A")
>>> B = po.compute((n,), lambda i: A[i, 0] * 2.0, name="B")
>>> sig = signature_of(po.lower(po.create_schedule(B), [A, B]))
>>> sig.prototype()
'int32_t B_kernel(const float *A /* [n][n + 2] */, float *B /* [n] */, int64_t n)'
>>> Signature.from_json(sig.to_json()) == sig
True
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
from dataclasses import dataclass

from ..dtypes import INDEX
from ..errors import InvalidArgumentError
from ..te.expr import BinOp, Call, Cast, Const, Expr, Var

SIGNATURE_FORMAT = 1  # bumped when the JSON layout changes
C_TYPES = {"float32": "float", "float64": "double", "int8": "int8_t", "int16": "int16_t",
           "int32": "int32_t", "int64": "int64_t", "uint8": "uint8_t", "uint16": "uint16_t",
           "uint32": "uint32_t", "uint64": "uint64_t", "bool": "bool"}


@dataclass(frozen=True, slots=True, eq=False)
class ArraySpec:
    """An array argument (or an intermediate buffer): ``shape`` is in terms of the sizes."""

    name: str
    shape: tuple[Expr, ...]
    dtype: str
    written: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype, "written": self.written,
                "shape": [encode_extent(e) for e in self.shape],
                "shape_text": [str(e) for e in self.shape]}

    @staticmethod
    def from_json(data: dict) -> ArraySpec:
        return ArraySpec(data["name"], tuple(decode_extent(e) for e in data["shape"]),
                         data["dtype"], bool(data["written"]))


@dataclass(frozen=True, slots=True, eq=False)
class Signature:
    """A kernel's calling convention (see the module docstring).

    ``args`` are :class:`ArraySpec` and ``Var`` (a size passed as an argument), in the
    order the caller passes them; ``params`` are all sizes, in the native function's
    order; ``temps`` are the buffers the kernel allocates."""

    name: str
    args: tuple[ArraySpec | Var, ...]
    params: tuple[str, ...] = ()
    temps: tuple[ArraySpec, ...] = ()
    minimums: tuple[tuple[str, int], ...] = ()  # sizes declared with po.var(..., min=)
    valid_range: str = ""  # isl set of the sizes the kernel is valid for ("": any >= min)

    @property
    def arrays(self) -> tuple[ArraySpec, ...]:
        return tuple(a for a in self.args if isinstance(a, ArraySpec))

    @property
    def outputs(self) -> tuple[ArraySpec, ...]:
        return tuple(a for a in self.arrays if a.written)

    def to_json(self) -> dict:
        args = [{"size": a.name} if isinstance(a, Var) else a.to_json() for a in self.args]
        return {"format": SIGNATURE_FORMAT, "name": self.name, "args": args,
                "params": list(self.params), "temps": [t.to_json() for t in self.temps],
                "minimums": [list(m) for m in self.minimums],
                **({"valid_range": self.valid_range} if self.valid_range else {}),
                "prototype": self.prototype()}

    @staticmethod
    def from_json(data: dict) -> Signature:
        """The signature ``to_json`` wrote; a clear error for anything else."""
        try:
            if data.get("format") != SIGNATURE_FORMAT:
                raise InvalidArgumentError(
                    f"kernel signature format {data.get('format')!r} is not the one this "
                    f"polyopt reads ({SIGNATURE_FORMAT}); rebuild the kernel with this version")
            args = tuple(Var(a["size"]) if "size" in a else ArraySpec.from_json(a)
                         for a in data["args"])
            return Signature(data["name"], args, tuple(data["params"]),
                             tuple(ArraySpec.from_json(t) for t in data["temps"]),
                             tuple((n, int(v)) for n, v in data.get("minimums", ())),
                             str(data.get("valid_range", "")))
        except (KeyError, TypeError, AttributeError) as err:
            raise InvalidArgumentError(
                f"not a polyopt kernel signature ({type(err).__name__}: {err}); the file "
                "beside the library was not written by export_library") from err

    def __eq__(self, other) -> bool:
        return isinstance(other, Signature) and self.to_json() == other.to_json()

    __hash__ = None  # mutable-looking equality: compare, do not hash

    def prototype(self) -> str:
        """The native function as a C declaration, shapes in comments."""
        parts = []
        for array in self.arrays:
            const = "" if array.written else "const "
            dims = "".join(f"[{e}]" for e in array.shape)
            parts.append(f"{const}{C_TYPES.get(array.dtype, 'void')} *{array.name} /* {dims} */")
        parts += [f"int64_t {p}" for p in self.params]
        return f"int32_t {self.name}({', '.join(parts) or 'void'})"


def signature_of(func) -> Signature:
    """The signature of a lowered function (``po.lower``'s result)."""
    args = tuple(a if isinstance(a, Var) else _spec(a) for a in func.args)
    params = func.program.params
    return Signature(func.name, args, tuple(p.name for p in params),
                     tuple(_spec(t) for t in func.temps),
                     tuple((p.name, p.least) for p in params if getattr(p, "least", 0)),
                     valid_range_text(func.program))


def valid_range_text(program) -> str:
    """The isl text of the sizes ``program`` is valid for (its context: where every access
    stays inside its arrays), or "" when that is only ``size >= minimum``."""
    import islpy as isl

    context = program.context
    implied = isl.Set.universe(context.get_space())
    for param in program.params:
        position = context.find_dim_by_name(isl.dim_type.param, param.name)
        if position >= 0:
            implied = implied.lower_bound_val(isl.dim_type.param, position,
                                              isl.Val(int(getattr(param, "least", 0))))
    return "" if implied.is_subset(context) else str(context)


def as_signature(func_or_signature) -> Signature:
    if isinstance(func_or_signature, Signature):
        return func_or_signature
    return signature_of(func_or_signature)


def _spec(array) -> ArraySpec:
    return ArraySpec(array.name, tuple(array.shape), array.dtype, array.written)


@functools.cache
def versions() -> dict[str, str]:
    """The versions a compiled kernel depends on."""
    from .. import __version__

    found = {"polyopt": __version__}  # (cached: callers must not change it)
    for package in ("islpy", "llvmlite"):
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = "absent"
    return found


@functools.cache
def versions_text() -> str:
    """The versions, and a digest of polyopt's own sources: what a cached kernel is valid
    for (during development the version stays the same while the code generator
    changes)."""
    return " ".join(f"{k}={v}" for k, v in versions().items()) + f" source={source_digest()}"


@functools.cache
def source_digest() -> str:
    """A SHA-256 of polyopt's Python sources."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as file:
                    digest.update(file.read())
    return digest.hexdigest()


_UNARY = ("neg", "maximum", "minimum")


def encode_extent(expr: Expr):
    """A JSON value for a size expression: a number, a var name, or ``[op, a, b]``."""
    if isinstance(expr, Const):
        return int(expr.value)
    if isinstance(expr, Var):
        return expr.name
    if isinstance(expr, Cast):
        return encode_extent(expr.value)
    if isinstance(expr, BinOp) and expr.op in ("+", "-", "*", "//", "%"):
        return [expr.op, encode_extent(expr.a), encode_extent(expr.b)]
    if isinstance(expr, Call) and expr.func in _UNARY:
        return [expr.func, *(encode_extent(a) for a in expr.args)]
    raise InvalidArgumentError(f"the size '{expr}' is not an integer expression of vars")


def decode_extent(value) -> Expr:
    """The expression :func:`encode_extent` encoded."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"a shape entry must be a number, name or list, got {value!r}")
    if isinstance(value, int):
        return Const(value, INDEX)
    if isinstance(value, str):
        return Var(value)
    if isinstance(value, list) and value and value[0] in ("+", "-", "*", "//", "%") \
            and len(value) == 3:
        return BinOp(value[0], decode_extent(value[1]), decode_extent(value[2]), INDEX, True)
    if isinstance(value, list) and value and value[0] in _UNARY:
        return Call(value[0], tuple(decode_extent(v) for v in value[1:]), INDEX, True)
    raise InvalidArgumentError(f"a shape entry must be a number, name or [op, a, b], got {value!r}")
