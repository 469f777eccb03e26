"""ONNX ``LSTM`` (forward, output ``Y``; any ONNX activation, ``clip`` and peepholes;
the other forms: :mod:`.recurrent_states`): the input projection, then the whole
recurrence as one ``po.scan`` kernel.

* once per call, the input projection of every step ``P = X @ W^T + (Wb + Rb)``
  (``[seq * batch, 4 * hidden]``, the matmul template with its bias epilogue);
* one scan over the time steps with two states, ``h`` and ``c`` (``Y[0]`` is the
  initial state).  Each step computes the gates ``G[t] = h[t-1] @ R^T`` (a reduction:
  a cell of the scan, in the time loop; scheduled as a matrix-vector product, blocks
  of ``4 * lanes`` gate columns in vector registers while the reduction runs), then
  ``c[t] = f * c[t-1] + i * g`` and ``h[t] = o * tanh(c[t])`` (``i, o, f, g``: ONNX's
  gate order, each gate also reading ``P[t]``), vectorized.  The time loop runs in the
  kernel: no call per step.  On an even number of steps it runs two steps per
  iteration, the second reading ``R^T``'s panels in reverse (:func:`recurrence_in_pairs`:
  ``R^T`` is as large as L2, and the panels read last are still there).

``W``, ``R`` and ``B`` must be constants: their transposes are stored at compile time.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..build import build
from ..errors import InvalidArgumentError
from ..te.scan import scan
from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum
from ..target.args import data_pointer
from ..machine import TargetInfo
from ..transform.schedule import create_schedule
from .aligned import aligned_copy, aligned_empty
from .ir import OpNode
from ..schedules.templates import matmul_template
from .lowering import LoweredGroup, build_group, inline_epilogue, schedule_group
from .recurrent_activations import (DEFAULTS, Activation, check_clip, clipped,
                                    direction_activations)
from .graph_errors import (NotFusableError, UnsupportedAttributeValueError,
                           UnsupportedCombinationError, UnsupportedDTypeError,
                           UnsupportedInputError)
from .registry import attr, constant_value, register

WORK_FOR_THREADS = 1 << 24  # multiply-adds of the projection from which it uses threads
_ATTRS = {"activation_alpha": None, "activation_beta": None, "activations": None,
          "clip": None, "direction": "forward", "hidden_size": None, "input_forget": 0,
          "layout": 0}


def _check(node, constants) -> None:
    if attr(node, "direction") != "forward":
        raise UnsupportedAttributeValueError(node.name, node.op_type, "direction",
                                             attr(node, "direction"), ("forward",))
    for key, default in (("input_forget", 0), ("layout", 0)):
        if attr(node, key) != default:
            raise UnsupportedAttributeValueError(node.name, node.op_type, key, attr(node, key),
                                                 (default,))
    node_activations(node, 1)
    if len(node.inputs) > 4 and node.inputs[4]:  # (the importer writes it as LSTMStates)
        raise UnsupportedInputError(node.name, node.op_type, "optional", "sequence_lens",
                                    node.inputs[4])
    for index, what in ((1, "W"), (2, "R"), (3, "B"), (7, "P")):
        constant_value(node, constants, index, what)


def node_activations(node, directions: int):
    """The activation functions of each direction of a recurrent node and its clip
    threshold (refusing what ONNX does not define)."""
    clip = check_clip(node.op_type, attr(node, "clip"), node.name)
    return direction_activations(node.op_type, attr(node, "activations"),
                                 attr(node, "activation_alpha"),
                                 attr(node, "activation_beta"), directions, node.name), clip


def recurrent_shapes(node, infos, gates: int, states: tuple[int, ...]):
    """The output ``Y`` of a recurrent node (LSTM: 4 ``gates``, initial h and c at inputs
    ``states`` 5 and 6; GRU 3 and RNN 1, initial h at 5) after checking its inputs' dtypes
    and shapes against X's and R's sizes."""
    op = node.op_type
    for info in infos:
        if info is not None and info.dtype != "float32":
            raise UnsupportedDTypeError(node.name, op, info.name, info.dtype, ("float32",))
    if len(infos[0].shape) != 3:
        raise InvalidArgumentError(f"node '{node.name}' ({op}): X must be [seq, batch, input], "
                                   f"got {infos[0].shape}")
    seq, batch, width = infos[0].shape
    hidden = infos[2].shape[-1] if len(infos[2].shape) == 3 else 0
    expected = {1: (1, gates * hidden, width), 2: (1, gates * hidden, hidden),
                3: (1, 2 * gates * hidden), **{k: (1, batch, hidden) for k in states},
                **({7: (1, 3 * hidden)} if gates == 4 else {})}
    for index, shape in expected.items():
        info = infos[index] if index < len(infos) else None
        if info is not None and info.shape != shape:
            raise InvalidArgumentError(
                f"node '{node.name}' ({op}): input {index} ('{info.name}') has shape "
                f"{info.shape}; with hidden size {hidden} it must be {shape}")
    check_hidden_size(node, op, infos, hidden, (seq, batch, width))
    return [((seq, 1, batch, hidden), infos[0].dtype)]


def check_hidden_size(node, op: str, infos, hidden: int, sizes: tuple[int, ...]) -> None:
    """Refuse a recurrent node whose hidden size (R's last dimension) or a size of X
    (``sizes``) is below 1, or whose ``hidden_size`` attribute differs from ``hidden``."""
    size = attr(node, "hidden_size")
    if hidden < 1 or min(sizes) < 1 or (size is not None and size != hidden):
        raise InvalidArgumentError(
            f"node '{node.name}' ({op}): hidden_size={size!r} with R of shape "
            f"{infos[2].shape} and X {infos[0].shape}; the hidden size (R's last dimension) "
            "and every size of X must be at least 1 and agree with hidden_size")


def _infer(node, infos, constants):
    _check(node, constants)
    return recurrent_shapes(node, infos, 4, (5, 6))


def _no_lowering(node, args, values, out, name):
    raise NotFusableError(node.name, node.op_type)


register("LSTM", "opaque", _ATTRS, min_inputs=3, max_inputs=8)((_infer, _no_lowering))


def template_kernel(placeholders, out, anchor_op: str, num_threads: int, cache=None,
                    request=None):
    """The matmul (``anchor_op``) or elementwise kernel of ``out``, templated."""
    lowered = LoweredGroup([p.name for p in placeholders], list(placeholders), out,
                           [tuple(d.value for d in t.shape) for t in [*placeholders, out]])
    schedule = schedule_group(lowered, "complex" if anchor_op else "injective",
                              [OpNode("lstm", anchor_op or "Add", (), ())])
    return build_group(lowered, schedule, num_threads=num_threads, cache=cache,
                       request=request)


def cached_kernel(cache, description, num_threads: int, build_it, requests: dict, role: str):
    """The kernel ``description`` names, from the caches by its request when it is there
    (built in this process, or on disk: nothing lowered), else ``build_it(request)``;
    the request is kept in ``requests[role]`` (an export finds the object by it)."""
    request = cache.request(description, num_threads) if cache is not None else None
    requests[role] = request
    found = (cache.recall(request) or cache.find(request)) if cache is not None else None
    return found[0] if found is not None else build_it(request)


def projection(rows: int, cols: int, inner: int):
    """``out = A @ B + T``: A ``[rows, inner]``, B ``[inner, cols]``, T ``[cols]``."""
    A = placeholder((rows, inner), name="proj_a")
    B = placeholder((inner, cols), name="proj_b")
    T = placeholder((cols,), name="proj_t")
    k = reduce_axis((0, inner), name="k")
    product = compute((rows, cols), lambda i, j: reduce_sum(A[i, k] * B[k, j], axis=k),
                      name="proj_mm")
    return [A, B, T], compute((rows, cols), lambda i, j: product[i, j] + T[j], name="out")


def panel_width(cols: int, info: TargetInfo | None = None) -> int | None:
    """The columns of the matmul template's register tile on ``info`` (the host by
    default) when they divide ``cols``."""
    info = info or TargetInfo.host()
    width = info.register_tile()[1] * info.lanes("float32")
    return width if cols % width == 0 else None


def _packed_projection(rows: int, cols: int, inner: int, panel: int, num_threads: int,
                       cache=None, request=None, info: TargetInfo | None = None):
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
    matmul_template(s, product, pack=False, cols=panel, target_info=info)
    inline_epilogue(s, out, product)
    lowered = LoweredGroup(["proj_a", "proj_b", "proj_t"], [A, Bp, T], out,
                           [tuple(d.value for d in t.shape) for t in (A, Bp, T, out)])
    return build_group(lowered, s, num_threads=num_threads, cache=cache, request=request)


def recurrence_block(hidden: int, info: TargetInfo | None = None) -> int:
    """The gate columns the recurrence accumulates in registers over its reduction (half
    the vector registers' worth of ``info``, the host by default: measured best at hidden
    256), at most all of them."""
    info = info or TargetInfo.host()
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


def _gate_products(steps: int, batch: int, hidden: int, block: int, h_read, weight,
                   name: str):
    """``G[t, b, j] = sum_k h_read(t, b, k) * weight(k, j)`` over ``steps + 1`` steps (the
    time loop's first value is the initial state's)."""
    k = reduce_axis((0, hidden), name=f"k{name[1:]}")
    return compute((steps + 1, batch, 4 * hidden),
                   lambda t, b, j: reduce_sum(h_read(t, b, k) * weight(k, j), axis=k),
                   name=name), k


LSTM_DEFAULT = tuple(Activation(n) for n in DEFAULTS["LSTM"])


def _cell_and_h(shape, gate, previous_c, suffix: str = "", acts=LSTM_DEFAULT, clip=None,
                peep=None):
    """``c = f * c_prev + i * g`` and ``h = o * tanh(c)`` of one step (``gate(t, b, j,
    which)``: gate ``which`` of ONNX's order i, o, f, c, before its activation;
    ``acts``: ONNX's functions f, g, h, default Sigmoid, Tanh, Tanh; ``clip``: the
    gates' inputs clipped to ``[-clip, clip]``; ``peep``: the peephole weights
    ``[3 hidden]`` (i, o, f), adding ``P_i * c_prev``, ``P_f * c_prev``, ``P_o * c``)."""
    f, g, h_act = acts
    hidden = shape[-1]

    def gate_in(t, b, j, which, cell=None):
        value = gate(t, b, j, which)
        if peep is not None and which != 3:
            value = value + peep[which * hidden + j] * (
                cell[t, b, j] if which == 1 else previous_c(t, b, j))
        return clipped(value, clip)
    cell = compute(shape, lambda t, b, j: f(gate_in(t, b, j, 2)) * previous_c(t, b, j)
                   + f(gate_in(t, b, j, 0)) * g(gate_in(t, b, j, 3)), name=f"cell{suffix}")
    h = compute(shape, lambda t, b, j: f(gate_in(t, b, j, 1, cell)) * h_act(cell[t, b, j]),
                name=f"h_next{suffix}")
    return cell, h


def _schedule_step(s, products, elementwise, block: int) -> None:
    """Each gate product's columns in blocks of ``block`` held in vector registers over its
    reduction; the elementwise tensors vectorized."""
    for G, k in products:
        _, b, j = G.op.axis
        outer, inner = s[G].split(j, factor=block)
        s[G].reorder(b, outer, k, inner)
        s[G].vectorize(inner)
    for tensor in elementwise:
        s[tensor].vectorize(tensor.op.axis[2])


def recurrence(seq: int, batch: int, hidden: int, *, block: int | None = None,
               packed: bool = True, acts=LSTM_DEFAULT, clip=None, peephole: bool = False):
    """The LSTM recurrence as a scheduled ``po.scan``: ``(schedule, [P, RT, h0, c0, H, C])``
    where ``P`` ``[seq, batch, 4 hidden]`` holds the input projections with the biases,
    ``RT`` the recurrent weights transposed, ``[hidden, 4 hidden]`` in panels of
    ``block`` columns (:func:`pack_recurrent`; not with ``packed=False``), and ``H``,
    ``C`` ``[seq + 1, batch, hidden]`` the states (``H[0] = h0``).  ``block`` gate columns (by default
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
    peep = placeholder((3 * hidden,), name="peep") if peephole else None
    h_state = placeholder((seq + 1, batch, hidden), name="h_state")
    c_state = placeholder((seq + 1, batch, hidden), name="c_state")
    G, k = _gate_products(seq, batch, hidden, block,
                          lambda t, b, k: h_state[t - 1, b, k], weight, "G")
    cell, h_next = _cell_and_h(
        (seq + 1, batch, hidden),
        lambda t, b, j, which: G[t, b, which * hidden + j] + P[t - 1, b, which * hidden + j],
        lambda t, b, j: c_state[t - 1, b, j], acts=acts, clip=clip, peep=peep)
    c_next = compute((seq + 1, batch, hidden), lambda t, b, j: cell[t, b, j], name="c_next")
    h_init = compute((1, batch, hidden), lambda t, b, j: h0[b, j], name="h_init")
    c_init = compute((1, batch, hidden), lambda t, b, j: c0[b, j], name="c_init")
    H, C = scan([h_init, c_init], [h_next, c_next], [h_state, c_state], name="lstm")
    s = create_schedule([H, C])
    _schedule_step(s, [(G, k)], (cell, h_next, c_next), block)
    return s, [P, RT, h0, c0, *([peep] if peephole else []), H, C]


def pairs_apply(seq: int, hidden: int, block: int | None = None) -> bool:
    """Whether :func:`recurrence_in_pairs` serves a sequence: an even number of steps and
    panels that divide the gate columns."""
    block = recurrence_block(hidden) if block is None else min(block, 4 * hidden)
    return seq % 2 == 0 and seq > 0 and (4 * hidden) % block == 0


def _copy(shape, source, read, name: str):
    """``compute(shape, read(source, t, b, j))``: one named copy."""
    return compute(shape, lambda t, b, j: read(source, t, b, j), name=name)


def recurrence_in_pairs(seq: int, batch: int, hidden: int, *, block: int | None = None,
                        acts=LSTM_DEFAULT, clip=None, peephole: bool = False):
    """The recurrence of :func:`recurrence` (``seq`` even, ``RT`` packed), two steps per
    iteration of its time loop, the second reading ``RT``'s panels in reverse order:
    ``(schedule, [P, RT, h0, c0, H_odd, C_odd, H_even, C_even])``, the states
    ``[seq / 2 + 1, batch, hidden]`` of steps 1, 3, 5... and 2, 4, 6... (row 0:
    ``h0``, ``c0``).

    ``RT`` is as large as L2 (1 MB at hidden 256): read in the same order at every step,
    each line is evicted just before it is read again, and a step streams ``RT`` from L3;
    in a zigzag, the panels the last step read last are still in L2 (7% less time per
    step).  Every gate column sums in the same order: the same numbers, bit for bit."""
    gates = 4 * hidden
    block = recurrence_block(hidden) if block is None else min(block, gates)
    if not pairs_apply(seq, hidden, block):
        raise UnsupportedCombinationError(None, "LSTM", "paired_recurrence", seq=seq,
                                          block=block, gates=gates)
    half, panels = seq // 2, gates // block
    P = placeholder((seq, batch, gates), name="P")
    RT = placeholder((panels, hidden, block), name="RT")
    h0, c0 = placeholder((batch, hidden), name="h0"), placeholder((batch, hidden), name="c0")
    peep = placeholder((3 * hidden,), name="peep") if peephole else None
    shape = (half + 1, batch, hidden)
    h_odd, c_odd, h_even, c_even = (placeholder(shape, name=n) for n in (
        "h_odd_state", "c_odd_state", "h_even_state", "c_even_state"))

    G1, k1 = _gate_products(half, batch, hidden, block, lambda t, b, k: h_even[t - 1, b, k],
                            lambda k, j: RT[j // block, k, j % block], "G1")
    cell1, h1 = _cell_and_h(
        shape, lambda t, b, j, which: G1[t, b, which * hidden + j]
        + P[2 * t - 2, b, which * hidden + j], lambda t, b, j: c_even[t - 1, b, j], "1",
        acts, clip, peep)
    G2, k2 = _gate_products(half, batch, hidden, block, lambda t, b, k: h1[t, b, k],
                            lambda k, j: RT[j // block, k, j % block], "G2")
    cell2, h2 = _cell_and_h(
        shape, lambda t, b, j, which: G2[t, b, which * hidden + j]
        + P[2 * t - 1, b, which * hidden + j], lambda t, b, j: cell1[t, b, j], "2",
        acts, clip, peep)
    updates = [_copy(shape, x, lambda x, t, b, j: x[t, b, j], f"{x.name}_out")
               for x in (h1, cell1, h2, cell2)]
    inits = [_copy((1, batch, hidden), x, lambda x, t, b, j: x[b, j], f"{n}_init")
             for x, n in ((h0, "h_odd"), (c0, "c_odd"), (h0, "h_even"), (c0, "c_even"))]
    states = scan(inits, updates, [h_odd, c_odd, h_even, c_even], name="lstm")
    s = create_schedule(list(states))
    _schedule_step(s, [(G1, k1), (G2, k2)], (cell1, h1, cell2, h2, *updates), block)
    s[G2].reverse(s[G2].axes[2])  # its panels, last first (a checked primitive)
    return s, [P, RT, h0, c0, *([peep] if peephole else []), *states]


class NodeRunner:
    """The call of a recurrent node's runner from NumPy arrays (``WHAT`` names it in
    errors): the arrays are checked against the node's shapes, then passed to
    ``call_pointers`` by address, as the executor calls kernels."""

    WHAT = "the recurrence"

    def __call__(self, *args) -> None:
        """Run on the node's inputs (float32, of the graph's shapes), writing ``Y``."""
        if len(args) != len(self.kernel_shapes):
            raise InvalidArgumentError(f"{self.WHAT} takes {len(self.kernel_shapes)} arrays "
                                       f"({', '.join(self.inputs)}, Y), got {len(args)}")
        for name, array, shape in zip(self.inputs + ["Y"], args, self.kernel_shapes):
            if tuple(np.shape(array)) != tuple(shape):
                raise InvalidArgumentError(f"{self.WHAT}'s {name} must have shape "
                                           f"{tuple(shape)}, got {np.shape(array)}")
        *inputs, Y = args
        if not isinstance(Y, np.ndarray) or not Y.flags.writeable:
            raise InvalidArgumentError(f"{self.WHAT}'s Y must be a writable NumPy array")
        arrays = [np.ascontiguousarray(a, np.float32) for a in inputs]
        direct = Y.flags.c_contiguous and Y.dtype == np.float32
        y = Y if direct else np.empty(Y.shape, np.float32)
        self.call_pointers([data_pointer(a) for a in arrays] + [data_pointer(y)])
        if not direct:
            Y[...] = y


class LSTMRunner(NodeRunner):
    """``runner(X, W, R, [B], [initial_h], [initial_c], Y)`` for one LSTM node (the
    arguments are the node's present inputs; ``W``, ``R``, ``B`` are read at build time)."""

    WHAT = "the LSTM"

    def __init__(self, g, node, num_threads: int, cache=None,
                 target_info: TargetInfo | None = None, acts=None, clip=None):
        info = target_info or TargetInfo.host()
        if acts is None:  # a forward node's own attributes
            (acts,), clip = node_activations(node, 1)
        # the kernels' descriptions name non-default functions (the default ones' keep
        # the names cached kernels have)
        peep = g.constants.get(node.inputs[7]) if len(node.inputs) > 7 and node.inputs[7] \
            else None
        variant = () if acts == LSTM_DEFAULT and clip is None and peep is None else (
            tuple((a.name, a.alpha, a.beta) for a in acts), clip, peep is not None)
        self.inputs = [n for n in node.inputs if n]
        seq, batch, width = g.tensors[node.inputs[0]].shape
        W = g.constants[node.inputs[1]][0]
        R = g.constants[node.inputs[2]][0]
        hidden = R.shape[-1]
        bias = g.constants.get(node.inputs[3]) if len(node.inputs) > 3 and node.inputs[3] \
            else None
        bias = np.zeros(8 * hidden, np.float32) if bias is None else bias[0]
        self.shape = (seq, batch, hidden)
        self.requests: dict = {}  # "projection", "recurrence": their cache requests
        # every array the kernels stream starts on a cache line (numpy's do not: 7% of
        # the recurrence's time went to loads that span two lines)
        self.w_t = np.ascontiguousarray(W.T.astype(np.float32))
        self.r_t = aligned_copy(pack_recurrent(np.ascontiguousarray(R.T.astype(np.float32)),
                                               recurrence_block(hidden, info)))
        self.bias = aligned_copy(bias[:4 * hidden] + bias[4 * hidden:], np.float32)
        # a small projection on one thread: waking a sleeping thread costs more
        threads = num_threads if seq * batch * width * 4 * hidden >= WORK_FOR_THREADS else 1
        panel = panel_width(4 * hidden, info)
        if panel is not None:  # W^T in the template's panels, once
            self.w_t = self.w_t.reshape(width, 4 * hidden // panel, panel).transpose(1, 0, 2)
            self.projection = cached_kernel(
                cache, ("lstm packed projection", seq * batch, hidden, width, panel), threads,
                lambda request: _packed_projection(seq * batch, 4 * hidden, width, panel,
                                                   threads, cache, request, info),
                self.requests, "projection")
        else:
            self.projection = cached_kernel(
                cache, ("lstm projection", seq * batch, hidden, width), threads,
                lambda request: template_kernel(*projection(seq * batch, 4 * hidden, width),
                                        "MatMul", threads, cache, request),
                self.requests, "projection")
        block = recurrence_block(hidden, info)
        # two steps per iteration, the second reading R^T's panels backwards, when it can
        self.in_pairs = pairs_apply(seq, hidden, block)
        if self.in_pairs:
            self.recurrence = cached_kernel(
                cache, ("lstm recurrence in pairs", seq, batch, hidden, block, *variant), 1,
                lambda request: build_one_thread(*recurrence_in_pairs(
                    seq, batch, hidden, block=block, acts=acts, clip=clip,
                    peephole=peep is not None), cache, request),
                self.requests, "recurrence")
        else:
            self.recurrence = cached_kernel(
                cache, ("lstm recurrence, packed", seq, batch, hidden, block, *variant), 1,
                lambda request: build_one_thread(*recurrence(
                    seq, batch, hidden, block=block, acts=acts, clip=clip,
                    peephole=peep is not None), cache, request),
                self.requests, "recurrence")
        self.kernel_shapes = [g.tensors[n].shape for n in self.inputs] + [
            (seq, 1, batch, hidden)]
        self.w_t = aligned_copy(self.w_t)
        self.projected = aligned_empty((seq, batch, 4 * hidden))
        steps = seq // 2 if self.in_pairs else seq
        self.states = [aligned_empty((steps + 1, batch, hidden))
                       for _ in range(4 if self.in_pairs else 2)]
        self.zeros = aligned_copy(np.zeros((batch, hidden), np.float32))
        # the addresses of the arrays that every call uses (W^T, bias, projections; R^T;
        # the states)
        self._weights = [data_pointer(a) for a in (self.w_t, self.bias, self.projected)]
        self._recurrent = data_pointer(self.r_t)
        # the peephole weights (i, o, f), an argument of the recurrence when given
        self.peep = None if peep is None else aligned_copy(peep[0], np.float32)
        self._peep = [] if peep is None else [data_pointer(self.peep)]
        self._states = [data_pointer(a) for a in self.states]
        self._zeros = data_pointer(self.zeros)
        # the names of the initial h and c among the node's inputs (None: zeros)
        self._initial = [node.inputs[k] if len(node.inputs) > k and node.inputs[k] else None
                         for k in (5, 6)]
        self._y_address, self._y = None, None

    def call_pointers(self, pointers) -> None:
        """Run on the addresses of the node's present inputs and of ``Y`` (contiguous
        float32 arrays of the graph's shapes), as the executor calls kernels: the
        kernels are called with addresses too (a checked call cost about 20 us)."""
        *inputs, y_address = pointers
        h0, c0 = (inputs[self.inputs.index(self._initial[k])] if self._initial[k]
                  else self._zeros for k in (0, 1))
        self.projection.call_pointers([inputs[0], *self._weights])
        self.recurrence.call_pointers([self._weights[2], self._recurrent, h0, c0, *self._peep,
                                       *self._states])
        Y = self._output(y_address)
        if self.in_pairs:  # h of the odd steps, then of the even ones
            Y[:, 0] = self.states[0][1:]
            Y[:, 1] = self.states[2][1:]
        else:
            Y[...] = self.states[0][1:]

    def _output(self, address: int) -> np.ndarray:
        """``Y`` at ``address`` (``[seq / 2, 2, batch, hidden]`` in pairs), a view kept
        for the next call: the executor's buffers keep their addresses."""
        if address != self._y_address:
            seq, batch, hidden = self.shape
            shape = (seq // 2, 2, batch, hidden) if self.in_pairs else (seq, batch, hidden)
            self._y = np.ctypeslib.as_array(
                (ctypes.c_float * (seq * batch * hidden)).from_address(address)).reshape(shape)
            self._y_address = address
        return self._y


def build_one_thread(schedule, args, cache, request):
    """The single-threaded kernel of a schedule (through the disk cache when given): a
    step's work is small, and waking threads at every step costs more than they save."""
    if cache is None:
        return build(schedule, args, target="llvm", num_threads=1)
    return cache.build(schedule, args, num_threads=1, request=request)[0]
