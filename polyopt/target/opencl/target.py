"""The ``opencl`` target: OpenCL C kernels run through pyopencl.

``po.build(s, args, target="opencl", device=None)`` plans the kernels (one per
top-level loop nest, see :mod:`.plan`), prints them (:mod:`.codegen`), builds them on
the device (:mod:`.runtime`) and returns a callable.  It takes NumPy arrays (copied to
the device and back on each call) or ``pyopencl.array.Array`` on the kernel's context
(used in place: data stays on the device between calls).

>>> import numpy as np, polyopt as po
>>> n = po.var("n"); A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> bo, bi = s[B].split(B.op.axis[0], factor=16)
>>> _ = s[B].bind(bo, "blockIdx.x"); _ = s[B].bind(bi, "threadIdx.x")
>>> f = po.build(s, [A, B], target="opencl")
>>> b = np.zeros(20, "float32"); f(np.arange(20, dtype="float32"), b); b[-3:]
array([34., 36., 38.], dtype=float32)
>>> "get_group_id(0)" in f.source
True
"""

from __future__ import annotations

import numpy as np

from ...ast.nodes import For, If, Int, Name, Op
from ..module import ModuleAPI
from ...errors import BackendError, InvalidArgumentError, public_methods
from ...lowering_errors import DeviceCapacityError, WorkGroupSizeError
from ...te.evaluate import evaluate
from ..args import bind_arguments
from ...machine import TargetInfo
from .codegen import global_arrays, opencl_source
from .plan import plan_kernels
from .runtime import cl, compile_program, describe, queue_for


class OpenCLTarget:
    name = "opencl"
    supports_parallel = True
    supports_vector = False

    def passes(self, pipeline):
        """The common passes but three: shared/local buffers are sized per work-group and
        work-item by plan.py; the CPU's full-tile separation would split loops bound to
        work-items."""
        return pipeline.without("contract_storage", "flatten_accesses", "separate_full_tiles")

    def build(self, func, *, device=None, **options) -> "OpenCLKernel":
        if options:
            raise InvalidArgumentError(
                f"unknown option(s) for target opencl: {', '.join(options)}; known: device")
        if func.program.tensorized:
            raise BackendError("a tensorized schedule (s[...].tensorize) builds for "
                               "target='llvm' only; the OpenCL backend has no intrinsics")
        if func.program.imports:
            raise BackendError("s[...].pragma(..., 'import_llvm' | 'import_c', code) links code "
                               "for target='llvm' only; build for 'llvm', or drop the pragma")
        queue = queue_for(device)
        kernels = plan_kernels(func)
        info = TargetInfo.for_opencl(queue.device)
        for kernel in kernels:
            _check_fits(kernel, info)
        source = opencl_source(func, kernels)
        program = compile_program(queue.context, source)
        return OpenCLKernel(func, kernels, source, program, queue)


@public_methods
class OpenCLKernel(ModuleAPI):
    """A compiled OpenCL program: ``f(*arrays, **vars)`` writes the outputs in place.

    ``f.source`` is the OpenCL C source, ``f.device`` the device it runs on,
    ``f.loop_program`` the loop program it was generated from."""

    def __init__(self, func, kernels, source: str, program, queue):
        self.func = func
        self.kernels = kernels
        self.source = source
        self.queue = queue
        self._cl = cl()
        self._array_type = _device_array_type()
        self._launch = []
        self._temps = global_arrays(func)[len(func.arrays):]
        n_buffers = len(func.arrays) + len(self._temps)
        for kernel in kernels:
            handle = getattr(program, kernel.name)
            handle.set_scalar_arg_dtypes([None] * n_buffers + [np.int64] * (
                len(func.program.params) + len(kernel.host_loops)))
            self._launch.append((kernel, handle))
        self._params = tuple(p.name for p in func.program.params)

    device_source = property(lambda self: self.source)  # f.imported_modules[0].get_source()

    @property
    def device(self) -> str:
        return describe(self.queue)

    @property
    def loop_program(self) -> str:
        return str(self.func)

    def __call__(self, *args, **kwargs) -> None:
        arrays, values = bind_arguments(self.func, args, kwargs,
                                        device_types=(self._array_type,))
        pyopencl = self._cl
        context = self.queue.context
        flags = pyopencl.mem_flags
        buffers, copies = [], []
        for spec, array in zip(self.func.arrays, arrays):
            if isinstance(array, np.ndarray):
                buffer = pyopencl.Buffer(context, flags.READ_WRITE | flags.COPY_HOST_PTR,
                                         hostbuf=array) if array.nbytes else \
                    pyopencl.Buffer(context, flags.READ_WRITE, 1)
                if spec.written and array.nbytes:
                    copies.append((array, buffer))
            else:
                self._check_device_array(spec, array)
                buffer = array.base_data
            buffers.append(buffer)
        for temp in self._temps:
            size = int(np.prod([evaluate(e, values) for e in temp.shape], dtype=np.int64))
            nbytes = max(size * np.dtype(temp.dtype).itemsize, 1)
            buffers.append(pyopencl.Buffer(context, flags.READ_WRITE, nbytes))
        scalars = [values[p] for p in self._params]
        try:
            self._run_launches(host_tree(self._launch), dict(values), buffers, scalars)
            for array, buffer in copies:
                pyopencl.enqueue_copy(self.queue, array, buffer)
            self.queue.finish()
        except pyopencl.Error as err:
            raise BackendError(f"running {self.func.name} on {self.device} failed: {err}"
                               ) from None

    def _run_launches(self, items, values: dict, buffers, scalars) -> None:
        """Launch the kernels in order; a host loop (a scan's time loop) launches its
        body's kernels once per iteration, passing the loop variable."""
        for item in items:
            if isinstance(item[0], (For, If)):
                node, inner = item
                if isinstance(node, If):
                    if evaluate_index(node.cond, values):
                        self._run_launches(inner, values, buffers, scalars)
                    continue
                values[node.var] = evaluate_index(node.init, values)
                while evaluate_index(node.cond, values):
                    self._run_launches(inner, values, buffers, scalars)
                    values[node.var] += node.step
                continue
            kernel, handle = item
            groups = kernel.groups(values)
            if 0 in groups:
                continue
            local = kernel.local_size
            global_size = tuple(g * l for g, l in zip(groups, local))
            host = [values[loop.var] for loop in kernel.host_loops]
            handle(self.queue, global_size, local, *buffers, *scalars, *host)

    def _check_device_array(self, spec, array) -> None:
        if array.queue is not None and array.queue.context != self.queue.context:
            raise InvalidArgumentError(
                f"argument '{spec.name}' is a pyopencl array of another context; create it "
                f"with f.queue (pyopencl.array.to_device(f.queue, x))")
        if array.offset:
            raise InvalidArgumentError(
                f"argument '{spec.name}' is a view at an offset into its buffer; pass a "
                "pyopencl array of its own (x.copy())")

    def __repr__(self) -> str:
        return f"<OpenCLKernel {self.func.name} on {self.device}>"


def host_tree(launches: list) -> list:
    """The launches ``(kernel, handle)`` nested in their host loops and guards: a list
    of launches and ``(For or If, [items])``."""
    tree: list = []
    for launch in launches:
        items = tree
        for node in launch[0].host:
            if not (items and items[-1][0] is node):
                items.append((node, []))
            items = items[-1][1]
        items.append(launch)
    return tree


_INDEX_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "min": min, "max": max, "fdiv_q": lambda a, b: a // b, "pdiv_q": lambda a, b: a // b,
    "pdiv_r": lambda a, b: a % b, "div": lambda a, b: a // b,
    "zdiv_r": lambda a, b: a - b * int(a / b), "eq": lambda a, b: a == b,
    "le": lambda a, b: a <= b, "lt": lambda a, b: a < b, "ge": lambda a, b: a >= b,
    "gt": lambda a, b: a > b, "and": lambda a, b: a and b, "or": lambda a, b: a or b,
}


def evaluate_index(expr, values: dict) -> int:
    """The value of an index expression of the loop AST for these sizes and loop values.

    >>> evaluate_index(Op("fdiv_q", (Op("sub", (Name("n"), Int(9))), Int(4))), {"n": 2})
    -2
    """
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Name):
        return values[expr.name]
    args = [evaluate_index(a, values) for a in expr.args]
    if expr.op == "neg":
        return -args[0]
    if expr.op == "select":
        return args[1] if args[0] else args[2]
    result = args[0]
    for arg in args[1:]:
        result = _INDEX_OPS[expr.op](result, arg)
    return int(result)


def _check_fits(kernel, info: TargetInfo) -> None:
    """The group shape and the per-group (__local) buffers must fit the device."""
    size = kernel.local_size[0] * kernel.local_size[1] * kernel.local_size[2]
    if size > info.max_group_size:
        raise WorkGroupSizeError(kernel.name, size, info.max_group_size, info.name)
    shared = info.scope("shared")
    local = sum(int(np.prod(b.sizes, dtype=np.int64)) * np.dtype(b.array.dtype).itemsize
                for b in kernel.buffers.values() if b.array.scope == shared.name)
    if local > shared.capacity:
        raise DeviceCapacityError("__local memory", local, shared.capacity,
                                  kernel=kernel.name, device=info.name)


def _device_array_type():
    import pyopencl.array

    return pyopencl.array.Array
