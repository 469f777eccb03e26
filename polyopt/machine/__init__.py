"""The machine model: facts about a CPU or device in one frozen value (``TargetInfo``):
its features, vector width and registers, cache sizes, cores, tensor instructions
(AVX-512 VNNI and BF16, AMX), memory scopes and what they mean, bind tags.

It is the bottom layer: it imports only ``errors``, and every layer is handed a
``TargetInfo`` explicitly (templates size register tiles from it, the automatic
scheduler its tiles, tensorize picks its intrinsics, the LLVM target its vector width,
the graph layer its layouts).  Only the public entry points read the host
(``TargetInfo.host()``), and only when the user names no target.  Facts come from the
CPU's features (LLVM's host feature list, the kernel's ``/proc/cpuinfo`` flags), never
from the CPU's name, which virtual machines misreport (an Intel Xeon with AMX shows as
``rocketlake``); a named CPU (``-mcpu=``, ``-mattr=``) gives that CPU's facts.
``llvmlite`` and ``pyopencl`` are used only when asked for the host or a device.

>>> info = TargetInfo.for_cpu("haswell", "+avx2,+fma")
>>> info.vector_bits, info.vector_registers, info.lanes("float32")
(256, 16, 8)
>>> info.register_tile()  # rows x vectors of a matmul accumulator: 12 of 16 registers
(6, 2)
>>> spr = TargetInfo.for_cpu("sapphirerapids")
>>> spr.lanes("float32"), spr.has_vnni, spr.has_amx_int8, spr.llvm_tuning
(16, True, True, ('-prefer-256-bit',))
>>> TargetInfo.for_cpu("znver3").has_avx512
False
>>> scope_meaning("shared").shared_by, private_scopes("threadIdx.x")
('group', ('local',))
"""

from __future__ import annotations

import functools
import importlib
import os
import pathlib
import re
from dataclasses import dataclass, replace

from ..errors import InvalidArgumentError, public_methods


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """A storage scope of ``cache_read``/``cache_write``: who shares one copy of a buffer
    (``"all"`` the whole kernel, ``"group"`` the work-items of one work-group,
    ``"thread"`` one work-item or thread), its address space in OpenCL/SPIR terms, and
    how many bytes one copy may hold (None: no limit known)."""

    name: str
    shared_by: str
    address_space: int
    capacity: int | None = None

    @property
    def unit(self) -> str:
        """Whose copy it is, in words: ``"work-group"``, ``"work-item"``, ``"kernel"``."""
        return {"all": "kernel", "group": "work-group", "thread": "work-item"}[self.shared_by]


# the scopes' meanings (the same on every target; a target sets their capacities)
SCOPES = (MemoryScope("global", "all", 1), MemoryScope("shared", "group", 3),
          MemoryScope("local", "thread", 0))
# an accelerator's on-chip buffers (input, weight, accumulator; see target/accel): one
# copy per virtual thread, like "local" elsewhere (a CPU keeps them as ordinary buffers)
ACCEL_SCOPES = (MemoryScope("inp", "thread", 0), MemoryScope("wgt", "thread", 0),
                MemoryScope("acc", "thread", 0))
# the loop kind of ``virtual_thread``: iterations interleaved on one device
VIRTUAL_THREAD = "vthread"
# what a loop bound to a tag distributes, by the tag's prefix
BIND_UNITS = {"blockIdx": "group", "threadIdx": "thread"}
BIND_TAGS = tuple(f"{unit}.{d}" for unit in BIND_UNITS for d in "xyz")


def scope_meaning(name: str) -> MemoryScope:
    """The meaning of the scope ``name`` (``"global"``, ``"shared"`` or ``"local"``)."""
    for scope in SCOPES + ACCEL_SCOPES:
        if scope.name == name:
            return scope
    raise InvalidArgumentError(
        f"unknown scope {name!r}; use one of "
        f"{', '.join(s.name for s in SCOPES + ACCEL_SCOPES)}")


def private_scopes(bind_tag: str) -> tuple[str, ...]:
    """The scopes of which each iteration of a loop bound to ``bind_tag`` has its own
    copy: a work-group (``blockIdx``) has its own shared and local buffers, a work-item
    (``threadIdx``) its own local ones, a virtual thread its own accelerator buffers."""
    if bind_tag == VIRTUAL_THREAD:
        return ("local",) + tuple(s.name for s in ACCEL_SCOPES)
    unit = BIND_UNITS.get(bind_tag.split(".")[0])
    if unit is None:
        raise InvalidArgumentError(
            f"unknown bind tag {bind_tag!r}; use one of {', '.join(BIND_TAGS)}")
    finer = ("group", "thread") if unit == "group" else ("thread",)
    return tuple(s.name for s in SCOPES if s.shared_by in finer)


# The features of CPUs named without a feature list (LLVM names; a name matches a key
# equal to it or, for the families, starting with it).  Only a *named* CPU is looked up
# here: the host's facts come from its feature list.
_AVX2 = frozenset({"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "sse4.1", "sse4.2"})
_AVX512 = _AVX2 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_VNNI, _BF16, _FP16 = frozenset({"avx512vnni"}), frozenset({"avx512bf16"}), frozenset({"avx512fp16"})
_AMX = frozenset({"amx-tile", "amx-int8", "amx-bf16"})
_NAMED_CPUS = {
    "x86-64": frozenset(), "x86-64-v2": frozenset({"sse4.1", "sse4.2", "popcnt"}),
    "x86-64-v3": _AVX2, "x86-64-v4": _AVX512, "core-avx2": _AVX2,
    **dict.fromkeys(("haswell", "broadwell", "skylake", "alderlake", "raptorlake",
                     "meteorlake", "znver1", "znver2", "znver3"), _AVX2),
    "skylake-avx512": _AVX512, "cannonlake": _AVX512,
    **dict.fromkeys(("cascadelake", "icelake", "tigerlake", "rocketlake"), _AVX512 | _VNNI),
    "cooperlake": _AVX512 | _VNNI | _BF16,
    **dict.fromkeys(("znver4", "znver5"), _AVX512 | _VNNI | _BF16),
    **dict.fromkeys(("sapphirerapids", "emeraldrapids", "graniterapids"),
                    _AVX512 | _VNNI | _BF16 | _FP16 | _AMX),
}
# /proc/cpuinfo's names of the features whose LLVM names differ
_CPUINFO_NAMES = {"avx512_vnni": "avx512vnni", "avx512_bf16": "avx512bf16",
                  "avx512_fp16": "avx512fp16", "amx_tile": "amx-tile", "amx_int8": "amx-int8",
                  "amx_bf16": "amx-bf16", "sse4_1": "sse4.1", "sse4_2": "sse4.2",
                  "avx_vnni": "avxvnni"}
# the flags a benchmark names beside the CPU (cpuinfo's spelling, as users know them)
NOTABLE_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "avx512_fp16",
                    "amx_int8", "amx_bf16")
# AMX's tile registers (the palette 1 of every CPU that has them): 8 tiles of at most
# 16 rows x 64 bytes
AMX_TILE_REGISTERS, AMX_TILE_ROWS, AMX_TILE_BYTES = 8, 16, 64
# what ``tensor_unit`` answers and takes: AMX tiles or AVX-512 vectors (VNNI / BF16)
TENSOR_UNITS = ("amx", "avx512")
DEFAULT_CACHES = (32 << 10, 1 << 20, 8 << 20)  # L1 data, L2, L3 bytes when unknown


@public_methods
@dataclass(frozen=True, slots=True)
class TargetInfo:
    """What schedules need to know of a target (see the module docstring)."""

    kind: str = "cpu"  # cpu | gpu | accelerator
    name: str = "generic"  # the CPU's LLVM name ("znver4") or the device's name
    features: tuple[str, ...] = ()  # enabled features, LLVM names without "+"
    vector_bits: int = 128
    vector_registers: int = 16
    l1_bytes: int = DEFAULT_CACHES[0]
    l2_bytes: int = DEFAULT_CACHES[1]
    l3_bytes: int = DEFAULT_CACHES[2]
    scopes: tuple[MemoryScope, ...] = SCOPES
    bind_tags: tuple[str, ...] = ()  # loop tags the target runs (blockIdx.x ...)
    max_group_size: int | None = None  # work-items per work-group
    cores: int = 1  # the cores this process may run on (its thread count by default)
    model: str = ""  # the CPU's model name as the operating system reports it

    @property
    def has_avx512(self) -> bool:
        """512-bit vectors (AVX-512F)."""
        return "avx512f" in self.features

    @property
    def has_vnni(self) -> bool:
        """AVX-512 VNNI: ``vpdpbusd``, u8 x s8 dot products into int32 lanes."""
        return "avx512vnni" in self.features

    @property
    def has_bf16(self) -> bool:
        """AVX-512 BF16: ``vdpbf16ps``, bf16 pairs into float32 lanes."""
        return "avx512bf16" in self.features

    @property
    def has_fp16(self) -> bool:
        """AVX-512 FP16 arithmetic."""
        return "avx512fp16" in self.features

    @property
    def has_amx_int8(self) -> bool:
        """AMX tiles with ``tdpbusd`` (int8)."""
        return {"amx-tile", "amx-int8"} <= set(self.features)

    @property
    def has_amx_bf16(self) -> bool:
        """AMX tiles with ``tdpbf16ps`` (bf16)."""
        return {"amx-tile", "amx-bf16"} <= set(self.features)

    @property
    def amx_tiles(self) -> tuple[int, int, int]:
        """``(registers, rows, bytes per row)`` of the AMX tiles: ``(8, 16, 64)`` where
        the CPU has AMX (``amx-tile``), ``(0, 0, 0)`` elsewhere.

        >>> TargetInfo.for_cpu("sapphirerapids").amx_tiles, TargetInfo.for_cpu("znver4").amx_tiles
        ((8, 16, 64), (0, 0, 0))
        """
        if "amx-tile" not in self.features:
            return 0, 0, 0
        return AMX_TILE_REGISTERS, AMX_TILE_ROWS, AMX_TILE_BYTES

    def tensor_unit(self, kind: str, prefer: str | None = None) -> str | None:
        """Which unit multiplies ``kind`` (``"int8"``: u8 x s8 -> s32, ``"bf16"``:
        bf16 -> fp32) matrices here: ``"amx"`` (tiles: ``tdpbusd`` / ``tdpbf16ps``)
        where the CPU has them, else ``"avx512"`` (``vpdpbusd`` / ``vdpbf16ps``), else
        None.  ``prefer`` forces one (``"amx"`` or ``"avx512"``), or None where the CPU
        lacks it.

        >>> spr = TargetInfo.for_cpu("sapphirerapids")
        >>> spr.tensor_unit("int8"), spr.tensor_unit("int8", prefer="avx512")
        ('amx', 'avx512')
        >>> TargetInfo.for_cpu("znver4").tensor_unit("bf16", prefer="amx") is None
        True
        """
        if kind not in ("int8", "bf16"):
            raise InvalidArgumentError(f"tensor_unit kind must be 'int8' or 'bf16', got {kind!r}")
        if prefer not in (None,) + TENSOR_UNITS:
            raise InvalidArgumentError(f"the tensor unit must be one of {', '.join(TENSOR_UNITS)} "
                                       f"(or None: the best this CPU has), got {prefer!r}")
        has = {"amx": self.has_amx_int8 if kind == "int8" else self.has_amx_bf16,
               "avx512": self.has_vnni if kind == "int8" else self.has_bf16}
        if prefer is not None:
            return prefer if has[prefer] else None
        return next((unit for unit in TENSOR_UNITS if has[unit]), None)

    @property
    def llvm_tuning(self) -> tuple[str, ...]:
        """LLVM features that tune code for this CPU: with AVX-512, ``-prefer-256-bit``
        (LLVM's Intel CPUs prefer 256-bit vectors unless told otherwise; 512-bit code
        ran the matmul template at 175 GFLOP/s instead of 76 on a Xeon)."""
        return ("-prefer-256-bit",) if self.kind == "cpu" and self.has_avx512 else ()

    def describe(self) -> str:
        """One line naming the CPU for a results file: the model, LLVM's name, the
        cores and the notable features it has (and lacks).

        >>> TargetInfo.for_cpu("znver3").describe()
        'znver3 (LLVM znver3), 1 core(s); has avx2; lacks avx512f, avx512_vnni, avx512_bf16, avx512_fp16, amx_int8, amx_bf16'
        """
        has = [f for f in NOTABLE_FEATURES if _CPUINFO_NAMES.get(f, f) in self.features]
        lacks = [f for f in NOTABLE_FEATURES if f not in has]
        return (f"{self.model or self.name} (LLVM {self.name}), {self.cores} core(s); "
                f"has {', '.join(has) or 'none'}; lacks {', '.join(lacks) or 'none'}")

    def lanes(self, dtype: str = "float32") -> int:
        """Elements of ``dtype`` in one vector register."""
        import numpy as np

        return max(1, self.vector_bits // (8 * np.dtype(dtype).itemsize))

    def register_tile(self) -> tuple[int, int]:
        """``(rows, vectors)`` of a matmul accumulator held in vector registers: a
        quarter of the registers left for the loaded and broadcast operands (32
        registers: 6 rows x 4 vectors; 16: 6 x 2, the BLIS/OpenBLAS shapes)."""
        vectors = 4 if self.vector_registers >= 32 else 2
        rows = (self.vector_registers - self.vector_registers // 4) // vectors
        return max(1, rows), vectors

    def scope(self, name: str) -> MemoryScope:
        """The scope ``name`` on this target (with its capacity, when known)."""
        for scope in self.scopes:
            if scope.name == name:
                return scope
        return scope_meaning(name)

    def has(self, feature: str) -> bool:
        return feature.lstrip("+") in self.features

    def missing_on_host(self) -> list[str]:
        """The features of this machine that the host lacks (code made for it would die
        of an illegal instruction here), sorted; empty when the host has them all."""
        return sorted(set(self.features) - set(TargetInfo.host().features))

    @staticmethod
    @functools.cache
    def host() -> "TargetInfo":
        """The machine polyopt runs on: its features from LLVM (llvmlite; the kernel's
        ``/proc/cpuinfo`` flags without it; AMX only where the kernel shows it), cache
        sizes from sysfs, the cores this process may use.  Only public entry points
        call it, when the user names no target."""
        name, features = _host_cpu()
        caches = _host_caches()
        return replace(_from_features(name, features), l1_bytes=caches[0],
                       l2_bytes=caches[1], l3_bytes=caches[2], cores=_host_cores(),
                       model=_host_model())

    @staticmethod
    def for_cpu(name: str, features=()) -> "TargetInfo":
        """A CPU by its LLVM name (``"haswell"``, ``"znver4"``, ``"sapphirerapids"``) and
        features as LLVM's ``-mattr`` takes them (``"+avx2,-avx512f"`` or a list), added
        to or removed from the named CPU's own.  Caches: typical sizes."""
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"the CPU name must be a non-empty string, got {name!r}")
        added, removed = _parse_features(features)
        return _from_features(name, (_named_features(name) | added) - removed)

    @staticmethod
    def for_target(target=None) -> "TargetInfo":
        """The machine a target names: a ``TargetInfo`` as it is; ``None`` or ``"llvm"``
        the host; ``"llvm -mcpu=NAME -mattr=+f,-g"`` the named CPU (``-mattr`` alone:
        the host's features changed).  What public entry points call with their
        ``target=`` argument.

        >>> TargetInfo.for_target("llvm -mcpu=znver4 -mattr=-avx512f").vector_bits
        256
        """
        if isinstance(target, TargetInfo):
            return target
        if target is None:
            return TargetInfo.host()
        text = target if isinstance(target, str) else getattr(target, "target_string", None)
        words = text.split() if isinstance(text, str) else []
        if not words or words[0] != "llvm":
            raise InvalidArgumentError(
                f"target must be a po.TargetInfo or a CPU target string such as 'llvm' or "
                f"'llvm -mcpu=znver4 -mattr=+avx2', got {target!r} (an OpenCL device: "
                "TargetInfo.for_opencl(device))")
        flags = dict(w.lstrip("-").partition("=")[::2] for w in words[1:])
        cpu = "" if flags.get("mcpu") in (None, "native") else flags["mcpu"]
        if not cpu and not flags.get("mattr"):
            return TargetInfo.host()
        if not cpu:
            host = TargetInfo.host()
            return replace(TargetInfo.for_cpu(host.name, ",".join(
                [f"+{f}" for f in host.features] + [flags["mattr"]])),
                l1_bytes=host.l1_bytes, l2_bytes=host.l2_bytes, l3_bytes=host.l3_bytes,
                cores=host.cores, model=host.model)
        return TargetInfo.for_cpu(cpu, flags.get("mattr", ""))

    @staticmethod
    def for_opencl(device) -> "TargetInfo":
        """An OpenCL device (a ``pyopencl.Device``): its __local memory is the capacity of
        the shared scope, its work-group limit ``max_group_size``."""
        bits = 32 * max(1, int(getattr(device, "preferred_vector_width_float", 1) or 1))
        cache = int(getattr(device, "global_mem_cache_size", 0) or 0)
        scopes = tuple(replace(s, capacity=int(device.local_mem_size)) if s.name == "shared"
                       else replace(s, capacity=int(device.global_mem_size))
                       if s.name == "global" else s for s in SCOPES)
        return TargetInfo(kind="gpu", name=str(device.name).strip(), vector_bits=bits,
                          vector_registers=0, l1_bytes=DEFAULT_CACHES[0],
                          l2_bytes=cache or DEFAULT_CACHES[1], l3_bytes=0, scopes=scopes,
                          bind_tags=BIND_TAGS, max_group_size=int(device.max_work_group_size))


def _from_features(name: str, enabled) -> "TargetInfo":
    enabled = set(enabled)
    if "avx512f" not in enabled:  # as LLVM does: turning off AVX-512F turns off its kin
        enabled = {f for f in enabled if not f.startswith("avx512")}
    bits = 512 if "avx512f" in enabled else 256 if {"avx", "avx2"} & set(enabled) else 128
    registers = 32 if bits == 512 or _is_arm(name, enabled) else 16
    return TargetInfo(kind="cpu", name=name, features=tuple(sorted(enabled)),
                      vector_bits=bits, vector_registers=registers)


def _parse_features(features) -> tuple[set[str], set[str]]:
    """``(added, removed)`` feature names of an ``-mattr`` string or list."""
    if isinstance(features, str):
        features = [f for f in features.split(",") if f.strip()]
    try:
        items = [str(f).strip() for f in features]
    except TypeError:
        raise InvalidArgumentError(
            f"features must be a string like '+avx2,+fma' or a list of names, got "
            f"{features!r}") from None
    return ({f.lstrip("+") for f in items if not f.startswith("-")},
            {f[1:] for f in items if f.startswith("-")})


def _named_features(name: str) -> frozenset[str]:
    """The features of a CPU named by LLVM's name (empty when unknown)."""
    if name in _NAMED_CPUS:
        return _NAMED_CPUS[name]
    family = max((key for key in _NAMED_CPUS if name.startswith(key)), key=len, default=None)
    return _NAMED_CPUS[family] if family else frozenset()


def _is_arm(name: str, enabled: set[str]) -> bool:
    return "neon" in enabled or name.startswith(("cortex", "neoverse", "apple", "a64"))


def _host_cpu() -> tuple[str, set[str]]:
    flags = _cpuinfo_flags()
    try:
        binding = importlib.import_module("llvmlite.binding")
        name = binding.get_host_cpu_name()
        features = {k for k, v in binding.get_host_cpu_features().items() if v}
    except (ImportError, RuntimeError):
        name, features = "generic", {_CPUINFO_NAMES.get(f, f) for f in flags}
    if flags and "amx_tile" not in flags:  # the kernel has not enabled AMX's state
        features = {f for f in features if not f.startswith("amx")}
    return name, features


def _host_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _host_model() -> str:
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""
    found = re.search(r"^model name\s*:(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else ""


@functools.cache
def _cpuinfo_flags() -> frozenset[str]:
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    found = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return frozenset(found.group(1).split()) if found else frozenset()


def _host_caches() -> tuple[int, int, int]:
    """L1 data, L2 and L3 sizes in bytes: sysfs, else ``os.sysconf``, else defaults."""
    sizes = dict(enumerate(DEFAULT_CACHES, start=1))
    found = set()
    for index in sorted(pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = _bytes((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and level in sizes and size:
            sizes[level] = size
            found.add(level)
    for level, key in ((1, "SC_LEVEL1_DCACHE_SIZE"), (2, "SC_LEVEL2_CACHE_SIZE"),
                       (3, "SC_LEVEL3_CACHE_SIZE")):
        if level not in found and key in os.sysconf_names:
            try:
                value = os.sysconf(key)
            except (OSError, ValueError):
                continue
            if value > 0:
                sizes[level] = value
    return sizes[1], sizes[2], sizes[3]


def _bytes(text: str) -> int:
    """``"32K"`` -> 32768."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1].upper() in units:
        return int(text[:-1]) * units[text[-1].upper()]
    return int(text)
