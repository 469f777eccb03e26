"""The operators the graph layer knows: shape inference and lowering to tensor expressions.

Each operator is an :class:`OpDef`: its fusion kind (``injective``: each output element
from a few input elements, fused freely; ``reduction``; ``complex``: convolution and
matrix products, which take an elementwise epilogue; ``view``: a reshape, no code, the
output shares the input's memory), its attributes and their defaults, a shape function
and a lowering to polyopt tensor expressions.  Lowerings receive the tensors of their
inputs (``None`` for an absent optional input) and, for constant inputs, their values.

>>> OPS["Relu"].kind, OPS["Conv"].kind, OPS["Reshape"].kind
('injective', 'complex', 'view')
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes, te
from ..errors import InvalidArgumentError
from .graph_errors import UnsupportedAttributeValueError
from .registry import (VARIADIC, OPS, attr, axis_in_range, broadcast_read, constant_value,
                       register)
from ..te.expr import Call
from ..te.tensor import all_of, compute, exp, if_then_else, maximum, minimum, tanh

# -- elementwise ------------------------------------------------------------------------------

def _same(node, infos, constants):
    return [(infos[0].shape, infos[0].dtype)]


def _broadcast(node, infos, constants):
    shape = np.broadcast_shapes(*(i.shape for i in infos if i))
    dtypes = {i.dtype for i in infos if i}
    if len(dtypes) != 1:
        raise InvalidArgumentError(f"operands of different dtypes {sorted(dtypes)}")
    return [(tuple(shape), infos[0].dtype)]


def _unary(function):
    def lower(node, args, values, out, name):
        X = args[0]
        return compute(out.shape, lambda *i: function(node, X[i]), name=name)
    return _same, lower


def _binary(function):
    def lower(node, args, values, out, name):
        A, B = args
        return compute(out.shape, lambda *i: function(broadcast_read(A, i, out.shape),
                                                     broadcast_read(B, i, out.shape)),
                       name=name)
    return _broadcast, lower


def divide(a, b):
    """``a / b`` as ONNX's Div: true division of floats; of integers, the quotient
    truncated toward zero (as C and onnxruntime), wrapping ``MIN / -1`` to ``MIN``.
    ONNX leaves an integer division by zero undefined (onnxruntime's process dies of
    SIGFPE); here it gives 0, and nothing divides by 0 or -1 natively."""
    if not dtypes.is_int(a.dtype):
        return a / b
    safe = if_then_else(b == 0, 1, if_then_else(b == -1, 1, b)) if dtypes.is_signed(
        b.dtype) else if_then_else(b == 0, 1, b)
    floor = a // safe
    truncated = floor + if_then_else(all_of(a % safe != 0, floor < 0), 1, 0)
    if dtypes.is_signed(b.dtype):
        truncated = if_then_else(b == -1, -a, truncated)
    return if_then_else(b == 0, 0, truncated)


for _name, _fn in (("Add", lambda a, b: a + b), ("Sub", lambda a, b: a - b),
                   ("Mul", lambda a, b: a * b), ("Div", divide)):
    register(_name, "injective", min_inputs=2)(_binary(_fn))


# erf's Taylor series to x**13: for |x| < 0.5, within 1e-9 of erf(x), relative
_ERF_TAYLOR = tuple(2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                    for n in range(7))


def erf(x):
    """erf(x): a float64 ``x`` by the C library's ``erf`` (no approximation is within a
    float64's rounding); a float32 one, vectorizable, by the Taylor series below 0.5 (to a
    float32's rounding, relative: a tiny ``x`` keeps its digits) and by Abramowitz and
    Stegun 7.1.26 from ``exp`` above (to 1.5e-7; erf is at least 0.52 there).  The
    approximation alone gave erf(1e-30) = -1e-9 in float64."""
    if x.dtype == "float64":
        return Call.make("erf", x)
    ax = abs(x)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t
            + 0.254829592) * t
    y = 1.0 - poly * exp(-(ax * ax))
    square = x * x
    series = _ERF_TAYLOR[-1]
    for coefficient in reversed(_ERF_TAYLOR[:-1]):
        series = series * square + coefficient
    return if_then_else(ax < 0.5, x * series, if_then_else(x < 0, -y, y))


def sigmoid(x):
    return 1.0 / (1.0 + exp(-x))


def gelu(node, x):
    if attr(node, "approximate") == "tanh":
        return 0.5 * x * (1.0 + tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))
    return 0.5 * x * (1.0 + erf(x * (1.0 / math.sqrt(2.0))))


def zero(x):
    """0 in the dtype of ``x`` (a Python int keeps an integer's dtype)."""
    return 0 if dtypes.is_int(x.dtype) else 0.0


register("Relu", "injective")(_unary(lambda node, x: maximum(x, zero(x))))
register("Sigmoid", "injective")(_unary(lambda node, x: sigmoid(x)))
register("Tanh", "injective")(_unary(lambda node, x: tanh(x)))
register("Erf", "injective")(_unary(lambda node, x: erf(x)))
register("Gelu", "injective", {"approximate": "none"})(_unary(gelu))
register("Sqrt", "injective")(_unary(lambda node, x: te.tensor.sqrt(x)))
register("Exp", "injective")(_unary(lambda node, x: exp(x)))
register("Neg", "injective")(_unary(lambda node, x: -x))
register("Identity", "view")(_unary(lambda node, x: x))


def _dropout_infer(node, infos, constants):
    """Inference: the identity; training mode (random masks) is refused."""
    training = constant_value(node, constants, 2, "training_mode")
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise UnsupportedAttributeValueError(node.name, node.op_type, "training_mode", True,
                                             (False,))
    return _same(node, infos, constants)


register("Dropout", "view", {"seed": 0}, max_inputs=3)(
    (_dropout_infer, _unary(lambda node, x: x)[1]))


def _clip_lower(node, args, values, out, name):
    X = args[0]
    number = int if dtypes.is_int(X.dtype) else float
    low, high = (None if v is None else number(v.reshape(-1)[0])
                 for v in (list(values) + [None, None])[1:3])

    def body(*i):
        value = X[i]
        if low is not None:
            value = maximum(value, low)
        if high is not None:
            value = minimum(value, high)
        return value
    return compute(out.shape, body, name=name)


def _clip_infer(node, infos, constants):
    for index, what in ((1, "min"), (2, "max")):
        constant_value(node, constants, index, what)
    return _same(node, infos, constants)


register("Clip", "injective", max_inputs=3)((_clip_infer, _clip_lower))


def _batch_norm_infer(node, infos, constants):
    for index, what in ((1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")):
        constant_value(node, constants, index, what)
    return _same(node, infos, constants)


def _batch_norm_lower(node, args, values, out, name):
    X, scale, bias, mean, var = args
    eps = float(attr(node, "epsilon"))
    return compute(out.shape, lambda n, c, *hw: (X[(n, c, *hw)] - mean[c])
                   / te.tensor.sqrt(var[c] + eps) * scale[c] + bias[c], name=name)


register("BatchNormalization", "injective", {"epsilon": 1e-5, "momentum": 0.9,
                                             "training_mode": 0}, min_inputs=5)(
    (_batch_norm_infer, _batch_norm_lower))


# -- shapes and layout ------------------------------------------------------------------------

def _flat_index(axes, shape):
    """The row-major offset of ``axes`` in ``shape``."""
    offset = 0
    for axis, extent in zip(axes, shape):
        offset = offset * extent + axis
    return offset


def reshape_read(X, in_shape, axes, out_shape):
    """``X`` (of ``in_shape``) read at ``axes`` of the same data viewed as ``out_shape``."""
    flat = _flat_index(axes, out_shape)
    index, stride = [], 1
    for extent in reversed(in_shape):
        index.append((flat // stride) % extent if stride > 1 else flat % extent)
        stride *= extent
    return X[tuple(reversed(index))]


def _view_lower(node, args, values, out, name):
    X = args[0]
    in_shape = tuple(d.value for d in X.shape)
    return compute(out.shape, lambda *i: reshape_read(X, in_shape, i, out.shape), name=name)


def _reshape_infer(node, infos, constants):
    target = [int(d) for d in constant_value(node, constants, 1, "shape")]
    shape = infos[0].shape
    if not attr(node, "allowzero"):
        target = [shape[k] if d == 0 else d for k, d in enumerate(target)]
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise InvalidArgumentError(f"the target shape {target} has more than one -1 or a "
                                   "dimension below -1")
    if -1 in target:
        known = math.prod([d for d in target if d != -1])
        target[target.index(-1)] = math.prod(shape) // max(known, 1)
    if math.prod(target) != math.prod(shape):
        raise InvalidArgumentError(f"cannot reshape {shape} to {tuple(target)}")
    return [(tuple(target), infos[0].dtype)]


def _flatten_infer(node, infos, constants):
    shape = infos[0].shape
    axis = attr(node, "axis")  # in [-rank, rank]; a negative one counts from the end
    if not isinstance(axis, (int, np.integer)) or not -len(shape) <= axis <= len(shape):
        raise InvalidArgumentError(
            f"node '{node.name}' (Flatten): axis={axis!r} is out of range for rank "
            f"{len(shape)} (from {-len(shape)} to {len(shape)})")
    axis = axis + len(shape) if axis < 0 else axis
    return [((math.prod(shape[:axis]), math.prod(shape[axis:])), infos[0].dtype)]


def _axes(node, constants, rank):
    axes = constant_value(node, constants, 1, "axes") if len(node.inputs) > 1 else None
    if axes is None:
        axes = node.attrs.get("axes")
    if axes is None:
        return None
    found = sorted(axis_in_range(node, int(a), rank, "axes") for a in np.ravel(axes))
    if len(set(found)) != len(found):
        raise InvalidArgumentError(f"node '{node.name}' ({node.op_type}): axes "
                                   f"{[int(a) for a in np.ravel(axes)]} name an axis twice")
    return found


def _squeeze_infer(node, infos, constants):
    shape = infos[0].shape
    axes = _axes(node, constants, len(shape))
    if axes is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    if any(shape[a] != 1 for a in axes):
        raise InvalidArgumentError(f"squeezed axes {axes} of {shape} are not all of size 1")
    return [(tuple(d for k, d in enumerate(shape) if k not in axes), infos[0].dtype)]


def _unsqueeze_infer(node, infos, constants):
    shape = list(infos[0].shape)
    axes = _axes(node, constants, len(shape) + len(np.ravel(
        constant_value(node, constants, 1, "axes"))))
    for a in axes:
        shape.insert(a, 1)
    return [(tuple(shape), infos[0].dtype)]


register("Reshape", "view", {"allowzero": 0}, min_inputs=2)((_reshape_infer, _view_lower))
register("Flatten", "view", {"axis": 1})((_flatten_infer, _view_lower))
register("Squeeze", "view", max_inputs=2)((_squeeze_infer, _view_lower))
register("Unsqueeze", "view", min_inputs=2)((_unsqueeze_infer, _view_lower))


def _perm(node, rank):
    perm = node.attrs.get("perm")
    return list(range(rank))[::-1] if perm is None else [int(p) for p in perm]


def _transpose_infer(node, infos, constants):
    shape = infos[0].shape
    perm = _perm(node, len(shape))
    if sorted(perm) != list(range(len(shape))):
        raise InvalidArgumentError(f"perm {perm} is not a permutation of the {len(shape)} axes")
    return [(tuple(shape[p] for p in perm), infos[0].dtype)]


def _transpose_lower(node, args, values, out, name):
    X = args[0]
    perm = _perm(node, X.ndim)

    def body(*i):
        index = [None] * len(perm)
        for k, p in enumerate(perm):
            index[p] = i[k]
        return X[tuple(index)]
    return compute(out.shape, body, name=name)


register("Transpose", "injective", {"perm": None})((_transpose_infer, _transpose_lower))


def _concat_infer(node, infos, constants):
    rank = len(infos[0].shape)
    axis = axis_in_range(node, attr(node, "axis"), rank)
    if any(info is None or info.dtype != infos[0].dtype for info in infos):
        raise InvalidArgumentError(f"inputs of different dtypes "
                                   f"{[i.dtype if i else None for i in infos]}")
    shape = list(infos[0].shape)
    for info in infos[1:]:
        if len(info.shape) != rank or any(a != b for k, (a, b) in
                                          enumerate(zip(info.shape, shape)) if k != axis):
            raise InvalidArgumentError(f"shapes {[i.shape for i in infos]} differ off axis {axis}")
    shape[axis] = sum(i.shape[axis] for i in infos)
    return [(tuple(shape), infos[0].dtype)]


def _concat_lower(node, args, values, out, name):
    axis = attr(node, "axis") % len(out.shape)
    starts, start = [], 0
    for A in args:
        starts.append(start)
        start += A.shape[axis].value

    def body(*i):
        def read(k):
            index = list(i)
            index[axis] = i[axis] - starts[k]
            return args[k][tuple(index)]
        value = read(len(args) - 1)
        for k in range(len(args) - 2, -1, -1):
            value = if_then_else(i[axis] < starts[k + 1], read(k), value)
        return value
    return compute(out.shape, body, name=name)


register("Concat", "injective", {"axis": 0}, max_inputs=VARIADIC)((_concat_infer, _concat_lower))


def _slice_ranges(node, constants, shape):
    starts = constant_value(node, constants, 1, "starts")
    ends = constant_value(node, constants, 2, "ends")
    axes = constant_value(node, constants, 3, "axes")
    steps = constant_value(node, constants, 4, "steps")
    if any(v is not None and (v.ndim != 1 or len(v) != len(starts))
           for v in (ends, axes, steps)) or starts.ndim != 1:
        raise InvalidArgumentError("starts, ends, axes and steps must be 1-D, of one length")
    axes = list(range(len(starts))) if axes is None else \
        [axis_in_range(node, int(a), len(shape), "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise InvalidArgumentError(f"node '{node.name}' (Slice): axes {axes} repeat an axis")
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    ranges = [(0, d, 1) for d in shape]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if step == 0:
            raise InvalidArgumentError("a slice step of 0")
        begin, stop, _ = slice(int(start), int(end), step).indices(shape[axis])
        ranges[axis] = (begin, stop, step)
    return ranges


def _slice_infer(node, infos, constants):
    ranges = _slice_ranges(node, constants, infos[0].shape)
    return [(tuple(len(range(*r)) for r in ranges), infos[0].dtype)]


def _slice_lower(node, args, values, out, name):
    X = args[0]
    ranges = _slice_ranges(node, {n: v for n, v in zip(node.inputs, values) if v is not None},
                           tuple(d.value for d in X.shape))
    return compute(out.shape, lambda *i: X[tuple(b + s * a if s != 1 else b + a
                                                  for a, (b, _, s) in zip(i, ranges))],
                   name=name)


register("Slice", "injective", min_inputs=3, max_inputs=5)((_slice_infer, _slice_lower))


from . import operators_nn  # noqa: E402,F401  (registers the neural-network operators)
from . import operators_activation  # noqa: E402,F401  (LeakyRelu, PRelu, ..., Max, Sum)
from . import operators_reduce  # noqa: E402,F401  (Reduce*, LogSoftmax)
from . import operators_shape  # noqa: E402,F401  (Pad, Expand, Tile, Gather)
from . import operators_window  # noqa: E402,F401  (ConvTranspose, GlobalMaxPool, LRN)
from . import operators_math  # noqa: E402,F401  (Pow, Log, Round, trigonometry, HardSigmoid)
from . import operators_logic  # noqa: E402,F401  (Equal, Less, ..., Not, And, Where)
from . import operators_einsum  # noqa: E402,F401  (Einsum without diagonals)
from . import operators_nd  # noqa: E402,F401  (3-D Conv, MaxPool, AveragePool)
from . import operators_quant  # noqa: E402,F401  (QuantizeLinear, DequantizeLinear)
from . import operators_int8  # noqa: E402,F401  (Int8Conv, Int8MatMul: the VNNI kernels)
from . import layouts  # noqa: E402,F401  (ConvPacked: weights packed at compile time)
