"""Facts about a target in one frozen value: vector width and registers, cache sizes,
memory scopes and what they mean, bind tags, CPU name and features.

Templates (``po.templates``) derive their register tiles from it, checks ask it which
buffers a bound loop's iterations do not share, the OpenCL target checks a kernel
against its device's limits.  This module imports nothing from the layers of polyopt
(only ``errors``), so every layer may import it; ``llvmlite`` and ``pyopencl`` are
used only when asked for the host or a device.

>>> info = TargetInfo.for_cpu("haswell", "+avx2,+fma")
>>> info.vector_bits, info.vector_registers, info.lanes("float32")
(256, 16, 8)
>>> info.register_tile()  # rows x vectors of a matmul accumulator: 12 of 16 registers
(6, 2)
>>> TargetInfo.for_cpu("skylake-avx512").lanes("float32")
16
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


# CPU names whose vectors are 512 / 256 bits when no features are given (LLVM names)
_WIDE_CPUS = {512: ("avx512", "skylake-avx512", "cascadelake", "cooperlake", "cannonlake",
                    "icelake", "tigerlake", "sapphirerapids", "graniterapids", "znver4",
                    "znver5", "x86-64-v4"),
              256: ("haswell", "broadwell", "skylake", "alderlake", "raptorlake",
                    "meteorlake", "znver1", "znver2", "znver3", "x86-64-v3", "core-avx2")}
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

    @staticmethod
    @functools.cache
    def host() -> "TargetInfo":
        """The machine polyopt runs on: CPU name and features from LLVM (llvmlite; the
        kernel's /proc/cpuinfo flags without it), cache sizes from sysfs."""
        name, features = _host_cpu()
        caches = _host_caches()
        return replace(TargetInfo.for_cpu(name, features), l1_bytes=caches[0],
                       l2_bytes=caches[1], l3_bytes=caches[2])

    @staticmethod
    def for_cpu(name: str, features=()) -> "TargetInfo":
        """A CPU by its LLVM name (``"haswell"``, ``"znver4"``) and features (an LLVM
        feature string ``"+avx2,+fma,-avx512f"`` or names); without features, the vector
        width the CPU's family has (128 bits when unknown).  Caches: typical sizes."""
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"the CPU name must be a non-empty string, got {name!r}")
        enabled = _parse_features(features)
        bits = _vector_bits(name, enabled)
        registers = 32 if bits == 512 or _is_arm(name, enabled) else 16
        return TargetInfo(kind="cpu", name=name, features=tuple(sorted(enabled)),
                          vector_bits=bits, vector_registers=registers)

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


def _parse_features(features) -> set[str]:
    if isinstance(features, str):
        features = [f for f in features.split(",") if f.strip()]
    try:
        items = [str(f).strip() for f in features]
    except TypeError:
        raise InvalidArgumentError(
            f"features must be a string like '+avx2,+fma' or a list of names, got "
            f"{features!r}") from None
    return {f.lstrip("+") for f in items if not f.startswith("-")}


def _vector_bits(name: str, enabled: set[str]) -> int:
    if "avx512f" in enabled:
        return 512
    if "avx" in enabled or "avx2" in enabled:
        return 256
    if enabled:
        return 128
    for bits, names in _WIDE_CPUS.items():
        if any(name == n or name.startswith(n) for n in names):
            return bits
    return 128


def _is_arm(name: str, enabled: set[str]) -> bool:
    return "neon" in enabled or name.startswith(("cortex", "neoverse", "apple", "a64"))


def _host_cpu() -> tuple[str, set[str]]:
    try:
        binding = importlib.import_module("llvmlite.binding")
        return binding.get_host_cpu_name(), {k for k, v in
                                             binding.get_host_cpu_features().items() if v}
    except (ImportError, RuntimeError):
        return "generic", _cpuinfo_flags()


def _cpuinfo_flags() -> set[str]:
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    found = re.search(r"^flags\s*:(.*)$", text, re.MULTILINE)
    return set(found.group(1).split()) if found else set()


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
