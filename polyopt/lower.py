"""Lowering: from a schedule and its argument list to a loop function a target can build.

The passes run in the order of :data:`PIPELINE`, extended by the target's own passes
(``Target.passes``, see :class:`Pipeline`).  Set ``POLYOPT_PRINT_PASSES=1`` (or pass
``print_passes=True``) to print the function after each pass, with its time.

>>> import polyopt as po
>>> A = po.placeholder((2, 3), name="A")
>>> T = po.compute((3, 2), lambda i, j: A[j, i], name="T")
>>> print(po.lower(po.create_schedule(T), [A, T]))
void T_kernel(float32 A[2][3], float32 T[3][2]) {
  for (i = 0; i < 3; i += 1)
    for (j = 0; j < 2; j += 1)
      T[i, j] = A[j, i];
}
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from dataclasses import dataclass

from .ast.flat_access import flatten_accesses
from .ast.from_isl import loop_ast
from .ast.nodes import Block, Node
from .ast.pipeline import Pass, Pipeline, edited, run_inserted
from .ast.printer import node_lines
from .ast.storage import Footprint, contract_storage
from .ast.tiles import separate_full_tiles
from .domain.program import Array, Program
from .errors import InvalidArgumentError, UndefinedTensorError, public, public_methods
from .names import NameGenerator, sanitize
from .machine import scope_meaning
from .te.expr import TensorRead, Var
from .te.tensor import ComputeOp, PlaceholderOp, Tensor, walk


@public_methods
@dataclass(frozen=True, slots=True)
class LoweredFunc:
    """A loop function: the caller passes ``args`` (arrays, then any vars listed), then
    every program parameter; ``temps`` are the computed arrays it allocates itself."""

    name: str
    program: Program
    args: tuple[Array | Var, ...]
    temps: tuple[Array, ...] = ()
    body: Node = Block(())
    footprints: tuple[Footprint, ...] = ()
    passes: tuple[str, ...] = ()  # the lowering passes that made it, in order
    device: object = None  # a target's own code made by its passes (accel: instructions)
    strict_fp: bool = False  # reductions accumulate in the written order, not reassociated
    # what a target's passes decided for its code generator, as (name, value) pairs in
    # the order made (e.g. the LLVM target's optimization level); printed as comments
    decisions: tuple[tuple[str, object], ...] = ()

    def decision(self, name: str, default=None):
        """The value a pass decided under ``name`` (``default`` when none did)."""
        return next((value for key, value in self.decisions if key == name), default)

    def decide(self, name: str, value) -> "LoweredFunc":
        """This function with decision ``name`` set to ``value`` (replacing one made)."""
        kept = tuple(d for d in self.decisions if d[0] != name)
        return dataclasses.replace(self, decisions=kept + ((name, value),))

    @property
    def storage(self) -> dict[str, Footprint]:
        return {f.array: f for f in self.footprints}

    @property
    def arrays(self) -> tuple[Array, ...]:
        return tuple(a for a in self.args if isinstance(a, Array))

    @property
    def outputs(self) -> tuple[Array, ...]:
        return tuple(a for a in self.arrays if a.written)

    def __str__(self) -> str:
        params = []
        for arg in self.args:
            if isinstance(arg, Array):
                dims = "".join(f"[{e}]" for e in arg.shape)
                params.append(f"{arg.dtype} {arg.name}{dims}")
            else:
                params.append(f"int64 {arg.name}")
        lines = [f"void {self.name}({', '.join(params)}) {{"]
        if self.strict_fp:
            lines.append("  // strict_fp: reductions accumulate in the written order")
        lines += [f"  // {key}: {value}" for key, value in self.decisions]
        storage = self.storage
        for temp in self.temps:
            dims = "".join(f"[{e}]" for e in temp.shape)
            note = "allocated by the kernel"
            footprint = storage.get(temp.name)
            if footprint is not None and footprint.loops:
                note += f", its footprint per iteration of {', '.join(footprint.loops)}"
            if footprint is not None and footprint.private:
                note += ", one per thread"
            scope = scope_meaning(temp.scope)
            if scope.shared_by != "all":
                note += f" (scope {scope.name}: per {scope.unit} on OpenCL)"
            lines.append(f"  {temp.dtype} {temp.name}{dims};  // {note}")
        lines += node_lines(self.body, self.program)
        lines.append("}")
        if hasattr(self.device, "listing"):
            lines += ["// device instructions:", self.device.listing()]
        return "\n".join(lines)


def resolve_arguments(program: Program, args) -> tuple[Array | Var, ...]:
    """Map the user's argument list (tensors and vars) onto the program's arrays."""
    if isinstance(args, (Tensor, Var)) or args is None:
        raise InvalidArgumentError(
            "the argument list must be a list of tensors (inputs and outputs), e.g. [A, B, C]"
        )
    resolved: list[Array | Var] = []
    for arg in args:
        if isinstance(arg, Var):
            if not any(arg is p for p in program.params):
                raise InvalidArgumentError(f"var '{arg.name}' is not used by this computation")
            resolved.append(arg)
        elif isinstance(arg, Tensor):
            resolved.append(program.array_of(arg))
        elif isinstance(arg, TensorRead) and not arg.indices:  # po.var(name, "float32")
            resolved.append(program.array_of(arg.tensor))
        else:
            raise InvalidArgumentError(
                f"arguments must be tensors or po.var, got {type(arg).__name__} {arg!r}"
            )
    if len({id(a) for a in resolved}) != len(resolved):
        raise InvalidArgumentError("a tensor or var appears twice in the argument list")
    _check_placeholders_passed(program, resolved)
    if not any(isinstance(a, Array) and a.written for a in resolved):
        raise InvalidArgumentError(
            "no computed tensor is in the argument list, so nothing would be returned; "
            "add the outputs, e.g. [A, B, C] for C = f(A, B)"
        )
    return tuple(resolved)


def _check_placeholders_passed(program: Program, resolved: list) -> None:
    passed = {id(a) for a in resolved}
    for array in program.arrays:
        if array.role == "inout" and id(array) not in passed:
            raise UndefinedTensorError(
                f"'{array.name}' is read and written in place, but it is not in the argument "
                f"list; add {array.name} to the list passed to build/lower"
            )
    for stmt in program.statements:
        for access in stmt.reads:
            array = program.array(access.array)
            if array.role == "placeholder" and id(array) not in passed:
                raise UndefinedTensorError(
                    f"compute '{stmt.op}' reads placeholder '{array.name}', which is not in "
                    f"the argument list; add {array.name} to the list passed to build/lower"
                )


def _check_arguments(func: LoweredFunc) -> LoweredFunc:
    program = with_unread_placeholders(func.program, func.args)
    return dataclasses.replace(func, program=program,
                               args=resolve_arguments(program, func.args))


def with_unread_placeholders(program: Program, args) -> Program:
    """``program`` with an array for each placeholder of ``args`` that no statement reads
    (an ONNX operator ignoring an input, TVM's unused argument): the kernel takes it and
    leaves it alone.  Its sizes must be numbers or sizes the program already has."""
    if not isinstance(args, (list, tuple)):
        return program  # resolve_arguments says what is wrong
    known = {id(a.tensor) for a in program.arrays}
    unread = [a for a in args if isinstance(a, Tensor) and isinstance(a.op, PlaceholderOp)
              and id(a) not in known]
    if not unread:
        return program
    params = {id(p) for p in program.params}
    taken = {a.name for a in program.arrays} | {p.name for p in program.params}
    names = NameGenerator(reserved=tuple(taken))
    arrays = []
    for tensor in unread:
        sizes = [v for e in tensor.shape for v in walk(e) if isinstance(v, Var)]
        if any(id(v) not in params for v in sizes):
            raise InvalidArgumentError(
                f"placeholder '{tensor.name}' is not read by the computation and its shape "
                f"{tuple(tensor.shape)} has a size the computation does not use; give it "
                "number sizes or sizes the computation's tensors use, or leave it out")
        arrays.append(Array(names.fresh(tensor.name), tensor.shape, tensor.dtype, tensor,
                            "placeholder"))
    return program.replace(arrays=program.arrays + tuple(arrays))


def _plan_buffers(func: LoweredFunc) -> LoweredFunc:
    passed = {id(a) for a in func.arrays}
    temps = tuple(a for a in func.program.arrays if a.role == "compute" and id(a) not in passed)
    return dataclasses.replace(func, temps=temps)


def _contract_storage(func: LoweredFunc) -> LoweredFunc:
    program, temps, footprints = contract_storage(func.program, func.temps)
    return dataclasses.replace(func, program=program, temps=temps,
                               footprints=tuple(footprints.values()))


def _flatten_accesses(func: LoweredFunc) -> LoweredFunc:
    return dataclasses.replace(func, program=flatten_accesses(func.program))


def _scan(func: LoweredFunc) -> LoweredFunc:
    return dataclasses.replace(func, body=loop_ast(func.program))


def _separate_full_tiles(func: LoweredFunc) -> LoweredFunc:
    return dataclasses.replace(func, body=separate_full_tiles(func.body))


def _tensorize(func: LoweredFunc) -> LoweredFunc:
    if not func.program.tensorized:
        return func
    from .ast.intrinsic_calls import tensorize_calls

    return dataclasses.replace(func, body=tensorize_calls(func.program, func.body))


def _default_name(program: Program, args) -> str:
    """``<last output>_kernel`` for tensor expressions; a kernel's own name otherwise."""
    outputs = [a for a in args if isinstance(a, Tensor) and isinstance(a.op, ComputeOp)]
    if outputs:
        return sanitize(f"{outputs[-1].name}_kernel")
    if any(a.role == "inout" for a in program.arrays):  # a po.kernel: statements carry its name
        return sanitize(program.statements[0].op)  # rewrites append their statements
    return f"{program.arrays[-1].name}_kernel"


# The common passes, in order.  Ordering: arguments are resolved first (later passes use
# Array objects); buffers are planned (which arrays the kernel allocates) before their
# storage is contracted to their footprints; contraction re-indexes statements but
# keeps their domains and the schedule, so scanning may come before or after it.
# A target's own passes (``Target.passes``) come after these unless it inserts them
# at a named point; the LLVM target's are in ``polyopt.target.llvm.passes``.
PIPELINE = Pipeline((
    Pass("check_arguments", _check_arguments),
    Pass("plan_buffers", _plan_buffers),
    Pass("contract_storage", _contract_storage),
    Pass("flatten_accesses", _flatten_accesses),  # after contraction: its shapes and indices
    Pass("scan_schedule", _scan),  # from here on, passes rewrite the loop AST (func.body)
    Pass("separate_full_tiles", _separate_full_tiles),  # works on the loops scanning made
    Pass("tensorize", _tensorize),  # sub-nests to intrinsic calls (after the loops are final)
))
PASSES = PIPELINE.passes  # (name, run) pairs, for reading


def pipeline_of(target=None, passes=None) -> Pipeline:
    """The passes ``lower`` runs for ``target`` (None: the common ones) after the user's
    edit ``passes``: a function from that pipeline to the one to run, or a
    :class:`Pipeline` to run as it is.  ``print()`` it for the names in order.

    >>> from polyopt.ast.pipeline import Pass
    >>> mine = Pass("count_loops", lambda func: func)
    >>> print(pipeline_of(passes=lambda p: p.insert(mine, after="scan_schedule")))
    ... # doctest: +NORMALIZE_WHITESPACE
    check_arguments -> plan_buffers -> contract_storage -> flatten_accesses ->
    scan_schedule -> count_loops -> separate_full_tiles -> tensorize
    """
    return edited(PIPELINE if target is None else _target_of(target).passes(PIPELINE), passes)


@public
def lower(schedule, args=None, *, name: str | None = None,
          print_passes: bool | None = None, target=None, simple_mode: bool = True,
          passes=None) -> LoweredFunc:
    """The loop function computing ``schedule``'s outputs into ``args``; ``print()`` it.
    (``simple_mode`` is TVM's; the printed function is always the simple loop program.)

    ``args`` may be left out for a ``po.kernel`` schedule: its parameters, in order.
    ``target`` (a name such as ``"llvm"``, or a target object) runs that target's
    pipeline (``Target.passes``): its own passes too, e.g. the LLVM target's unrolling
    and OpenMP outlining; without it, the common passes (:data:`PIPELINE`).
    ``passes`` edits that pipeline, e.g. to insert a pass of one's own (see
    :func:`pipeline_of`); it runs and prints like the others.
    """
    getattr(schedule, "check_deferred", lambda: None)()  # a compute_at still waiting
    program = getattr(schedule, "program", schedule)
    if not isinstance(program, Program):
        raise InvalidArgumentError(f"lower takes a schedule from po.create_schedule, got {schedule!r}")
    if args is None:
        args = getattr(schedule, "default_args", None)
        if args is None:
            raise InvalidArgumentError(
                "the argument list is required for tensor expressions: pass the input and "
                "output tensors in order, e.g. po.build(s, [A, B, C]) (only po.kernel "
                "schedules default to the kernel's parameters)"
            )
    if name is None:
        name = _default_name(program, args)
    pipeline = pipeline_of(target, passes)
    own = set(pipeline_of(target).names)
    func = LoweredFunc(name, program, tuple(args),
                       strict_fp=bool(getattr(schedule, "strict_fp", False)))
    verbose = print_passes if print_passes is not None else \
        os.environ.get("POLYOPT_PRINT_PASSES", "") not in ("", "0")
    for step in pipeline.passes:
        start = time.perf_counter()
        func = step.run(func) if step.name in own else run_inserted(step, func, LoweredFunc)
        func = dataclasses.replace(func, passes=func.passes + (step.name,))
        if verbose:
            elapsed = (time.perf_counter() - start) * 1e3
            print(f"// after {step.name} ({elapsed:.1f} ms)\n{func}\n", file=sys.stderr)
    return func


def _target_of(target):
    """A target object for a name (``"llvm"``) or the object itself."""
    if isinstance(target, str):
        from .target.base import get_target

        return get_target(target)
    if not callable(getattr(target, "passes", None)):
        raise InvalidArgumentError(f"target must be a target name such as 'llvm' or a "
                                   f"target object with a passes() method, got {target!r}")
    return target
