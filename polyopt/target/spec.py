"""Target strings as TVM writes them: ``"llvm"``, ``"llvm -mcpu=skylake-avx512"``,
``"opencl -device=mali"``, or an object with a ``kind``/``target`` string.

polyopt's LLVM target always compiles for the host CPU, so ``-mcpu``, ``-mtriple``,
``-mattr`` and the like are parsed and left out.  GPU targets polyopt has no backend
for (``"cuda"``, ``"rocm"``, ...) run through OpenCL, whose work-groups, work-items and
``__local`` memory are what their schedules bind to, with a warning saying so.

>>> parse_target("llvm -mcpu=skylake-avx512 -opt-level=3")
('llvm', {'mcpu': 'skylake-avx512', 'opt-level': '3'})
"""

from __future__ import annotations

import warnings

from ..errors import InvalidArgumentError, PolyoptWarning

_SWITCHES = ("system-lib", "link-params")  # TVM's flags without a value (ignored)
GPU_THROUGH_OPENCL = ("cuda", "nvptx", "rocm", "metal", "vulkan", "webgpu")


def parse_target(target) -> tuple[str, dict[str, str]]:
    """``(backend name, {flag: value})`` of a target string (or Target-like object)."""
    if target is None:
        return "llvm", {}
    text = target if isinstance(target, str) else getattr(target, "target_string", None)
    if not isinstance(text, str):
        raise InvalidArgumentError(
            f"target must be a string such as 'llvm' or 'opencl', got {target!r}")
    words = text.split()
    if not words:
        raise InvalidArgumentError("a target is a string such as 'llvm', "
                                   "'llvm -mcpu=znver4' or 'opencl', got ''")
    kind, flags = words[0], {}
    for word in words[1:]:
        key, equals, value = word.lstrip("-").partition("=")
        if not word.startswith("-") or not key or (not equals and key not in _SWITCHES):
            raise InvalidArgumentError(
                f"target option {word!r} in {text!r} is not of the form -key=value "
                "(e.g. -mcpu=znver4)")
        flags[key] = value
    if kind in GPU_THROUGH_OPENCL:
        warnings.warn(
            f"polyopt has no '{kind}' backend: this GPU schedule runs through OpenCL "
            "(threadIdx/blockIdx become work-items/work-groups, shared memory __local), "
            f"and the options {sorted(flags)} are ignored; write target 'opencl' to say "
            "so", PolyoptWarning, stacklevel=3)
        return "opencl", {}
    if kind == "hexagon":
        raise InvalidArgumentError(
            "unknown target 'hexagon'; available targets: llvm, opencl, accel. polyopt has "
            "no Hexagon backend: build for 'llvm' (the host CPU)")
    if kind == "c":
        raise InvalidArgumentError("unknown target 'c'; available targets: llvm, opencl "
                                   "(f.llvm_ir is the code, or f.source for OpenCL C)")
    return kind, flags
