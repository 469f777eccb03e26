"""Build variants into object code: what every worker (a process of the pool, a Dask
worker, or the builder itself with ``-j 1``) runs, one batch at a time.

A result is a plain dict (it crosses process and network boundaries): the variant's
name, and either ``hash``, ``object`` (bytes), ``signature`` and ``seconds`` (with
``cache_error`` when the cache could not keep it), or ``error`` (the failure, as text).
A failure never stops the batch, and a cache that cannot be written fails no variant.

>>> import polyopt as po
>>> text = '''
... import polyopt as po
... from polyopt.aot import Kernel
... def double(n):
...     A = po.placeholder((n,), name="A"); B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
...     return po.create_schedule(B), [A, B]
... def kernels():
...     yield Kernel("double", double, [{"n": 4}])
... '''
>>> (result,) = build_batch("spec.py", text, ["double_n4"], "llvm", None)
>>> result["name"], result["object"][:4], result["signature"]["name"]
('double_n4', b'\\x7fELF', 'double_n4')
"""

from __future__ import annotations

import traceback

from ..errors import PolyoptError
from ..kernels.builder import build_kernel
from ..lower import lower
from ..target.base import get_target, target_key
from ..target.signature import versions_text
from .cache import DiskCache
from .spec import load_spec, request_key


def build_batch(spec_path: str, spec_text: str, names: list[str], target: str,
                cache_root: str | None) -> list[dict]:
    """Build the named variants of a spec; ``cache_root`` (None: no cache) is read first
    and written after each build."""
    spec = load_spec(spec_path, spec_text)
    backend = get_target(target)
    key = target_key(backend)
    cache = DiskCache(cache_root) if cache_root else None
    by_name = {v.name: v for v in spec.variants}
    return [_build_one(spec, by_name[name], backend, key, cache) for name in names]


def _build_one(spec, variant, backend, key: str, cache: DiskCache | None) -> dict:
    request = request_key(spec, variant, key, versions_text())
    try:
        entry = spec.entries[variant.kernel]
        options = dict(entry.options or {})
        built = entry.build(**variant.param_dict)
        if not (isinstance(built, tuple) and len(built) == 2):
            raise TypeError(f"{variant.kernel}'s build function must return (schedule, args), "
                            f"got {type(built).__name__}")
        schedule, args = built
        func = lower(schedule, args, name=variant.name, target=backend)
        kernel = build_kernel(func, backend, options, form="object", disk=cache)
        cache_error = kernel.store_error
        if cache is not None and cache_error is None:
            cache_error = _remember(cache, request, kernel.key)
        result = {"name": variant.name, "hash": kernel.key, "object": kernel.code,
                  "cached": kernel.source != "built", "signature": kernel.meta["signature"],
                  "seconds": kernel.meta["seconds"], "request": request}
        if kernel.meta.get("amx_tiles"):  # the library asks for the tile state
            result["amx_tiles"] = True
        if cache_error:
            result["cache_error"] = cache_error
        return result
    except Exception as err:  # isolated: reported, the rest of the library is built
        return {"name": variant.name, "error": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(limit=-3), "request": request}


def _remember(cache: DiskCache, request: str, key: str) -> str | None:
    """Record in ``cache`` that ``request`` was built under ``key``; why that failed (a
    full disk, an unwritable folder), or None: the kernel built all the same."""
    try:
        cache.remember(request, key)
    except (OSError, PolyoptError) as err:
        return str(err)
    return None
