"""The kernels of fused groups, through the one build path and its caches.

A group's kernel is built by :func:`polyopt.kernels.build_kernel` and found by two keys:

* its *request*: what the group is before it is lowered (its signature from
  :func:`group_signature`, the thread count, the target, the
  versions and a digest of polyopt's own source), remembered in the process's in-memory
  cache (``po.build_cache``, :meth:`KernelCache.recall`) and in the disk cache's
  ``graph-requests`` index (:meth:`KernelCache.find`), so a second compile of a model,
  in this process or a new one, neither lowers, schedules nor compiles anything;
* its *key* (:func:`~polyopt.kernels.key.kernel_key`, the structural hash of the lowered
  group, the target and the options): a kernel someone else built from the same program
  is reused.

With a disk cache (``$POLYOPT_CACHE``, by default ``~/.cache/polyopt``) kernels are object
code in its verified entries (:mod:`polyopt.kernels.disk`: an entry that does not verify,
truncated, swapped or edited, is built again, never linked), linked in by LLVM's JIT;
without one (``disk=False``) they are ``po.build``'s kernels.  ``KernelCache.loaded``
and ``.built`` count what a compile took from the disk and what it built.  The cache
folder belongs to the user and to nobody else (created ``0700``; one owned by another
user, or writable by others, is refused with :class:`CacheFolderError`).

>>> import tempfile
>>> cache = KernelCache(tempfile.mkdtemp())
>>> cache.find(cache.request(("group",), 1)) is None, cache.loaded, cache.built
(True, 0, 0)
"""

from __future__ import annotations

import os

from ..errors import InvalidArgumentError, PolyoptError
from ..kernels.builder import build_kernel, load_kernel, memory_key
from ..kernels.disk import DiskCache, default_cache_dir, entry_integrity
from ..kernels.key import structural_hash
from ..kernels.memory import build_cache
from ..lower import lower
from ..private_folder import make_private
from ..target.base import get_target, target_key
from ..target.signature import versions_text

__all__ = ["CacheFolderError", "KernelCache", "entry_integrity", "group_signature",
           "private_folder"]
REQUESTS = "graph-requests"


class KernelCache:
    """Find and keep group kernels: in memory, and in the disk cache at ``root`` (None:
    the default) unless ``disk`` is False."""

    def __init__(self, root: str | None = None, target: str = "llvm", *, disk: bool = True):
        self.disk = DiskCache(private_folder(root or default_cache_dir())) if disk else None
        self.backend = get_target(target)
        self.key = target_key(self.backend)
        self.form = "linked" if disk else "kernel"
        self.loaded = 0  # kernels taken from the disk
        self.built = 0   # kernels compiled (and stored)

    def request(self, description, num_threads: int) -> str:
        """The request key of a kernel described by ``description`` (a value saying
        everything the kernel depends on, hashed by its structure: an array in full, not
        as it prints) for ``num_threads`` threads."""
        return structural_hash((description, num_threads, self.key, versions_text()))

    def recall(self, request: str):
        """``(kernel, metadata)`` built in this process under ``request``, or None.  With
        a disk cache, only a kernel this cache's folder holds too: one built for another
        folder is built again here (from memory, and stored), so an export finds it."""
        _check_request(request)
        if self.disk is not None and not self.disk.lookup(request, REQUESTS):
            return None
        remembered = build_cache.recall((request, self.form))
        built = build_cache.get(remembered) if remembered else None
        if built is None:
            return None
        return built.kernel, {**built.meta, **(build_cache.recall_note((request, self.form))
                                              or {})}

    def find(self, request: str, accept=None):
        """``(kernel, metadata)`` remembered under ``request`` in the disk cache, or None;
        ``accept(kernel)`` may refuse what was found (then it is not counted)."""
        _check_request(request)
        key = self.disk.lookup(request, REQUESTS) if self.disk is not None else None
        built = load_kernel(key, self.backend, self.disk, form=self.form) if key else None
        if built is None or (accept is not None and not accept(built.kernel)):
            return None
        if built.source == "disk":
            self.loaded += 1
        self._remember_in_memory(request, built, built.meta)
        return built.kernel, built.meta

    def build(self, schedule, args, *, num_threads: int, request: str | None = None,
              meta: dict | None = None):
        """``(kernel, metadata)`` of ``schedule`` over ``args``: from the caches by its
        key when it is there, else compiled and stored; remembered under ``request``."""
        func = lower(schedule, args, target=self.backend)
        built = build_kernel(func, self.backend, {"num_threads": num_threads},
                             form=self.form, disk=self.disk, meta=meta)
        if built.source == "disk":
            self.loaded += 1
        elif built.source == "built":
            self.built += 1
        if request is not None:
            _check_request(request)
            self._remember_in_memory(request, built, meta)
            if self.disk is not None and built.store_error is None:
                try:
                    self.disk.remember(request, built.key, REQUESTS)
                except (OSError, PolyoptError):
                    pass  # an unwritable cache: the kernel still runs
        return built.kernel, {**built.meta, **(meta or {})}

    def _remember_in_memory(self, request: str, built, meta) -> None:
        build_cache.remember((request, self.form), memory_key(built.key, self.form),
                             dict(meta or {}))


def _check_request(request: str) -> None:
    if not isinstance(request, str) or len(request) != 64 or not all(
            c in "0123456789abcdef" for c in request):
        raise InvalidArgumentError(f"a request key is a SHA-256 digest, got {request!r}")


class CacheFolderError(InvalidArgumentError):
    """A kernel cache folder that another user owns or may write."""


def private_folder(path: str) -> str:
    """``path``, created ``0700`` when missing; refused unless it is a real folder of
    this user that nobody else may write (kernels are loaded from it)."""
    path = os.path.abspath(os.fspath(path))
    problem = make_private(path)
    if problem:
        raise CacheFolderError(f"cannot use the kernel cache: {problem}; polyopt loads "
                               "machine code from it, so it must be yours alone: pass "
                               "cache=False or another folder (POLYOPT_CACHE)")
    return path


def group_signature(g: Graph, group: Group) -> tuple:
    """What a group's kernel depends on: its operators and attributes, how they read
    each other and the group's inputs (by position), the inputs' shapes and dtypes, and
    the values of inputs read at compile time (shapes, slice bounds); attributes as they
    are (tensors in full: :func:`~polyopt.kernels.key.structural_hash` keys it)."""
    inputs = group.inputs
    inside = {n.outputs[0]: k for k, n in enumerate(group.nodes)}
    parts = []
    for node in group.nodes:
        reads = []
        for name in node.inputs:
            if not name:
                reads.append(None)
            elif name in inside:
                reads.append(("node", inside[name]))
            elif name in inputs:
                info = g.tensors[name]
                reads.append(("input", inputs.index(name), info.shape, info.dtype))
            else:  # read at compile time
                reads.append(("value", g.constants[name]))  # (dtype, shape and data)
        parts.append((node.op_type, tuple(sorted(node.attrs.items(), key=lambda a: a[0])),
                      tuple(reads),
                      g.tensors[node.outputs[0]].shape))
    return (group.kind, tuple(parts), inside[group.output])
