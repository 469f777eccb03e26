"""The on-disk kernel cache of operator libraries: :class:`polyopt.kernels.disk.DiskCache`
(one verified entry format, shared with the graph layer).

>>> from polyopt.kernels import disk
>>> DiskCache is disk.DiskCache
True
"""

from ..kernels.disk import DiskCache, default_cache_dir, is_digest

__all__ = ["DiskCache", "default_cache_dir", "is_digest"]
