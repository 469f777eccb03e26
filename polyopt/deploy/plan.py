"""A compiled model's execution plan as data: what the C runtime runs.

The plan is read from the executor's own (:class:`~polyopt.graph.executor.CompiledModel`):
its steps in order, each kernel's arguments as the executor passes them (the group's
input tensors then its output), and where each tensor lives, from the executor's aliases
(``m.root``: a view shares its input's buffer, an in-place output its input's) and
memory plan (``m.plan.offsets``: an intermediate tensor at its offset of the arena).  A
location is ``[kind, value]``: ``["input", i]`` / ``["output", i]`` (the caller's
buffers), ``["arena", offset]``, ``["weights", offset]`` (a constant, in the weights
file).  A graph output that no kernel writes (a view, a constant, an input) is copied
where the executor copies it.

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
    """A compiled model that cannot be exported as a C library (a step the C runtime does
    not run: an LSTM's time loop, an accelerator's groups)."""


@public
def execution_plan(model) -> tuple[dict, bytes]:
    """``(plan, weights)`` of a compiled model: the plan as JSON-ready data (inputs,
    outputs, arena size, steps with argument locations; kernels numbered in step order,
    ``steps[k]["kernel"]``) and the constants the kernels read, concatenated."""
    g = model.graph
    refused = [f"{s.group.name} ({s.template})" for s in model.steps
               if s.kernel is not None and s.template in ("lstm", "accel")]
    if refused:
        raise ExportError(
            f"the model runs {', '.join(refused)} outside compiled kernels (an LSTM's time "
            "loop, an accelerator's groups run from Python); the C runtime cannot run them "
            "yet: export a model without LSTM nodes and without offload")
    if len(set(g.outputs)) != len(g.outputs):
        raise ExportError(f"the model names an output twice ({g.outputs}); give each output "
                          "its own tensor")
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
        raise ExportError(f"tensor {name!r} has no buffer in the plan; report this model")

    steps, kernels, written = [], 0, set()
    for step in model.steps:
        out = step.group.output
        if step.kernel is None:  # a view: only a graph output is copied (as run() does)
            if out in g.outputs:
                steps.append(_copy(step.group.name, where(step.inputs[0]), ["output",
                                   g.outputs.index(out)], g.tensors[out].nbytes))
                written.add(out)
            continue
        if step.kernel.signature.params:
            raise ExportError(f"the kernel of {step.group.name} takes sizes "
                              f"({', '.join(step.kernel.signature.params)}); report this model")
        args = [where(name) for name in step.inputs] + [where(out)]
        for name, shape, spec in zip([*step.inputs, out], step.kernel_shapes,
                                     step.kernel.signature.arrays):
            info = g.tensors[name]
            if str(spec.dtype) != str(info.dtype) or int(np.prod(shape)) != \
                    int(np.prod(info.shape)):
                raise ExportError(f"group {step.group.name} passes {name} as "
                                  f"{spec.dtype}{list(shape)}; report this model")
        steps.append({"group": step.group.name, "ops": "+".join(step.group.op_types),
                      "template": step.template, "kernel": kernels, "args": args})
        kernels += 1
        written.add(out)
    for k, name in enumerate(g.outputs):  # a constant or an input given back
        if name not in written:
            steps.append(_copy(name, where(name), ["output", k], g.tensors[name].nbytes))
    plan = {"inputs": [_tensor(g, n) for n in g.inputs],
            "outputs": [_tensor(g, n) for n in g.outputs],
            "arena_bytes": int(model.plan.arena_bytes), "weights_bytes": len(weights.data),
            "constants": weights.placed, "threads": int(model.num_threads), "steps": steps}
    return plan, bytes(weights.data)


def _tensor(g, name: str) -> dict:
    info = g.tensors[name]
    return {"name": name, "dtype": np.dtype(info.dtype).name,
            "shape": [int(d) for d in info.shape], "bytes": int(info.nbytes)}


def _copy(group: str, source: list, target: list, size: int) -> dict:
    return {"group": group, "ops": "copy", "kernel": -1, "args": [source, target],
            "bytes": int(size)}


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
