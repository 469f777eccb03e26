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
>>> code, signature = kernel_objects(m)[0][0]
>>> code[:4], signature.name
(b'\\x7fELF', 'out_kernel')
"""

from __future__ import annotations

import os
import tempfile

from ..errors import BackendError
from ..graph.kernel_cache import REQUESTS, KernelCache, group_signature
from ..graph.lowering import lower_group, schedule_group
from ..graph.lstm import LSTMRunner
from ..kernels.builder import build_kernel
from ..lower import lower
from ..target.signature import Signature


def kernel_objects(model) -> tuple[list[tuple[bytes, Signature]], dict]:
    """``(objects, runners)``: ``(object code, signature)`` of every kernel ``model``
    runs, in step order (a view has none; an LSTM two: its projection, then its
    recurrence), and per LSTM step (by index) the runner whose arrays the plan takes
    (:class:`~polyopt.graph.lstm.LSTMRunner`, made again through the disk cache)."""
    if model.cache is False:  # a private (0700) cache of this export's, removed after
        with tempfile.TemporaryDirectory(prefix="polyopt-export-") as root:
            return _objects(model, KernelCache(root, target=model.target))
    root = None if model.cache is True else os.fspath(model.cache)
    return _objects(model, KernelCache(root, target=model.target))


def _objects(model, store: KernelCache) -> tuple[list, dict]:
    found, runners = [], {}
    for index, step in enumerate(model.steps):
        if step.kernel is None:
            continue
        if step.template == "lstm":
            runner = LSTMRunner(model.graph, step.group.nodes[0], model.num_threads,
                                cache=store, target_info=model.compiled_for)
            runners[index] = runner
            for role in ("projection", "recurrence"):
                found.append(_cached_object(store, runner.requests[role],
                                            getattr(runner, role).signature, step))
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
    return found, runners


def _cached_object(store: KernelCache, request: str, running, step) -> tuple:
    """The object a kernel built through ``store`` under ``request`` was stored as."""
    key = store.disk.lookup(request, REQUESTS)
    entry = store.disk.get(key) if key else None
    if entry is None or Signature.from_json(entry[1]["signature"]).to_json() != \
            running.to_json():
        raise BackendError(f"the kernel cache holds no object of {step.group.name}'s "
                           "kernels; clear it (polyopt cache clear) and export again")
    return entry[0], running


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
