"""Building programs that read ``po.extern`` tensors: the extern calls run first, on the
host, then the compiled loops.

>>> import numpy as np, polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> C = po.extern(A.shape, [A], lambda ins, outs: lambda a, c: np.add(a, 1, out=c), name="C")
>>> D = po.compute(C.shape, lambda i: C[i] * 2, name="D")
>>> f = po.build(po.create_schedule(D), [A, D])
>>> d = np.zeros(4, "float32"); f(np.arange(4, dtype="float32"), d); d
array([2., 4., 6., 8.], dtype=float32)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ExternCallError, InvalidArgumentError, PolyoptError, UndefinedTensorError
from .target.module import ModuleAPI
from .te.evaluate import evaluate
from .te.expr import TensorRead, Var
from .te.extern import ExternBuffer, ExternOp, PackedCall, get_global_func
from .te.tensor import Tensor


def extern_tensors(schedule) -> list[Tensor]:
    """The extern outputs a schedule's program reads (and the externs they read)."""
    program = getattr(schedule, "program", None)
    found: list[Tensor] = []

    def visit(tensor):
        if isinstance(tensor.op, ExternOp) and not any(tensor is t for t in found):
            for source in tensor.op.inputs:
                visit(source)
            for member in tensor.op.group:
                if not any(member is t for t in found):
                    found.append(member)

    for array in getattr(program, "arrays", ()):
        visit(array.tensor)
    for output in getattr(schedule, "output_tensors", ()):
        visit(output)
    return found


@dataclass
class _Name:
    name: str


class ExternPipeline(ModuleAPI):
    """``f(*arrays)``: the extern calls, in order, then the compiled kernel (if any)."""

    def __init__(self, args, externs, kernel, kernel_args, name: str):
        self.args, self.externs, self.kernel = args, externs, kernel
        self.kernel_args = kernel_args
        self.func = kernel.func if kernel is not None else _Name(name)

    def __call__(self, *arrays, **sizes) -> None:
        from .target.devices import NDArray

        if len(arrays) != len(self.args):
            raise InvalidArgumentError(
                f"{self.func.name} takes {len(self.args)} argument(s), got {len(arrays)}")
        values = {id(t): a for t, a in zip(self.args, arrays)}
        bound = dict(sizes)
        for tensor, array in zip(self.args, arrays):
            for extent, actual in zip(tensor.shape, np.shape(array)):
                if isinstance(extent, Var):
                    bound.setdefault(extent.name, actual)
        done = set()
        for tensor in self.externs:
            if id(tensor) not in values:
                shape = tuple(evaluate(e, bound) for e in tensor.shape)
                values[id(tensor)] = np.empty(shape, dtype=tensor.dtype)
        for tensor in self.externs:
            op = tensor.op
            if id(op.group) in done:
                continue
            done.add(id(op.group))
            _run_call(op, values, NDArray)
        if self.kernel is not None:
            self.kernel(*(values[id(t)] for t in self.kernel_args), **sizes)


def _run_call(op: ExternOp, values: dict, ndarray) -> None:
    def array_of(tensor):
        if id(tensor) not in values:
            raise UndefinedTensorError(
                f"extern '{op.name}' reads '{tensor.name}', which is neither an argument of "
                "the built function nor an extern's output; pass it to build (a compute "
                "feeding an extern is not supported yet: build it as a function of its own)")
        return np.asarray(values[id(tensor)]).view(ndarray)

    call = op.call
    if isinstance(call, PackedCall):
        function, label = get_global_func(call.name), f"the function registered as '{call.name}'"
        arguments = [array_of(a.tensor if isinstance(a, ExternBuffer) else a)
                     if isinstance(a, (Tensor, ExternBuffer)) else a for a in call.args]
    else:
        function, label = call, f"the Python function {getattr(call, '__name__', call)!r}"
        arguments = [array_of(t) for t in (*op.inputs, *op.group)]
    try:
        function(*arguments)
    except PolyoptError:
        raise
    except Exception as err:  # the user's own function failed: no bug of polyopt's
        raise ExternCallError(f"extern '{op.name}': {label} raised {type(err).__name__}: "
                              f"{err}; fix that function (it is called with NumPy arrays: "
                              "the extern's inputs, then its outputs to fill)") from err


def build_with_externs(schedule, args, externs, build_kernel, name):
    """The pipeline for ``po.build(schedule, args)`` whose program reads ``externs``."""
    args = [a.tensor if isinstance(a, TensorRead) and not a.indices else a for a in args]
    for tensor in externs:
        for source in tensor.op.inputs:
            if not any(source is t for t in list(args) + externs):
                raise UndefinedTensorError(
                    f"extern '{tensor.name}' reads '{source.name}', which is neither an "
                    "argument of the built function nor an extern's output; pass it to "
                    "build (a compute feeding an extern is not supported yet: build it as "
                    "a function of its own)")
    program = schedule.program
    in_program = {id(a.tensor) for a in program.arrays}
    kernel_args = [a for a in args if not isinstance(a, Tensor) or id(a) in in_program]
    kernel_args += [t for t in externs if id(t) in in_program
                    and not any(t is a for a in kernel_args)]
    computes = [a for a in program.arrays if a.role == "compute"]
    kernel = build_kernel(kernel_args) if computes else None
    return ExternPipeline(args, externs, kernel, kernel_args, name or "extern_function")
