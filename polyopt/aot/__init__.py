"""Ahead-of-time operator libraries: ``polyopt lib build SPEC.py -o OUT/`` and
``po.load_library(OUT)`` (see :mod:`.library`); specs yield :class:`Kernel` entries
(:mod:`.spec`); kernels are cached on disk (:mod:`.cache`) and built in parallel on a
process pool or Dask (:mod:`.runner`)."""

from .cache import DiskCache, default_cache_dir
from .library import Library, build_library, load_library
from .spec import Kernel, grid

__all__ = ["DiskCache", "Kernel", "Library", "build_library", "default_cache_dir", "grid",
           "load_library"]
