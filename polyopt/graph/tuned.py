"""The tuning space of a fused group: its template's parameters.

A group scheduled by a template with parameters (:data:`KNOBS`: the register tile of the
matrix product, the tiles of the convolutions, blocked or not) has a
:class:`polyopt.tune.Task` whose points are values of those parameters
(:func:`group_task`); its untuned schedule is the template's own choice, which is also
point 0 of the space (every knob's first value), measured first so that a record never
loses to it.  ``po.graph.compile(g, db=...)`` schedules a group with its best record
(:func:`tuned_knobs`); :mod:`.tuning` tunes them.

>>> from polyopt.machine import TargetInfo
>>> sorted(KNOBS["matmul"](TargetInfo.for_cpu("znver3")))
['cols', 'pack', 'rows']
"""

from __future__ import annotations

from ..errors import public
from ..machine import TargetInfo
from ..tune import ConfigSpace, Task
from ..tune.records import RecordsDB, best_config
from .ir import Graph
from .lowering import lower_group, schedule_group

__all__ = ["KNOBS", "group_task", "tuned_knobs"]


def _first(default, values: list) -> list:
    """``values`` with the template's own choice ``default`` first: point 0 of a group's
    space is its untuned schedule."""
    return [default] + [v for v in values if v != default]


def _matmul_knobs(info: TargetInfo) -> dict:
    lanes = info.lanes("float32")
    rows, vectors = info.register_tile()
    return {"rows": _first(rows, [2, 3, 4, 6, 8]),
            "cols": _first(vectors * lanes, [lanes, 2 * lanes, 3 * lanes, 4 * lanes]),
            "pack": [True, False]}


def _conv_knobs(info: TargetInfo) -> dict:
    lanes = info.lanes("float32")
    return {"tile_f": _first(4, [1, 2, 4, 8]),
            "max_tile": _first(4 * lanes, [2 * lanes, 4 * lanes, 6 * lanes])}


def _channel_knobs(info: TargetInfo) -> dict:
    lanes = info.lanes("float32")
    return {"channel_tile": _first(2 * lanes, [lanes, 2 * lanes, 4 * lanes]),
            "cols": _first(7, [4, 7, 8, 14]), "reduce_tile": _first(32, [8, 16, 32, 64])}


def _blocked_conv_knobs(info: TargetInfo) -> dict:
    return {"columns": _first(7, [4, 5, 6, 7, 8, 12, 14]),
            "reduce_tile": _first(32, [8, 16, 32, 64])}


def _packed_matmul_knobs(info: TargetInfo) -> dict:
    # (the columns: the panels packed at compile time)
    return {"rows": _first(info.register_tile()[0], [2, 3, 4, 6, 8])}


# a template's name (as schedule_group names it, before "+epilogue") -> its parameters,
# each with the values to try, the template's default first
KNOBS = {"matmul": _matmul_knobs, "conv2d": _conv_knobs, "conv2d_channel": _channel_knobs,
         "conv2d_blocked": _blocked_conv_knobs, "matmul_packed": _packed_matmul_knobs}


def _base_template(template: str) -> str:
    return template.split("+", 1)[0]


class _GroupTemplate:
    """``instantiate(config)`` of a group's task: the group lowered again and scheduled
    by its template with the point's parameters (a value: it can be pickled)."""

    def __init__(self, graph: Graph, group, info: TargetInfo):
        self.graph, self.group, self.info = _group_graph(graph, group), group, info

    def schedule(self, knobs):
        lowered = lower_group(self.graph, self.group.nodes, self.group.output)
        s = schedule_group(lowered, self.group.kind, self.group.nodes,
                           target_info=self.info, knobs=knobs)
        return s, [*lowered.placeholders, lowered.output]

    def __call__(self, config):
        return self.schedule({name: config[name].val for name in config.knobs})

    def default(self):
        return self.schedule(None)


def _group_graph(graph: Graph, group) -> Graph:
    """The part of ``graph`` that lowering ``group`` reads: its nodes, the tensors they
    read and write, and those of them that are constants (what a Dask worker is sent,
    not the whole model and what compiling it made)."""
    names = {name for node in group.nodes for name in (*node.inputs, *node.outputs) if name}
    return Graph(group.nodes, {n: graph.tensors[n] for n in names if n in graph.tensors},
                 {n: graph.constants[n] for n in names if n in graph.constants},
                 [n for n in group.inputs], [group.output], name=graph.name)


@public
def group_task(graph: Graph, group, template: str, *, target: str = "llvm") -> Task | None:
    """The tuning task of a fused group scheduled by ``template`` (None when that
    template has no parameters to tune)."""
    make = KNOBS.get(_base_template(template))
    if make is None:
        return None
    info = TargetInfo.for_target(target)
    space = ConfigSpace()
    for name, values in make(info).items():
        space.define_knob(name, values)
    instantiate = _GroupTemplate(graph, group, info)
    return Task(f"graph/{_base_template(template)}", space, instantiate,
                args_signature=group.name, target=target, default=instantiate.default)


def tuned_knobs(db: RecordsDB, graph: Graph, group, template: str, target: str = "llvm"):
    """The best recorded template parameters of a group (None when none was measured
    on this machine): what ``compile(..., db=)`` schedules the group with."""
    task = group_task(graph, group, template, target=target)
    config = best_config(db, task) if task is not None else None
    return None if config is None else {name: config[name].val for name in config.knobs}
