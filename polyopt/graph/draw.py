"""A picture of a graph with Graphviz: operators in boxes, one cluster per fused group
(with its template), and each intermediate tensor's place in the memory arena.

``g.draw("model.svg")`` (or ``.png``, ``.dot``: the Graphviz text only) needs Graphviz's
``dot`` program (``apt-get install graphviz``) except for ``.dot``.  Compile the graph
first (``m = po.graph.compile(g)``; ``m.graph.draw(...)``) to see groups and memory.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ..errors import BackendError, InvalidArgumentError, MissingBackendError

_COLORS = {"complex": "#fde0c5", "injective": "#d5e8d4", "reduction": "#dae8fc",
           "view": "#eeeeee", "opaque": "#f8cecc"}


def to_dot(g) -> str:
    """The Graphviz text of ``g`` (see the module's docstring)."""
    groups = g.annotations.get("groups")
    plan = g.annotations.get("plan")
    steps = {s.group.name: s for s in g.annotations.get("steps", [])}
    lines = ["digraph model {", "  rankdir=TB; node [shape=box, fontsize=10, style=filled,"
             " fillcolor=white]; edge [fontsize=8];"]

    def quoted(text: str) -> str:
        return '"' + text.replace('"', r'\"') + '"'

    for name in g.inputs:
        lines.append(f"  {quoted('in:' + name)} [label={quoted(name + chr(10) + str(g.tensors[name]))},"
                     " shape=ellipse];")
    grouped = groups or [None]
    for index, group in enumerate(grouped):
        nodes = group.nodes if group is not None else g.nodes
        if group is not None:
            step = steps.get(group.name)
            label = f"{group.name} [{group.kind}]" + (f"\\n{step.template}" if step else "")
            lines.append(f"  subgraph cluster_{index} {{ label={quoted(label)}; style=filled; "
                         f"fillcolor={quoted(_COLORS.get(group.kind, '#ffffff'))};")
        for node in nodes:
            lines.append(f"    {quoted(node.name)} [label={quoted(node.op_type)}];")
        if group is not None:
            lines.append("  }")
    for node in g.nodes:
        for tensor in node.inputs:
            if not tensor or tensor in g.constants:
                continue
            source = g.producer(tensor)
            start = quoted(source.name if source else "in:" + tensor)
            label = str(g.tensors[tensor])
            if plan is not None and tensor in plan.offsets:
                label += f"\\n@{plan.offsets[tensor] / 1024:.0f} KiB"
            lines.append(f"  {start} -> {quoted(node.name)} [label={quoted(label)}];")
    for name in g.outputs:
        source = g.producer(name)
        lines.append(f"  {quoted('out:' + name)} [label={quoted(name + chr(10) + str(g.tensors[name]))},"
                     " shape=ellipse];")
        if source is not None:
            lines.append(f"  {quoted(source.name)} -> {quoted('out:' + name)};")
    if plan is not None:
        lines.append(f"  memory [shape=note, label={quoted(plan.report())}];")
    lines.append("}")
    return "\n".join(lines)


def draw(g, path) -> str:
    """Write ``g``'s picture to ``path`` (``.svg``, ``.png`` or ``.dot``)."""
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower().lstrip(".")
    if suffix not in ("svg", "png", "dot"):
        raise InvalidArgumentError(f"draw writes .svg, .png or .dot files, got {path!r}")
    text = to_dot(g)
    if suffix == "dot":
        with open(path, "w") as file:
            file.write(text)
        return path
    dot = shutil.which("dot")
    if dot is None:
        raise MissingBackendError(
            "g.draw needs Graphviz's 'dot' program: apt-get install graphviz (or write a "
            ".dot file and render it elsewhere)")
    result = subprocess.run([dot, f"-T{suffix}", "-o", path], input=text.encode(),
                            capture_output=True, check=False)
    if result.returncode != 0:
        raise BackendError(f"dot failed on the graph's picture: {result.stderr.decode()[:500]}")
    return path
