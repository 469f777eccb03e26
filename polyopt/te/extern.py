"""Calls out of the tensor-expression language: ``call_pure_extern`` (a C math function
by name) and packed functions (``register_func``, ``call_packed``) for ``po.extern``.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> str(po.compute((4,), lambda i: call_pure_extern("float32", "expf", A[i])).op.body)
'exp(A[i])'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .. import dtypes
from ..errors import InvalidArgumentError, PolyoptError, call_user, public
from .expr import Call, Cast, Expr, as_expr
from .tensor import PlaceholderOp

# C math library names (and CUDA's fast variants) -> polyopt's functions
_MATH = {"exp": "exp", "log": "log", "sqrt": "sqrt", "tanh": "tanh", "fabs": "abs",
         "abs": "abs", "fmax": "maximum", "fmin": "minimum"}


@public
def call_pure_extern(dtype: str, func_name: str, *args) -> Expr:
    """``tvm.tir.call_pure_extern("float32", "expf", x)``: a C math function by name
    (``exp``, ``expf``, ``__expf``, ``log``, ``sqrt``, ``tanh``, ``fabs``, ``fmax``,
    ``fmin`` and their float variants), computed by polyopt's own intrinsic."""
    base = func_name.lstrip("_")
    base = base[:-1] if base.endswith("f") and base[:-1] in _MATH else base
    if base.startswith("tir."):
        base = base[4:]
    if base not in _MATH:
        raise PolyoptError(
            f"call_pure_extern: polyopt cannot call the external function '{func_name}' "
            f"yet; the functions it knows are {', '.join(sorted(_MATH))} (and their 'f' and "
            "'__' variants); write other functions as expressions (e.g. 1 / (1 + exp(-x)))")
    value = Call.make(_MATH[base], *(as_expr(a) for a in args))
    dtype = dtypes.normalize(dtype)
    return value if value.dtype == dtype else Cast(value, dtype)


_PACKED: dict[str, Callable] = {}


@public
def register_func(name, func: Callable | None = None, override: bool = False):
    """``@tvm.register_func("tvm.contrib.my_func")``: a Python function that
    ``call_packed`` in a ``po.extern`` calls with NumPy arrays."""
    if callable(name) and func is None:  # @register_func without a name
        return register_func(name.__name__, name, override)
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"register_func needs a name, got {name!r}")

    def register(function: Callable) -> Callable:
        if name in _PACKED and not override:
            raise InvalidArgumentError(f"a function named '{name}' is already registered; "
                                       "pass override=True to replace it")
        _PACKED[name] = function
        return function

    return register if func is None else register(func)


@public
def get_global_func(name: str, allow_missing: bool = False):
    if name not in _PACKED:
        if allow_missing:
            return None
        raise InvalidArgumentError(f"no function registered as '{name}' (tvm.register_func)")
    return _PACKED[name]


class PackedCall:
    """``call_packed(name, *args)`` as an extern's body: run at call time with the
    extern's inputs and outputs (NumPy arrays) in place of the buffers."""

    __slots__ = ("name", "args")

    def __init__(self, name: str, args: tuple):
        self.name, self.args = name, args

    def __repr__(self) -> str:
        return f"call_packed({self.name!r}, ...)"


def call_packed(name: str, *args) -> PackedCall:
    return PackedCall(name, args)


class TensorBuffer:
    """What TVM calls a ``Buffer`` (``te.schedule.Buffer``): the memory of a tensor as a
    function outside the language sees it.  ``po.extern`` gives its ``fcompute``
    :class:`ExternBuffer` values; an intrinsic's ``fimpl`` gets
    :class:`polyopt.tensorize.intrin.Buffer` descriptors."""

    __slots__ = ()


class ExternBuffer(TensorBuffer):
    """An operand of ``po.extern`` (TVM's ``ins[0]``, ``outs[0]``): ``shape``, ``dtype``,
    ``name``; the buffer, or its ``data``, as an argument of ``call_packed`` is the NumPy
    array of the tensor when the call runs.

    >>> import polyopt as po
    >>> A = po.placeholder((4,), name="A")
    >>> buf = ExternBuffer(A)
    >>> buf.shape == A.shape, buf.data is buf, buf.name
    (True, True, 'A')
    """

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor

    shape = property(lambda self: self.tensor.shape)
    dtype = property(lambda self: self.tensor.dtype)
    name = property(lambda self: self.tensor.name)
    ndim = property(lambda self: len(self.tensor.shape))
    data = property(lambda self: self)  # TVM's pointer: the same array here

    def __repr__(self) -> str:
        return f"ExternBuffer({self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class ExternOp(PlaceholderOp):
    """A tensor computed outside polyopt, by ``call`` (a :class:`PackedCall` or a Python
    function) from ``inputs``: the compiled program reads it like an input, and the
    built function runs the call first (see ``po.extern``)."""

    inputs: tuple = ()
    call: object = None
    group: list | None = None   # every output of the call, in order


@public
def extern(shape, inputs, fcompute, name: str = "extern", dtype=None, tag: str = "",
           **_ignored):
    """``C = po.extern((n, m), [A, B], lambda ins, outs: po.tvm.tir.call_packed(
    "my.func", ins[0], ins[1], outs[0]), name="C")``: ``C`` is computed by a registered
    Python function (``register_func``) called with NumPy arrays (TVM NDArrays); the
    function polyopt builds calls it before its own loops.  ``fcompute`` may also return
    a Python function, called with ``(*inputs, *outputs)``.  A list of shapes gives
    several outputs (a list of tensors).  The inputs must be arguments of the built
    function (placeholders) or other externs' outputs."""
    from .tensor import Tensor, _check_name, _shape

    _check_name(name, "extern")
    several = isinstance(shape, list) and shape and isinstance(shape[0], (tuple, list))
    shapes = shape if several else [shape]
    dtypes_ = dtype if isinstance(dtype, (list, tuple)) else [dtype] * len(shapes)
    inputs = tuple(inputs)
    for tensor in inputs:
        if not isinstance(tensor, Tensor):
            raise InvalidArgumentError(f"extern '{name}': inputs must be tensors, got {tensor!r}")
    group: list = []
    outputs = []
    for k, (out_shape, out_dtype) in enumerate(zip(shapes, dtypes_)):
        out_name = name if len(shapes) == 1 else f"{name}.v{k}"
        out_dtype = dtypes.normalize(out_dtype or (inputs[0].dtype if inputs else "float32"))
        outputs.append(Tensor(PlaceholderOp(out_name, _shape(out_shape, f"extern '{name}'"),
                                            out_dtype)))
    call = call_user(fcompute, [ExternBuffer(t) for t in inputs],
                     [ExternBuffer(t) for t in outputs],
                     role=f"the fcompute of extern '{name}'",
                     hint="fcompute(ins, outs) returns tvm.tir.call_packed(name, *args) or a "
                          "Python function; fix the error in it")
    if not isinstance(call, PackedCall) and not callable(call):
        raise InvalidArgumentError(
            f"extern '{name}': the function must return tvm.tir.call_packed(name, *args) or "
            f"a Python function, got {call!r}")
    for tensor in outputs:  # the placeholders become the extern's outputs
        tensor.op = ExternOp(tensor.op.name, tensor.op.shape, tensor.op.dtype, inputs=inputs,
                             call=call, group=group)
        group.append(tensor)
    return outputs if several else outputs[0]
