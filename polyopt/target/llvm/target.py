"""The ``llvm`` target: build a lowered function into a callable native kernel.

``target="llvm"`` compiles for the host CPU; ``target="llvm -mcpu=NAME -mattr=+f,-g"``
(LLVM's and TVM's spelling) for a named CPU and feature list (the features are added to
or removed from the CPU's own; ``-mattr`` alone adds them to the host's).  Code for
another CPU runs here only when this CPU has its features; export it with
``f.export_library(path)`` to run it where it belongs.

>>> import numpy as np, polyopt as po
>>> A = po.placeholder((3,), name="A")
>>> B = po.compute((3,), lambda i: A[i] * 2.0, name="B")
>>> f = po.build(po.create_schedule(B), [A, B], target="llvm")
>>> b = np.zeros(3, "float32"); f(np.arange(3, dtype="float32"), b); b
array([0., 2., 4.], dtype=float32)
>>> po.build(po.create_schedule(B), [A, B], target="llvm -mcpu=haswell").cpu.name
'haswell'
"""

from __future__ import annotations

import re
import warnings

from ..module import ModuleAPI
from ...errors import InvalidArgumentError, PolyoptWarning, public_methods
from ..native import NativeKernel
from ..signature import signature_of
from .codegen import module_for
from .export import export_library
from .amx import uses_amx
from .intrinsics import check_emitters_supported, link_imports
from .jit import CPU, assembly, check_cpu, jit, machine_of, optimize, resolve
from .threadpool import calls_threadpool, load_threadpool
from .passes import llvm_passes
from .remarks import loops_asking_for_vectors


_FEATURE = re.compile(r"[+-][A-Za-z0-9_.-]+")
_CPU_NAME = re.compile(r"[A-Za-z0-9_.-]+")


class LLVMTarget:
    """``target="llvm"``; options ``-mcpu`` and ``-mattr`` (see the module docstring)."""

    name = "llvm"
    supports_parallel = True
    supports_vector = True

    def passes(self, pipeline):
        """The common pipeline, then outlining, transposed copies, unrolling, widening,
        the loop hints, reassociation, vector math and the optimization level (see
        :mod:`.passes`)."""
        return llvm_passes(pipeline, self.cpu)

    def __init__(self, mcpu: str = "", mattr: str = ""):
        mcpu = "" if mcpu == "native" else mcpu  # TVM's spelling of the host CPU
        if mcpu and not _CPU_NAME.fullmatch(mcpu):
            raise InvalidArgumentError(f"-mcpu must be an LLVM CPU name such as znver4 or "
                                       f"skylake-avx512, got {mcpu!r}")
        features = [f for f in mattr.split(",") if f]
        bad = [f for f in features if not _FEATURE.fullmatch(f)]
        if bad:
            raise InvalidArgumentError(
                f"-mattr takes LLVM features, each with + or -, e.g. -mattr=+avx2,-avx512f; "
                f"got {', '.join(map(repr, bad))}")
        self.cpu = CPU(mcpu, ",".join(features))
        check_cpu(self.cpu)

    @property
    def key(self) -> str:
        """The target as a cache key: the CPU and features code is really compiled for,
        and the vector math library its calls go to (``POLYOPT_NO_LIBMVEC`` turns it off)."""
        from .vecmath import math_library

        full = resolve(self.cpu)
        return f"llvm -mcpu={full.name} -mattr={full.features} -vecmath={math_library()}"

    def compile(self, func, *, num_threads: int = 0, parallel_min_work: int | None = None,
                **options):
        """``(generated IR text, optimized module)`` for ``func``: what ``build``
        JIT-compiles and ``export_library`` writes as an object.  ``parallel_min_work``:
        the statement instances below which a parallel loop runs on its caller alone
        (None: the default, ``polyopt.target.llvm.parallel.PARALLEL_MIN_WORK``)."""
        if options:
            raise InvalidArgumentError(
                f"unknown option(s) for target llvm: {', '.join(options)}; known: "
                "num_threads, parallel_min_work")
        for name, value in (("num_threads", num_threads),
                            ("parallel_min_work", parallel_min_work)):
            if value is None and name == "parallel_min_work":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidArgumentError(f"{name} must be an integer >= 0, got {value!r}")
        machine = machine_of(self.cpu)
        check_emitters_supported(func.program, machine)
        ir_text = str(module_for(func, num_threads=num_threads,
                                 parallel_min_work=parallel_min_work,
                                 target_info=machine))
        ir_text = link_imports(func, ir_text)  # code that tensorized intrinsics import
        return ir_text, optimize(ir_text, self.cpu, func.decision("optimization"))

    def build(self, func, **options) -> "LLVMKernel":
        ir_text, module = self.compile(func, **options)
        if calls_threadpool(ir_text):
            load_threadpool()
        optimized = str(module)
        engine, address = jit(module, func.name, self.cpu)
        kernel = LLVMKernel(func, engine, address, ir_text, optimized, self.cpu)
        if not self.cpu.is_host:
            kernel.require_features(machine_of(self.cpu))
        if uses_amx(func.program):
            kernel.require_amx()
        if kernel.scalar_loops:
            warnings.warn(f"{func.name}: LLVM did not vectorize the loop(s) marked vectorized "
                          f"{', '.join(kernel.scalar_loops)}; they run scalar, with the same "
                          "results (LLVM vectorizes innermost loops only, and without "
                          "llvm.loop.parallel_accesses only those it proves independent; "
                          "f.optimized_ir shows the code)", PolyoptWarning, stacklevel=4)
        return kernel


@public_methods
class LLVMKernel(NativeKernel, ModuleAPI):
    """A compiled kernel: ``f(*arrays, **vars)`` writes the outputs in place.

    ``f.llvm_ir`` is the generated IR, ``f.optimized_ir`` the IR after LLVM's
    optimization and ``f.assembly`` the machine code; ``f.source`` is the loop program and
    ``f.signature`` what it takes.  ``f.scalar_loops`` names the loops marked
    vectorized that LLVM left scalar (see :mod:`.remarks`).  ``f.export_library(path)``
    saves it (``po.load_module(path)`` loads it back); ``f.release()`` frees its
    machine code.
    """

    def __init__(self, func, engine, address: int, ir_text: str, optimized: str,
                 cpu: CPU = CPU()):
        super().__init__(signature_of(func), address)
        self.func = func
        self._engine = engine  # keeps the machine code alive
        self.llvm_ir = ir_text
        self.optimized_ir = optimized
        self.cpu = cpu
        self.scalar_loops = loops_asking_for_vectors(optimized)

    @property
    def source(self) -> str:
        return str(self.func)

    @property
    def assembly(self) -> str:
        return assembly(optimize(self.llvm_ir, self.cpu, self.func.decision("optimization")),
                        self.cpu)

    def export_library(self, path) -> None:
        """Write the kernel as a shared library ``path`` (e.g. ``"k.so"``; a name ending
        in ``.o`` writes the object file only) with its signature in ``path + ".json"``;
        ``po.load_module(path)`` loads it in any process."""
        export_library(self.optimized_ir, self.signature, self.cpu, path)

    def _free(self) -> None:
        engine, self._engine = self._engine, None
        if engine is not None:
            engine.close()

    def __repr__(self) -> str:
        return f"<LLVMKernel {self.func.name}>"
