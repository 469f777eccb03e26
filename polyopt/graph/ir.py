"""The graph IR: operator nodes on a ``networkx.DiGraph``, tensor edges with shape and dtype.

A :class:`Graph` holds operator nodes (:class:`OpNode`: an ONNX-style operator type,
named input and output tensors, attributes), the shape and dtype of every tensor
(:class:`TensorInfo`), the constant tensors (weights) and the names of the graph's inputs
and outputs.  ``g.nx`` is the ``networkx.DiGraph`` of the operators: an edge
``producer -> consumer`` carries the tensors passed along it with their shapes and
dtypes.  Shapes are static: they are inferred when a node is added.

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 4), "float32")
>>> w = b.constant("w", np.ones((4, 3), "float32"))
>>> y = b.op("MatMul", [x, w])
>>> z = b.op("Relu", [y])
>>> g = b.build([z])
>>> print(g)
graph(x: float32[1, 4]) -> (Relu_1: float32[1, 3])
  constants: w float32[4, 3]
  MatMul_0 = MatMul(x, w) -> float32[1, 3]
  Relu_1 = Relu(MatMul_0) -> float32[1, 3]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InvalidArgumentError, public_methods


@dataclass(frozen=True, slots=True)
class TensorInfo:
    """A tensor's name, static shape and dtype name."""

    name: str
    shape: tuple[int, ...]
    dtype: str

    @property
    def nbytes(self) -> int:
        count = 1
        for extent in self.shape:  # Python integers: exact for any size
            count *= int(extent)
        return count * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


@dataclass(frozen=True, slots=True)
class OpNode:
    """One operator: ``outputs = op_type(inputs, **attrs)`` (an absent optional input
    is the empty name ``""``)."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict, hash=False, compare=False)


@public_methods
class Graph:
    """A static-shape operator graph; nodes are kept in a topological order.

    ``g.nodes`` (in execution order), ``g.tensors`` (name -> :class:`TensorInfo`),
    ``g.constants`` (name -> array), ``g.inputs``, ``g.outputs`` (tensor names),
    ``g.nx`` (the DiGraph), ``g.producer(t)`` and ``g.consumers(t)``.
    """

    def __init__(self, nodes, tensors: dict, constants: dict, inputs, outputs, *,
                 name: str = "graph"):
        self.name = name
        self.nodes: list[OpNode] = list(nodes)
        self.tensors: dict[str, TensorInfo] = dict(tensors)
        self.constants: dict[str, np.ndarray] = dict(constants)
        self.inputs: list[str] = list(inputs)
        self.outputs: list[str] = list(outputs)
        self.annotations: dict = {}  # filled by compile(): fused groups, memory plan
        self._index()

    def _index(self) -> None:
        self._producer: dict[str, OpNode] = {}
        self._consumers: dict[str, list[OpNode]] = {}
        import networkx as nx  # (here: 0.4 s of CPU to import, which `polyopt opt` never needs)
        graph = nx.DiGraph()
        for node in self.nodes:
            graph.add_node(node.name, op=node)
            for out in node.outputs:
                self._producer[out] = node
            for name in node.inputs:
                if not name:
                    continue
                self._consumers.setdefault(name, []).append(node)
                source = self._producer.get(name)
                if source is not None:
                    info = self.tensors[name]
                    data = graph.get_edge_data(source.name, node.name)
                    if data is None:
                        graph.add_edge(source.name, node.name, tensors=[name],
                                       shape=info.shape, dtype=info.dtype)
                    elif name not in data["tensors"]:
                        data["tensors"].append(name)
        self.nx = graph

    def producer(self, tensor: str) -> OpNode | None:
        """The node computing ``tensor`` (None for inputs and constants)."""
        return self._producer.get(tensor)

    def consumers(self, tensor: str) -> list[OpNode]:
        """The nodes reading ``tensor``, in execution order."""
        return list(self._consumers.get(tensor, ()))

    def node(self, name: str) -> OpNode:
        return self.nx.nodes[name]["op"]

    def replace(self, *, nodes=None, constants=None, outputs=None) -> "Graph":
        """A new graph with other nodes or constants (tensors not used any more dropped)."""
        nodes = self.nodes if nodes is None else list(nodes)
        constants = self.constants if constants is None else constants
        outputs = self.outputs if outputs is None else outputs
        used = set(self.inputs) | set(outputs)
        for node in nodes:
            used.update(n for n in node.inputs if n)
            used.update(node.outputs)
        tensors = {k: v for k, v in self.tensors.items() if k in used}
        for name, value in constants.items():
            if name in used:
                tensors[name] = TensorInfo(name, value.shape, value.dtype.name)
        return Graph(nodes, tensors, {k: v for k, v in constants.items() if k in used},
                     self.inputs, outputs, name=self.name)

    def __str__(self) -> str:
        def typed(names):
            return ", ".join(f"{n}: {self.tensors[n]}" for n in names)

        lines = [f"graph({typed(self.inputs)}) -> ({typed(self.outputs)})"]
        if self.constants:
            listed = [f"{k} {self.tensors[k]}" for k in list(self.constants)[:8]]
            more = len(self.constants) - len(listed)
            lines.append("  constants: " + ", ".join(listed) + (f", ... ({more} more)"
                                                                  if more > 0 else ""))
        for node in self.nodes:
            attrs = "".join(f", {k}={_short(v)}" for k, v in sorted(node.attrs.items()))
            args = ", ".join(n or "_" for n in node.inputs)
            outs = ", ".join(node.outputs)
            types = ", ".join(str(self.tensors[o]) for o in node.outputs)
            lines.append(f"  {outs} = {node.op_type}({args}{attrs}) -> {types}")
        return "\n".join(lines)

    __repr__ = __str__

    def draw(self, path: str) -> str:
        """Write a picture of the graph (SVG or PNG by the file's suffix), with the fused
        groups and the memory plan once it is compiled; returns the path."""
        from .draw import draw

        return draw(self, path)


def _short(value) -> str:
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"[{', '.join(map(str, value[:8]))}, ...]"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@public_methods
class GraphBuilder:
    """Builds a :class:`Graph` node by node, inferring shapes as it goes.

    ``b.input(name, shape, dtype)``, ``b.constant(name, array)``,
    ``b.op(op_type, inputs, outputs=None, **attrs)`` (returns the output name, or the
    names when ``outputs`` is an int above 1), ``b.build(outputs)``.
    """

    def __init__(self, name: str = "graph"):
        self.name = name
        self._nodes: list[OpNode] = []
        self._tensors: dict[str, TensorInfo] = {}
        self._constants: dict[str, np.ndarray] = {}
        self._inputs: list[str] = []
        self._counter = 0

    def _fresh(self, name: str) -> str:
        if name in self._tensors:
            raise InvalidArgumentError(f"the tensor name '{name}' is used twice; names must "
                                       "be unique in a graph")
        return name

    def input(self, name: str, shape, dtype="float32") -> str:
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise InvalidArgumentError(f"input '{name}' has a negative dimension: {shape}")
        self._tensors[self._fresh(name)] = TensorInfo(name, shape, np.dtype(dtype).name)
        self._inputs.append(name)
        return name

    def constant(self, name: str, value) -> str:
        array = np.array(value, order="C")  # (ascontiguousarray makes a scalar 1-D)
        self._tensors[self._fresh(name)] = TensorInfo(name, array.shape, array.dtype.name)
        self._constants[name] = array
        return name

    def op(self, op_type: str, inputs, outputs=None, *, name: str | None = None, **attrs):
        from .contracts import infer_node

        node_name = name or f"{op_type}_{self._counter}"
        self._counter += 1
        if outputs is not None and not isinstance(outputs, int):
            outputs = list(outputs)
            while len(outputs) > 1 and not outputs[-1]:  # absent optional outputs
                outputs.pop()
        if outputs is None or isinstance(outputs, int):
            count = outputs or 1
            outputs = [node_name if count == 1 else f"{node_name}_{k}" for k in range(count)]
        for tensor in inputs:
            if tensor and tensor not in self._tensors:
                raise InvalidArgumentError(
                    f"node '{node_name}' ({op_type}) reads the tensor '{tensor}', which no "
                    "input, constant or earlier node defines")
        node = OpNode(node_name, op_type, tuple(inputs), tuple(outputs), dict(attrs))
        infos = infer_node(node, [self._tensors.get(t) if t else None for t in inputs],
                           self._constants)
        for out, (shape, dtype) in zip(outputs, infos):
            self._tensors[self._fresh(out)] = TensorInfo(out, tuple(shape), dtype)
        self._nodes.append(node)
        return outputs[0] if len(outputs) == 1 else list(outputs)

    def build(self, outputs) -> Graph:
        outputs = [outputs] if isinstance(outputs, str) else list(outputs)
        for out in outputs:
            if out not in self._tensors:
                raise InvalidArgumentError(f"the graph output '{out}' is not a tensor of it")
        return Graph(self._nodes, self._tensors, self._constants, self._inputs, outputs,
                     name=self.name)
