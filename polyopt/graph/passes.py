"""Graph passes: constant folding, batch-norm folding, constant weight layouts, fusion.

Each pass takes a :class:`~polyopt.graph.ir.Graph` and returns a new one (or, for
:func:`fuse`, the fused groups in execution order).  The passes before fusion run in
the order of :func:`graph_passes`, a named :class:`~polyopt.ast.pipeline.Pipeline` like
lowering's: ``POLYOPT_PRINT_PASSES=1`` prints the graph after each, and
``po.graph.compile(g, passes=edit)`` (or :func:`optimize`) runs the pipeline as ``edit``
changed it, e.g. with a pass of one's own inserted:

>>> print(graph_passes(target_info=TargetInfo.for_cpu("znver3")))  # doctest: +NORMALIZE_WHITESPACE
fold_constants -> fold_batch_norm -> transpose_constant_weights -> fold_constants_again
-> pack_conv_weights -> block_activations -> plain_pointwise -> pack_matmul_weights

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder()
>>> x = b.input("x", (1, 2, 4, 4))
>>> w = b.constant("w", np.ones((3, 2, 1, 1), "float32"))
>>> y = b.op("Relu", [b.op("Conv", [x, w])])
>>> [(grp.kind, [n.op_type for n in grp.nodes]) for grp in fuse(b.build([y]))]
[('complex', ['Conv', 'Relu'])]
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..ast.pipeline import Pass, Pipeline, edited, run_inserted
from ..errors import InvalidArgumentError, public
from ..machine import TargetInfo
from .ir import Graph, OpNode
from .lowering import data_inputs, evaluate_nodes
from .registry import OPS, attr
from .blocked import block_activations, plain_pointwise
from .layouts import NARROW_POINTWISE, pack_conv_weights, pack_matmul_weights
from .vnni_rewrite import amx_conv_layout, vnni_rewrite


@public
def fold_constants(g: Graph) -> Graph:
    """Nodes whose inputs are all constants are computed once, at compile time (by
    polyopt, with the default schedule); their outputs become constants."""
    constants = dict(g.constants)
    nodes = []
    for node in g.nodes:
        inputs = [n for n in node.inputs if n]
        if not inputs or not all(n in constants for n in inputs) or \
                any(o in g.outputs for o in node.outputs):
            nodes.append(node)
            continue
        out = node.outputs[0]
        if OPS[node.op_type].kind == "view":
            constants[out] = np.ascontiguousarray(constants[node.inputs[0]]).reshape(
                g.tensors[out].shape)
        else:
            constants[out] = evaluate_nodes(g, [node], out, constants)
    return g.replace(nodes=nodes, constants=constants)


@public
def fold_batch_norm(g: Graph) -> Graph:
    """``BatchNormalization(Conv(x, W, B))`` with constant parameters becomes one
    ``Conv(x, W * s, (B - mean) * s + beta)``, ``s = scale / sqrt(var + eps)``, when
    nothing else reads the convolution's output."""
    constants = dict(g.constants)
    replaced: dict[str, OpNode] = {}
    dropped: set[str] = set()
    for node in g.nodes:
        if node.op_type != "BatchNormalization":
            continue
        conv = g.producer(node.inputs[0])
        params = node.inputs[1:5]
        if conv is None or conv.op_type != "Conv" or len(g.consumers(conv.outputs[0])) != 1 \
                or conv.outputs[0] in g.outputs or not all(p in constants for p in params):
            continue
        weight = conv.inputs[1]
        bias = conv.inputs[2] if len(conv.inputs) > 2 and conv.inputs[2] else None
        if weight not in constants or (bias is not None and bias not in constants):
            continue
        scale, beta, mean, var = (constants[p].astype(np.float64) for p in params)
        factor = scale / np.sqrt(var + float(attr(node, "epsilon")))
        w = constants[weight].astype(np.float64) * factor[:, None, None, None]
        b = (constants[bias].astype(np.float64) if bias else 0.0) - mean
        dtype = constants[weight].dtype
        constants[f"{node.name}_folded_w"] = w.astype(dtype)
        constants[f"{node.name}_folded_b"] = (b * factor + beta).astype(dtype)
        replaced[node.name] = OpNode(conv.name, "Conv", (
            conv.inputs[0], f"{node.name}_folded_w", f"{node.name}_folded_b"),
            node.outputs, dict(conv.attrs))
        dropped.add(conv.name)
    nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in dropped]
    return g.replace(nodes=nodes, constants=constants)


def transpose_constant_weights(g: Graph) -> Graph:
    """``Gemm(A, B, transB=1)`` with a constant ``B`` reads ``B.T``, stored once at
    compile time, with ``transB=0`` (the matmul template packs ``B[k, j]`` panels)."""
    constants = dict(g.constants)
    nodes = []
    for node in g.nodes:
        if node.op_type == "Gemm" and attr(node, "transB") and node.inputs[1] in constants:
            name = f"{node.inputs[1]}_transposed"
            constants[name] = np.ascontiguousarray(constants[node.inputs[1]].T)
            attrs = {**node.attrs, "transB": 0}
            node = OpNode(node.name, node.op_type,
                          (node.inputs[0], name, *node.inputs[2:]), node.outputs, attrs)
        nodes.append(node)
    return g.replace(nodes=nodes, constants=constants)


def graph_passes(*, layouts: bool = True, vnni: bool | None = None,
                 target_info: TargetInfo | None = None) -> Pipeline:
    """The graph passes before fusion, in order: constants and batch norms folded,
    constant ``Gemm`` weights transposed, constants folded again; ``vnni_rewrite``:
    QLinearConv and MatMulInteger on the VNNI kernels (``vnni``; None: where
    ``target_info``, the machine compiled for (the host by default), has AVX-512 VNNI,
    :func:`~.vnni_rewrite.vnni_rewrite`); with ``layouts``, convolution weights blocked
    as their schedule reads them (:mod:`.layouts`), the activations between blocked
    convolutions blocked too (:mod:`.blocked`), pointwise convolutions on wide rows
    left plain, and matmul weights packed in panels.  Each pass maps a Graph to a Graph."""
    info = target_info or TargetInfo.host()
    before_layouts: dict[str, Graph] = {}  # what plain_pointwise compares with

    def pack_conv(g: Graph) -> Graph:
        before_layouts["graph"] = g
        return pack_conv_weights(g, target_info=info)

    def plain(g: Graph) -> Graph:
        width = max(info.lanes("float32"), NARROW_POINTWISE)
        return plain_pointwise(g, before_layouts.get("graph", g), width)

    passes = [Pass("fold_constants", fold_constants),
              Pass("fold_batch_norm", fold_batch_norm),
              Pass("transpose_constant_weights", transpose_constant_weights),
              Pass("fold_constants_again", fold_constants)]
    if info.has_vnni if vnni is None else vnni:
        passes.append(Pass("vnni_rewrite", vnni_rewrite))
        if info.tensor_unit("int8") == "amx":  # (the machine model's choice)
            passes.append(Pass("amx_conv_layout", amx_conv_layout))
    if layouts:
        passes += [Pass("pack_conv_weights", pack_conv),
                   Pass("block_activations", block_activations),
                   Pass("plain_pointwise", plain),
                   Pass("pack_matmul_weights",
                        lambda g: pack_matmul_weights(g, target_info=info))]
    return Pipeline(tuple(passes), "graph")


@public
def optimize(g: Graph, *, layouts: bool = True, vnni: bool | None = None,
             target_info: TargetInfo | None = None, passes=None,
             print_passes: bool | None = None) -> Graph:
    """``g`` after the graph passes before fusion (:func:`graph_passes`, with
    ``layouts``, ``vnni`` and ``target_info``), as ``passes`` edits them: a function
    from that pipeline to the one to run (e.g. ``lambda p: p.insert(Pass("mine", f),
    after="fold_batch_norm")``, ``f`` mapping a Graph to a Graph) or a Pipeline.
    ``print_passes`` (by default ``POLYOPT_PRINT_PASSES``) prints the graph after each."""
    if not isinstance(g, Graph):
        raise InvalidArgumentError(f"optimize takes a po.graph.Graph, got {type(g).__name__}")
    own = graph_passes(layouts=layouts, vnni=vnni, target_info=target_info)
    pipeline = edited(own, passes)
    verbose = print_passes if print_passes is not None else \
        os.environ.get("POLYOPT_PRINT_PASSES", "") not in ("", "0")
    for step in pipeline.passes:
        start = time.perf_counter()
        g = step.run(g) if step in own.passes else run_inserted(step, g, Graph)
        if verbose:
            elapsed = (time.perf_counter() - start) * 1e3
            print(f"// after graph pass {step.name} ({elapsed:.1f} ms)\n{g}\n",
                  file=sys.stderr)
    return g


@dataclass
class Group:
    """Operators that become one kernel (``view`` groups: no kernel, the output shares
    its input's memory).  ``output`` is the tensor the group computes."""

    name: str
    kind: str
    nodes: list[OpNode] = field(default_factory=list)
    output: str = ""

    @property
    def inputs(self) -> list[str]:
        """The tensors the group reads from outside (inputs, constants, other groups)."""
        inside = {o for n in self.nodes for o in n.outputs}
        seen: list[str] = []
        for node in self.nodes:
            for name in data_inputs(node):
                if name not in inside and name not in seen:
                    seen.append(name)
        return seen

    @property
    def op_types(self) -> list[str]:
        return [n.op_type for n in self.nodes]


# A fused elementwise chain is inlined into one expression, which every later step
# (inlining, checking, code generation) walks whole: bounded, the compile time of a
# long chain grows linearly with its length (a chain of 1,000 Neg/Relu took 8-35 s
# fused whole, 4,000 took 271 s).  An operator reads its input ``_READS`` times.
MAX_FUSED_NODES = 32
MAX_FUSED_WEIGHT = 256
_READS = {"Gelu": 5, "Erf": 4, "Div": 6, "QuantizeLinear": 8}


def _joined_weight(node, group, weight: dict) -> int:
    """The expression size of ``node``'s output fused into ``group``: its inputs
    computed inside the group count their own size times the reads of the operator."""
    inside = {n.outputs[0] for n in group.nodes} if group is not None else set()
    reads = _READS.get(node.op_type, 1)
    return 1 + sum(reads * weight.get(name, 1) if name in inside else 1
                   for name in data_inputs(node))


@public
def fuse(g: Graph, *, enabled: bool = True) -> list[Group]:
    """The fused groups of ``g`` in execution order, by pattern kind: an elementwise
    (injective) operator joins the group computing one of its inputs when that group is
    a convolution or matrix product with its epilogue so far (``complex``) or an
    elementwise chain, and nothing else reads that input (a residual add joins the
    convolution before it; its other operand is read from memory).  Reductions and
    views stay alone.  With ``enabled=False`` each operator is its own group."""
    groups: list[Group] = []
    open_tip: dict[str, Group] = {}
    position: dict[int, int] = {}
    weight: dict[str, int] = {}  # a fused tensor's expression size (see group_weight)
    for index, node in enumerate(g.nodes):
        kind = OPS[node.op_type].kind
        target = None
        if enabled and kind == "injective":
            for name in data_inputs(node):
                group = open_tip.get(name)
                readers = {n.name for n in g.consumers(name)}
                if group is not None and group.kind in ("complex", "injective") \
                        and readers == {node.name} and name not in g.outputs \
                        and len(group.nodes) < MAX_FUSED_NODES \
                        and _joined_weight(node, group, weight) <= MAX_FUSED_WEIGHT:
                    target = group
                    break
        weight[node.outputs[0]] = _joined_weight(node, target, weight) if target else 1
        if target is None:
            target = Group(f"{node.op_type.lower()}_{len(groups)}", kind)
            groups.append(target)
        else:
            open_tip.pop(target.output, None)
        target.nodes.append(node)
        target.output = node.outputs[0]
        open_tip[target.output] = target
        position[id(target)] = index
    return sorted(groups, key=lambda grp: position[id(grp)])
