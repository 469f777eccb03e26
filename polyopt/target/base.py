"""The interface every backend implements, and the registry that finds them by name.

A target is named by a string: the backend's name, then options as ``-key=value``
(``"llvm -mcpu=znver4 -mattr=+avx2"``), passed to the backend's constructor.

>>> sorted(available_targets())[:1]
['llvm']
>>> parse_target("llvm -mcpu=znver4 -mattr=+avx2")
('llvm', {'mcpu': 'znver4', 'mattr': '+avx2'})
"""

from __future__ import annotations

import importlib
from typing import Protocol

from ..errors import InvalidArgumentError, MissingBackendError


class Target(Protocol):
    """A backend: ``build`` turns a lowered function into a callable module.

    ``skipped_passes`` names lowering passes (``polyopt.lower.PASSES``) that the backend
    does its own way, e.g. sizing buffers per work-group."""

    name: str
    key: str  # the target with everything that changes its code, for cache keys
    supports_parallel: bool
    supports_vector: bool
    skipped_passes: frozenset[str]

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


def parse_target(text: str) -> tuple[str, dict[str, str]]:
    """``(backend name, options)`` of a target string."""
    if not isinstance(text, str) or not text.split():
        raise InvalidArgumentError(
            f"a target is a string such as 'llvm' or 'llvm -mcpu=znver4', got {text!r}")
    name, *words = text.split()
    options = {}
    for word in words:
        key, equals, value = word.partition("=")
        if not key.startswith("-") or not equals or not key.lstrip("-"):
            raise InvalidArgumentError(
                f"target option {word!r} in {text!r} is not of the form -key=value "
                "(e.g. -mcpu=znver4)")
        options[key.lstrip("-")] = value
    return name, options


def get_target(text: str) -> Target:
    """The backend a target string names, built with its options."""
    name, options = parse_target(text)
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
