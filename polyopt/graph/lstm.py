"""ONNX ``LSTM`` (one direction, output ``Y``): the input projection, then the whole
recurrence as one ``po.scan`` kernel.

* once per call, the input projection of every step ``P = X @ W^T + (Wb + Rb)``
  (``[seq * batch, 4 * hidden]``, the matmul template with its bias epilogue);
* one scan over the time steps with two states, ``h`` and ``c`` (``Y[0]`` is the
  initial state).  Each step computes the gates ``G[t] = h[t-1] @ R^T`` (a reduction:
  a cell of the scan, in the time loop; scheduled as a matrix-vector product, blocks
  of ``4 * lanes`` gate columns in vector registers while the reduction runs), then
  ``c[t] = f * c[t-1] + i * g`` and ``h[t] = o * tanh(c[t])`` (``i, o, f, g``: ONNX's
  gate order, each gate also reading ``P[t]``), vectorized.  The time loop runs in the
  kernel: no call per step.

``W``, ``R`` and ``B`` must be constants: their transposes are stored at compile time.
"""

from __future__ import annotations

import numpy as np

from ..build import build
from ..te.scan import scan
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum, tanh
from ..target.args import data_pointer
from ..target.info import TargetInfo
from ..transform.schedule import create_schedule
from .ir import OpNode
from ..transform.templates import matmul_template
from .lowering import LoweredGroup, build_group, inline_epilogue, schedule_group
from .operators import (UnsupportedOperatorError, attr, constant_value, register, sigmoid)

WORK_FOR_THREADS = 1 << 24  # multiply-adds of the projection from which it uses threads
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


def _kernel(placeholders, out, anchor_op: str, num_threads: int, cache=None, request=None):
    """The matmul (``anchor_op``) or elementwise kernel of ``out``, templated."""
    lowered = LoweredGroup([p.name for p in placeholders], list(placeholders), out,
                           [tuple(d.value for d in t.shape) for t in [*placeholders, out]])
    schedule = schedule_group(lowered, "complex" if anchor_op else "injective",
                              [OpNode("lstm", anchor_op or "Add", (), ())])
    return build_group(lowered, schedule, num_threads=num_threads, cache=cache,
                       request=request)


def _cached(cache, description, num_threads: int, build_it):
    """The kernel ``description`` names, from the disk cache by its request when it is
    there (nothing lowered), else ``build_it(request)``."""
    request = cache.request(description, num_threads) if cache is not None else None
    found = cache.find(request) if cache is not None else None
    return found[0] if found is not None else build_it(request)


def _projection(rows: int, cols: int, inner: int):
    """``out = A @ B + T``: A ``[rows, inner]``, B ``[inner, cols]``, T ``[cols]``."""
    A = placeholder((rows, inner), name="proj_a")
    B = placeholder((inner, cols), name="proj_b")
    T = placeholder((cols,), name="proj_t")
    k = reduce_axis((0, inner), name="k")
    product = compute((rows, cols), lambda i, j: reduce_sum(A[i, k] * B[k, j], axis=k),
                      name="proj_mm")
    return [A, B, T], compute((rows, cols), lambda i, j: product[i, j] + T[j], name="out")


def panel_width(cols: int) -> int | None:
    """The columns of the matmul template's register tile when they divide ``cols``."""
    info = TargetInfo.host()
    width = info.register_tile()[1] * info.lanes("float32")
    return width if cols % width == 0 else None


def _packed_projection(rows: int, cols: int, inner: int, panel: int, num_threads: int,
                       cache=None, request=None):
    """The projection's kernel with ``B`` packed at compile time in panels
    ``[cols / panel, inner, panel]`` (as the matmul template would copy them on every
    call: 1 MB at hidden 256, a third of the projection's time), read in place."""
    A = placeholder((rows, inner), name="proj_a")
    Bp = placeholder((cols // panel, inner, panel), name="proj_b")
    T = placeholder((cols,), name="proj_t")
    k = reduce_axis((0, inner), name="k")
    product = compute((rows, cols), lambda i, j: reduce_sum(
        A[i, k] * Bp[j // panel, k, j % panel], axis=k), name="proj_mm")
    out = compute((rows, cols), lambda i, j: product[i, j] + T[j], name="out")
    s = create_schedule(out)
    matmul_template(s, product, pack=False, cols=panel)
    inline_epilogue(s, out, product)
    lowered = LoweredGroup(["proj_a", "proj_b", "proj_t"], [A, Bp, T], out,
                           [tuple(d.value for d in t.shape) for t in (A, Bp, T, out)])
    return build_group(lowered, s, num_threads=num_threads, cache=cache, request=request)


def recurrence_block(hidden: int) -> int:
    """The gate columns the recurrence accumulates in registers over its reduction (half
    the vector registers' worth: measured best at hidden 256), at most all of them."""
    info = TargetInfo.host()
    return min(4 * hidden, info.lanes("float32") * (16 if info.vector_registers >= 32 else 8))


def pack_recurrent(r_t: np.ndarray, block: int) -> np.ndarray:
    """``RT`` ``[hidden, 4 hidden]`` in panels ``[4 hidden / block, hidden, block]`` when
    ``block`` divides its columns (else ``RT`` as it is): what :func:`recurrence` reads.

    >>> pack_recurrent(np.arange(8.0).reshape(2, 4), 2)[1].tolist()
    [[2.0, 3.0], [6.0, 7.0]]
    """
    hidden, gates = r_t.shape
    if gates % block:
        return r_t
    return np.ascontiguousarray(r_t.reshape(hidden, gates // block, block).transpose(1, 0, 2))


def recurrence(seq: int, batch: int, hidden: int, *, block: int | None = None,
               packed: bool = True):
    """The LSTM recurrence as a scheduled ``po.scan``: ``(schedule, [P, RT, h0, c0, H, C])``
    where ``P`` ``[seq, batch, 4 hidden]`` holds the input projections with the biases,
    ``RT`` the recurrent weights transposed, ``[hidden, 4 hidden]`` in panels of
    ``block`` columns (:func:`pack_recurrent`; not with ``packed=False``), and ``H``, ``C`` ``[seq + 1, batch,
    hidden]`` the states (``H[0] = h0``).  ``block`` gate columns (by default
    :func:`recurrence_block`) are accumulated in registers over the reduction, reading a
    panel's rows one after the other (unpacked, each of a block's rows was a 1 KB piece
    of another 4 KB page, which the hardware prefetcher does not follow).  Every step is
    a checked primitive."""
    gates = 4 * hidden
    block = recurrence_block(hidden) if block is None else min(block, gates)
    P = placeholder((seq, batch, gates), name="P")
    if packed and gates % block == 0:
        RT = placeholder((gates // block, hidden, block), name="RT")

        def weight(k, j):
            return RT[j // block, k, j % block]
    else:
        RT = placeholder((hidden, gates), name="RT")

        def weight(k, j):
            return RT[k, j]
    h0, c0 = placeholder((batch, hidden), name="h0"), placeholder((batch, hidden), name="c0")
    h_state = placeholder((seq + 1, batch, hidden), name="h_state")
    c_state = placeholder((seq + 1, batch, hidden), name="c_state")
    k = reduce_axis((0, hidden), name="k")
    G = compute((seq + 1, batch, gates),
                lambda t, b, j: reduce_sum(h_state[t - 1, b, k] * weight(k, j), axis=k),
                name="G")

    def gate(t, b, j, which):
        return G[t, b, which * hidden + j] + P[t - 1, b, which * hidden + j]

    cell = compute((seq + 1, batch, hidden), lambda t, b, j: sigmoid(gate(t, b, j, 2))
                   * c_state[t - 1, b, j] + sigmoid(gate(t, b, j, 0)) * tanh(gate(t, b, j, 3)),
                   name="cell")
    h_next = compute((seq + 1, batch, hidden),
                     lambda t, b, j: sigmoid(gate(t, b, j, 1)) * tanh(cell[t, b, j]), name="h_next")
    c_next = compute((seq + 1, batch, hidden), lambda t, b, j: cell[t, b, j], name="c_next")
    h_init = compute((1, batch, hidden), lambda t, b, j: h0[b, j], name="h_init")
    c_init = compute((1, batch, hidden), lambda t, b, j: c0[b, j], name="c_init")
    H, C = scan([h_init, c_init], [h_next, c_next], [h_state, c_state], name="lstm")
    s = create_schedule([H, C])
    _, b, j = G.op.axis
    outer, inner = s[G].split(j, factor=block)
    s[G].reorder(b, outer, k, inner)
    s[G].vectorize(inner)
    for tensor in (cell, h_next, c_next):
        s[tensor].vectorize(tensor.op.axis[2])
    return s, [P, RT, h0, c0, H, C]


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
        self.r_t = pack_recurrent(np.ascontiguousarray(R.T.astype(np.float32)),
                                  recurrence_block(hidden))
        self.bias = (bias[:4 * hidden] + bias[4 * hidden:]).astype(np.float32)
        # a small projection on one thread: waking a sleeping thread costs more
        threads = num_threads if seq * batch * width * 4 * hidden >= WORK_FOR_THREADS else 1
        panel = panel_width(4 * hidden)
        if panel is not None:  # W^T in the template's panels, once
            self.w_t = np.ascontiguousarray(
                self.w_t.reshape(width, 4 * hidden // panel, panel).transpose(1, 0, 2))
            self.projection = _cached(
                cache, ("lstm packed projection", seq * batch, hidden, width, panel), threads,
                lambda request: _packed_projection(seq * batch, 4 * hidden, width, panel,
                                                   threads, cache, request))
        else:
            self.projection = _cached(
                cache, ("lstm projection", seq * batch, hidden, width), threads,
                lambda request: _kernel(*_projection(seq * batch, 4 * hidden, width),
                                        "MatMul", threads, cache, request))
        self.recurrence = _cached(
            cache, ("lstm recurrence, packed", seq, batch, hidden, recurrence_block(hidden)), 1,
            lambda request: _build(*recurrence(seq, batch, hidden), cache, request))
        self.kernel_shapes = [g.tensors[n].shape for n in self.inputs] + [
            (seq, 1, batch, hidden)]
        self.projected = np.empty((seq, batch, 4 * hidden), np.float32)
        self.states = [np.empty((seq + 1, batch, hidden), np.float32) for _ in range(2)]
        self.zeros = np.zeros((batch, hidden), np.float32)
        # the addresses of the arrays that every call uses (W^T, bias, projections; R^T;
        # the states)
        self._weights = [data_pointer(a) for a in (self.w_t, self.bias, self.projected)]
        self._recurrent = data_pointer(self.r_t)
        self._states = [data_pointer(a) for a in self.states]

    def __call__(self, *args) -> None:
        """Run on the node's inputs (float32, of the graph's shapes: the executor's
        arrays), writing ``Y``; the kernels are called with addresses (a checked call
        cost about 20 us, a tenth of a small layer's time)."""
        *inputs, Y = args
        seq, batch, hidden = self.shape
        x = np.ascontiguousarray(inputs[0], np.float32).reshape(seq * batch, -1)
        h0 = self._initial(inputs, 5)
        c0 = self._initial(inputs, 6)
        self.projection.call_pointers([data_pointer(x), *self._weights])
        self.recurrence.call_pointers([self._weights[2], self._recurrent, data_pointer(h0),
                                       data_pointer(c0), *self._states])
        Y.reshape(seq, batch, hidden)[...] = self.states[0][1:]

    def _initial(self, inputs, index):
        for name, position in self.positions.items():
            if position == index:
                return np.ascontiguousarray(inputs[self.inputs.index(name)][0])
        return self.zeros


def _build(schedule, args, cache, request):
    """The single-threaded kernel of a schedule (through the disk cache when given): a
    step's work is small, and waking threads at every step costs more than they save."""
    if cache is None:
        return build(schedule, args, target="llvm", num_threads=1)
    return cache.build(schedule, args, num_threads=1, request=request)[0]
