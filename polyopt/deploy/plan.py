"""A compiled model's execution plan as data: what the C runtime runs.

The plan is read from the executor's own (:class:`~polyopt.graph.executor.CompiledModel`):
its steps in order, each kernel's arguments as the executor passes them (the group's
input tensors then its output), and where each tensor lives, from the executor's aliases
(``m.root``: a view shares its input's buffer, an in-place output its input's) and
memory plan (``m.plan.offsets``: an intermediate tensor at its offset of the arena).  A
location is ``[kind, value]``: ``["input", i]`` / ``["output", i]`` (the caller's
buffers), ``["arena", offset]``, ``["weights", offset]`` (a constant, in the weights
file), ``[kind, value, offset]`` a place ``offset`` bytes into one.  A graph output that
no kernel writes (a view, a constant, an input) is copied where the executor copies it.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder(); x = b.input("x", (2, 4))
>>> y = b.op("Relu", [b.op("Add", [x, b.constant("c", np.ones(4, "float32"))])])
>>> plan, weights = execution_plan(po.graph.compile(b.build([y]), num_threads=1))
>>> plan["steps"][0]["args"], len(weights)
([['input', 0], ['weights', 0], ['output', 0]], 16)
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError, public

ALIGNMENT = 64  # bytes: each constant starts on a cache line of the weights


class ExportError(InvalidArgumentError):
    """A compiled model the export cannot write as a C library: ``problem`` in
    :attr:`PROBLEMS`; ``groups`` the steps (fused groups) involved, ``tensor`` the tensor,
    ``outputs`` the model's outputs, ``sizes`` a kernel's size parameters, ``dtype`` and
    ``shape`` how a kernel takes the tensor.

    >>> err = ExportError("offload", groups=("g1", "g2"))
    >>> (err.problem, err.groups)
    ('offload', ('g1', 'g2'))
    """

    PROBLEMS = {
        "offload": "the model runs {groups} on the simulated accelerator (offload=), which "
                   "exists only in Python; the C runtime runs CPU kernels: compile the model "
                   "without offload to export it",
        "duplicate_output": "the model names an output twice ({outputs}); give each output "
                            "its own tensor",
        "no_buffer": "tensor {tensor!r} has no buffer in the plan; report this model",
        "lstm_runner": "the LSTM {groups} needs its runner to be exported: use "
                       "m.export_library",
        "symbolic_sizes": "the kernel of {groups} takes sizes ({sizes}); report this model",
        "argument": "group {groups} passes {tensor} as {dtype}{shape}; report this model",
        "recurrence": "the model runs {nodes}, which the C runtime does not run (it runs a "
                      "forward LSTM with outputs Y and Y_h only); run the model with "
                      "polyopt.graph.compile in Python",
    }

    def __init__(self, problem: str, *, groups: tuple[str, ...] = (), tensor: str = "",
                 outputs: tuple[str, ...] = (), sizes: tuple[str, ...] = (), dtype: str = "",
                 shape: tuple = (), nodes: tuple[str, ...] = ()):
        self.problem, self.groups, self.tensor = problem, tuple(groups), tensor
        self.nodes = tuple(nodes)
        self.outputs, self.sizes, self.dtype, self.shape = tuple(outputs), tuple(sizes), \
            dtype, tuple(shape)
        super().__init__(self.PROBLEMS[problem].format(
            groups=", ".join(self.groups), tensor=tensor, outputs=list(self.outputs),
            sizes=", ".join(self.sizes), dtype=dtype, shape=list(self.shape),
            nodes=", ".join(self.nodes)))


@public
def execution_plan(model, runners: dict | None = None) -> tuple[dict, bytes]:
    """``(plan, weights)`` of a compiled model: the plan as JSON-ready data (inputs,
    outputs, arena size, steps with argument locations; kernels numbered in step order,
    ``steps[k]["kernel"]``) and the constants the kernels read, concatenated.  An LSTM
    step needs its runner in ``runners`` (by step index, see
    :func:`~polyopt.deploy.objects.kernel_objects`): its projection and recurrence
    kernels become two steps, its arrays weights and arena, and its states are copied
    into ``Y`` as the runner copies them."""
    g = model.graph
    refuse_unsupported(model)
    runners = runners or {}
    if len(set(g.outputs)) != len(g.outputs):
        raise ExportError("duplicate_output", outputs=tuple(g.outputs))
    weights = _Weights()
    places = {name: ["input", k] for k, name in enumerate(g.inputs)}
    places.update({name: ["output", k] for k, name in enumerate(g.outputs)})

    def where(name: str) -> list:
        root = model.root.get(name, name)
        if root in model.plan.offsets:
            return ["arena", int(model.plan.offsets[root])]
        if root in places:
            return list(places[root])
        if root in g.constants:
            return ["weights", weights.offset(root, g.constants[root])]
        raise ExportError("no_buffer", tensor=name)

    steps, kernels, written = [], 0, set()
    scratch = [_aligned(int(model.plan.arena_bytes))]  # the LSTMs' arrays, above the plan
    for index, step in enumerate(model.steps):
        out = step.group.output
        if step.template == "lstm":
            if index not in runners:
                raise ExportError("lstm_runner", groups=(step.group.name,))
            steps += _lstm_steps(step, runners[index], where, weights, scratch, kernels)
            kernels += 2
            written.add(out)
            continue
        if step.kernel is None:  # a view: only a graph output is copied (as run() does)
            if out in g.outputs:
                steps.append(_copy(step.group.name, where(step.inputs[0]), ["output",
                                   g.outputs.index(out)], g.tensors[out].nbytes))
                written.add(out)
            continue
        if step.kernel.signature.params:
            raise ExportError("symbolic_sizes", groups=(step.group.name,),
                              sizes=tuple(map(str, step.kernel.signature.params)))
        args = [where(name) for name in step.inputs] + [where(out)]
        for name, shape, spec in zip([*step.inputs, out], step.kernel_shapes,
                                     step.kernel.signature.arrays):
            info = g.tensors[name]
            if str(spec.dtype) != str(info.dtype) or int(np.prod(shape)) != \
                    int(np.prod(info.shape)):
                raise ExportError("argument", groups=(step.group.name,), tensor=name,
                                  dtype=str(spec.dtype), shape=tuple(shape))
        steps.append({"group": step.group.name, "ops": "+".join(step.group.op_types),
                      "template": step.template, "kernel": kernels, "args": args})
        kernels += 1
        written.add(out)
    for k, name in enumerate(g.outputs):  # a constant or an input given back
        if name not in written:
            steps.append(_copy(name, where(name), ["output", k], g.tensors[name].nbytes))
    plan = {"inputs": [_tensor(g, n) for n in g.inputs],
            "outputs": [_tensor(g, n) for n in g.outputs],
            "arena_bytes": scratch[0], "weights_bytes": len(weights.data),
            "constants": weights.placed, "threads": int(model.num_threads), "steps": steps}
    return plan, bytes(weights.data)


def _named(node) -> str:
    return f"node '{node.name}' ({node.op_type.removesuffix('States')})"


def refuse_unsupported(model) -> None:
    """Raise :class:`ExportError` for a model with steps the C runtime cannot run."""
    refused = tuple(s.group.name for s in model.steps
                    if s.kernel is not None and s.template == "accel")
    if refused:
        raise ExportError("offload", groups=refused)
    # the C runtime runs an LSTM's two kernels; the other recurrences (GRU, RNN, and every
    # form run per direction with NumPy around the kernels: reverse, bidirectional,
    # layout=1, sequence_lens, Y_c) only in Python
    recurrent = tuple(_named(s.group.nodes[0]) for s in model.steps if s.kernel is not None
                      and s.group.kind == "opaque" and s.template != "lstm")
    if recurrent:
        raise ExportError("recurrence", nodes=recurrent)


def _lstm_steps(step, runner, where, weights, scratch: list, first: int) -> list[dict]:
    """The LSTM runner's ``call_pointers`` as plan steps: the projection, the recurrence,
    then copies of the states' h into ``Y`` (the odd and even steps interleaved when the
    recurrence runs in pairs)."""
    name = step.group.name

    def arena(array) -> list:
        place = ["arena", scratch[0]]
        scratch[0] = _aligned(scratch[0] + array.nbytes)
        return place

    def constant(label: str, array) -> list:
        return ["weights", weights.offset(f"{name}/{label}", array)]

    projected = arena(runner.projected)
    states = [arena(a) for a in runner.states]
    initial = [where(n) if n else constant("zeros", runner.zeros) for n in runner._initial]
    peep = [] if runner.peep is None else [constant("peep", runner.peep)]
    x = where(step.inputs[0])
    y = where(step.group.output)
    seq, batch, hidden = runner.shape
    row = batch * hidden * 4  # one time step's h, in bytes
    steps = [{"group": name, "ops": "LSTM projection", "template": "lstm", "kernel": first,
              "args": [x, constant("w_t", runner.w_t), constant("bias", runner.bias),
                       projected]},
             {"group": name, "ops": "LSTM recurrence", "template": "lstm",
              "kernel": first + 1, "args": [projected, constant("r_t", runner.r_t),
                                            *initial, *peep, *states]}]
    if runner.in_pairs:  # Y[:, j] = states[2 j][1:]
        for j in (0, 1):
            steps.append(_copy(name, _at(states[2 * j], row), _at(y, j * row), row,
                               rows=seq // 2, strides=(row, 2 * row)))
    else:
        steps.append(_copy(name, _at(states[0], row), y, seq * row))
    return steps


def _at(place: list, offset: int) -> list:
    """A location ``offset`` bytes further."""
    return [place[0], place[1], (place[2] if len(place) > 2 else 0) + offset]


def _aligned(size: int) -> int:
    return -(-size // ALIGNMENT) * ALIGNMENT


def _tensor(g, name: str) -> dict:
    info = g.tensors[name]
    return {"name": name, "dtype": np.dtype(info.dtype).name,
            "shape": [int(d) for d in info.shape], "bytes": int(info.nbytes)}


def _copy(group: str, source: list, target: list, size: int, rows: int = 1,
          strides: tuple = (0, 0)) -> dict:
    """A copy of ``rows`` rows of ``size`` bytes, ``strides`` (source, target) apart."""
    copy = {"group": group, "ops": "copy", "kernel": -1, "args": [source, target],
            "bytes": int(size)}
    if rows != 1:
        copy.update(rows=int(rows), strides=[int(s) for s in strides])
    return copy


class _Weights:
    """The constants the kernels read, each once, 64-byte aligned, in C order."""

    def __init__(self):
        self.data = bytearray()
        self.offsets: dict[str, int] = {}
        self.placed: list[dict] = []

    def offset(self, name: str, value) -> int:
        if name not in self.offsets:
            array = np.ascontiguousarray(value)
            self.data += bytes(-len(self.data) % ALIGNMENT)
            self.offsets[name] = len(self.data)
            self.data += array.tobytes()
            self.placed.append({"name": name, "offset": self.offsets[name],
                                "dtype": array.dtype.name, "shape": list(array.shape)})
        return self.offsets[name]
