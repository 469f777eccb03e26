"""The interface every backend implements, and the registry that finds them by name.

>>> sorted(available_targets())[:1]
['llvm']
"""

from __future__ import annotations

import importlib
from typing import Protocol

from ..errors import InvalidArgumentError, MissingBackendError


class Target(Protocol):
    """A backend: ``build`` turns a lowered function into a callable module.

    ``passes(pipeline)`` returns the lowering pipeline (``polyopt.lower.Pipeline``) the
    backend builds from: the common one with its own passes inserted at named points,
    or without passes it does its own way (e.g. sizing buffers per work-group)."""

    name: str
    supports_parallel: bool
    supports_vector: bool

    def passes(self, pipeline): ...

    def build(self, func, **options): ...


_REGISTRY: dict[str, str | type] = {
    # name -> "module:Class" (imported on first use, so the core needs no backend package)
    "llvm": "polyopt.target.llvm.target:LLVMTarget",
    "opencl": "polyopt.target.opencl.target:OpenCLTarget",
}


def register_target(name: str, cls) -> None:
    """Make ``target=name`` build with ``cls`` (a class or a "module:Class" string)."""
    _REGISTRY[name] = cls


def available_targets() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get_target(name: str) -> Target:
    if not isinstance(name, str) or name not in _REGISTRY:
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
    return entry()
