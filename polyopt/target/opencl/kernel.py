"""One planned OpenCL kernel: its NDRange, work-items, ``__local``/private buffers, barriers.

:func:`.plan.plan_kernels` fills a :class:`DeviceKernel` per top-level nest; the code
generator (:mod:`.codegen`) prints it.  Group and local ids are named
:data:`GROUP_IDS` and :data:`LOCAL_IDS` in generated code and in isl maps; a loop bound
to ``blockIdx.y`` gives the group id along dimension :func:`tag_dim` = 1.

>>> tag_dim("threadIdx.y"), is_block("blockIdx.x"), is_thread("blockIdx.x")
(1, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import islpy as isl

from ...ast.from_isl import index_expr
from ...ast.nodes import For, IndexExpr, Node
from ...domain.program import Array, Program


DIMS = "xyz"

# the names of group and local ids in generated code and in isl maps
GROUP_IDS = tuple(f"po_g{k}" for k in range(3))
LOCAL_IDS = tuple(f"po_l{k}" for k in range(3))


def tag_dim(tag: str) -> int:
    return DIMS.index(tag[-1])


def is_block(kind: str) -> bool:
    return kind.startswith("blockIdx")


def is_thread(kind: str) -> bool:
    return kind.startswith("threadIdx")


@dataclass
class Buffer:
    """A ``"shared"`` or ``"local"`` array as stored in one kernel: element ``e`` is at
    ``e - lower`` of a dense box of ``sizes``; ``lower`` depends on the key of the copy
    (the loops enclosing every access, and the local ids for a "local" buffer)."""

    array: Array
    lower: tuple[IndexExpr, ...]
    sizes: tuple[int, ...]
    keys: dict = field(default_factory=dict)      # stmt -> { instance -> key }
    starts: tuple = ()                            # lower bounds as isl.PwAff of the key


@dataclass
class DeviceKernel:
    name: str
    body: Node
    stmts: frozenset[str]
    extents: dict[str, isl.PwAff]            # blockIdx tag -> number of groups (params)
    local_size: tuple[int, int, int]
    buffers: dict[str, Buffer] = field(default_factory=dict)
    trees: dict[str, str] = field(default_factory=dict)       # stmt -> threadIdx tag
    barrier_pairs: set = field(default_factory=set)           # (source stmt, sink stmt)
    barrier_dims: set = field(default_factory=set)            # uniform loops: at body end
    host: tuple = ()        # the host loops (For) and guards (If) around the kernel
    work_items: dict = field(default_factory=dict)            # stmt -> isl.Map
    rows: dict = field(default_factory=dict)                  # stmt -> schedule row
    udepth: dict = field(default_factory=dict)                # stmt -> first thread dim
    first: dict = field(default_factory=dict)   # id(bound For) -> its first value (isl)

    def first_value(self, loop: For, names: dict[int, str]) -> IndexExpr | None:
        """The first value of a bound loop, as the plan counts ids from it, in terms of
        the enclosing loops (``names``: schedule dimension -> loop variable); None when
        the plan has none (a loop of one iteration)."""
        low = self.first.get(id(loop))
        if low is None:
            return None
        dims = low.dim(isl.dim_type.in_)
        return key_expr(low, [names.get(d, f"po_c{d}") for d in range(dims)])

    @property
    def host_loops(self) -> tuple[For, ...]:
        """The serial loops run on the host around this kernel (their variables are
        arguments of the kernel)."""
        return tuple(n for n in self.host if isinstance(n, For))

    def groups(self, params: dict[str, int]) -> tuple[int, int, int]:
        """The number of work-groups along x, y, z for these sizes."""
        counts = [1, 1, 1]
        for tag, extent in self.extents.items():
            counts[tag_dim(tag)] = max(0, evaluate(extent, params))
        return tuple(counts)


def evaluate(pa: isl.PwAff, params: dict[str, int]) -> int:
    space = pa.get_domain_space()
    point = isl.Point.zero(space)
    for pos, name in enumerate(space.get_var_names(isl.dim_type.param)):
        point = point.set_coordinate_val(isl.dim_type.param, pos, isl.Val(params[name]))
    value = pa.eval(point)
    return 0 if value.is_nan() else value.to_python()


def key_expr(low: isl.PwAff, names: list[str]) -> IndexExpr:
    """A function of loop variables or ids (``names``, one per input dimension) as an
    index expression."""
    relation = isl.Map.from_pw_aff(low)
    n_param = relation.dim(isl.dim_type.param)
    keys = relation.dim(isl.dim_type.in_)
    relation = relation.move_dims(isl.dim_type.param, n_param, isl.dim_type.in_, 0, keys)
    for k, name in enumerate(names):
        relation = relation.set_dim_name(isl.dim_type.param, n_param + k, name)
    value = relation.range().dim_max(0)
    build = isl.AstBuild.from_context(value.domain())
    return index_expr(build.expr_from_pw_aff(value))


def access_items(program: Program, kernel: DeviceKernel, stmt: str, array: str) -> isl.Map:
    """{ instance -> [g, l] }: the work-item that performs ``stmt``'s access to ``array``.
    A tree reduction's accumulator is read and written by the group's first work-item."""
    items = kernel.work_items[stmt]
    tag = kernel.trees.get(stmt)
    if tag is not None and program.array_of(program.statement(stmt).target.tensor).name \
            == array:
        items = items.apply_range(_zero_local(tag_dim(tag)))
    return items


def _zero_local(dim: int) -> isl.Map:
    names = "g0, g1, g2, l0, l1, l2"
    out = names.replace(f"l{dim}", "0")
    return isl.Map(f"{{ [{names}] -> [{out}] }}")
