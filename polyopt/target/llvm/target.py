"""The ``llvm`` target: build a lowered function into a callable native kernel.

>>> import numpy as np, polyopt as po
>>> A = po.placeholder((3,), name="A")
>>> B = po.compute((3,), lambda i: A[i] * 2.0, name="B")
>>> f = po.build(po.create_schedule(B), [A, B], target="llvm")
>>> b = np.zeros(3, "float32"); f(np.arange(3, dtype="float32"), b); b
array([0., 2., 4.], dtype=float32)
"""

from __future__ import annotations

import ctypes
import warnings

from ..module import ModuleAPI
from ...errors import BackendError, InvalidArgumentError, PolyoptWarning, public_methods
from ..args import bind_arguments, data_pointer, fixed_binder
from .codegen import module_for
from .intrinsics import link_imports
from .jit import assembly, jit, optimize
from .parallel import load_openmp
from .passes import llvm_passes
from .remarks import loops_asking_for_vectors
from .vecmath import with_vector_math


class LLVMTarget:
    name = "llvm"
    supports_parallel = True
    supports_vector = True

    def passes(self, pipeline):
        """The common pipeline, then outlining, transposed copies, unrolling and widening
        (see :mod:`.passes`)."""
        return llvm_passes(pipeline)

    def build(self, func, *, num_threads: int = 0, **options) -> "LLVMKernel":
        if options:
            raise InvalidArgumentError(
                f"unknown option(s) for target llvm: {', '.join(options)}; known: num_threads")
        if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 0:
            raise InvalidArgumentError(f"num_threads must be an integer >= 0, got {num_threads!r}")
        ir_text = str(module_for(func, num_threads=num_threads))
        ir_text = link_imports(func, ir_text)  # code that tensorized intrinsics import
        if "GOMP_parallel" in ir_text:
            load_openmp()
        module = optimize(with_vector_math(ir_text))
        optimized = str(module)
        engine, address = jit(module, func.name)
        kernel = LLVMKernel(func, engine, address, ir_text, optimized)
        if kernel.scalar_loops:
            warnings.warn(f"{func.name}: LLVM did not vectorize the loop(s) marked vectorized "
                          f"{', '.join(kernel.scalar_loops)}; they run scalar, with the same "
                          "results (LLVM vectorizes innermost loops only, and without "
                          "llvm.loop.parallel_accesses only those it proves independent; "
                          "f.optimized_ir shows the code)", PolyoptWarning, stacklevel=4)
        return kernel


@public_methods
class LLVMKernel(ModuleAPI):
    """A compiled kernel: ``f(*arrays, **vars)`` writes the outputs in place.

    ``f.llvm_ir`` is the generated IR, ``f.optimized_ir`` the IR after O3 and
    ``f.assembly`` the machine code; ``f.source`` is the loop program.
    ``f.scalar_loops`` names the loops marked vectorized that LLVM left scalar (see
    :mod:`.remarks`).
    """

    def __init__(self, func, engine, address: int, ir_text: str, optimized: str):
        self.func = func
        self._engine = engine  # keeps the machine code alive
        n_arrays, n_params = len(func.arrays), len(func.program.params)
        prototype = ctypes.CFUNCTYPE(ctypes.c_int32, *([ctypes.c_void_p] * n_arrays
                                                      + [ctypes.c_int64] * n_params))
        self._cfunc = prototype(address)
        self.llvm_ir = ir_text
        self.optimized_ir = optimized
        self.scalar_loops = loops_asking_for_vectors(optimized)
        self._params = tuple(p.name for p in func.program.params)
        self._fixed = fixed_binder(func)

    @property
    def source(self) -> str:
        return str(self.func)

    @property
    def assembly(self) -> str:
        return assembly(optimize(self.llvm_ir))

    def __call__(self, *args, **kwargs) -> None:
        pointers = self._fixed(args) if self._fixed is not None and not kwargs else None
        if pointers is not None:
            status = self._cfunc(*pointers)
        else:
            arrays, values = bind_arguments(self.func, args, kwargs)
            status = self._cfunc(*(data_pointer(a) for a in arrays),
                                 *(values[p] for p in self._params))
        if status != 0:
            raise BackendError(
                f"{self.func.name} could not allocate its intermediate buffers "
                f"({', '.join(t.name for t in self.func.temps)}): out of memory"
            )

    def __repr__(self) -> str:
        return f"<LLVMKernel {self.func.name}>"
