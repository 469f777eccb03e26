"""ONNX ``LSTM``, ``GRU`` and ``RNN`` in every form: ``direction`` "reverse" and
"bidirectional", ``sequence_lens``, ``layout=1``, the initial states, and all their
outputs (``Y``, ``Y_h``, ``Y_c``).

The importer writes such a node as ``LSTMStates`` / ``GRUStates`` / ``RNNStates``
(internal operators: the node's inputs and attributes) whose one output stacks the
results as ``[seq + 2, directions, batch, hidden]`` (``seq + 1`` for GRU and RNN):
rows ``0 .. seq - 1`` are ``Y`` in ONNX's layout 0, row ``seq`` is ``Y_h``, row
``seq + 1`` ``Y_c``; the importer slices (and for ``layout=1`` transposes) them out
(:mod:`.onnx_rewrites`).  Each direction runs the one-direction kernels of
:mod:`.lstm` and :mod:`.recurrent` (the projection, then the time loop in one kernel)
with its own weights and activations:

* a reverse direction reads each batch entry's sequence backwards, from its last
  valid step (``sequence_lens``), and its outputs are put back in time order;
* past a sequence's length ``Y`` is 0, and ``Y_h`` / ``Y_c`` are the states after its
  last valid step (as ONNX says and onnxruntime computes; 0 for an empty sequence).

>>> from polyopt.graph.registry import OPS
>>> OPS["LSTMStates"].kind, OPS["GRUStates"].max_inputs
('opaque', 6)
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np

from ..errors import InvalidArgumentError
from ..machine import TargetInfo
from .aligned import aligned_empty
from .ir import OpNode, TensorInfo
from .lstm import LSTMRunner, check_hidden_size, node_activations
from .recurrent import RecurrentRunner
from .graph_errors import (NotFusableError, RecurrenceAttributeError,
                           UnsupportedAttributeValueError, UnsupportedDTypeError)
from .registry import attr, constant_value, register
from ..target.args import data_pointer

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
DIRECTIONS = {"forward": 1, "reverse": 1, "bidirectional": 2}
_COMMON = {"activation_alpha": None, "activation_beta": None, "activations": None,
           "clip": None, "direction": "forward", "hidden_size": None, "layout": 0}
ATTRS = {"LSTM": {**_COMMON, "input_forget": 0}, "GRU": {**_COMMON, "linear_before_reset": 0},
         "RNN": _COMMON}
STATES = {f"{op}States": op for op in GATES}  # internal operator -> ONNX's


def extra_rows(op: str) -> int:
    """The rows after ``Y`` in the stacked output: ``Y_h`` (and ``Y_c`` of an LSTM)."""
    return 2 if op == "LSTM" else 1


def sizes(node, infos) -> tuple[int, int, int, int, int]:
    """``(seq, batch, width, hidden, directions)`` of a recurrent node after checking
    its attributes and its inputs' dtypes and shapes."""
    op = STATES[node.op_type]
    direction, layout = attr(node, "direction"), attr(node, "layout")
    if direction not in DIRECTIONS:
        raise RecurrenceAttributeError(node.name, op, "direction", direction=direction)
    if layout not in (0, 1):
        raise RecurrenceAttributeError(node.name, op, "layout", layout=layout)
    if op == "LSTM" and attr(node, "input_forget"):
        raise UnsupportedAttributeValueError(node.name, op, "input_forget",
                                             attr(node, "input_forget"), (0,))
    for k, info in enumerate(infos):
        want = "int32" if k == 4 else "float32"
        if info is not None and info.dtype != want:
            raise UnsupportedDTypeError(node.name, op, info.name, info.dtype, (want,))
    if len(infos[0].shape) != 3 or len(infos[2].shape) != 3:
        raise InvalidArgumentError(f"node '{node.name}' ({op}): X and R must have 3 "
                                   f"dimensions, got {infos[0].shape} and {infos[2].shape}")
    seq, batch, width = infos[0].shape if layout == 0 else (
        infos[0].shape[1], infos[0].shape[0], infos[0].shape[2])
    dirs, gates, hidden = DIRECTIONS[direction], GATES[op], infos[2].shape[-1]
    state = (dirs, batch, hidden) if layout == 0 else (batch, dirs, hidden)
    expected = {1: (dirs, gates * hidden, width), 2: (dirs, gates * hidden, hidden),
                3: (dirs, 2 * gates * hidden), 4: (batch,), 5: state, 6: state,
                7: (dirs, 3 * hidden)}
    for index, shape in expected.items():
        info = infos[index] if index < len(infos) else None
        if info is not None and (op != "LSTM" and index >= 6 or info.shape != shape):
            raise InvalidArgumentError(
                f"node '{node.name}' ({op}): input {index} ('{info.name}') has shape "
                f"{info.shape}; with hidden size {hidden}, {dirs} direction(s) and X "
                f"{infos[0].shape} (layout {layout}) it must be {shape}")
    check_hidden_size(node, op, infos, hidden, (seq, batch, width))
    return seq, batch, width, hidden, dirs


def _infer(node, infos, constants):
    for index, what in ((1, "W"), (2, "R"), (3, "B"), (7, "P")):
        constant_value(node, constants, index, what)
    seq, batch, _, hidden, dirs = sizes(node, infos)
    node_activations(_onnx_node(node), dirs)
    return [((seq + extra_rows(STATES[node.op_type]), dirs, batch, hidden), "float32")]


def _onnx_node(node) -> OpNode:
    """``node`` as the ONNX operator it stands for (same inputs and attributes)."""
    return OpNode(node.name, STATES[node.op_type], tuple(node.inputs), tuple(node.outputs),
                  dict(node.attrs))


def _no_lowering(node, args, values, out, name):
    raise NotFusableError(node.name, node.op_type)


for _name, _op in STATES.items():
    register(_name, "opaque", ATTRS[_op], min_inputs=3, max_inputs=8 if _op == "LSTM" else 6,
             internal=True)((_infer, _no_lowering))


def _view(address: int, shape, ctype) -> np.ndarray:
    count = int(np.prod(shape))
    return np.ctypeslib.as_array((ctype * count).from_address(address)).reshape(shape)


class StatesRunner:
    """``runner(*inputs, out)`` for one ``LSTMStates`` / ``GRUStates`` / ``RNNStates``
    node: per direction, the one-direction runner of :mod:`.lstm` or :mod:`.recurrent`
    on that direction's weights, its input reversed per sequence when it runs
    backwards."""

    WHAT = "the recurrent node"

    def __init__(self, g, node, num_threads: int, cache=None,
                 target_info: TargetInfo | None = None):
        op = self.op = STATES[node.op_type]
        infos = [g.tensors[n] if n else None for n in node.inputs]
        self.seq, self.batch, width, self.hidden, dirs = sizes(node, infos)
        self.layout = attr(node, "layout")
        acts, clip = node_activations(_onnx_node(node), dirs)
        self.reverse = [attr(node, "direction") == "reverse" or d == 1 for d in range(dirs)]
        self.inputs = [n for n in node.inputs if n]
        self._present = {k: self.inputs.index(n) for k, n in enumerate(node.inputs) if n}
        self.kernel_shapes = [g.tensors[n].shape for n in self.inputs] + [
            (self.seq + extra_rows(op), dirs, self.batch, self.hidden)]
        self.dtypes = [g.tensors[n].dtype for n in self.inputs]
        seq, batch, hidden = self.seq, self.batch, self.hidden
        state = TensorInfo("h0", (1, batch, hidden), "float32")
        self.runners = []
        for d in range(dirs):  # one direction's graph: its weights, X in time order
            names = ["X", "W", "R", "B", "", "h0", "c0", "P"][:8 if op == "LSTM" else 6]
            constants = {}
            for k in (1, 2, 3, 7):  # this direction's weights (absent: no input)
                if k < len(names) and k < len(node.inputs) and node.inputs[k]:
                    constants[names[k]] = g.constants[node.inputs[k]][d:d + 1]
                elif k < len(names):
                    names[k] = ""
            tensors = {k: TensorInfo(k, v.shape, "float32") for k, v in constants.items()}
            one = SimpleNamespace(constants=constants, tensors={
                **tensors, "X": TensorInfo("X", (seq, batch, width), "float32"), "h0": state,
                "c0": TensorInfo("c0", state.shape, "float32")})
            inner = OpNode(f"{node.name}_{d}", op, tuple(names), ("Y",),
                           {k: v for k, v in node.attrs.items()
                            if k in ("hidden_size", "linear_before_reset")})
            runner_class = LSTMRunner if op == "LSTM" else RecurrentRunner
            self.runners.append(runner_class(one, inner, num_threads, cache, target_info,
                                             acts=acts[d], clip=clip))
        self.x = aligned_empty((seq, batch, width))
        self.y = aligned_empty((seq, batch, hidden))
        self.h0, self.c0 = aligned_empty((batch, hidden)), aligned_empty((batch, hidden))

    def __call__(self, *args) -> None:
        """Run on the node's inputs (of the graph's shapes and dtypes), writing ``out``."""
        if len(args) != len(self.kernel_shapes):
            raise InvalidArgumentError(f"{self.WHAT} takes {len(self.kernel_shapes)} arrays, "
                                       f"got {len(args)}")
        for array, shape in zip(args, self.kernel_shapes):
            if tuple(np.shape(array)) != tuple(shape):
                raise InvalidArgumentError(f"{self.WHAT}'s arrays must have the shapes "
                                           f"{self.kernel_shapes}, got {np.shape(array)}")
        *inputs, out = args
        if not isinstance(out, np.ndarray) or not out.flags.writeable:
            raise InvalidArgumentError(f"{self.WHAT}'s output must be a writable NumPy array")
        arrays = [np.ascontiguousarray(a, dtype) for a, dtype in zip(inputs, self.dtypes)]
        result = np.empty(out.shape, np.float32)
        self.call_pointers([data_pointer(a) for a in arrays] + [data_pointer(result)])
        out[...] = result

    def _input(self, pointers, index: int, ctype=ctypes.c_float):
        k = self._present.get(index)
        if k is None:
            return None
        return _view(pointers[k], self.kernel_shapes[k], ctype)

    def call_pointers(self, pointers) -> None:
        """Run on the addresses of the node's present inputs and of the output."""
        seq, batch = self.seq, self.batch
        X = self._input(pointers, 0)
        if self.layout == 1:
            X = X.transpose(1, 0, 2)
        lens = self._input(pointers, 4, ctypes.c_int32)
        lengths = np.full(batch, seq) if lens is None else lens.astype(np.int64)
        if lengths.min() < 0 or lengths.max() > seq:
            raise InvalidArgumentError(
                f"{self.WHAT}: sequence_lens {lengths.tolist()} must be between 0 and the "
                f"sequence length {seq}")
        empty = (lengths == 0)[:, None]  # (an empty sequence: Y_h and Y_c are 0)
        rows = np.arange(batch)
        initial = [self._input(pointers, k) for k in (5, 6)]
        if self.layout == 1:
            initial = [s if s is None else s.transpose(1, 0, 2) for s in initial]
        out = _view(pointers[-1], self.kernel_shapes[-1], ctypes.c_float)
        steps = np.arange(seq)[:, None]
        valid = steps < lengths[None, :]  # [seq, batch]
        # a reverse direction's step t reads X[length - 1 - t] (time order: its mirror)
        mirror = np.where(valid, lengths[None, :] - 1 - steps, steps)
        columns = np.arange(batch)[None, :]
        for d, runner in enumerate(self.runners):
            self.x[...] = X[mirror, columns] if self.reverse[d] else X
            for state, buffer in zip(initial, (self.h0, self.c0)):
                buffer[...] = 0.0 if state is None else state[d]
            addresses = {"X": data_pointer(self.x), "h0": data_pointer(self.h0),
                         "c0": data_pointer(self.c0)}
            runner.call_pointers([addresses.get(n, 0) for n in runner.inputs] +
                                 [data_pointer(self.y)])
            y = np.where(valid[:, :, None], self.y, 0.0)
            out[:seq, d] = y[mirror, columns] if self.reverse[d] else y
            out[seq, d] = np.where(empty, 0.0, self.y[np.maximum(lengths - 1, 0), rows])
            if self.op == "LSTM":
                out[seq + 1, d] = np.where(empty, 0.0, _cells(runner)[lengths, rows])


def _cells(runner) -> np.ndarray:
    """An LSTM runner's cell states after each step ``[seq + 1, batch, hidden]`` (row 0:
    the initial state), from its odd and even steps when it ran in pairs."""
    if not runner.in_pairs:
        return runner.states[1]
    odd, even = runner.states[1], runner.states[3]
    cells = np.empty((2 * (odd.shape[0] - 1) + 1, *odd.shape[1:]), np.float32)
    cells[0], cells[1::2], cells[2::2] = even[0], odd[1:], even[1:]
    return cells
