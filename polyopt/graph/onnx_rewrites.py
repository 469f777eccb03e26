"""ONNX nodes the importer writes as other operators, with the same numbers:

* ``Split`` -> one ``Slice`` per output (the sizes from the ``split`` input or attribute,
  or ``num_outputs``);
* ``CastLike`` -> ``Cast`` to the second input's dtype;
* the ``Y_h`` output of a (forward) ``LSTM``, ``GRU`` or ``RNN`` -> a ``Slice`` of ``Y``'s
  last step; any other form (reverse, bidirectional, ``layout=1``, ``sequence_lens``,
  ``Y_c``) -> ``LSTMStates``/``GRUStates``/``RNNStates`` and slices of its stacked
  output (:mod:`.recurrent_states`);
* a 1-D ``Conv``, ``ConvTranspose``, ``MaxPool``, ``AveragePool`` or ``LpPool`` -> the
  2-D operator on the input viewed as ``[N, C, 1, L]`` (a view: no copy), then
  ``Squeeze`` of that axis;
* ``Softmax`` over an axis other than the last -> ``SoftmaxAxis``;
* ``LayerNormalization`` over the axes from ``axis`` on (not only the last) -> the
  input viewed as ``[rows, columns]`` (a Reshape: no copy), LayerNormalization of its
  last axis, and the result viewed back;
* a 3-D ``Conv``, ``MaxPool`` or ``AveragePool`` -> ``ConvNd``, ``MaxPoolNd``,
  ``AveragePoolNd`` (:mod:`.operators_nd`).

>>> from polyopt.graph.ir import GraphBuilder
>>> b = GraphBuilder("g"); x = b.input("x", (2, 6))
>>> rewrite(b, "Split", "s", ["x"], ["a", "b"], {"axis": 1})
True
>>> print(b.build(["a", "b"]))  # doctest: +ELLIPSIS
graph(x: float32[2, 6]) -> (a: float32[2, 3], b: float32[2, 3])
  constants: ...
  a = Slice(x, s__starts0, s__ends0, s__axes) -> float32[2, 3]
  b = Slice(x, s__starts1, s__ends1, s__axes) -> float32[2, 3]
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..errors import InvalidArgumentError
from .graph_errors import UnsupportedAttributeError, UnsupportedInputError
from .registry import axis_in_range

WINDOWED = ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool")
N_D = ("Conv", "MaxPool", "AveragePool")  # 3-D: the operators of operators_nd
_SPLIT_ATTRS = ("axis", "split", "num_outputs")
RECURRENT = ("LSTM", "GRU", "RNN")


def rewrite(b, op_type: str, name: str, inputs: list, outputs: list, attrs: dict) -> bool:
    """Adds the nodes that compute ``op_type`` to the builder ``b`` and says True, or
    says False for a node the importer adds as it is."""
    if op_type == "Split":
        _split(b, name, inputs, outputs, attrs)
        return True
    if op_type in RECURRENT and inputs and inputs[0] in b._tensors and _every_form(
            inputs, outputs, attrs):
        _states(b, op_type, name, inputs, outputs, attrs)
        return True
    if op_type in RECURRENT and len(outputs) == 2 and outputs[1] and inputs and \
            inputs[0] in b._tensors:
        _last_state(b, op_type, name, inputs, outputs, attrs)
        return True
    if op_type == "CastLike" and len(inputs) == 2 and inputs[1] in b._tensors:
        _cast_like(b, name, inputs, outputs, attrs)
        return True
    rank = len(b._tensors[inputs[0]].shape) if inputs and inputs[0] in b._tensors else 0
    if op_type in WINDOWED and rank == 3 and len(outputs) == 1:
        _one_d(b, op_type, name, inputs, outputs, attrs)
        return True
    if op_type == "Softmax" and rank and isinstance(attrs.get("axis"), int) and \
            -rank <= attrs["axis"] < rank and attrs["axis"] % rank != rank - 1:
        b.op("SoftmaxAxis", inputs, outputs, name=name, **attrs)
        return True
    if op_type == "LayerNormalization" and rank and isinstance(attrs.get("axis", -1), int) \
            and -rank <= attrs.get("axis", -1) < rank and \
            attrs.get("axis", -1) % rank != rank - 1 and len(outputs) == 1:
        _layer_norm_rows(b, name, inputs, outputs, attrs)
        return True
    if op_type in N_D and rank > 4 and len(outputs) == 1:
        b.op(f"{op_type}Nd", inputs, outputs, name=name, **attrs)
        return True
    return False


def split_sizes(name: str, size: int, count: int, given, num_outputs) -> list[int]:
    """The sizes of the parts of a Split of an axis of ``size`` into ``count`` outputs."""
    if given is not None:
        sizes = [int(s) for s in np.ravel(given)]
        if len(sizes) != count or sum(sizes) != size or min(sizes, default=0) < 0:
            raise InvalidArgumentError(
                f"node '{name}' (Split): split {sizes} must be {count} sizes >= 0 adding up "
                f"to the axis' size {size}")
        return sizes
    if num_outputs is not None and int(num_outputs) != count:
        raise InvalidArgumentError(f"node '{name}' (Split): num_outputs={num_outputs} but the "
                                   f"node has {count} outputs")
    chunk = -(-size // count)  # the last part is smaller when count does not divide size
    sizes = [min(chunk, max(size - k * chunk, 0)) for k in range(count)]
    if num_outputs is None and size % count:
        raise InvalidArgumentError(f"node '{name}' (Split): an axis of {size} does not split "
                                   f"into {count} equal parts; give split sizes")
    return sizes


def _split(b, name, inputs, outputs, attrs):
    for key in attrs:
        if key not in _SPLIT_ATTRS:
            raise UnsupportedAttributeError(name, "Split", key, tuple(_SPLIT_ATTRS))
    if not inputs or inputs[0] not in b._tensors:
        raise InvalidArgumentError(f"node '{name}' (Split) needs its input tensor")
    shape = b._tensors[inputs[0]].shape
    axis = _axis(name, attrs.get("axis", 0), len(shape))
    given = attrs.get("split")
    if len(inputs) > 1 and inputs[1]:
        if inputs[1] not in b._constants:
            raise UnsupportedInputError(name, "Split", "constant", "split", inputs[1])
        given = b._constants[inputs[1]]
    sizes = split_sizes(name, shape[axis], len(outputs), given, attrs.get("num_outputs"))
    axes = b.constant(f"{name}__axes", np.array([axis], np.int64))
    start = 0
    for k, (out, size) in enumerate(zip(outputs, sizes)):
        if out:
            starts = b.constant(f"{name}__starts{k}", np.array([start], np.int64))
            ends = b.constant(f"{name}__ends{k}", np.array([start + size], np.int64))
            b.op("Slice", [inputs[0], starts, ends, axes], [out], name=f"{name}_{k}")
        start += size


def _last_state(b, op_type, name, inputs, outputs, attrs):
    """``Y_h`` of a forward recurrence (no ``sequence_lens``): ``Y``'s last step."""
    y = b.op(op_type, inputs, [outputs[0] or f"{name}__Y"], name=name, **attrs)
    seq, _, batch, hidden = b._tensors[y].shape
    ends = [b.constant(f"{name}__{k}", np.array([v], np.int64))
            for k, v in (("start", seq - 1), ("end", seq), ("axis", 0))]
    last = b.op("Slice", [y, *ends], [f"{name}__last"], name=f"{name}__last")
    shape = b.constant(f"{name}__h_shape", np.array([1, batch, hidden], np.int64))
    b.op("Reshape", [last, shape], [outputs[1]], name=f"{name}__Y_h")


def _every_form(inputs, outputs, attrs) -> bool:
    """Whether a recurrent node needs its ``...States`` operator (a form the
    one-direction operator does not compute: a reverse direction, ``layout=1``,
    ``sequence_lens``, or the output ``Y_c``)."""
    return attrs.get("direction", "forward") != "forward" or attrs.get("layout", 0) != 0 \
        or (len(inputs) > 4 and bool(inputs[4])) or (len(outputs) > 2 and bool(outputs[2]))


def _states(b, op_type, name, inputs, outputs, attrs):
    """A recurrent node of any form: its ``...States`` operator (:mod:`.recurrent_states`),
    then ``Y``, ``Y_h`` and ``Y_c`` sliced from the stacked states (and transposed to
    ``layout=1``)."""
    stacked = b.op(f"{op_type}States", inputs, [f"{name}__states"], name=name, **attrs)
    rows, dirs, batch, hidden = b._tensors[stacked].shape
    seq = rows - (2 if op_type == "LSTM" else 1)
    batchwise = attrs.get("layout", 0) == 1
    axis = b.constant(f"{name}__axis", np.array([0], np.int64))
    for k, out in enumerate(outputs[:3]):
        if not out:
            continue
        start, end = (0, seq) if k == 0 else (seq + k - 1, seq + k)
        bounds = [b.constant(f"{name}__{w}{k}", np.array([v], np.int64))
                  for w, v in (("start", start), ("end", end))]
        if k == 0:
            part = b.op("Slice", [stacked, *bounds, axis],
                        [f"{name}__Y" if batchwise else out], name=f"{name}__Y")
            if batchwise:
                b.op("Transpose", [part], [out], name=f"{name}__Y_batchwise",
                     perm=[2, 0, 1, 3])
            continue
        part = b.op("Slice", [stacked, *bounds, axis], [f"{name}__part{k}"],
                    name=f"{name}__part{k}")
        shape = b.constant(f"{name}__shape{k}", np.array([dirs, batch, hidden], np.int64))
        state = b.op("Reshape", [part, shape], [f"{name}__state{k}" if batchwise else out],
                     name=f"{name}__state{k}")
        if batchwise:
            b.op("Transpose", [state], [out], name=f"{name}__state{k}_batchwise",
                 perm=[1, 0, 2])


def _axis(name, axis, rank) -> int:
    return axis_in_range(SimpleNamespace(name=name, op_type="Split"), axis, rank)


def _cast_like(b, name, inputs, outputs, attrs):
    from onnx import helper

    to = helper.np_dtype_to_tensor_dtype(np.dtype(b._tensors[inputs[1]].dtype))
    b.op("Cast", [inputs[0]], outputs, name=name, to=int(to), **attrs)


def _one_d(b, op_type, name, inputs, outputs, attrs):
    """A 1-D window operator as the 2-D one on ``[N, C, 1, L]``."""
    wide = dict(attrs)
    for key, pad in (("kernel_shape", 1), ("strides", 1), ("dilations", 1),
                     ("output_padding", 0), ("output_shape", 1)):
        if key in wide and wide[key] is not None:
            wide[key] = [pad] + [int(v) for v in wide[key]]
    if wide.get("pads") is not None:
        pads = [int(v) for v in wide["pads"]]
        if len(pads) != 2:
            raise InvalidArgumentError(f"node '{name}' ({op_type}): pads of a 1-D window must "
                                       f"be two values, got {pads}")
        wide["pads"] = [0, pads[0], 0, pads[1]]
    axes = b.constant(f"{name}__axis2", np.array([2], np.int64))
    args = [_unsqueezed(b, f"{name}__x2d", inputs[0], axes)]
    if op_type in ("Conv", "ConvTranspose") and len(inputs) > 1:
        args.append(_unsqueezed(b, f"{name}__w2d", inputs[1], axes))
        args.extend(inputs[2:])
    wide_out = b.op(op_type, args, [f"{name}__2d"], name=name, **wide)
    b.op("Squeeze", [wide_out, axes], outputs, name=f"{name}__1d")


def _unsqueezed(b, new: str, tensor: str, axes: str) -> str:
    if tensor in b._constants:
        return b.constant(new, np.expand_dims(b._constants[tensor], 2))
    return b.op("Unsqueeze", [tensor, axes], [new], name=new)


def _layer_norm_rows(b, name, inputs, outputs, attrs):
    shape = b._tensors[inputs[0]].shape
    axis = attrs["axis"] % len(shape)
    columns = int(np.prod(shape[axis:]))
    flat = b.constant(f"{name}__rows", np.array([-1, columns], np.int64))
    args = [b.op("Reshape", [inputs[0], flat], [f"{name}__x2d"], name=f"{name}__x2d")]
    for k, tensor in enumerate(inputs[1:3], start=1):
        if not tensor:
            continue
        if tensor not in b._constants:
            raise UnsupportedInputError(name, "LayerNormalization", "constant",
                                        "scale" if k == 1 else "B", tensor)
        try:
            value = np.broadcast_to(b._constants[tensor], shape[axis:])
        except ValueError as err:
            raise InvalidArgumentError(
                f"node '{name}' (LayerNormalization): {b._constants[tensor].shape} does not "
                f"broadcast to the normalized axes {shape[axis:]}") from err
        args.append(b.constant(f"{name}__in{k}", np.ascontiguousarray(value).reshape(-1)))
    rows = b.op("LayerNormalization", args, [f"{name}__2d"], name=name,
                **{**attrs, "axis": -1})
    back = b.constant(f"{name}__shape", np.array(shape, np.int64))
    b.op("Reshape", [rows, back], outputs, name=f"{name}__back")
