"""ONNX ``LSTM`` (one direction, output ``Y``): a loop over time steps in the executor,
each step three compiled kernels.

The recurrence reads ``h[t-1] @ R^T``, a reduction over the previous step's state, which
``po.scan`` refuses (a scan's update may not be a reduction), so the time loop runs in
Python around polyopt kernels instead:

* once per call, the input projection of every step ``P = X @ W^T + (Wb + Rb)``
  (``[seq * batch, 4 * hidden]``, the matmul template with its bias epilogue);
* per step ``t``: ``G = P[t] + h @ R^T`` (the matmul template, unpacked for a few rows),
  ``c = f * c + i * g`` and ``h = o * tanh(c)`` (``i, o, f, g``: ONNX's gate order),
  ``h`` written straight into ``Y[t]``.

``W``, ``R`` and ``B`` must be constants: their transposes are stored at compile time.
"""

from __future__ import annotations

import numpy as np

from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum, tanh
from .ir import OpNode
from .lowering import LoweredGroup, build_group, schedule_group
from .operators import (UnsupportedOperatorError, attr, constant_value, register, sigmoid)

STEP_WORK_FOR_THREADS = 1 << 22  # multiply-adds per step from which its kernels use threads
_ATTRS = {"activation_alpha": None, "activation_beta": None, "activations": None,
          "clip": None, "direction": "forward", "hidden_size": None, "input_forget": 0,
          "layout": 0}


def _check(node, constants) -> None:
    if attr(node, "direction") != "forward":
        raise UnsupportedOperatorError(
            f"node '{node.name}' (LSTM): direction={attr(node, 'direction')!r} is not "
            "supported; only 'forward' is")
    for key, default in (("input_forget", 0), ("layout", 0), ("clip", None)):
        if attr(node, key) != default:
            raise UnsupportedOperatorError(f"node '{node.name}' (LSTM): {key} is not supported")
    acts = attr(node, "activations")
    if acts is not None and list(acts) != ["Sigmoid", "Tanh", "Tanh"]:
        raise UnsupportedOperatorError(
            f"node '{node.name}' (LSTM): activations={acts} are not supported; only the "
            "default Sigmoid, Tanh, Tanh")
    for index, what in ((4, "sequence_lens"), (7, "P")):
        if len(node.inputs) > index and node.inputs[index]:
            raise UnsupportedOperatorError(
                f"node '{node.name}' (LSTM): the input {what} is not supported")
    for index, what in ((1, "W"), (2, "R"), (3, "B")):
        constant_value(node, constants, index, what)


def _infer(node, infos, constants):
    _check(node, constants)
    seq, batch, _ = infos[0].shape
    hidden = infos[2].shape[-1]
    return [((seq, 1, batch, hidden), infos[0].dtype)]


def _no_lowering(node, args, values, out, name):
    raise UnsupportedOperatorError(f"node '{node.name}' (LSTM) cannot be fused")


register("LSTM", "opaque", _ATTRS, min_inputs=3)((_infer, _no_lowering))


def _kernel(placeholders, out, anchor_op: str, num_threads: int, cache=None):
    lowered = LoweredGroup([p.name for p in placeholders], list(placeholders), out,
                           [tuple(d.value for d in t.shape) for t in [*placeholders, out]])
    schedule = schedule_group(lowered, "complex" if anchor_op else "injective",
                              [OpNode("lstm", anchor_op or "Add", (), ())])
    return build_group(lowered, schedule, num_threads=num_threads, cache=cache)


def _affine(name: str, rows: int, cols: int, inner: int, with_term: bool):
    """``out = A @ B (+ T)``: A ``[rows, inner]``, B ``[inner, cols]``, T ``[cols]`` or
    ``[rows, cols]``."""
    A = placeholder((rows, inner), name=f"{name}_a")
    B = placeholder((inner, cols), name=f"{name}_b")
    T = placeholder((cols,) if not with_term else (rows, cols), name=f"{name}_t")
    k = reduce_axis((0, inner), name="k")
    product = compute((rows, cols), lambda i, j: reduce_sum(A[i, k] * B[k, j], axis=k),
                      name=f"{name}_mm")
    out = compute((rows, cols), lambda i, j: product[i, j] + (T[i, j] if with_term else T[j]),
                  name="out")
    return [A, B, T], out


class LSTMRunner:
    """``runner(X, W, R, [B], [initial_h], [initial_c], Y)`` for one LSTM node (the
    arguments are the node's present inputs; ``W``, ``R``, ``B`` are read at build time)."""

    def __init__(self, g, node, num_threads: int, cache=None):
        self.inputs = [n for n in node.inputs if n]
        self.positions = {name: k for k, name in enumerate(node.inputs) if name}
        seq, batch, width = g.tensors[node.inputs[0]].shape
        W = g.constants[node.inputs[1]][0]
        R = g.constants[node.inputs[2]][0]
        hidden = R.shape[-1]
        bias = g.constants.get(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] \
            else None
        bias = np.zeros(8 * hidden, np.float32) if bias is None else bias[0]
        self.shape = (seq, batch, hidden)
        self.w_t = np.ascontiguousarray(W.T.astype(np.float32))
        self.r_t = np.ascontiguousarray(R.T.astype(np.float32))
        self.bias = (bias[:4 * hidden] + bias[4 * hidden:]).astype(np.float32)
        self.projection = _kernel(*_affine("proj", seq * batch, 4 * hidden, width, False),
                                  "MatMul", num_threads, cache)
        # a step's kernels are small (batch x hidden x 4 hidden products): on one thread,
        # as waking the other threads three times per step costs more than they save
        step_threads = 1 if batch * hidden * hidden * 4 < STEP_WORK_FOR_THREADS else num_threads
        self.recurrent = _kernel(*_affine("rec", batch, 4 * hidden, hidden, True), "MatMul",
                                 step_threads, cache)
        G = placeholder((batch, 4 * hidden), name="gates")
        C = placeholder((batch, hidden), name="cell")
        H4 = hidden

        def cell(b, j):
            return sigmoid(G[b, 2 * H4 + j]) * C[b, j] + sigmoid(G[b, j]) * tanh(G[b, 3 * H4 + j])
        c_out = compute((batch, hidden), cell, name="out")
        self.cell = _kernel([G, C], c_out, "", step_threads, cache)
        h_out = compute((batch, hidden), lambda b, j: sigmoid(G[b, H4 + j]) * tanh(C[b, j]),
                        name="out")
        self.hidden = _kernel([G, C], h_out, "", step_threads, cache)
        self.kernel_shapes = [g.tensors[n].shape for n in self.inputs] + [
            (seq, 1, batch, hidden)]
        self.projected = np.empty((seq * batch, 4 * hidden), np.float32)
        self.gates = np.empty((batch, 4 * hidden), np.float32)
        self.cells = [np.empty((batch, hidden), np.float32) for _ in range(2)]
        self.h0 = np.zeros((batch, hidden), np.float32)

    def __call__(self, *args) -> None:
        *inputs, Y = args
        seq, batch, hidden = self.shape
        x = inputs[0]
        self.projection(x.reshape(seq * batch, -1), self.w_t, self.bias, self.projected)
        projected = self.projected.reshape(seq, batch, 4 * hidden)
        h = self._initial(inputs, 5, self.h0)
        c = self._initial(inputs, 6, None)
        current = self.cells[0]
        if c is None:
            current[...] = 0.0
        else:
            current[...] = c
        for t in range(seq):
            self.recurrent(h, self.r_t, projected[t], self.gates)
            new = self.cells[(t + 1) % 2]
            self.cell(self.gates, current, new)
            h = Y[t, 0]
            self.hidden(self.gates, new, h)
            current = new

    def _initial(self, inputs, index, default):
        for name, position in self.positions.items():
            if position == index:
                return inputs[self.inputs.index(name)][0]
        return default
