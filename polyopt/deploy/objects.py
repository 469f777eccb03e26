"""The object code of a compiled model's kernels, as the kernel cache keeps it.

A step's kernel is found in the disk cache by the same request the compile used
(:func:`~polyopt.graph.kernel_cache.group_signature` and the thread count); a model
compiled without the disk cache (``cache=False``), or whose entries were removed since,
has its groups lowered, scheduled and built again as object code (for the CPU the model
was compiled for).  The object must take the arrays the executor passes (its signature
is compared with the running kernel's).

>>> import numpy as np, polyopt as po
>>> b = po.graph.GraphBuilder(); x = b.input("x", (4,))
>>> m = po.graph.compile(b.build([b.op("Relu", [x])]), num_threads=1, cache=False)
>>> code, signature = kernel_objects(m)[0]
>>> code[:4], signature.name
(b'\\x7fELF', 'out_kernel')
"""

from __future__ import annotations

import os
import tempfile

from ..errors import BackendError
from ..graph.kernel_cache import REQUESTS, KernelCache, group_signature
from ..graph.lowering import lower_group, schedule_group
from ..kernels.builder import build_kernel
from ..lower import lower
from ..target.signature import Signature


def kernel_objects(model) -> list[tuple[bytes, Signature]]:
    """``(object code, signature)`` of every step of ``model`` that runs a kernel, in
    step order (a step with a view has none)."""
    if model.cache is False:  # a private (0700) cache of this export's, removed after
        with tempfile.TemporaryDirectory(prefix="polyopt-export-") as root:
            return _objects(model, KernelCache(root, target=model.target))
    root = None if model.cache is True else os.fspath(model.cache)
    return _objects(model, KernelCache(root, target=model.target))


def _objects(model, store: KernelCache) -> list[tuple[bytes, Signature]]:
    found = []
    for step in model.steps:
        if step.kernel is None:
            continue
        code, meta = _object(model, step, store)
        signature = Signature.from_json(meta["signature"])
        running = step.kernel.signature
        if signature.to_json() != running.to_json():
            raise BackendError(f"the cached object of group {step.group.name} takes "
                               f"{signature.prototype()}, the running kernel "
                               f"{running.prototype()}; clear the kernel cache "
                               "(polyopt cache clear) and export again")
        found.append((code, signature))
    return found


def _object(model, step, store: KernelCache) -> tuple[bytes, dict]:
    graph, group = model.graph, step.group
    request = store.request(group_signature(graph, group), model.num_threads)
    key = store.disk.lookup(request, REQUESTS)
    entry = store.disk.get(key) if key else None
    if entry is not None:
        return entry
    lowered = lower_group(graph, group.nodes, group.output)
    schedule = schedule_group(lowered, group.kind, group.nodes, target_info=model.compiled_for)
    func = lower(schedule, [*lowered.placeholders, lowered.output], target=store.backend)
    built = build_kernel(func, store.backend, {"num_threads": model.num_threads},
                         form="object", disk=store.disk)
    return built.code, built.meta
