"""int8 convolutions and matrix products on the VNNI kernels (``vpdpbusd``: uint8
activations x int8 weights -> int32), with the weights packed once at compile time.

Two internal operators, made by graph passes (never imported from ONNX):

* ``Int8Conv(x, Wp, correction, scale[, bias])``: ``x`` uint8 ``[1, C, H, W]``, ``Wp``
  the int8 weights packed by :func:`~polyopt.te.quantized.pack_conv_vnni_numpy`;
  ``y[0, f, :, :] = (sum x * w + correction[f]) * scale[f] (+ bias[f])`` in float32.
  The input zero point enters as ``correction[f] = B[f] - x_zero * sum(w[f])`` and as
  the padding value, so the products need no widening.
* ``Int8MatMul(a, Wp, correction[, scale[, bias]])``: ``a`` uint8 ``[M, K]``, ``Wp`` the
  blocked VNNI layout of :func:`~polyopt.te.quantized.pack_vnni_numpy`; int32
  ``sum a * w + correction[n]`` (attribute ``dtype="int32"``) or float32 as above.

:func:`vnni_rewrite` turns the ONNX ``QLinearConv`` and ``MatMulInteger`` nodes whose
weights are constant (and whose shapes the kernels take) into these operators (a
``QLinearConv`` becomes ``Int8Conv`` with ``scale = x_scale * w_scale / y_scale`` and a
``QuantizeLinear`` by 1 with the output zero point: the same arithmetic as before).  The
lowering schedules them with :func:`~polyopt.schedules.tensorized.int8_conv2d_template`
and :func:`~polyopt.schedules.tensorized.int8_matmul_template`, the epilogue (dequantize,
residual add, activation, quantize) computed on the int32 register tile.
"""

from __future__ import annotations

import numpy as np

from ..te.quantized import (VNNI_GROUP, conv2d_u8s8_nchw, matmul_u8s8, pack_conv_vnni_numpy,
                            pack_vnni_numpy)
from ..te.quantized_amx import conv2d_u8s8_wide
from ..te.tensor import compute
from .ir import OpNode
from .registry import attr, register
from .operators_nn import window

CONV_COLUMNS = 64  # output channels per register tile (and per packed weight block)
MATMUL_COLUMNS = (64, 32, 16)


def conv_is_vnni(node, x_shape, w_shape, x_dtype="uint8", w_dtype="int8") -> bool:
    """Whether the VNNI conv kernel takes this convolution: batch 1, one group, the
    output channels a multiple of 64 (input channels: any, the weights are padded to a
    multiple of 4 with zeros), equal strides, symmetric padding, no dilation, uint8 x
    int8."""
    if x_dtype != "uint8" or w_dtype != "int8" or len(x_shape) != 4 or len(w_shape) != 4:
        return False
    f, c, r, s = w_shape
    pads, strides, dilations, _ = window(node, list(x_shape[2:]), (r, s))
    return (x_shape[0] == 1 and attr(node, "group") == 1 and c == x_shape[1]
            and f % CONV_COLUMNS == 0 and len(set(pads)) == 1
            and strides[0] == strides[1] and list(dilations) == [1, 1])


def matmul_columns(k: int, n: int) -> int | None:
    """The register tile width for an int8 ``[M, K] x [K, N]`` product (None: the
    kernel does not take it)."""
    if k % VNNI_GROUP:
        return None
    return next((c for c in MATMUL_COLUMNS if n % c == 0), None)


def int8_conv_node(name, x, weight: np.ndarray, x_zero: int, scale, bias, out: str,
                   conv_node, constants: dict, correction=None) -> OpNode:
    """An ``Int8Conv`` node computing ``out`` (float32) from the uint8 tensor ``x``:
    the packed weights, the correction (``correction`` int32 or zeros, less ``x_zero``
    times each filter's sum), the per-channel ``scale`` and the float ``bias`` (or None)
    become constants in ``constants``."""
    f = weight.shape[0]
    sums = weight.reshape(f, -1).astype(np.int64).sum(axis=1)
    base = np.zeros(f, np.int64) if correction is None else correction.astype(np.int64)
    missing = -weight.shape[1] % VNNI_GROUP  # input channels up to a multiple of 4
    padded = np.pad(weight, ((0, 0), (0, missing), (0, 0), (0, 0))) if missing else weight
    constants[f"{name}_vnni_w"] = pack_conv_vnni_numpy(padded, columns=CONV_COLUMNS)
    constants[f"{name}_correction"] = (base - int(x_zero) * sums).astype(np.int32)
    constants[f"{name}_scale"] = np.broadcast_to(np.asarray(scale, np.float32), (f,)).copy()
    inputs = [x, f"{name}_vnni_w", f"{name}_correction", f"{name}_scale"]
    if bias is not None:
        constants[f"{name}_bias"] = np.asarray(bias, np.float32).reshape(f)
        inputs.append(f"{name}_bias")
    return OpNode(name, "Int8Conv", tuple(inputs), (out,), _conv_attrs(conv_node, x_zero))


def _conv_attrs(node, x_zero: int) -> dict:
    return {"pads": list(attr(node, "pads") or (0, 0, 0, 0)),
            "strides": list(attr(node, "strides") or (1, 1)),
            "auto_pad": attr(node, "auto_pad"), "pad_value": int(x_zero)}


def int8_matmul_node(name, a, weight: np.ndarray, a_zero: int, scale, bias, out: str,
                     constants: dict, dtype: str = "float32") -> OpNode:
    """An ``Int8MatMul`` node (see the module) computing ``out`` from uint8 ``a``."""
    k, n = weight.shape
    sums = weight.astype(np.int64).sum(axis=0)
    constants[f"{name}_vnni_w"] = pack_vnni_numpy(weight, columns=matmul_columns(k, n),
                                                  blocked=True)
    constants[f"{name}_correction"] = (-int(a_zero) * sums).astype(np.int32)
    inputs = [a, f"{name}_vnni_w", f"{name}_correction"]
    if dtype == "float32":
        constants[f"{name}_scale"] = np.broadcast_to(np.asarray(scale, np.float32),
                                                     (n,)).copy()
        inputs.append(f"{name}_scale")
        if bias is not None:
            constants[f"{name}_bias"] = np.asarray(bias, np.float32).reshape(n)
            inputs.append(f"{name}_bias")
    return OpNode(name, "Int8MatMul", tuple(inputs), (out,), {"dtype": dtype})


# -- the operators ----------------------------------------------------------------------------

# layout "wide": the input packed channels last, a wide accumulator (AMX tiles, see
# polyopt.te.quantized_amx; set by vnni_rewrite.amx_conv_layout)
_INT8_CONV_ATTRS = {"pads": None, "strides": None, "auto_pad": "NOTSET", "pad_value": 0,
                    "layout": "vnni",
                    "dilations": None, "group": 1, "ceil_mode": 0}


def _int8_conv_infer(node, infos, constants):
    x, wp = infos[0], infos[1]
    blocks, _, r, s, columns, _ = wp.shape
    _, _, _, size = window(node, list(x.shape[2:]), (r, s))
    return [((1, blocks * columns, *size), "float32")]


def _dequantized(acc, correction, scale, bias, channel_axis, name, dtype="float32"):
    def value(*i):
        total = acc[i] + correction[(i[channel_axis],)]
        if dtype == "int32":
            return total
        result = total.astype("float32") * scale[(i[channel_axis],)]
        return result + bias[(i[channel_axis],)] if bias is not None else result
    return compute(acc.shape, value, name=name)


def _int8_conv_lower(node, args, values, out, name):
    X, Wp, correction, scale, bias = (list(args) + [None])[:5]
    r, s = Wp.shape[2].value, Wp.shape[3].value
    pads, strides, _, _ = window(node, [X.shape[2].value, X.shape[3].value], (r, s))
    conv = conv2d_u8s8_wide if attr(node, "layout") == "wide" else conv2d_u8s8_nchw
    acc = conv(X, Wp, stride=strides[0], padding=pads[0], pad_value=attr(node, "pad_value"),
               name=f"{name}_acc")
    return _dequantized(acc, correction, scale, bias, 1, name)


def _int8_matmul_infer(node, infos, constants):
    a, wp = infos[0], infos[1]
    return [((a.shape[0], wp.shape[0] * wp.shape[2]), attr(node, "dtype"))]


def _int8_matmul_lower(node, args, values, out, name):
    A, Wp, correction, scale, bias = (list(args) + [None, None])[:5]
    acc = matmul_u8s8(A, Wp, name=f"{name}_acc")
    return _dequantized(acc, correction, scale, bias, 1, name, dtype=attr(node, "dtype"))


register("Int8Conv", "complex", _INT8_CONV_ATTRS, min_inputs=4, internal=True)((_int8_conv_infer,
                                                               _int8_conv_lower))
register("Int8MatMul", "complex", {"dtype": "float32"}, min_inputs=3,
         internal=True)((_int8_matmul_infer, _int8_matmul_lower))
INT8_KERNELS = ("Int8Conv", "Int8MatMul")
