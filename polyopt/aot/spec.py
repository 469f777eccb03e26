"""Library specs: ``SPEC.py`` defines ``kernels()``, yielding :class:`Kernel` entries.

Each entry names an operator, a function building its schedule and arguments from a
variant's parameters, and the grid of variants (shapes, dtypes).  Every variant becomes
one C function named ``<kernel>_<value>_<value>...``: a C identifier of at most 200
characters that no C keyword, C library function or polyopt runtime symbol has
(:func:`polyopt.target.symbols.check_symbol_name`).

>>> import polyopt as po
>>> def scale(n, dtype):
...     A = po.placeholder((n,), name="A", dtype=dtype)
...     B = po.compute((n,), lambda i: A[i] * 2, name="B")
...     return po.create_schedule(B), [A, B]
>>> entry = Kernel("scale", scale, grid(n=[8, 16], dtype=["float32"]))
>>> [v.name for v in variants_of([entry])]
['scale_n8_float32', 'scale_n16_float32']
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import types
from dataclasses import dataclass
from typing import Callable

from ..errors import InvalidArgumentError
from ..target.symbols import check_symbol_name


@dataclass(frozen=True)
class Kernel:
    """An operator of a library: ``build(**params) -> (schedule, args)`` for every
    parameter dict of ``variants`` (see :func:`grid`).  ``options`` are passed to the
    target (e.g. ``{"num_threads": 1}``)."""

    name: str
    build: Callable
    variants: tuple[dict, ...]
    options: dict | None = None


@dataclass(frozen=True)
class Variant:
    """One function of the library: a kernel with one parameter dict."""

    kernel: str
    params: tuple[tuple[str, object], ...]
    name: str

    @property
    def param_dict(self) -> dict:
        return dict(self.params)


def grid(**axes) -> tuple[dict, ...]:
    """Every combination of the values given per parameter:
    ``grid(n=[64, 128], dtype=["float32", "float64"])`` is four variants."""
    for key, values in axes.items():
        if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
            raise InvalidArgumentError(f"grid({key}=...) takes a list of values, got {values!r}")
    keys = list(axes)
    return tuple(dict(zip(keys, combo)) for combo in itertools.product(*axes.values()))


def variant_name(kernel: str, params: dict) -> str:
    """A C identifier: the kernel's name, then each parameter (numbers after its name)."""
    parts = [kernel]
    for key, value in params.items():
        parts.append(f"{key}{value}" if isinstance(value, (int, float)) else str(value))
    return _identifier("_".join(parts))


def _identifier(text: str) -> str:
    text = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return text if re.match(r"[A-Za-z_]", text) else "k_" + text


def variants_of(entries) -> list[Variant]:
    """The variants of every kernel in order; duplicate names are refused."""
    found, seen = [], {}
    for entry in entries:
        entry = as_kernel(entry)
        for params in entry.variants:
            if not isinstance(params, dict):
                raise InvalidArgumentError(
                    f"kernel {entry.name!r}: each variant is a dict of parameters, got "
                    f"{params!r}; use polyopt.aot.grid(n=[...], dtype=[...])")
            name = variant_name(entry.name, params)
            short = entry.name if len(entry.name) <= 40 else entry.name[:40] + "..."
            check_symbol_name(name, "kernel name" if name == entry.name else
                              f"variant name (of kernel {short!r})")
            if name in seen:
                raise InvalidArgumentError(
                    f"two variants are both named {name} ({seen[name]} and {params}); "
                    "give the kernels different names or parameters")
            seen[name] = params
            found.append(Variant(entry.name, tuple(params.items()), name))
    return found


def as_kernel(entry) -> Kernel:
    """A :class:`Kernel`, or a tuple ``(name, build, variants[, options])``."""
    if isinstance(entry, Kernel):
        kernel = entry
    elif isinstance(entry, tuple) and len(entry) in (3, 4):
        kernel = Kernel(entry[0], entry[1], tuple(entry[2]), *entry[3:])
    else:
        raise InvalidArgumentError(
            f"kernels() must yield polyopt.aot.Kernel(name, build, variants) or tuples "
            f"(name, build, variants), got {entry!r}")
    if not isinstance(kernel.name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kernel.name):
        raise InvalidArgumentError(f"a kernel name must be a C identifier, got {kernel.name!r}")
    if not callable(kernel.build):
        raise InvalidArgumentError(f"kernel {kernel.name!r}: build must be a function "
                                   "returning (schedule, args)")
    return Kernel(kernel.name, kernel.build, tuple(kernel.variants), kernel.options)


@dataclass(frozen=True)
class Spec:
    """A spec file's text and what its ``kernels()`` yields."""

    path: str
    text: str
    entries: dict[str, Kernel]
    variants: tuple[Variant, ...]

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


_LOADED: dict[tuple[str, str], Spec] = {}


def load_spec(path: str, text: str | None = None) -> Spec:
    """Run a spec (``path``'s text, or ``text`` as if it were at ``path``) and collect
    its kernels; a process runs each spec text once."""
    if text is None:
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as err:
            raise InvalidArgumentError(f"cannot read the spec {path}: {err}") from err
        except UnicodeDecodeError as err:  # (a Python file is UTF-8 text)
            raise InvalidArgumentError(
                f"the spec {path} is not UTF-8 text (byte {err.object[err.start]:#04x} at "
                f"offset {err.start}); a spec is a Python file: save it as UTF-8") from err
    cached = _LOADED.get((path, text))
    if cached is not None:
        return cached
    module = types.ModuleType("polyopt_spec")
    module.__file__ = os.path.abspath(path)
    try:
        exec(compile(text, path, "exec"), module.__dict__)
    except (Exception, SystemExit) as err:  # the user's code (sys.exit too: a status 2)
        raise InvalidArgumentError(f"the spec {path} failed to run: {type(err).__name__}: "
                                   f"{err}") from err
    kernels = getattr(module, "kernels", None)
    if not callable(kernels):
        raise InvalidArgumentError(f"the spec {path} defines no kernels() function; it must "
                                   "yield polyopt.aot.Kernel(name, build, variants)")
    try:
        entries = [as_kernel(e) for e in kernels()]
    except InvalidArgumentError:
        raise
    except (Exception, SystemExit) as err:
        raise InvalidArgumentError(f"kernels() of {path} failed: {type(err).__name__}: "
                                   f"{err}") from err
    spec = Spec(path, text, {e.name: e for e in entries}, tuple(variants_of(entries)))
    _LOADED[(path, text)] = spec
    return spec


def request_key(spec: Spec, variant: Variant, target_key: str, versions: str) -> str:
    """What a variant is before it is built (the spec's text, the variant, the target,
    the versions): the cache's index from it to the content hash saves lowering."""
    text = json.dumps([spec.digest, variant.name, repr(variant.params), target_key, versions])
    return hashlib.sha256(text.encode()).hexdigest()
