"""Target strings as TVM writes them: ``"llvm"``, ``"llvm -mcpu=skylake-avx512"``,
``"opencl -device=mali"``, or an object with a ``kind``/``target`` string.

polyopt's LLVM target always compiles for the host CPU, so ``-mcpu``, ``-mtriple``,
``-mattr`` and the like are parsed and left out; GPU targets polyopt has no backend
for are refused with the one to use.

>>> parse_target("llvm -mcpu=skylake-avx512 -opt-level=3")
('llvm', {'mcpu': 'skylake-avx512', 'opt-level': '3'})
"""

from __future__ import annotations

from ..errors import InvalidArgumentError

_SWITCHES = ("system-lib", "link-params")  # TVM's flags without a value (ignored)
_GPU_WITHOUT_BACKEND = ("cuda", "nvptx", "rocm", "metal", "vulkan", "webgpu", "hexagon")


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
    if kind in _GPU_WITHOUT_BACKEND:
        raise InvalidArgumentError(
            f"unknown target '{kind}'; available targets: llvm, opencl. polyopt has no "
            f"'{kind}' backend: build GPU schedules for target 'opencl' "
            "(the same bind/shared-memory schedules run there: threadIdx/blockIdx map to "
            "work-items/work-groups)")
    if kind == "c":
        raise InvalidArgumentError("unknown target 'c'; available targets: llvm, opencl "
                                   "(f.llvm_ir is the code, or f.source for OpenCL C)")
    return kind, flags
