"""Sending a model's int8 convolutions to the simulated accelerator, the rest to the CPU.

``po.graph.compile(g, offload={"QLinearConv": "accel"})`` (``"conv_int8"`` is the same
key; the value is an accelerator target string: ``"accel"``, ``"vta"``,
``"accel -config=tpu-like"``) runs every ``QLinearConv`` that the device can compute
exactly on the device; the other operators (and a convolution it cannot take, with a
:class:`~polyopt.errors.PolyoptWarning` saying why) are compiled for the CPU as usual.
An offloaded convolution's elementwise epilogue stays a CPU kernel of its own.

How one convolution runs (:class:`AccelConv`): it is compiled from a schedule, the
blocked product of :func:`~polyopt.schedules.accel_gemm.gemm_schedule` (operands cached in
the ``inp``/``wgt`` buffers, the GEMM core tensorized, two virtual threads, built with
``po.build(target="accel")``: the dependence tokens are derived, not placed).  The host
packs the input (uint8 data shifted by 128 into int8, the border padded with the zero
point, the windows laid out as the rows of a matrix, channels padded to the GEMM core's
blocks); the device multiplies it by the weights (``w - w_zero_point``, int8, packed
once) and adds, in its accumulators, the bias and the constant correction for the zero
points.  Then either the device requantizes (its ALU: halves to even, when the scale
``x_scale * w_scale / y_scale`` is one power of two and every sum is below 2**24, so
that onnxruntime's float32 product is exact), or it returns the int32 sums as byte
planes (its STORE narrows to int8) and the host requantizes as onnxruntime does
(float32 scale, halves to even); the result equals onnxruntime's bit for bit.
``device_reports(m)`` gives each offloaded convolution's counters and cycles from
the last run.

>>> sorted(parse_offload({"conv_int8": "accel"}))  # the keys compile(offload=) takes
['QLinearConv']
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import InvalidArgumentError, PolyoptError, PolyoptWarning
from ..build import build
from ..schedules.accel_gemm import Requantize, acc_copies, choose_tiles, from_planes, gemm_schedule
from ..target.accel.sim import Report
from ..target.base import get_target
from .lowering import group_arguments
from .registry import attr
from .operators_nn import window
from .passes import Group

KEYS = {"QLinearConv": "QLinearConv", "conv_int8": "QLinearConv"}
_OFFSET = {"uint8": 128, "int8": 0}   # added to the data to make it int8


def parse_offload(offload) -> dict[str, object]:
    """``{operator type: accelerator target}`` from ``compile``'s ``offload`` argument."""
    if offload is None:
        return {}
    if not isinstance(offload, dict):
        raise InvalidArgumentError(f"offload is a dict {{'conv_int8': 'accel'}}, got "
                                   f"{type(offload).__name__}")
    out = {}
    for key, target in offload.items():
        if key not in KEYS:
            raise InvalidArgumentError(f"offload: cannot send {key!r} to a device; the keys "
                                       f"are {', '.join(KEYS)}")
        device = get_target(target)
        if getattr(device, "name", None) != "accel":
            raise InvalidArgumentError(f"offload: {key!r} goes to an accelerator target "
                                       f"('accel', 'vta', 'accel -config=tpu-like'), got "
                                       f"{target!r}")
        out[KEYS[key]] = device
    return out


def offload_groups(graph, groups: list[Group], offload) -> tuple[list[Group], dict]:
    """The groups with every offloaded node alone in its group (its fused epilogue
    becomes the next group), and ``{group name: AccelConv}``."""
    devices = parse_offload(offload)
    if not devices:
        return groups, {}
    out, runners = [], {}
    for grp in groups:
        head = grp.nodes[0] if grp.nodes else None
        device = devices.get(head.op_type) if head is not None else None
        reason = device and refusal(graph, head, device.config)
        runner = None
        if device and not reason:
            try:
                runner = AccelConv(graph, head, device)
            except PolyoptError as err:
                reason = str(err)
        if reason:
            warnings.warn(f"node '{head.name}' (QLinearConv) runs on the CPU: {reason}",
                          PolyoptWarning, stacklevel=3)
        if runner is None:
            out.append(grp)
            continue
        alone = Group(f"accel_{grp.name}", "accel", [head], head.outputs[0])
        runners[alone.name] = runner
        out.append(alone)
        if len(grp.nodes) > 1:
            out.append(Group(f"{grp.name}_epilogue", "injective", grp.nodes[1:], grp.output))
    return out, runners


def refusal(graph, node, config) -> str | None:
    """Why the device cannot compute ``node`` exactly, or None."""
    constants = graph.constants
    inputs = list(node.inputs) + [""] * (9 - len(node.inputs))
    if attr(node, "group") != 1:
        return "grouped convolutions are not offloaded"
    needed = [inputs[k] for k in (1, 2, 3, 4, 5, 6, 7) if inputs[k]]
    if inputs[8]:
        needed.append(inputs[8])
    missing = [name for name in needed if name not in constants]
    if missing:
        return f"its weights, scales and zero points must be constants ({missing[0]} is not)"
    w = constants[inputs[3]].astype(np.int32)
    point = constants.get(inputs[5], np.zeros(1, np.int32)).astype(np.int32).reshape(-1)
    shifted = w - point.reshape((-1, 1, 1, 1) if point.size > 1 else (1, 1, 1, 1))
    if shifted.min() < -128 or shifted.max() > 127:
        return ("the weights less their zero point do not fit in int8 (the GEMM core's "
                "weight type)")
    return None


class AccelConv:
    """One ``QLinearConv`` on the device; called like a CPU kernel (its data inputs in
    the group's argument order, then the output array).  ``requantized`` says whether
    the device requantizes (else ``why_host`` says why the host does); ``module`` is the
    compiled device program, ``report`` the last run's counters and cycles."""

    def __init__(self, graph, node, device):
        config = device.config
        self.node, self.config = node, config
        self.inputs, self.kernel_shapes = group_arguments(graph, [node], node.outputs[0])
        c, constants = config, graph.constants
        names = list(node.inputs) + [""] * (9 - len(node.inputs))
        x_info = graph.tensors[names[0]]
        self.batch, self.channels, height, width = x_info.shape
        weights = constants[names[3]]
        filters, _, kh, kw = weights.shape
        self.pads, self.strides, self.dilations, self.out_hw = window(
            node, [height, width], (kh, kw))
        self.kernel, self.filters = (kh, kw), filters
        self.offset = _OFFSET[x_info.dtype]
        x_point = int(constants[names[2]].reshape(-1)[0]) if names[2] else 0
        self.pad_value = np.int8(x_point - self.offset)
        w_point = constants[names[5]].astype(np.int32).reshape(-1) if names[5] else \
            np.zeros(1, np.int32)
        shifted = (weights.astype(np.int32) - (w_point.reshape(-1, 1, 1, 1)
                                               if w_point.size > 1 else w_point[0])
                   ).reshape(filters, -1)
        depth = shifted.shape[1]
        self.rows = self.batch * self.out_hw[0] * self.out_hw[1]
        m, k, n = (-(-self.rows // c.batch), -(-depth // c.block_in),
                   -(-filters // c.block_out))
        self.depth = k * c.block_in
        packed = np.zeros((n * c.block_out, self.depth), np.int8)
        packed[:filters, :depth] = shifted
        self.weights = np.ascontiguousarray(packed.reshape(
            n, c.block_out, k, c.block_in).transpose(0, 2, 1, 3))
        # sum over the window of (x - x_point) * w' + bias  ==  device sum of x' * w'
        #   + bias + (offset - x_point) * sum(w'): the input is padded with x_point - offset
        bias = constants[names[8]].astype(np.int64) if names[8] else \
            np.zeros(filters, np.int64)
        correction = bias + (self.offset - x_point) * shifted.sum(1)
        # |sum of (x - x_point) * w' + bias| for any input
        self.bound = int((255 * np.abs(shifted).sum(1) + np.abs(bias)).max())
        if self.bound >= 1 << 31 or np.abs(correction).max() >= 1 << 31:
            raise InvalidArgumentError(f"node '{node.name}': its sums may not fit in the "
                                       "device's int32 accumulators")
        column = np.zeros(n * c.block_out, np.int32)
        column[:filters] = correction
        self.bias = np.ascontiguousarray(np.broadcast_to(
            column.reshape(n, 1, c.block_out), (n, c.batch, c.block_out)))
        x_scale = np.float32(constants[names[1]].reshape(-1)[0])
        y_scale = np.float32(constants[names[6]].reshape(-1)[0])
        w_scale = constants[names[4]].astype(np.float32).reshape(-1)
        # onnxruntime's order: (x_scale * w_scale) / y_scale, in float32
        self.scale = ((x_scale * np.broadcast_to(w_scale, (filters,))).astype(np.float32)
                      / y_scale).astype(np.float32)
        self.y_point = int(constants[names[7]].reshape(-1)[0]) if names[7] else 0
        out_dtype = graph.tensors[node.outputs[0]].dtype
        self.low, self.high = (0, 255) if out_dtype == "uint8" else (-128, 127)
        requantize, self.why_host = self._device_requantization()
        self.requantized = requantize is not None
        planes = None if requantize else next(
            p for p in (1, 2, 3, 4) if self.bound < 1 << (8 * p - 1) or p == 4)
        self.tiles, threads = choose_tiles(c, m, n, k, acc_copies(planes, requantize),
                                           planes or 1)
        schedule, args = gemm_schedule(c, m, n, k, self.tiles, threads=threads,
                                       planes=planes, requantize=requantize)
        self.shapes = [tuple(int(e) for e in a.shape) for a in args]
        self.module = build(schedule, args, target=device.key, name=f"accel_{node.name}")
        self.report: Report | None = None

    def _device_requantization(self) -> tuple[Requantize | None, str | None]:
        """The ALU requantization when it equals onnxruntime's bit for bit, else None and
        why not."""
        mantissa, exponent = np.frexp(self.scale.astype(np.float64))
        shift = 1 - int(exponent[0])
        if not (mantissa == 0.5).all() or not (exponent == exponent[0]).all():
            return None, ("its scale (x_scale * w_scale / y_scale, float32) is not one "
                          "power of two: rounding the float32 product to even is not an "
                          "int32 shift (the host requantizes the device's int32 sums)")
        if not 0 <= shift <= 20:
            return None, (f"its scale 2**{-shift} is outside 2**-20 .. 1 (the host "
                          "requantizes)")
        if self.bound > 1 << 24:
            return None, ("its sums may exceed 2**24, where onnxruntime's float32 "
                          "rounds them (the host requantizes)")
        return Requantize(shift, self.y_point, self.low, self.high), None

    def windows(self, x: np.ndarray) -> np.ndarray:
        """The input as the device's input tiles: int8 rows, one per output pixel,
        ``(m, k, batch, block_in)``."""
        c = self.config
        top, left, bottom, right = self.pads
        data = (x.astype(np.int16) - self.offset).astype(np.int8)
        padded = np.pad(data, ((0, 0), (0, 0), (top, bottom), (left, right)),
                        constant_values=self.pad_value)
        (kh, kw), (sy, sx), (dy, dx), (oh, ow) = (self.kernel, self.strides,
                                                  self.dilations, self.out_hw)
        taps = [padded[:, :, ry * dy: ry * dy + sy * (oh - 1) + 1: sy,
                       rx * dx: rx * dx + sx * (ow - 1) + 1: sx]
                for ry in range(kh) for rx in range(kw)]
        cols = np.stack(taps, 2)                       # n, c, kh*kw, oh, ow
        cols = cols.transpose(0, 3, 4, 1, 2).reshape(self.rows, -1)
        m, k = self.shapes[0][:2]
        out = np.zeros((m * c.batch, self.depth), np.int8)
        out[:self.rows, :cols.shape[1]] = cols
        return np.ascontiguousarray(out.reshape(m, c.batch, k, c.block_in).transpose(
            0, 2, 1, 3))

    def device_output(self, x: np.ndarray) -> np.ndarray:
        """The device's result, (rows, filters): the requantized values, or the int32
        sums with the bias; and ``self.report``."""
        c = self.config
        y = np.zeros(self.shapes[3], np.int8)
        self.module(self.windows(x), self.weights, self.bias, y)
        self.report = self.module.report
        values = y if self.requantized else from_planes(y)
        m, n = values.shape[:2]
        matrix = values.transpose(0, 2, 1, 3).reshape(m * c.batch, n * c.block_out)
        return matrix[:self.rows, :self.filters]

    def __call__(self, *arrays):
        x, out = arrays[0], arrays[-1]
        result = self.device_output(x)
        if self.requantized:
            q = result.view(np.uint8) if self.low == 0 else result
        else:  # onnxruntime's requantization: float32 product, halves to even
            value = result.astype(np.float32) * self.scale[None, :]
            value = np.minimum(np.maximum(value, np.float32(-1e9)), np.float32(1e9))
            q = np.clip(np.rint(value).astype(np.int32) + self.y_point, self.low, self.high)
        oh, ow = self.out_hw
        out[...] = q.astype(out.dtype).reshape(self.batch, oh, ow, self.filters).transpose(
            0, 3, 1, 2).reshape(out.shape)


def device_reports(model) -> dict[str, Report]:
    """``{node name: Report}`` of the offloaded convolutions' last run."""
    return {step.kernel.node.name: step.kernel.report for step in model.steps
            if isinstance(step.kernel, AccelConv)}
