"""Spaces without a template: the automatic scheduler's choices, and the library
templates' own parameters.

:func:`auto_task` tunes any tensor expression, ``@po.kernel`` or C kernel: its knobs
are :func:`polyopt.auto_schedule`'s options (point 0: its defaults) (tile sizes per band level, the register
tile's rows (unroll-and-jam) and columns (the vector loop), vectorizing, the parallel
loop, packing a contraction's panels, the fusion strategy, a stencil's tiles, the rows
of matrix-vector work side by side, the order of a tile's loops above its innermost
one); each point is the schedule
``auto_schedule`` makes with them (checked like every schedule; where a choice is
illegal it falls back as it always does), and the untuned schedule is its default.
:func:`matmul_task` and :func:`conv2d_task` tune the parameters of
:func:`polyopt.templates.matmul_template` (register tile, packing, parallel loop) and
of ``conv2d_template`` (channel tile, column tile, parallel loop).

>>> import polyopt as po
>>> A = po.placeholder((32, 32), name="A")
>>> B = po.compute((32, 32), lambda i, j: A[j, i] + 1.0, name="B")
>>> task = auto_task(B)
>>> list(task.space.knobs)[:3], task.name
(['tile_0', 'tile_1', 'tile_2'], 'B')
"""

from __future__ import annotations

from ..errors import InvalidArgumentError, public
from ..frontend.kernel import Kernel
from ..machine import TargetInfo
from ..schedules.auto import auto_schedule
from ..schedules.auto_jam import ROWS
from ..te.tensor import Tensor
from ..transform.schedule import Schedule, create_schedule
from .space import ConfigSpace
from .task import Task, unscheduled

__all__ = ["auto_options", "auto_space", "auto_task", "conv2d_task", "matmul_task"]

TILES = [0, 8, 16, 32, 64, 128]  # 0: the cache model's size (level 0), the previous (others)


@public
def auto_space(target_info: TargetInfo) -> ConfigSpace:
    """The knobs of :func:`auto_task` for a machine (register tiles in its lanes)."""
    lanes = target_info.lanes("float32")
    space = ConfigSpace()
    for level in range(3):
        space.define_knob(f"tile_{level}", TILES)
    space.define_knob("unroll_jam", [None, 0, 2, 4, 6, 8])
    space.define_knob("register_columns", [None, lanes, 2 * lanes, 4 * lanes])
    space.define_knob("vectorize", [True, False])
    space.define_knob("parallel", [True, False])
    space.define_knob("pack_panels", [False, True])
    space.define_knob("fusion", ["max", "smart", "min"])
    space.define_knob("stencil_tiling", ["auto", "diamond", "skewed"])
    space.define_knob("jam_rows", [ROWS, 0, 4, 16])
    space.define_knob("point_order", list(range(6)))  # (the 3! orders of 3 loops)
    return space


@public
def auto_options(config) -> dict:
    """The ``auto_schedule`` keyword arguments of a point of :func:`auto_space`."""
    sizes = []
    for level in range(3):
        size = config[f"tile_{level}"].val
        if level == 0 and size == 0:
            break
        sizes.append(size or sizes[-1])
    options = {name: config[name].val for name in
               ("unroll_jam", "register_columns", "vectorize", "parallel", "pack_panels",
                "fusion", "stencil_tiling", "jam_rows", "point_order")}
    if sizes:
        options["tile_sizes"] = tuple(sizes)
    return options


def _fresh(subject) -> Schedule:
    if isinstance(subject, Schedule):
        return unscheduled(subject).fork()
    return create_schedule(subject)


@public
def auto_task(subject, name: str | None = None, target: str = "llvm", *,
              sizes: dict | None = None, args=None, inputs=None) -> Task:
    """A task tuning ``auto_schedule``'s choices for ``subject``: an output tensor (or a
    list of them), a ``po.kernel`` / ``po.from_c`` kernel, or an unscheduled schedule.
    ``args`` are the tensors passed to the kernel (default: the inputs and outputs, or
    the kernel's parameters); ``sizes`` the values of symbolic sizes; ``inputs`` as
    :class:`Task` takes it."""
    if isinstance(subject, (list, tuple)):
        if not subject or not all(isinstance(t, Tensor) for t in subject):
            raise InvalidArgumentError("auto_task takes a tensor, a list of tensors, a "
                                       "po.kernel or a schedule")
    elif not isinstance(subject, (Tensor, Kernel, Schedule)):
        raise InvalidArgumentError(f"auto_task takes a tensor, a list of tensors, a "
                                   f"po.kernel or a schedule, got {type(subject).__name__}")
    info = TargetInfo.for_target(target)
    target_option = None if target.strip() == "llvm" else target
    tensors = list(args) if args is not None else _arguments(subject)
    program = getattr(subject, "program", None)
    if program is None:
        program = create_schedule(subject).program
    missing = sorted(p.name for p in program.params if p.name not in (sizes or {}))
    if missing:
        raise InvalidArgumentError(
            f"give the value of every size to measure with: sizes={{{missing[0]!r}: ...}} "
            f"(polyopt tune: --sizes {','.join(f'{m}=...' for m in missing)}); missing: "
            f"{', '.join(missing)}")

    def instantiate(config):
        return auto_schedule(_fresh(subject), target=target_option,
                             **auto_options(config)), tensors

    def default():
        return auto_schedule(_fresh(subject), target=target_option), tensors

    name = name or _name(subject)
    return Task(name, auto_space(info), instantiate, args_signature=_describe(tensors, sizes),
                target=target, default=default, sizes=sizes, inputs=inputs)


def _arguments(subject):
    if isinstance(subject, Kernel):
        return None  # (the kernel's parameters)
    if isinstance(subject, Schedule):
        if subject.default_args is not None:
            return None
        subject = list(subject.output_tensors)
    outputs = [subject] if isinstance(subject, Tensor) else list(subject)
    program = create_schedule(subject).program
    inputs = [a.tensor for a in program.arrays if a.role == "placeholder"]
    return inputs + outputs


def _name(subject) -> str:
    if isinstance(subject, Kernel):
        return getattr(subject, "name", "kernel")
    if isinstance(subject, Schedule):
        return "_".join(subject.output_names) or "schedule"
    outputs = [subject] if isinstance(subject, Tensor) else list(subject)
    return "_".join(t.name for t in outputs)


def _describe(tensors, sizes) -> tuple:
    if tensors is None:
        return tuple(sorted((sizes or {}).items()))
    return tuple((t.name, tuple(str(d) for d in t.shape), t.dtype) for t in tensors)


def _first(value, values: list) -> list:
    return [value] + [v for v in values if v != value]


@public
def matmul_task(n: int, m: int, k: int, dtype: str = "float32", target: str = "llvm") -> Task:
    """A task tuning :func:`polyopt.templates.matmul_template`'s register tile (rows,
    columns in vectors), packing and parallel loop for ``C[n, m] = A[n, k] B[k, m]``."""
    from ..schedules.templates import matmul_template
    from ..te.tensor import compute, placeholder, reduce_axis, reduce_sum
    for label, value in (("n", n), ("m", m), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"matmul_task: {label} must be a positive int, got "
                                       f"{value!r}")
    info = TargetInfo.for_target(target)
    lanes = info.lanes(dtype)
    space = ConfigSpace()
    rows, vectors = info.register_tile()  # (the template's defaults: the first values)
    space.define_knob("rows", _first(rows, [2, 3, 4, 5, 6, 8]))
    space.define_knob("vectors", _first(vectors, [1, 2, 3, 4]))
    space.define_knob("pack", [True, False])
    space.define_knob("parallel", [True, False])

    def tensors():
        A = placeholder((n, k), name="A", dtype=dtype)
        B = placeholder((k, m), name="B", dtype=dtype)
        r = reduce_axis((0, k), name="k")
        C = compute((n, m), lambda i, j: reduce_sum(A[i, r] * B[r, j], axis=r), name="C")
        return A, B, C

    def instantiate(config):
        A, B, C = tensors()
        s = create_schedule(C)
        matmul_template(s, C, rows=config["rows"].val,
                        cols=config["vectors"].val * lanes, pack=config["pack"].val,
                        parallel=config["parallel"].val, target_info=info)
        return s, [A, B, C]

    def default():
        A, B, C = tensors()
        s = create_schedule(C)
        matmul_template(s, C, target_info=info)
        return s, [A, B, C]

    return Task("matmul", space, instantiate, args_signature=(n, m, k, dtype),
                target=target, default=default)


@public
def conv2d_task(batch: int, channels: int, size: int, filters: int, kernel: int = 3, *,
                stride: int = 1, padding: int = 1, target: str = "llvm") -> Task:
    """A task tuning ``conv2d_template``'s output-channel tile, column tile and parallel
    loop for an NCHW float32 convolution (``po.ops.conv2d_nchw``)."""
    from ..schedules.conv_templates import conv2d_template
    from ..te import ops
    from ..te.tensor import placeholder
    for label, value in (("batch", batch), ("channels", channels), ("size", size),
                         ("filters", filters), ("kernel", kernel), ("stride", stride)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"conv2d_task: {label} must be a positive int, got "
                                       f"{value!r}")
    info = TargetInfo.for_target(target)
    lanes = info.lanes("float32")
    space = ConfigSpace()
    space.define_knob("tile_f", [4, 1, 2, 8])  # (the template's default first)
    space.define_knob("max_tile", [None, lanes, 2 * lanes, 4 * lanes])
    space.define_knob("parallel", [True, False])

    def tensors():
        data = placeholder((batch, channels, size, size), name="data")
        weight = placeholder((filters, channels, kernel, kernel), name="weight")
        return data, weight, ops.conv2d_nchw(data, weight, padding=padding, stride=stride)

    def instantiate(config):
        data, weight, out = tensors()
        s = create_schedule(out)
        conv2d_template(s, out, tile_f=config["tile_f"].val, max_tile=config["max_tile"].val,
                        parallel=config["parallel"].val, target_info=info)
        return s, [data, weight, out]

    def default():
        data, weight, out = tensors()
        s = create_schedule(out)
        conv2d_template(s, out, target_info=info)
        return s, [data, weight, out]

    return Task("conv2d", space, instantiate, target=target, default=default,
                args_signature=(batch, channels, size, filters, kernel, stride, padding))
