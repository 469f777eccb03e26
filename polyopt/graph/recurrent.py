"""ONNX ``GRU`` and ``RNN`` (forward, output ``Y``; any ONNX activation and ``clip``:
:mod:`.recurrent_activations`; the other forms: :mod:`.recurrent_states`), as
the LSTM (:mod:`.lstm`): the input projection of every step at once, ``P = X @ W^T +
biases`` (the matmul template), then the whole recurrence as one ``po.scan`` kernel.

* RNN: ``h[t] = tanh(P[t] + h[t-1] @ R^T)``;
* GRU (gates z, r, h in ONNX's order): ``z, r = sigmoid(P[t] + h[t-1] @ R_zr^T)``, the
  candidate ``n = tanh(P_h[t] + (r * h[t-1]) @ R_h^T)`` (``linear_before_reset=0``: a
  second product in the step) or ``tanh(P_h[t] + r * (h[t-1] @ R_h^T + Rb_h))`` (1),
  and ``h[t] = (1 - z) * n + z * h[t-1]``.

``W``, ``R`` and ``B`` must be constants (their transposes are stored at compile time).
An ONNX ``Y_h`` (the last step's state) is the last row of ``Y``: the importer slices it
(:mod:`.onnx_rewrites`).

>>> from polyopt.graph.registry import OPS
>>> OPS["GRU"].attrs["linear_before_reset"], OPS["RNN"].max_inputs
(0, 6)
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..machine import TargetInfo
from ..target.args import data_pointer
from ..te.scan import scan
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum
from ..transform.schedule import create_schedule
from .aligned import aligned_copy, aligned_empty
from .lstm import (NodeRunner, build_one_thread, cached_kernel, node_activations, projection,
                   recurrent_shapes, template_kernel)
from .recurrent_activations import DEFAULTS, Activation, clipped
from .graph_errors import NotFusableError, UnsupportedAttributeValueError, UnsupportedInputError
from .registry import attr, constant_value, register

GATES = {"GRU": 3, "RNN": 1}
DEFAULT_FUNCTIONS = {op: tuple(Activation(n) for n in DEFAULTS[op]) for op in GATES}
_ATTRS = {"activation_alpha": None, "activation_beta": None, "activations": None,
          "clip": None, "direction": "forward", "hidden_size": None, "layout": 0}


def _check(node, constants) -> None:
    op = node.op_type
    if attr(node, "direction") != "forward":
        raise UnsupportedAttributeValueError(node.name, op, "direction",
                                             attr(node, "direction"), ("forward",))
    if attr(node, "layout") != 0:
        raise UnsupportedAttributeValueError(node.name, op, "layout", attr(node, "layout"),
                                             (0,))
    node_activations(node, 1)
    if len(node.inputs) > 4 and node.inputs[4]:
        raise UnsupportedInputError(node.name, op, "optional", "sequence_lens", node.inputs[4])
    for index, what in ((1, "W"), (2, "R"), (3, "B")):
        constant_value(node, constants, index, what)


def _infer(node, infos, constants):
    _check(node, constants)
    return recurrent_shapes(node, infos, GATES[node.op_type], (5,))


def _no_lowering(node, args, values, out, name):
    raise NotFusableError(node.name, node.op_type)


register("GRU", "opaque", {**_ATTRS, "linear_before_reset": 0}, min_inputs=3,
         max_inputs=6)((_infer, _no_lowering))
register("RNN", "opaque", _ATTRS, min_inputs=3, max_inputs=6)((_infer, _no_lowering))


def recurrence(op: str, seq: int, batch: int, hidden: int, linear_before_reset: int = 0,
               acts=None, clip=None):
    """The recurrence of a ``GRU`` or ``RNN`` as a ``po.scan``: ``(schedule, [P, RT, RBh,
    h0, H])`` (``acts``: ONNX's functions, f and g for a GRU, f for an RNN, by default
    the defaults; ``clip``: their inputs clipped to ``[-clip, clip]``); ``P`` ``[seq, batch, gates * hidden]`` the input projections with the
    biases (for a GRU with ``linear_before_reset``, without ``Rb_h``, which ``RBh``
    ``[hidden]`` holds), ``RT`` ``[hidden, gates * hidden]`` the recurrent weights
    transposed, ``H`` ``[seq + 1, batch, hidden]`` the states (``H[0] = h0``)."""
    gates = GATES[op]
    functions = acts or DEFAULT_FUNCTIONS[op]
    f, g = functions[0], functions[-1]  # (an RNN has f only)

    def gate(x):
        return clipped(x, clip)
    P = placeholder((seq, batch, gates * hidden), name="P")
    RT = placeholder((hidden, gates * hidden), name="RT")
    RBh = placeholder((hidden,), name="RBh")
    h0 = placeholder((batch, hidden), name="h0")
    h_state = placeholder((seq + 1, batch, hidden), name="h_state")
    shape = (seq + 1, batch, hidden)

    def product(read, columns: int, offset: int, name: str):
        k = reduce_axis((0, hidden), name=f"k_{name}")
        return compute((seq + 1, batch, columns), lambda t, b, j: reduce_sum(
            read(t, b, k) * RT[k, offset + j], axis=k), name=name)

    def previous(t, b, j):
        return h_state[t - 1, b, j]

    if op == "RNN":
        G = product(previous, hidden, 0, "G")
        h_next = compute(shape, lambda t, b, j: f(gate(G[t, b, j] + P[t - 1, b, j])),
                         name="h_next")
    else:
        zr = product(previous, (2 if not linear_before_reset else 3) * hidden, 0, "G")
        r = compute(shape, lambda t, b, j: f(gate(zr[t, b, hidden + j]
                                                  + P[t - 1, b, hidden + j])), name="r")
        if linear_before_reset:
            n = compute(shape, lambda t, b, j: g(gate(
                P[t - 1, b, 2 * hidden + j] + r[t, b, j] * (zr[t, b, 2 * hidden + j]
                                                            + RBh[j]))), name="n")
        else:
            reset = compute(shape, lambda t, b, j: r[t, b, j] * previous(t, b, j),
                            name="reset")
            Gh = product(lambda t, b, k: reset[t, b, k], hidden, 2 * hidden, "Gh")
            n = compute(shape, lambda t, b, j: g(gate(P[t - 1, b, 2 * hidden + j]
                                                      + Gh[t, b, j])), name="n")
        h_next = compute(shape, lambda t, b, j: _blend(
            f(gate(zr[t, b, j] + P[t - 1, b, j])), n[t, b, j], previous(t, b, j)),
            name="h_next")
    h_init = compute((1, batch, hidden), lambda t, b, j: h0[b, j], name="h_init")
    H = scan(h_init, h_next, h_state, name=op.lower())
    return create_schedule(H), [P, RT, RBh, h0, H]


def _blend(z, candidate, previous):
    return (1.0 - z) * candidate + z * previous


class RecurrentRunner(NodeRunner):
    """``runner(X, W, R, [B], [initial_h], Y)`` for one GRU or RNN node (the node's
    present inputs; ``W``, ``R``, ``B`` are read at build time)."""

    def __init__(self, g, node, num_threads: int, cache=None,
                 target_info: TargetInfo | None = None, acts=None, clip=None):
        op, gates = node.op_type, GATES[node.op_type]
        if acts is None:  # a forward node's own attributes
            (acts,), clip = node_activations(node, 1)
        variant = () if acts == DEFAULT_FUNCTIONS[op] and clip is None else (
            tuple((a.name, a.alpha, a.beta) for a in acts), clip)
        self.inputs = [n for n in node.inputs if n]
        seq, batch, width = g.tensors[node.inputs[0]].shape
        W, R = g.constants[node.inputs[1]][0], g.constants[node.inputs[2]][0]
        hidden = R.shape[-1]
        columns = gates * hidden
        bias = g.constants.get(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] \
            else None
        bias = np.zeros(2 * columns, np.float32) if bias is None else bias[0]
        before = int(attr(node, "linear_before_reset") or 0) if op == "GRU" else 0
        w_bias, r_bias = bias[:columns], bias[columns:].copy()
        r_bias_h = r_bias[2 * hidden:].copy() if before else np.zeros(hidden, np.float32)
        if before:  # Rb_h is added inside the reset gate's product, not to P
            r_bias[2 * hidden:] = 0
        self.shape = (seq, batch, hidden)
        self.requests: dict = {}
        self.w_t = aligned_copy(np.ascontiguousarray(W.T.astype(np.float32)))
        self.r_t = aligned_copy(np.ascontiguousarray(R.T.astype(np.float32)))
        self.bias = aligned_copy((w_bias + r_bias).astype(np.float32))
        self.r_bias_h = aligned_copy(r_bias_h.astype(np.float32))
        self.projection = cached_kernel(
            cache, (f"{op} projection", seq * batch, columns, width), 1,
            lambda request: template_kernel(*projection(seq * batch, columns, width),
                                            "MatMul", 1, cache, request),
            self.requests, "projection")
        self.recurrence = cached_kernel(
            cache, (f"{op} recurrence", seq, batch, hidden, before, *variant), 1,
            lambda request: build_one_thread(*recurrence(op, seq, batch, hidden, before,
                                                         acts, clip), cache, request),
            self.requests, "recurrence")
        self.kernel_shapes = [g.tensors[n].shape for n in self.inputs] + [
            (seq, 1, batch, hidden)]
        self.projected = aligned_empty((seq, batch, columns))
        self.states = aligned_empty((seq + 1, batch, hidden))
        self.zeros = aligned_copy(np.zeros((batch, hidden), np.float32))
        self._initial = node.inputs[5] if len(node.inputs) > 5 and node.inputs[5] else None
        self._y_address, self._y = None, None

    def call_pointers(self, pointers) -> None:
        """Run on the addresses of the node's present inputs and of ``Y`` (contiguous
        float32 arrays of the graph's shapes), as the executor calls kernels."""
        *inputs, y_address = pointers
        h0 = inputs[self.inputs.index(self._initial)] if self._initial else \
            data_pointer(self.zeros)
        self.projection.call_pointers([inputs[0], data_pointer(self.w_t),
                                       data_pointer(self.bias), data_pointer(self.projected)])
        self.recurrence.call_pointers([data_pointer(self.projected), data_pointer(self.r_t),
                                       data_pointer(self.r_bias_h), h0,
                                       data_pointer(self.states)])
        self._output(y_address)[...] = self.states[1:]

    def _output(self, address: int) -> np.ndarray:
        """``Y`` at ``address`` as ``[seq, batch, hidden]``, a view kept for the next call."""
        if address != self._y_address:
            seq, batch, hidden = self.shape
            self._y = np.ctypeslib.as_array(
                (ctypes.c_float * (seq * batch * hidden)).from_address(address)).reshape(
                    self.shape)
            self._y_address = address
        return self._y
