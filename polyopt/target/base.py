"""The interface every backend implements, and the registry that finds them by name.

A target is named by a string: the backend's name, then options as ``-key=value``
(``"llvm -mcpu=znver4 -mattr=+avx2"``), passed to the backend's constructor.

>>> [name for name in available_targets() if name in ("llvm", "opencl", "accel")]
['llvm', 'opencl', 'accel']
>>> parse_target("llvm -mcpu=znver4 -mattr=+avx2")
('llvm', {'mcpu': 'znver4', 'mattr': '+avx2'})
"""

from __future__ import annotations

import importlib
from typing import Protocol

from ..errors import InvalidArgumentError, MissingBackendError
from .spec import parse_target


class Target(Protocol):
    """A backend: ``build`` turns a lowered function into a callable module.

    ``passes(pipeline)`` returns the lowering pipeline (``polyopt.lower.Pipeline``) the
    backend builds from: the common one with its own passes inserted at named points,
    or without passes it does its own way (e.g. sizing buffers per work-group)."""

    name: str
    key: str  # the target with everything that changes its code, for cache keys
    supports_parallel: bool
    supports_vector: bool

    def passes(self, pipeline): ...

    def build(self, func, **options): ...


_REGISTRY: dict[str, str | type] = {
    # name -> "module:Class" (imported on first use, so the core needs no backend package)
    "llvm": "polyopt.target.llvm.target:LLVMTarget",
    "opencl": "polyopt.target.opencl.target:OpenCLTarget",
    "accel": "polyopt.target.accel.target:AccelTarget",
    "vta": "polyopt.target.accel.target:AccelTarget",
}


def register_target(name: str, cls) -> None:
    """Make ``target=name`` build with ``cls`` (a class or a "module:Class" string)."""
    _REGISTRY[name] = cls


def available_targets() -> tuple[str, ...]:
    return tuple(_REGISTRY)


# flags of TVM's target strings that mean nothing to polyopt's backends (ignored)
IGNORED_FLAGS = frozenset({"mtriple", "opt-level", "keys", "libs", "system-lib", "link-params",
                           "model", "device", "host", "max_num_threads", "thread_warp_size"})


def get_target(text) -> Target:
    """The backend a target string names, built with its options (``-mcpu=...``)."""
    name, flags = parse_target(text)
    options = {k: v for k, v in flags.items() if k not in IGNORED_FLAGS}
    if name not in _REGISTRY:
        raise InvalidArgumentError(
            f"unknown target {name!r}; available targets: {', '.join(_REGISTRY)}"
        )
    entry = _REGISTRY[name]
    if isinstance(entry, str):
        module_name, _, class_name = entry.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            package = (err.name or "a package").split(".")[0]
            raise MissingBackendError(
                f"target '{name}' needs the Python package '{package}', which is not "
                f"installed; install it with: pip install {package}"
            ) from err
        entry = getattr(module, class_name)
        _REGISTRY[name] = entry
    try:
        return entry(**options)
    except TypeError as err:
        raise InvalidArgumentError(
            f"target {name!r} does not take the option(s) "
            f"{', '.join('-' + k for k in options)} ({err})") from err


def target_key(target: Target) -> str:
    """What identifies the code a target produces (its CPU and features, for LLVM)."""
    return getattr(target, "key", target.name)
