"""Sending a model's int8 convolutions to the simulated accelerator, the rest to the CPU.

``po.graph.compile(g, offload={"QLinearConv": "accel"})`` (``"conv_int8"`` is the same
key; the value is an accelerator target string: ``"accel"``, ``"vta"``,
``"accel -config=tpu-like"``) runs every ``QLinearConv`` that the device can compute
exactly on the device; the other operators (and a convolution it cannot take, with a
:class:`~polyopt.errors.PolyoptWarning` saying why) are compiled for the CPU as usual.
An offloaded convolution's elementwise epilogue stays a CPU kernel of its own.

How one convolution runs (:class:`AccelConv`): the host packs the input (uint8 data
shifted by 128 into int8, the border padded with the zero point, the windows laid out as
the rows of a matrix, channels padded to the GEMM core's blocks); the device multiplies
it by the weights (``w - w_zero_point``, int8, packed once at compile time) with its
GEMM core and returns the int32 accumulators (as four byte planes: its STORE narrows to
int8); the host adds the constant correction for the zero points and the bias and
requantizes as ONNX does (float32 scale, halves to even), so the result equals
onnxruntime's bit for bit.  ``device_reports(m)`` gives each offloaded convolution's
counters and cycles from the last run.

>>> import polyopt as po                                    # doctest: +SKIP
>>> m = po.graph.compile(g, offload={"conv_int8": "accel"})  # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields

import numpy as np

from ..errors import InvalidArgumentError, PolyoptError, PolyoptWarning
from ..target.accel.gemm import gemm_dram, gemm_program, gemm_result, gemm_sizes
from ..target.accel.sim import Report, run
from ..target.base import get_target
from .lowering import group_arguments
from .operators import attr
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
                runner = AccelConv(graph, head, device.config)
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


@dataclass
class _Chunk:
    rows: int          # rows of the window matrix this program computes (<= the rest)
    program: list
    uops: list


class AccelConv:
    """One ``QLinearConv`` on the device; called like a CPU kernel (its data inputs in
    the group's argument order, then the output array).  ``report`` is the last run's
    counters and cycles, summed over the device programs of the call."""

    def __init__(self, graph, node, config):
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
        shifted = weights.astype(np.int32) - (w_point.reshape(-1, 1, 1, 1)
                                              if w_point.size > 1 else w_point[0])
        depth = self.channels * kh * kw
        self.depth = -(-depth // c.block_in) * c.block_in
        self.columns = -(-filters // c.block_out) * c.block_out
        packed = np.zeros((self.columns, self.depth), np.int8)
        packed[:filters, :depth] = shifted.reshape(filters, depth)
        self.weights = packed
        # sum over the window of (x + offset - x_point) * w'  ==  device sum of x' * w'
        #   + (offset - x_point) * sum(w'): the input is padded with x_point - offset
        bias = constants[names[8]].astype(np.int64) if names[8] else \
            np.zeros(filters, np.int64)
        self.correction = (bias + (self.offset - x_point)
                           * shifted.reshape(filters, -1).sum(1)).astype(np.int32)
        x_scale = np.float32(constants[names[1]].reshape(-1)[0])
        y_scale = np.float32(constants[names[6]].reshape(-1)[0])
        w_scale = constants[names[4]].astype(np.float32).reshape(-1)
        # onnxruntime's order: (x_scale * w_scale) / y_scale, in float32
        self.scale = ((x_scale * np.broadcast_to(w_scale, (filters,))).astype(np.float32)
                      / y_scale).astype(np.float32)
        self.y_point = int(constants[names[7]].reshape(-1)[0]) if names[7] else 0
        out_dtype = graph.tensors[node.outputs[0]].dtype
        self.low, self.high = (0, 255) if out_dtype == "uint8" else (-128, 127)
        self.rows = self.batch * self.out_hw[0] * self.out_hw[1]
        self.chunks = self._programs()
        self.report: Report | None = None

    def _programs(self) -> list[_Chunk]:
        """Device programs covering the window matrix's rows, with two virtual threads;
        the rows per program are chosen to move the fewest bytes from DRAM (few rows:
        the weights are loaded once per program; many rows: the input tiles are loaded
        again for each chunk of output columns, the accumulators holding fewer)."""
        c = self.config
        n, k = self.columns // c.block_out, self.depth // c.block_in
        tiles = -(-self.rows // c.batch)
        options = []
        for per in sorted({tiles, *(1 << e for e in range(12) if 1 << e < tiles)}):
            try:
                tile_n, _ = gemm_sizes(c, per, n, k, 2)
            except InvalidArgumentError:
                continue
            traffic = (tiles * k * c.entry_bytes("inp") * -(-n // tile_n)
                       + -(-tiles // per) * n * k * c.entry_bytes("wgt"))
            options.append((traffic, per))
        for _, per in sorted(options):
            try:  # (too many micro-ops for the uop buffer: fewer rows)
                return self._cover(tiles, per, n, k)
            except InvalidArgumentError:
                continue
        raise InvalidArgumentError(f"node '{self.node.name}': no device program of the "
                                   "GEMM routine fits this convolution's buffers")

    def _cover(self, tiles: int, per: int, n: int, k: int) -> list[_Chunk]:
        c = self.config
        chunks, done = [], 0
        while done < tiles:
            m = min(per, tiles - done)
            if not chunks or chunks[-1].rows != m * c.batch:
                program, uops = gemm_program(c, m, n, k, virtual_threads=2, wide=True)
            else:
                program, uops = chunks[-1].program, chunks[-1].uops
            chunks.append(_Chunk(m * c.batch, program, uops))
            done += m
        return chunks

    def windows(self, x: np.ndarray) -> np.ndarray:
        """The input as int8 rows, one per output pixel: (rows, depth)."""
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
        out = np.zeros((self.rows, self.depth), np.int8)
        out[:, :cols.shape[1]] = cols
        return out

    def accumulators(self, x: np.ndarray) -> np.ndarray:
        """The device's int32 sums, (rows, filters), and ``self.report``."""
        c = self.config
        rows = self.windows(x)
        total, report, start = [], Report(), 0
        for chunk in self.chunks:
            part = np.zeros((chunk.rows, self.depth), np.int8)
            taken = rows[start:start + chunk.rows]
            part[:len(taken)] = taken
            dram = gemm_dram(c, part, self.weights, chunk.uops, wide=True)
            _add(report, run(chunk.program, dram, c))
            total.append(gemm_result(c, dram["y"], chunk.rows // c.batch,
                                     self.columns // c.block_out)[:len(taken)])
            start += chunk.rows
        self.report = report
        return np.concatenate(total)[:, :self.filters]

    def __call__(self, *arrays):
        x, out = arrays[0], arrays[-1]
        acc = self.accumulators(x) + self.correction[None, :]
        value = acc.astype(np.float32) * self.scale[None, :]
        value = np.minimum(np.maximum(value, np.float32(-1e9)), np.float32(1e9))
        q = np.rint(value).astype(np.int32) + self.y_point
        q = np.clip(q, self.low, self.high).astype(out.dtype)
        oh, ow = self.out_hw
        out[...] = q.reshape(self.batch, oh, ow, self.filters).transpose(0, 3, 1, 2).reshape(
            out.shape)


def _add(total: Report, part: Report) -> None:
    for f in fields(Report):
        mine, theirs = getattr(total, f.name), getattr(part, f.name)
        if isinstance(mine, dict):
            for key in mine:
                mine[key] += theirs[key]
        else:
            setattr(total, f.name, mine + theirs)


def device_reports(model) -> dict[str, Report]:
    """``{node name: Report}`` of the offloaded convolutions' last run."""
    return {step.kernel.node.name: step.kernel.report for step in model.steps
            if isinstance(step.kernel, AccelConv)}
