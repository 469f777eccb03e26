"""Tensors and the operations that define them: placeholders and computes.

>>> n = var("n")
>>> A = placeholder((n,), name="A")
>>> B = compute((n,), lambda i: A[i] * 2, name="B")
>>> B.shape, B.dtype, B.op.axis[0].name
((<Var n>,), 'float32', 'i')
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import weakref
from dataclasses import dataclass, field
from typing import Callable, Iterator

from .. import dtypes
from ..errors import InvalidArgumentError, call_user, public, public_methods
from ..names import sanitize
from .expr import (TensorLike, BinOp, Call, Cast, Compare, Const, Expr, IterVar, Logical, Reduce,
                   Select, TensorRead, Var, as_expr, concrete_dtype, is_one_of)
from .substitute import _rebuild_children, substitute, transform
from .tags import current_tag, op_attrs


class OpOutputs:
    """What an operation offers besides its fields: ``op.output(0)`` is the tensor it
    defines (TVM code passes ops where polyopt takes tensors: ``create_schedule(C.op)``)."""

    __slots__ = ()

    def output(self, index: int = 0) -> "Tensor":
        outputs = self.outputs
        if not 0 <= index < len(outputs):
            raise InvalidArgumentError(
                f"operation '{self.name}' has {len(outputs)} output(s); output({index}) "
                "does not exist")
        return outputs[index]

    @property
    def outputs(self) -> tuple["Tensor", ...]:
        """The tensors this operation defines (several for a multi-output compute)."""
        group = getattr(self, "group", None)  # a list, or a scan's ScanGroup
        group = getattr(group, "outputs", group)
        if group:
            return tuple(group)
        tensor = tensor_of(self)
        return () if tensor is None else (tensor,)

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    @property
    def input_tensors(self) -> tuple["Tensor", ...]:
        return tuple(getattr(self, "inputs", ()))


_OWNERS: "weakref.WeakValueDictionary[int, Tensor]" = weakref.WeakValueDictionary()


def tensor_of(op) -> "Tensor | None":
    """The tensor that operation ``op`` defines (None for an unknown object)."""
    tensor = _OWNERS.get(id(op))
    return tensor if tensor is not None and tensor.op is op else None


@dataclass(frozen=True, slots=True, eq=False)
class PlaceholderOp(OpOutputs):
    name: str
    shape: tuple[Expr, ...]
    dtype: str
    axis: tuple[IterVar, ...] = ()
    reduce_axis: tuple[IterVar, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class ComputeOp(OpOutputs):
    name: str
    shape: tuple[Expr, ...]
    dtype: str
    axis: tuple[IterVar, ...]
    reduce_axis: tuple[IterVar, ...]
    body: Expr
    group: list | None = None  # the tensors of a multi-output compute (see compute)
    tag: str = ""  # TVM's annotations: compute(tag=, attrs=), te.tag_scope
    attrs: dict = field(default_factory=dict)

    def __eq__(self, other) -> bool:
        """The same op, or the ops of the outputs of one multi-output compute (TVM's one
        op: ``T0.op == T1.op``; each carries its own output's body, ``op.outputs`` all)."""
        if self is other:
            return True
        if not isinstance(other, ComputeOp):
            return NotImplemented
        return self.group is not None and other.group is self.group

    def __hash__(self) -> int:
        return id(self.group) if self.group is not None else id(self)

    @property
    def inputs(self) -> tuple["Tensor", ...]:
        """Tensors the body reads, in order of first appearance."""
        seen: dict[int, Tensor] = {}
        for node in walk(self.body):
            if isinstance(node, TensorRead):
                seen.setdefault(id(node.tensor), node.tensor)
        return tuple(seen.values())


@public_methods
class Tensor(TensorLike):
    """A multi-dimensional array defined by an operation; index it to read it."""

    __slots__ = ("_op", "__weakref__")

    def __init__(self, op: PlaceholderOp | ComputeOp):
        self.op = op

    @property
    def op(self):
        return self._op

    @op.setter
    def op(self, op) -> None:
        self._op = op
        _OWNERS[id(op)] = self

    name = property(lambda self: self.op.name)
    shape = property(lambda self: self.op.shape)
    dtype = property(lambda self: self.op.dtype)
    ndim = property(lambda self: len(self.op.shape))

    # whole-tensor arithmetic (TVM's topi overloads): A + B broadcasts, A * 2 elementwise
    def __add__(self, other): return _tensor_op("+", self, other)
    def __radd__(self, other): return _tensor_op("+", other, self)
    def __sub__(self, other): return _tensor_op("-", self, other)
    def __rsub__(self, other): return _tensor_op("-", other, self)
    def __mul__(self, other): return _tensor_op("*", self, other)
    def __rmul__(self, other): return _tensor_op("*", other, self)
    def __truediv__(self, other): return _tensor_op("/", self, other)
    def __rtruediv__(self, other): return _tensor_op("/", other, self)

    def __call__(self, *indices) -> TensorRead:
        """TVM's call syntax: ``A(i, j)`` is ``A[i, j]``."""
        return self[indices]

    @property
    def value_index(self) -> int:
        """Which output of its operation this tensor is (0 but in a multi-output one)."""
        return next(k for k, t in enumerate(self.op.outputs) if t is self)

    def __getitem__(self, indices) -> TensorRead:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if 0 < len(indices) < self.ndim and not any(
                isinstance(x, slice) or x is Ellipsis for x in indices):
            return TensorSlice(self, indices)  # TVM's A[i][j]
        if len(indices) != self.ndim:
            raise InvalidArgumentError(
                f"tensor '{self.name}' has {self.ndim} dimension(s) but is indexed with "
                f"{len(indices)} index(es)"
            )
        checked = []
        for position, index in enumerate(indices):
            if isinstance(index, slice) or index is Ellipsis:
                raise InvalidArgumentError(
                    f"tensor '{self.name}' is indexed with a slice in dimension {position}; "
                    "index every dimension with an axis expression such as A[i, j + 1]"
                )
            index = as_expr(index)
            if not dtypes.is_int(index.dtype):
                raise InvalidArgumentError(
                    f"index {position} of tensor '{self.name}' is '{index}' of dtype "
                    f"{index.dtype}; indices must be integers"
                )
            checked.append(index)
        return TensorRead(self, tuple(checked))

    def __repr__(self) -> str:
        shape = ", ".join(str(d) for d in self.shape)
        return f"Tensor({self.name}, shape=({shape}), dtype={self.dtype})"


def _tensor_op(op, lhs, rhs):
    from .broadcast import tensor_op
    return tensor_op(op, lhs, rhs, Tensor, compute)


@public_methods
class TensorSlice:
    """``A[i]`` of a tensor with more dimensions: index it further, ``A[i][j]`` (TVM's
    ``TensorSlice``); ``A[i].asobject()`` is the slice itself."""

    __slots__ = ("tensor", "indices")

    def __init__(self, tensor: Tensor, indices: tuple):
        self.tensor, self.indices = tensor, tuple(indices)

    def __getitem__(self, indices):
        more = indices if isinstance(indices, tuple) else (indices,)
        return self.tensor[self.indices + more]

    def asobject(self) -> "TensorSlice":
        return self

    def not_an_expression(self) -> str:
        t = self.tensor
        return (f"tensor '{t.name}' has {t.ndim} dimension(s) but is indexed with "
                f"{len(self.indices)} index(es); index every dimension, e.g. "
                f"{t.name}[i, j] or {t.name}[i][j]")

    @property
    def dtype(self) -> str:
        return self.tensor.dtype


def walk(expr: Expr) -> Iterator[Expr]:
    """Every node of ``expr``, parents before children."""
    stack = [expr]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def children(node: Expr) -> tuple[Expr, ...]:
    if isinstance(node, (BinOp, Compare)):
        return (node.a, node.b)
    if isinstance(node, (Logical, Call)):
        return node.args
    if isinstance(node, Cast):
        return (node.value,)
    if isinstance(node, Select):
        return (node.cond, node.then, node.otherwise)
    if isinstance(node, TensorRead):
        return node.indices
    if isinstance(node, Reduce):  # (a reduction over a tuple reads all its sources)
        sources = getattr(node.combiner, "sources", None) or (node.source,)
        extra = tuple(e for e in (node.where, node.init) if e is not None)
        return sources + extra
    if isinstance(node, IterVar):
        return (node.lo, node.hi)
    return ()


@public
def var(name: str = "n", dtype: str | None = None, *, min: int = 0):  # noqa: A002
    """A symbolic non-negative integer size: ``n = po.var("n")``.

    ``min=1`` states that the size is at least 1: a program that reads ``X[0, i]`` or
    ``corr[n - 1]`` is then accepted, and the compiled function refuses a smaller size.

    ``dtype="float32"`` (any float dtype) makes a scalar input instead: a value passed
    to the compiled function like an array, e.g. ``alpha = po.var("alpha", "float32")``,
    ``po.build(s, [A, alpha, B])``, ``f(a, 0.5, b)``."""
    _check_name(name, "var")
    if sanitize(name) != name:  # it names a parameter of isl relations and of C code
        raise InvalidArgumentError(
            f"var name {name!r} is not an identifier, or is a keyword of isl's or C's "
            f"syntax (which the schedule's relations and the generated code use); use "
            f"another name, e.g. {sanitize(name)!r}")
    if dtype is not None and not dtypes.is_int(dtypes.normalize(dtype)):
        return Tensor(PlaceholderOp(name, (), dtypes.normalize(dtype)))[()]
    if isinstance(min, bool) or not isinstance(min, numbers.Integral) or min < 0:
        raise InvalidArgumentError(f"var '{name}': min= must be an integer >= 0, got {min!r}")
    return Var(name, least=int(min))


def _check_name(name, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"the name of a {what} must be a non-empty string, got {name!r}")


def _shape(shape, what: str) -> tuple[Expr, ...]:
    if isinstance(shape, (int, Expr)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise InvalidArgumentError(f"the shape of {what} must be a tuple, got {shape!r}")
    dims = []
    for position, extent in enumerate(shape):
        if isinstance(extent, numbers.Real) and not isinstance(extent, numbers.Integral) \
                and float(extent).is_integer():
            extent = int(extent)  # ``N / bn`` with integers: a float holding an integer
        extent = as_expr(extent)
        if not (dtypes.is_int(extent.dtype) and extent.weak):
            raise InvalidArgumentError(
                f"dimension {position} of {what} is '{extent}'; a shape entry must be an "
                "integer, a po.var or integer arithmetic on them"
            )
        if isinstance(extent, Const) and extent.value < 0:
            raise InvalidArgumentError(f"dimension {position} of {what} is negative ({extent})")
        dims.append(extent)
    return tuple(dims)


@public
def placeholder(shape, name: str = "placeholder", dtype="float32") -> Tensor:
    """An input tensor: ``A = po.placeholder((n, m), name="A", dtype="float32")``.
    (TVM's positional order ``placeholder(shape, "int32", "A")`` is recognized: a dtype
    name in second place is the dtype.)"""
    if name in dtypes.SUPPORTED and (dtype == "float32" or isinstance(dtype, str)
                                     and dtype not in dtypes.SUPPORTED):
        name, dtype = (dtype if dtype != "float32" else "placeholder"), name
    _check_name(name, "placeholder")
    return Tensor(PlaceholderOp(name, _shape(shape, f"placeholder '{name}'"),
                                dtypes.normalize(dtype)))


@public
def reduce_axis(dom, name: str = "rv") -> IterVar:
    """A reduction axis over ``lo <= k < hi``: ``k = po.reduce_axis((0, n), name="k")``."""
    _check_name(name, "reduce_axis")
    if not (isinstance(dom, (tuple, list)) and len(dom) == 2):
        raise InvalidArgumentError(f"reduce_axis '{name}' needs a (lo, hi) pair, got {dom!r}")
    lo, hi = _shape(tuple(dom), f"reduce_axis '{name}'")
    return IterVar(name, lo, hi, "reduce")


@public
def compute(shape, fcompute: Callable[..., Expr], name: str = "compute", tag: str = "",
            attrs=None) -> Tensor:
    """A tensor whose element at ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    A function returning a tuple defines several tensors over the same axes (TVM's
    multi-output compute): ``B0, B1 = po.compute(shape, lambda i: (A[i] + 1, A[i] * 2))``,
    named ``B.v0``, ``B.v1``; ``create_schedule`` of one schedules all of them.
    (``tag`` and ``attrs`` are TVM's annotations, kept for compatibility.)

    >>> A = placeholder((3, 4), name="A")
    >>> str(compute((4, 3), lambda i, j: A[j, i], name="T").op.body)
    'A[j, i]'
    """
    _check_name(name, "compute")
    shape = _shape(shape, f"compute '{name}'")
    axes = tuple(IterVar(arg, Const(0, "int64", True), extent)
                 for arg, extent in zip(_axis_names(fcompute, len(shape), name), shape))
    value = call_user(fcompute, *axes, role=f"the function of compute '{name}'",
                      hint="inside a compute, index only polyopt tensors and use polyopt "
                           "functions (po.exp, ...)")
    bodies = [as_expr(v) for v in value] if isinstance(value, (tuple, list)) else None
    body = as_expr(value) if bodies is None else None
    if bodies is None:
        _check_tuple_reduction([body], name)
        return _compute_tensor(name, shape, axes, body, annotations=(tag, attrs))
    if not bodies:
        raise InvalidArgumentError(f"the function of compute '{name}' returns an empty tuple")
    _check_tuple_reduction(bodies, name)
    group: list[Tensor] = []
    for k, part in enumerate(bodies):
        group.append(_compute_tensor(f"{name}.v{k}", shape, axes, part, group, (tag, attrs)))
    return group


def _check_tuple_reduction(bodies: list[Expr], name: str) -> None:
    """A reduction over a tuple is the whole tuple, in order (TVM's rule)."""
    combiners = [getattr(b, "combiner", None) if isinstance(b, Reduce) else None
                 for b in bodies]
    tuples = [c for c in combiners if hasattr(c, "sources")]
    if not tuples:
        return
    first = tuples[0]
    if len(tuples) != len(bodies) or any(
            c.reducer is not first.reducer or c.sources is not first.sources or c.index != k
            for k, c in enumerate(tuples)) or len(bodies) != len(first.sources):
        raise InvalidArgumentError(
            f"compute '{name}': a reduction over a tuple must be the whole result, all its "
            "values in order: T0, T1 = po.compute(shape, lambda i: argmax((a, b), axis=k))")


def _compute_tensor(name, shape, axes, body: Expr, group=None, annotations=("", None)) -> Tensor:
    if body.dtype == dtypes.BOOL:
        body = Select(body, Const(1, "int8"), Const(0, "int8"), "int8", False)
    body = lift_nested_reductions(body, name)
    reduce_axes = _check_reductions(body, axes, name)
    dtype = dtypes.normalize(concrete_dtype(body))
    tag, attrs = annotations
    return Tensor(ComputeOp(name, shape, dtype, axes, reduce_axes, body, group,
                            tag or current_tag(), op_attrs(attrs)))


def _axis_names(fcompute, count: int, name: str) -> list[str]:
    if not callable(fcompute):
        raise InvalidArgumentError(f"compute '{name}' needs a function, got {fcompute!r}")
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        params = []
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return [f"i{k}" for k in range(count)]
    if len(params) != count:
        raise InvalidArgumentError(
            f"compute '{name}' has {count} dimension(s) but its function takes "
            f"{len(params)} argument(s)"
        )
    return [p.name for p in params]


def _check_reductions(body: Expr, axes: tuple[IterVar, ...], name: str) -> tuple[IterVar, ...]:
    reduce_axes: tuple[IterVar, ...] = body.axes if isinstance(body, Reduce) else ()
    for node in walk(body):  # (reductions inside the body were lifted: lift_nested_reductions)
        if isinstance(node, IterVar):
            if node.kind == "reduce" and not is_one_of(node, reduce_axes):
                raise InvalidArgumentError(
                    f"compute '{name}' uses reduce_axis '{node.name}' outside a reduction "
                    "over it; pass it in axis= of po.sum/po.max/po.min"
                )
            if node.kind == "data_par" and not is_one_of(node, axes):
                raise InvalidArgumentError(
                    f"compute '{name}' uses axis '{node.name}' of another compute; use the "
                    "arguments of this compute's function"
                )
    return reduce_axes


def make_reduce(combiner, expr, axis, where=None) -> Reduce:
    """A :class:`Reduce` by ``combiner`` ("sum", "max", "min" or a ``comm_reducer``)."""
    label = f"po.{combiner}" if isinstance(combiner, str) else f"reducer '{combiner}'"
    source = as_expr(expr)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    if not axes:
        raise InvalidArgumentError(f"{label} needs at least one reduce axis")
    for ax in axes:
        if not (isinstance(ax, IterVar) and ax.kind == "reduce"):
            raise InvalidArgumentError(
                f"{label} axis {ax!r} is not a reduce axis; create it with "
                "po.reduce_axis((lo, hi), name=...)"
            )
    if len(set(map(id, axes))) != len(axes):
        raise InvalidArgumentError(f"{label} lists a reduce axis twice")
    cond = None if where is None else as_expr(where)
    if cond is not None and cond.dtype != dtypes.BOOL:
        raise InvalidArgumentError(
            f"where= of {label} must be a condition such as k <= i, got '{cond}'"
        )
    if source.dtype == dtypes.BOOL:
        raise InvalidArgumentError(f"{label} of a condition: use po.if_then_else")
    return Reduce(combiner, source, axes, cond, concrete_dtype(source))


_ELEMENTWISE = {"sum": lambda a, b: as_expr(a) + b, "max": lambda a, b: maximum(a, b),
                "min": lambda a, b: minimum(a, b)}


def with_init(reduce: Reduce, init) -> Reduce:
    """``reduce`` starting from ``init`` (TVM's ``te.sum(..., init=I[i, j])``): one stage
    whose init statement stores ``init``; it may not read the reduce axes."""
    value = as_expr(init)
    label = f"po.{reduce.combiner}" if isinstance(reduce.combiner, str) else \
        f"reducer '{reduce.combiner.name}'"
    if value.dtype == dtypes.BOOL:
        raise InvalidArgumentError(f"init= of {label} must be a value of dtype "
                                   f"{reduce.dtype}, got the condition '{value}'")
    if any(_reads(value, ax) for ax in reduce.axes):
        raise InvalidArgumentError(
            f"init= of {label} reads a reduce axis ('{value}'): the start value may "
            "depend on the compute's axes only")
    if value.dtype != reduce.dtype or value.weak:
        value = Cast(value, reduce.dtype)
    return dataclasses.replace(reduce, init=value)


def _reads(expr: Expr, var: IterVar) -> bool:
    return expr is var or any(_reads(child, var) for child in children(expr))


def _is_axes(axis) -> bool:
    return isinstance(axis, (tuple, list, IterVar))


def _reduction(combiner: str):
    def reduce(expr, axis, where=None, init=None) -> Expr:
        if not _is_axes(axis) and where is None and init is None:
            return _ELEMENTWISE[combiner](expr, axis)  # TVM's te.max(x, y) of two values
        value = make_reduce(combiner, expr, axis, where)
        return value if init is None else with_init(value, init)

    reduce.__name__ = reduce.__qualname__ = combiner
    reduce.__doc__ = (f"Reduction by {combiner} over reduce axes: "
                      f"``po.{combiner}(A[i, k], axis=k, where=k <= i)``; ``init=`` is "
                      f"the value the reduction starts from; of two values (no reduce "
                      f"axis), ``po.{combiner}(x, y)`` combines them elementwise (TVM).")
    return public(reduce)


reduce_sum = _reduction("sum")
reduce_max = _reduction("max")
reduce_min = _reduction("min")


@public
def if_then_else(cond, then, otherwise) -> Select:
    """``then`` where ``cond`` holds, else ``otherwise``; only the chosen side is read.

    >>> A = placeholder((4,), name="A")
    >>> str(compute((6,), lambda i: if_then_else((i >= 1) & (i < 5), A[i - 1], 0.0)).op.body)
    '(i >= 1 && i < 5 ? A[i - 1] : 0.0)'
    """
    cond, then, otherwise = as_expr(cond), as_expr(then), as_expr(otherwise)
    if cond.dtype != dtypes.BOOL:
        raise InvalidArgumentError(f"if_then_else needs a condition first, got '{cond}'")
    probe = BinOp.make("+", then, otherwise)
    return Select(cond, then, otherwise, probe.dtype, probe.weak)


@public
def all_of(*conds) -> Expr:
    """All conditions hold: ``po.all(i >= 1, i < n)``."""
    return Logical.make("and", *conds) if len(conds) != 1 else as_expr(conds[0])


@public
def any_of(*conds) -> Expr:
    """Some condition holds: ``po.any(i < 1, i >= n)``."""
    return Logical.make("or", *conds) if len(conds) != 1 else as_expr(conds[0])


def _math(func: str):
    def apply(*args):
        return Call.make(func, *args)

    apply.__name__ = apply.__qualname__ = func
    apply.__doc__ = f"Elementwise {func}: ``po.{func}(A[i])``."
    return public(apply)


exp, log, sqrt, tanh, abs_ = (_math(f) for f in ("exp", "log", "sqrt", "tanh", "abs"))


@public
def sigmoid(x) -> Expr:
    """Elementwise ``1 / (1 + exp(-x))``: ``po.sigmoid(A[i])``."""
    return 1.0 / (1.0 + exp(-as_expr(x)))
maximum, minimum = _math("maximum"), _math("minimum")


# -- reductions inside larger expressions become computes of their own -------------------
_ZERO = Const(0, "int64", True)


def lift_nested_reductions(body: Expr, name: str) -> Expr:
    """``body`` with every reduction that is not the whole body read from a new compute
    named ``<name>_<reducer>`` (innermost first).

    ``po.compute((n,), lambda i: po.sum(A[i, k], axis=k) / n)`` (or an attention score
    ``po.sum(Q[i, d] * K[j, d], axis=d) / 8.0``) is two computes: the reduction, over the
    axes it uses, and the expression reading it.  TVM refuses such bodies; polyopt splits
    them when the compute is made.

    >>> import polyopt as po
    >>> n = po.var("n"); A = po.placeholder((n, n), name="A")
    >>> k = po.reduce_axis((0, n), name="k")
    >>> M = po.compute((n,), lambda i: po.sum(A[i, k], axis=k) / n, name="mean")
    >>> str(M.op.body), [t.name for t in M.op.inputs]
    ('mean_sum[i] / n', ['mean_sum'])
    """
    if not any(isinstance(node, Reduce) and node is not body for node in walk(body)):
        return body

    def lift(node):
        return _lifted_read(node, name) if isinstance(node, Reduce) else None

    if isinstance(body, Reduce):  # the whole body stays; reductions inside it are lifted
        return _rebuild_children(body, lambda child: transform(child, lift))
    return transform(body, lift)


def _lifted_read(reduce: Reduce, name: str) -> TensorRead:
    free: list[IterVar] = []
    for node in walk(reduce):
        if isinstance(node, IterVar) and not any(node is a for a in reduce.axes) \
                and not any(node is f for f in free):
            free.append(node)
    if not free:  # a reduction of constants and sizes only: one element
        axis = IterVar("i0", _ZERO, Const(1, "int64", True))
        op = ComputeOp(f"{name}_{reduce.combiner}", (axis.hi,), reduce.dtype, (axis,),
                       reduce.axes, reduce)
        return TensorRead(Tensor(op), (_ZERO,))
    axes = tuple(IterVar(v.name, _ZERO, _extent(v)) for v in free)
    source = substitute(reduce, {v: (a if _starts_at_zero(v) else a + v.lo)
                                 for v, a in zip(free, axes)})
    op = ComputeOp(f"{name}_{reduce.combiner}", tuple(a.hi for a in axes), reduce.dtype,
                   axes, reduce.axes, source)
    return TensorRead(Tensor(op), tuple(v if _starts_at_zero(v) else v - v.lo for v in free))


def _starts_at_zero(axis: IterVar) -> bool:
    return isinstance(axis.lo, Const) and axis.lo.value == 0


def _extent(axis: IterVar) -> Expr:
    if _starts_at_zero(axis):
        return axis.hi
    if isinstance(axis.lo, Const) and isinstance(axis.hi, Const):
        return Const(axis.hi.value - axis.lo.value, "int64", True)
    return axis.hi - axis.lo
