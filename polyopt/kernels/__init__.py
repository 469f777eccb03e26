"""Kernels: the one build path (:func:`build_kernel`), its key (:func:`kernel_key`, a
structural hash of the lowered program, the target and the options), the bounded
in-memory cache every caller shares (:data:`build_cache`) and the verified on-disk cache
(:class:`DiskCache`).  ``po.build``, the graph layer and operator libraries build here."""

from .builder import Built, build_kernel, load_kernel, memory_key
from .disk import DiskCache, default_cache_dir, entry_integrity
from .key import kernel_key, structural_hash
from .memory import BuildCache, build_cache

__all__ = ["BuildCache", "Built", "DiskCache", "build_cache", "build_kernel",
           "default_cache_dir", "entry_integrity", "kernel_key", "load_kernel", "memory_key",
           "structural_hash"]
