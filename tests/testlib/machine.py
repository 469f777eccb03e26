"""What to expect of the machine the tests run on, asked of the machine model, so that
every test says it one way and holds on any x86-64 host (AVX2 only, AVX-512, AVX-512
with VNNI and BF16, AMX).

- ``HOST``: the :class:`~polyopt.machine.TargetInfo` of this machine;
- ``vector_of(dtype)``: the LLVM type of one vector register of ``dtype`` on it
  (``"<8 x float>"`` with AVX2, ``"<16 x float>"`` with AVX-512), ``vector_register()``
  the assembly name of its registers (``ymm``, ``zmm``);
- ``WIDE_CPU``: a CPU with AVX-512, VNNI and BF16 (``znver4``).  Code that needs an
  instruction the host lacks is built for it (``target_for``, ``machine_for``) and its
  IR or assembly inspected; ``run_needs`` then skips the run, which only a host with
  the instructions can do;
- ``builds_for(s, args, *features)``: a schedule built both ways, to inspect the code
  of a CPU with ``features`` and to run on the host;
- ``requires(feature)``: a marker for a test that can only run (nothing to inspect).

Features are LLVM's names: ``"avx512f"``, ``"avx512vnni"``, ``"avx512bf16"``,
``"amx-int8"``.

>>> vector_of("float32") == f"<{HOST.lanes('float32')} x float>"
True
>>> target_for("avx512vnni") in ("llvm", "llvm -mcpu=znver4")
True
"""

import pytest

from polyopt.machine import TargetInfo

HOST = TargetInfo.host()
WIDE_CPU = "znver4"  # AVX-512 (F, BW, VL, ...), VNNI, BF16
WIDE = TargetInfo.for_cpu(WIDE_CPU)

_LLVM_TYPES = {"float32": "float", "float64": "double", "int8": "i8", "uint8": "i8",
               "int16": "i16", "int32": "i32", "int64": "i64"}


def vector_of(dtype: str = "float32", info: TargetInfo = HOST) -> str:
    """``"<lanes x type>"``: one vector register of ``dtype`` on ``info`` in LLVM IR."""
    return f"<{info.lanes(dtype)} x {_LLVM_TYPES[dtype]}>"


def vector_register(info: TargetInfo = HOST) -> str:
    """The assembly name of a full vector register on ``info``: zmm, ymm or xmm."""
    return {512: "zmm", 256: "ymm"}.get(info.vector_bits, "xmm")


def host_has(*features: str) -> bool:
    return all(HOST.has(f) for f in features)


def target_for(*features: str) -> str:
    """The target string to build code needing ``features``: the host where it has them,
    else ``WIDE_CPU`` (the kernel is then inspected, not run: see :func:`run_needs`)."""
    _check_wide(features)
    return "llvm" if host_has(*features) else f"llvm -mcpu={WIDE_CPU}"


def machine_for(*features: str) -> TargetInfo:
    """The machine model matching :func:`target_for` (for templates' ``target_info``)."""
    _check_wide(features)
    return HOST if host_has(*features) else WIDE


def run_needs(*features: str) -> None:
    """Skip the rest of the test (the run) where the host lacks one of ``features``;
    call it after the code built with :func:`target_for` was inspected."""
    missing = [f for f in features if not HOST.has(f)]
    if missing:
        pytest.skip(f"this CPU lacks {', '.join(missing)}: the code was built for "
                    f"{WIDE_CPU} and inspected, not run")


def builds_for(s, args, *features: str, **options):
    """``(inspected, runnable)``: the schedule built for a CPU with ``features``
    (:func:`target_for`) to inspect its code, and built for the host to run it (the same
    kernel where the host has them)."""
    import polyopt as po

    inspected = po.build(s, args, target=target_for(*features), **options)
    return inspected, inspected if host_has(*features) else po.build(s, args, **options)


def requires(*features: str):
    """A marker skipping a test that only runs code needing ``features`` where the host
    lacks one of them."""
    missing = [f for f in features if not HOST.has(f)]
    return pytest.mark.skipif(bool(missing), reason=f"this CPU lacks {', '.join(missing)}")


def _check_wide(features) -> None:
    absent = [f for f in features if not WIDE.has(f)]
    if absent:
        raise ValueError(f"{WIDE_CPU} lacks {absent}: name another CPU for these tests")
