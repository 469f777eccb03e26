"""``po.scan``: recurrences over a time axis, as in the classic TVM talks.

>>> import polyopt as po
>>> m, n = po.var("m"), po.var("n")
>>> X = po.placeholder((m, n), name="X")
>>> s_state = po.placeholder((m, n), name="s_state")
>>> s_init = po.compute((1, n), lambda _, i: X[0, i], name="s_init")
>>> s_update = po.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i], name="s_update")
>>> Y = po.scan(s_init, s_update, s_state, inputs=[X], name="Y")
>>> Y.shape, str(Y.op.update_body)
((<Var m>, <Var n>), 'Y[t - 1, i] + X[t, i]')

``Y[t] = s_init[t]`` for the first steps (as many as ``s_init`` has), then
``Y[t] = s_update[t]``, where the update reads earlier steps through ``s_state``.
Several states are scanned together by passing lists (an RNN cell with two states):
their updates run in the same time step.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import InvalidArgumentError, public
from .expr import Expr, IterVar, Reduce, TensorRead
from .linear import linear_terms
from .substitute import transform
from .tensor import ComputeOp, OpOutputs, PlaceholderOp, Tensor, walk


@dataclass(frozen=True, slots=True, eq=False)
class ScanGroup:
    """The states scanned together (their updates share the time loop)."""

    name: str
    outputs: tuple[Tensor, ...]
    cells: tuple[Tensor, ...] = ()   # computes of each step that the updates read


@dataclass(frozen=True, slots=True, eq=False)
class ScanOp(OpOutputs):
    name: str
    shape: tuple[Expr, ...]
    dtype: str
    init_axis: tuple[IterVar, ...]
    init_body: Expr
    init_steps: Expr
    axis: tuple[IterVar, ...]          # the update's axes; axis[0] is time
    update_body: Expr
    group: ScanGroup
    reduce_axis: tuple[IterVar, ...] = ()

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Tensors the scan reads, other than the states scanned with it."""
        own = {id(t) for t in self.group.outputs}
        seen: dict[int, Tensor] = {}
        for body in (self.init_body, self.update_body):
            for node in walk(body):
                if isinstance(node, TensorRead) and id(node.tensor) not in own:
                    seen.setdefault(id(node.tensor), node.tensor)
        return tuple(seen.values())


def _as_list(value, what: str) -> list[Tensor]:
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    for item in items:
        if not isinstance(item, Tensor):
            raise InvalidArgumentError(f"po.scan: {what} must be tensors, got {item!r}")
    return items


def _same_extents(a, b) -> bool:
    """Whether two extents are the same size: the same affine combination of the same
    vars (``m + 1`` written twice, ``2 * n`` and ``n + n``), else the same expression."""
    if a is b:
        return True
    la, lb = linear_terms(a), linear_terms(b)
    return la is not None and la == lb


@public
def scan(init, update, state, inputs=None, name: str = "scan"):
    """The recurrence ``Y[t] = init[t]`` for the first steps, then ``update[t]``.

    ``init``, ``update`` and ``state`` are tensors (or lists of tensors, one per
    state); ``update`` reads earlier steps through the ``state`` placeholders.
    Returns the scanned tensor (or a list, one per state).
    """
    inits, updates = _as_list(init, "init"), _as_list(update, "update")
    states = _as_list(state, "state")
    if not (len(inits) == len(updates) == len(states)):
        raise InvalidArgumentError(
            f"po.scan needs one init and one update per state, got {len(inits)} init(s), "
            f"{len(updates)} update(s) and {len(states)} state(s)")
    for k, (i_t, u_t, s_t) in enumerate(zip(inits, updates, states)):
        _check_parts(i_t, u_t, s_t, k)
    names = [name] if len(states) == 1 else [f"{name}_{k}" for k in range(len(states))]
    # the outputs exist (with the states' shapes and dtypes) before their bodies do
    outputs = tuple(Tensor(PlaceholderOp(n, st.shape, st.dtype)) for n, st in zip(names, states))
    replace = {id(s): out for s, out in zip(states, outputs)}

    def to_outputs(node):
        if isinstance(node, TensorRead) and id(node.tensor) in replace:
            return TensorRead(replace[id(node.tensor)], node.indices)
        return None

    cells = _cells(updates, states)
    for cell in cells:  # a step of several stages: they read the earlier steps too
        cell.op = dataclasses.replace(cell.op, body=transform(cell.op.body, to_outputs))
    group = ScanGroup(name, outputs, tuple(cells))
    for out, out_name, i_t, u_t, s_t in zip(outputs, names, inits, updates, states):
        out.op = ScanOp(out_name, s_t.shape, u_t.dtype, i_t.op.axis,
                        transform(i_t.op.body, to_outputs), i_t.shape[0], u_t.op.axis,
                        transform(u_t.op.body, to_outputs), group)
    del inputs  # accepted for TVM compatibility; the inputs are found from the bodies
    return outputs[0] if len(outputs) == 1 else list(outputs)


def _cells(updates: list[Tensor], states: list[Tensor]) -> list[Tensor]:
    """The computes that the updates read and that read a state (directly or through
    other such computes), each after those it reads: the other stages of a step.

    >>> import polyopt as po
    >>> m, n = po.var("m"), po.var("n"); X = po.placeholder((m, n), name="X")
    >>> st = po.placeholder((m, n), name="st")
    >>> init = po.compute((1, n), lambda _, i: X[0, i], name="init")
    >>> s1 = po.compute((m, n), lambda t, i: st[t - 1, i] * 2, name="s1")
    >>> s2 = po.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    >>> Y = po.scan(init, s2, st, name="Y")
    >>> [t.name for t in Y.op.group.cells], str(s1.op.body)
    (['s1'], 'Y[t - 1, i] * 2')
    """
    state_ids = {id(t) for t in states}
    reads_state: dict[int, bool] = {}
    order: list[Tensor] = []

    def visit(tensor: Tensor) -> bool:
        if id(tensor) in state_ids:
            return True
        if not isinstance(tensor.op, ComputeOp):
            return False
        if id(tensor) not in reads_state:
            reads_state[id(tensor)] = False  # a cycle cannot occur; guards re-entry
            found = [visit(t) for t in tensor.op.inputs]
            reads_state[id(tensor)] = any(found)
            if any(found):
                order.append(tensor)
        return reads_state[id(tensor)]

    for update in updates:
        for source in update.op.inputs:
            visit(source)
    return order


def _check_parts(init: Tensor, update: Tensor, state: Tensor, k: int) -> None:
    where = f"po.scan state {k}"
    if not isinstance(state.op, PlaceholderOp):
        raise InvalidArgumentError(f"{where}: the state must be a po.placeholder")
    for part, label in ((init, "init"), (update, "update")):
        if not isinstance(part.op, ComputeOp):
            raise InvalidArgumentError(f"{where}: the {label} must be a po.compute")
        if isinstance(part.op.body, Reduce):
            raise InvalidArgumentError(
                f"{where}: the {label} is a reduction; compute the reduction in its own "
                "compute and read it from the scan")
        if part.ndim != state.ndim or part.ndim < 1:
            raise InvalidArgumentError(
                f"{where}: the {label} has {part.ndim} dimension(s) but the state has "
                f"{state.ndim}; the first dimension is time")
        for d in range(1, state.ndim):
            if not _same_extents(part.shape[d], state.shape[d]):
                raise InvalidArgumentError(
                    f"{where}: dimension {d} of the {label} ({part.shape[d]}) differs from the "
                    f"state's ({state.shape[d]})")
    if not _same_extents(update.shape[0], state.shape[0]):
        raise InvalidArgumentError(
            f"{where}: the update has {update.shape[0]} time steps but the state has "
            f"{state.shape[0]}")
    if init.dtype != state.dtype or update.dtype != state.dtype:
        raise InvalidArgumentError(
            f"{where}: init ({init.dtype}), update ({update.dtype}) and state ({state.dtype}) "
            "must have the same dtype; use .astype")
