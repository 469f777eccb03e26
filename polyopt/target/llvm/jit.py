"""Optimize LLVM modules with the O3 pipeline and JIT-compile them for the host CPU.

>>> tm = host_target_machine()
>>> tm.triple.startswith("x86_64") or tm.triple.startswith("aarch64")
True
"""

from __future__ import annotations

import functools

import llvmlite.binding as llvm

from ...errors import BackendError


# Dead store elimination looks for an earlier store that a store kills by walking up
# this many memory writes (LLVM's default: 90).  In the register tiles that LLVM unrolls
# (thousands of stores, none dead: polyopt writes each address once per block) that
# walk was the largest part of O3 (a third of its time on the conv2d layers); at 30,
# every kernel of the benchmarks optimizes to the same code, and 5 of the 1026 small
# kernels the tests build differ by a store (one dead store is found only further up).
# It is an LLVM option: it holds for the whole process.
DSE_WALK_LIMIT = 30
# Loop unswitching hoists a loop-invariant branch out of a loop by copying the loop, up
# to this cost (LLVM's default: 50, scaled up by a multiplier as a function grows).  A
# partial register tile (a matmul whose rows and columns both leave a remainder) checks
# "has the partial vector loop an iteration" in each unrolled row; at the default cost
# the check stayed inside the reduction loop and LLVM stored the 24 accumulators to the
# stack on every step (1000x1500x700: 0.93x OpenBLAS, 1.0x with the check hoisted).
UNSWITCH_THRESHOLD = 500


@functools.cache
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.set_option("polyopt", f"--dse-memoryssa-walklimit={DSE_WALK_LIMIT}")
    llvm.set_option("polyopt", f"--unswitch-threshold={UNSWITCH_THRESHOLD}")


def host_target_machine() -> llvm.TargetMachine:
    """A new target machine for this CPU with all its features (an engine owns its own)."""
    _initialize()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=3, codemodel="jitdefault")


@functools.cache
def _optimizer_machine() -> llvm.TargetMachine:
    return host_target_machine()


def optimize(ir_text: str) -> llvm.ModuleRef:
    """Parse, verify and optimize (O3, loop and SLP vectorization) an IR module."""
    tm = _optimizer_machine()
    try:
        module = llvm.parse_assembly(ir_text)
        module.verify()
    except RuntimeError as err:
        raise BackendError(f"polyopt generated invalid LLVM IR (a bug, please report): {err}") from err
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = True
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)
    return module


def jit(module: llvm.ModuleRef, symbol: str) -> tuple[llvm.ExecutionEngine, int]:
    """An execution engine owning ``module`` and the address of its function ``symbol``."""
    engine = llvm.create_mcjit_compiler(module, host_target_machine())
    engine.finalize_object()
    engine.run_static_constructors()
    address = engine.get_function_address(symbol)
    if not address:
        raise BackendError(f"the JIT did not produce the function '{symbol}'")
    return engine, address


def assembly(module: llvm.ModuleRef) -> str:
    return _optimizer_machine().emit_assembly(module)
