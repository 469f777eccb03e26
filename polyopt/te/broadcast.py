"""Arithmetic on whole tensors (TVM's ``topi`` overloads of ``te.Tensor``): ``A + B``
broadcasts like NumPy and makes a compute tagged ``"broadcast"``; ``A * 2`` or ``A + n``
(a tensor and a scalar) one tagged ``"elemwise"``.

>>> import polyopt as te
>>> A = te.placeholder((3, 4), name="A"); b = te.placeholder((4,), name="b")
>>> C = A + b
>>> C.shape == A.shape, C.op.tag, str(C.op.body)
(True, 'broadcast', 'A[i0, i1] + b[i1]')
"""

from ..errors import InvalidArgumentError
from .expr import Const, Expr, as_expr

_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide"}


def tensor_op(op: str, lhs, rhs, Tensor, compute):  # noqa: N803 (te.tensor passes them)
    """``lhs op rhs`` where at least one side is a whole tensor (a ``Tensor``), made with
    ``compute`` (te.tensor calls this with its class and function)."""
    def read(value, axes):
        if not isinstance(value, Tensor):
            return as_expr(value)
        offset = len(axes) - value.ndim
        return value[tuple(Const(0, "int64", True) if _is_one(d) else axes[offset + k]
                           for k, d in enumerate(value.shape))]

    tensors = [v for v in (lhs, rhs) if isinstance(v, Tensor)]
    shape = _broadcast_shape(*(t.shape for t in tensors))
    tag = "broadcast" if len(tensors) == 2 or tensors[0].ndim == 0 else "elemwise"

    def body(*axes):
        a, b = read(lhs, axes), read(rhs, axes)
        return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[op]

    if not isinstance(lhs, Tensor) and not isinstance(rhs, Tensor):
        raise InvalidArgumentError("tensor_op needs a tensor operand")
    return compute(shape, body if shape else (lambda: body()), name=f"T_{_NAMES[op]}",
                   tag=tag)


def _is_one(extent) -> bool:
    return isinstance(extent, Const) and extent.value == 1


def _same(a: Expr, b: Expr) -> bool:
    return a is b or (isinstance(a, Const) and isinstance(b, Const) and a.value == b.value)


def _broadcast_shape(*shapes) -> tuple:
    rank = max(len(s) for s in shapes)
    out = []
    for k in range(rank):
        dims = [s[len(s) - rank + k] for s in shapes if len(s) - rank + k >= 0]
        dim = next((d for d in dims if not _is_one(d)), dims[0])
        if any(not _is_one(d) and not _same(d, dim) for d in dims):
            raise InvalidArgumentError(
                f"cannot broadcast shapes {[tuple(str(d) for d in s) for s in shapes]}: "
                f"dimension {k} differs ({', '.join(str(d) for d in dims)}); extents must be "
                "equal (the same po.var or integer) or 1")
        out.append(dim)
    return tuple(out)
