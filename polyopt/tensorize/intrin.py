"""Declaring tensor intrinsics: what a hardware instruction or micro-kernel computes
(a compute) and how to emit it (an implementation built from buffer descriptors).

The spelling is TVM's, so that its tensorize tutorials read the same:

>>> import polyopt as po
>>> a = po.placeholder((4,), name="a", dtype="uint8")
>>> b = po.placeholder((16, 4), name="b", dtype="int8")
>>> k = po.reduce_axis((0, 4), name="k")
>>> c = po.compute((16,), lambda i: po.sum(a[k].astype("int32") * b[i, k].astype("int32"),
...                                        axis=k), name="c")
>>> def impl(ins, outs):
...     return po.tensorize.call_extern("int32", "dot_16x4", outs[0].access_ptr("w"),
...                                     *[x.access_ptr("r") for x in ins])
>>> intrin = po.decl_tensor_intrin(c.op, impl)
>>> [b.name for b in intrin.inputs], intrin.output.shape
(['a', 'b'], (16,))

``fimpl(ins, outs)`` returns the implementation of the whole computation (``body``), or
``(body, reset, update)``: ``reset`` sets the outputs to the reduction's identity and
``update`` accumulates into them (used when the reduction is split around the
tensorized loop).  Each part is a :class:`ExternCall`, an :class:`LLVMEmitter` (a
Python function writing LLVM IR, as the built-in intrinsics do), a list of them, or
None.
"""

from __future__ import annotations

import dataclasses
import hashlib
import weakref
from dataclasses import dataclass, field
from typing import Callable

from .. import dtypes
from ..domain.from_te import program_from_outputs
from ..domain.program import Program
from ..errors import (InvalidArgumentError, TensorizeError, call_user, public,
                      public_methods)
from ..te.expr import Const, Var
from ..te.extern import TensorBuffer
from ..te.tensor import ComputeOp, PlaceholderOp, Tensor


@public_methods
@dataclass(frozen=True, eq=False)
class Buffer(TensorBuffer):
    """A buffer descriptor: the region of an array an intrinsic reads or writes.

    ``strides`` (in elements) are None for a dense row-major buffer, else one entry per
    dimension, each an int or a ``po.var`` (bound to the array's actual stride when the
    intrinsic is matched).  The buffer's first element must sit at an element offset
    that is a multiple of ``offset_factor`` (alignment)."""

    shape: tuple[int, ...]
    dtype: str
    name: str
    strides: tuple | None = None
    offset_factor: int = 1
    scope: str = "global"

    @property
    def dense_strides(self) -> tuple[int, ...]:
        strides, running = [], 1
        for extent in reversed(self.shape):
            strides.append(running)
            running *= extent
        return tuple(reversed(strides))

    def access_ptr(self, mode: str = "r") -> "PointerArg":
        """The address of the buffer's first element, as an argument of an implementation."""
        if mode not in ("r", "w", "rw", "wr"):
            raise InvalidArgumentError(f"access_ptr mode must be 'r', 'w' or 'rw', got {mode!r}")
        return PointerArg(self, "rw" if mode == "wr" else mode)

    def stride(self, dim: int) -> "StrideArg":
        """The stride of dimension ``dim`` (elements), as an argument."""
        return StrideArg(self, dim)


@dataclass(frozen=True)
class PointerArg:
    buffer: Buffer
    mode: str


@dataclass(frozen=True)
class StrideArg:
    buffer: Buffer
    dim: int


@dataclass(frozen=True)
class ExternCall:
    """A call of an external function ``name(args...)``: pointers (``buf.access_ptr()``),
    strides (``buf.stride(d)``) and Python ints (passed as int64)."""

    ret_dtype: str
    name: str
    args: tuple


@dataclass(frozen=True)
class LLVMEmitter:
    """``emit(ctx)`` writes LLVM IR with ``ctx.builder``; ``ctx.pointer(buf)`` and
    ``ctx.stride(buf, d)`` give the bound buffers (see
    :mod:`polyopt.target.llvm.intrinsics`)."""

    emit: Callable | None
    name: str = "llvm"
    part: str = "body"     # what a named (built-in) emitter emits: body, reset or update
    params: tuple = ()     # its parameters, e.g. (("cols", 64), ("rows", 6))


@dataclass(frozen=True)
class Import:
    """Code an intrinsic's external calls need: LLVM IR (linked into the module, so LLVM
    may inline it) or C source (compiled with ``cc`` into a shared library at build time)."""

    language: str  # "llvm" | "c"
    code: str
    flags: tuple[str, ...] = ("-O3", "-march=native")

    @property
    def key(self) -> str:
        return hashlib.sha256((self.language + self.code + " ".join(self.flags)).encode()
                              ).hexdigest()[:16]


@public
def call_extern(ret_dtype: str, name: str, *args) -> ExternCall:
    """TVM's ``call_extern``: an implementation that calls ``name(*args)``."""
    for arg in args:
        if not isinstance(arg, (PointerArg, StrideArg, int, Var)) or isinstance(arg, bool):
            raise InvalidArgumentError(
                f"call_extern arguments are buffer pointers (buf.access_ptr('r')), strides "
                f"(buf.stride(0), or buf.strides[0] when declared as a po.var) or ints; "
                f"got {arg!r}")
    return ExternCall(ret_dtype, name, tuple(args))


def _strides_bound(item, buffers):
    """``item`` with each po.var argument (``buf.strides[0]``, as TVM code passes a
    declared stride) replaced by the stride of the buffer that declares it."""
    if not isinstance(item, ExternCall) or not any(isinstance(a, Var) for a in item.args):
        return item
    args = []
    for arg in item.args:
        if isinstance(arg, Var):
            found = [StrideArg(b, d) for b in buffers for d, v in enumerate(b.strides or ())
                     if v is arg]
            if not found:
                raise InvalidArgumentError(
                    f"call_extern '{item.name}' passes po.var '{arg.name}', which is no "
                    "buffer's declared stride; pass buf.stride(d) or an int")
            arg = found[0]
        args.append(arg)
    return dataclasses.replace(item, args=tuple(args))


@public
def import_llvm(code: str) -> Import:
    """LLVM IR defining the functions an intrinsic calls (TVM's ``pragma import_llvm``)."""
    if not isinstance(code, str) or "define" not in code:
        raise InvalidArgumentError("import_llvm takes LLVM IR text defining functions")
    return Import("llvm", code)


@public
def import_c(code: str, flags=("-O3", "-march=native")) -> Import:
    """C source defining the functions an intrinsic calls, compiled at build time."""
    if not isinstance(code, str):
        raise InvalidArgumentError("import_c takes C source text")
    return Import("c", code, tuple(flags))


@public
def decl_buffer(shape, dtype="float32", name: str = "buffer", *, strides=None,
                offset_factor: int = 1, scope: str = "global", data_alignment=None,
                elem_offset=None) -> Buffer:
    """``po.decl_buffer((16, 4), "int8", "b", offset_factor=64)``: a buffer descriptor
    for :func:`decl_tensor_intrin`'s ``binds``."""
    shape = tuple(_constant(e, "decl_buffer shape") for e in
                  (shape if isinstance(shape, (tuple, list)) else (shape,)))
    dtype = dtypes.normalize(dtype)
    if strides is not None:
        strides = tuple(strides)
        if len(strides) != len(shape):
            raise InvalidArgumentError(f"decl_buffer '{name}': {len(strides)} strides for "
                                       f"{len(shape)} dimensions")
        for stride in strides:
            if not isinstance(stride, (int, Var)) or isinstance(stride, bool):
                raise InvalidArgumentError(f"decl_buffer '{name}': a stride is an int or a "
                                           f"po.var, got {stride!r}")
    if isinstance(offset_factor, bool) or not isinstance(offset_factor, int) or offset_factor < 1:
        raise InvalidArgumentError(f"offset_factor must be a positive int, got {offset_factor!r}")
    if elem_offset is not None:
        raise InvalidArgumentError("elem_offset is derived from the access relations; "
                                   "declare the alignment with offset_factor instead")
    return Buffer(shape, dtype, name, strides, offset_factor, scope)


def _default_buffer_params(params) -> dict:
    """The keyword arguments of :func:`decl_buffer` that ``default_buffer_params`` gives
    (checked: a dict of its keywords)."""
    if params is None:
        return {}
    known = ("strides", "offset_factor", "scope", "data_alignment", "elem_offset")
    if not isinstance(params, dict) or any(k not in known for k in params):
        raise InvalidArgumentError(f"default_buffer_params takes a dict of decl_buffer's "
                                   f"keywords ({', '.join(known)}), got {params!r}")
    return dict(params)


@public_methods
@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A declared intrinsic: its compute (as a program), buffers and implementation."""

    name: str
    output: Buffer
    inputs: tuple[Buffer, ...]
    tensors: tuple[Tensor, ...]  # the compute's inputs, then its output
    program: Program
    body: tuple
    reset: tuple
    update: tuple
    imports: tuple[Import, ...] = field(default=())
    key: str = ""  # how a recorded step names it (see :func:`intrinsic_by_key`)

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return self.inputs + (self.output,)

    def buffer_of(self, tensor: Tensor) -> Buffer:
        for t, b in zip(self.tensors, self.buffers):
            if t is tensor:
                return b
        raise InvalidArgumentError(f"tensor '{tensor.name}' is not an operand of "
                                   f"intrinsic '{self.name}'")

    def __repr__(self) -> str:
        return f"<TensorIntrin {self.name}>"


@public
def decl_tensor_intrin(op, fimpl, binds=None, *, name: str | None = None,
                       imports=(), key: str | None = None,
                       default_buffer_params=None, scalar_params=None) -> TensorIntrin:
    """Declare an intrinsic: ``op`` is the compute (``c.op`` or ``c``) saying what it
    computes, ``fimpl(ins, outs)`` returns its implementation from the buffers (see the
    module), ``binds`` maps the compute's tensors to :func:`decl_buffer` descriptors
    (default: dense buffers of their shapes), ``imports`` holds :func:`import_llvm` /
    :func:`import_c` code the implementation calls.  ``key`` is how ``s.script()``
    records it and ``replay`` finds it (default: its name, numbered if another live
    intrinsic has it).  ``default_buffer_params`` (TVM's): :func:`decl_buffer`'s keyword
    arguments for the buffers ``binds`` leaves out, e.g. ``{"offset_factor": 16}``.
    ``scalar_params`` (TVM's values of an intrinsic called in a compute,
    ``intrin(i * i, A[i, j], i + j)``) is refused: polyopt tensorizes loops
    (``s[C].tensorize``), whose intrinsics take buffers."""
    if scalar_params:
        raise InvalidArgumentError(
            "decl_tensor_intrin(scalar_params=...) declares an intrinsic called with scalars "
            "inside a compute (TVM's TensorComputeOp: intrin(i * i, A[i, j], i + j)), which "
            "polyopt does not have: declare the intrinsic's compute with constants, "
            "tensorize a loop with s[C].tensorize(axis, intrin), and pass what the "
            "implementation needs as arguments of call_extern (buffers, strides, ints)")
    output = op if isinstance(op, Tensor) else None
    if output is None and isinstance(op, ComputeOp):
        output = Tensor(op)
    if output is None or not isinstance(output.op, ComputeOp):
        raise InvalidArgumentError(f"decl_tensor_intrin takes a compute (C.op), got {op!r}")
    inputs = output.op.inputs
    for tensor in inputs:
        if not isinstance(tensor.op, PlaceholderOp):
            raise InvalidArgumentError(
                f"intrinsic compute '{output.name}' reads '{tensor.name}', which is computed; "
                "an intrinsic's compute reads placeholders only")
    binds = {id(getattr(t, "op", t)): (t, b) for t, b in dict(binds or {}).items()}
    known = {id(t.op) for t in inputs + (output,)}
    for op_id, (tensor, _) in binds.items():
        if op_id not in known:
            raise InvalidArgumentError(f"binds: '{getattr(tensor, 'name', tensor)}' is not "
                                       f"read or computed by '{output.name}'")
    defaults = _default_buffer_params(default_buffer_params)
    buffers = []
    for tensor in inputs + (output,):
        shape = tuple(_constant(e, f"the shape of '{tensor.name}'") for e in tensor.shape)
        buffer = binds.get(id(tensor.op), (None, None))[1] or decl_buffer(
            shape, tensor.dtype, tensor.name, **defaults)
        if buffer.shape != shape or buffer.dtype != tensor.dtype:
            raise InvalidArgumentError(
                f"binds: buffer '{buffer.name}' is {buffer.dtype}{list(buffer.shape)} but "
                f"'{tensor.name}' is {tensor.dtype}{list(shape)}")
        buffers.append(buffer)
    program = program_from_outputs([output])
    if program.params:
        raise InvalidArgumentError(f"intrinsic compute '{output.name}' has symbolic sizes "
                                   f"({', '.join(program.param_names)}); use constants")
    parts = call_user(fimpl, tuple(buffers[:-1]), (buffers[-1],),
                      role=f"the fimpl of intrinsic '{name or output.name}'",
                      hint="fimpl(ins, outs) returns the body, or (body, reset, update), "
                           "from the buffers; fix the error in it")
    if isinstance(parts, tuple) and len(parts) == 3 and not isinstance(parts, ExternCall):
        body, reset, update = parts
    else:
        body, reset, update = parts, None, None
    body, reset, update = (tuple(_strides_bound(item, buffers) for item in _part(p, what))
                           for p, what in ((body, "body"), (reset, "reset"),
                                           (update, "update")))
    if not body and not (reset and update):
        raise InvalidArgumentError("fimpl returned no body (and no reset and update)")
    for item in imports:
        if not isinstance(item, Import):
            raise InvalidArgumentError("imports takes po.tensorize.import_llvm(...) or "
                                       "import_c(...) values")
    if key is not None and (not isinstance(key, str) or not key):
        raise InvalidArgumentError(f"key must be a non-empty string, got {key!r}")
    name = name or output.name
    intrin = TensorIntrin(name, buffers[-1], tuple(buffers[:-1]), inputs + (output,),
                          program, body, reset, update, tuple(imports),
                          key or _unique_key(name))
    _DECLARED[intrin.key] = intrin
    return intrin


# the live declared intrinsics by key (a recorded tensorize step names its intrinsic so)
_DECLARED: "weakref.WeakValueDictionary[str, TensorIntrin]" = weakref.WeakValueDictionary()


def _unique_key(name: str) -> str:
    if name not in _DECLARED:
        return name
    number = 2
    while f"{name}#{number}" in _DECLARED:
        number += 1
    return f"{name}#{number}"


def declared(key: str) -> "TensorIntrin | None":
    """The declared intrinsic of key ``key`` that is still alive, or None."""
    return _DECLARED.get(key)


def _part(value, what: str) -> tuple:
    if value is None:
        return ()
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    for item in items:
        if not isinstance(item, (ExternCall, LLVMEmitter)):
            raise InvalidArgumentError(
                f"fimpl's {what} must be call_extern(...) or an LLVMEmitter (or a list of "
                f"them), got {item!r}")
    return items


def _constant(extent, what: str) -> int:
    if isinstance(extent, Const) and isinstance(extent.value, int):
        return extent.value
    if isinstance(extent, int) and not isinstance(extent, bool):
        return extent
    raise InvalidArgumentError(f"{what} must be constant, got {extent}")


__all__ = ["Buffer", "TensorIntrin", "ExternCall", "LLVMEmitter", "Import", "call_extern",
           "decl_buffer", "decl_tensor_intrin", "import_c", "import_llvm", "declared",
           "TensorizeError"]
