"""Optimize LLVM modules (O3, or O2 where the ``choose_optimization`` pass says, see
:mod:`.optimization`) and JIT-compile them, for the host CPU or
a named one (``CPU``: a name and a feature string such as ``"+avx2,-avx512f"``).

>>> tm = target_machine(HOST)
>>> tm.triple.startswith("x86_64") or tm.triple.startswith("aarch64")
True
>>> resolve(CPU("haswell", "+avx2")).name
'haswell'
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass

import llvmlite.binding as llvm

from ...errors import BackendError, InvalidArgumentError
from ...machine import TargetInfo
from .remarks import loops_asking_for_vectors


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


@dataclass(frozen=True)
class CPU:
    """The CPU code is compiled for: ``name`` (LLVM's, e.g. ``znver4``; empty: the host's)
    and ``features`` (LLVM's ``+feature,-feature`` list, added to the CPU's own)."""

    name: str = ""
    features: str = ""

    @property
    def is_host(self) -> bool:
        return not self.name and not self.features


HOST = CPU()


@functools.cache
def resolve(cpu: CPU) -> CPU:
    """``cpu`` with the host's name and features filled in where it leaves them out (the
    host's full feature list when it names no CPU), and the machine model's tuning
    (``TargetInfo.llvm_tuning``: 512-bit vectors where the CPU has AVX-512): what code is
    compiled for, and so what a cache key must hold."""
    _initialize()
    if cpu.name:
        full = cpu
    else:
        host = llvm.get_host_cpu_features().flatten()
        full = CPU(llvm.get_host_cpu_name(), ",".join(f for f in (host, cpu.features) if f))
    tuning = machine_of(full).llvm_tuning
    return CPU(full.name, ",".join(f for f in (full.features, *tuning) if f))


@functools.cache
def machine_of(cpu: CPU) -> TargetInfo:
    """The machine model of the CPU code is compiled for: the host's (features, caches,
    cores) when ``cpu`` names nothing, else the named CPU's with its ``-mattr``.

    >>> machine_of(CPU("sapphirerapids")).has_amx_int8
    True
    """
    flags = [f"-mcpu={cpu.name}"] * bool(cpu.name) + [f"-mattr={cpu.features}"] * bool(
        cpu.features)
    return TargetInfo.for_target(" ".join(["llvm", *flags]))


_PROBE = """
import sys, llvmlite.binding as llvm
llvm.initialize_native_target(); llvm.initialize_native_asmprinter()
tm = llvm.Target.from_default_triple().create_target_machine(
    cpu=sys.argv[1], features=sys.argv[2], opt=0)
tm.emit_object(llvm.parse_assembly("define i32 @f() { ret i32 0 }"))
"""


@functools.cache
def check_cpu(cpu: CPU) -> None:
    """Refuse a CPU or feature LLVM does not know.  LLVM only warns about them, and
    for an unknown CPU without features aborts the process, so a child process tries
    them first (once per CPU, about 0.2 s)."""
    if cpu.is_host:
        return
    full = resolve(cpu)
    try:
        probe = subprocess.run([sys.executable, "-c", _PROBE, full.name, full.features],
                               capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise BackendError(f"could not check the CPU {full.name!r} with LLVM: {err}") from err
    complaints = sorted({line.split(" (ignoring")[0] for line in probe.stderr.splitlines()
                         if "not a recognized" in line or "LLVM ERROR" in line})
    if complaints or probe.returncode != 0:
        said = "; ".join(complaints) or probe.stderr.strip()[-300:]
        raise InvalidArgumentError(
            f"LLVM cannot compile for -mcpu={cpu.name or '(host)'} -mattr={cpu.features}: "
            f"{said}; use LLVM's names (e.g. -mcpu=znver4, skylake-avx512, x86-64-v3; "
            "-mattr=+avx2,-avx512f)")


def host_target_machine() -> llvm.TargetMachine:
    """A new target machine for this CPU with all its features (an engine owns its own)."""
    return target_machine(HOST)


def target_machine(cpu: CPU, *, shared: bool = False) -> llvm.TargetMachine:
    """A new target machine for ``cpu``: for the JIT, or position-independent code for a
    shared library (``shared``)."""
    full = resolve(cpu)
    target = llvm.Target.from_default_triple()
    if shared:
        return target.create_target_machine(cpu=full.name, features=full.features, opt=3,
                                            reloc="pic", codemodel="default")
    return target.create_target_machine(cpu=full.name, features=full.features, opt=3,
                                        codemodel="jitdefault")


@functools.cache
def _optimizer_machine(cpu: CPU = HOST) -> llvm.TargetMachine:
    return target_machine(cpu)


def parse(ir_text: str) -> llvm.ModuleRef:
    """Parse and verify an IR module."""
    _initialize()
    try:
        module = llvm.parse_assembly(ir_text)
        module.verify()
    except RuntimeError as err:
        raise BackendError(f"polyopt generated invalid LLVM IR (a bug, please report): {err}") from err
    return module


def optimize(ir_text: str, cpu: CPU = HOST, decision=None) -> llvm.ModuleRef:
    """Parse, verify and optimize (loop and SLP vectorization) an IR module as the
    ``choose_optimization`` pass decided (``decision``, an
    :class:`.optimization.Optimization`; None: O3 with LLVM's own unrolling): O2 first
    when it asks, kept when O2 vectorized every loop marked vectorized, else O3."""
    unroll = decision is None or decision.own_unrolling
    if decision is not None and decision.o2_first:
        with _held_stderr() as said:  # LLVM's "loop not vectorized" of a discarded try
            module = _optimized(ir_text, cpu, 2, unroll)
            accepted = not loops_asking_for_vectors(str(module))
            said.append(accepted)
        if accepted:
            return module
    return _optimized(ir_text, cpu, 3, unroll)


@contextlib.contextmanager
def _held_stderr():
    """Hold what native code writes on file descriptor 2; write it out at the end
    when the block appends True to the list it gets (the result is kept)."""
    said: list = []
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable descriptor 2: nothing to hold
        yield said
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            if said and said[-1]:
                held.seek(0)
                os.write(2, held.read())


def _optimized(ir_text: str, cpu: CPU, speed: int, unroll: bool = True) -> llvm.ModuleRef:
    tm = _optimizer_machine(cpu)
    module = parse(ir_text)
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    options = llvm.create_pipeline_tuning_options(speed_level=speed)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = unroll  # False: only the unrolling that loops ask for
    builder = llvm.create_pass_builder(tm, options)
    builder.getModulePassManager().run(module, builder)
    return module


@functools.cache
def process_symbols() -> None:
    """Make LLVM's symbol search find this process's functions and the C math library's
    (``acosf``, ``atan2``...: kernels call libm for functions without an LLVM intrinsic).
    LLVM adds the process's own symbols when the first execution engine is made, so an
    object checked before any engine existed found none; libm is loaded by name in case
    the process has not linked it (an embedding program).  Once per process."""
    _initialize()
    llvm.create_mcjit_compiler(llvm.parse_assembly(""), host_target_machine()).close()
    name = ctypes.util.find_library("m")
    if name:
        with contextlib.suppress(RuntimeError):  # the process's symbols may be enough
            llvm.load_library_permanently(name)


def symbol_address(name: str) -> int:
    """The address of the function ``name`` as the JIT resolves it (0: none)."""
    process_symbols()
    return llvm.address_of_symbol(name)


def jit(module: llvm.ModuleRef, symbol: str, cpu: CPU = HOST
        ) -> tuple[llvm.ExecutionEngine, int]:
    """An execution engine owning ``module`` and the address of its function ``symbol``."""
    process_symbols()
    engine = llvm.create_mcjit_compiler(module, target_machine(cpu))
    engine.finalize_object()
    engine.run_static_constructors()
    address = engine.get_function_address(symbol)
    if not address:
        raise BackendError(f"the JIT did not produce the function '{symbol}'")
    return engine, address


def assembly(module: llvm.ModuleRef, cpu: CPU = HOST) -> str:
    return _optimizer_machine(cpu).emit_assembly(module)


def object_code(module: llvm.ModuleRef, cpu: CPU = HOST) -> bytes:
    """``module`` (optimized) as a position-independent ELF object for ``cpu``."""
    return target_machine(cpu, shared=True).emit_object(module)
