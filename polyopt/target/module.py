"""What TVM code asks of a built function besides calling it: ``f.entry_name``,
``f.time_evaluator(...)``, ``f.get_source()``, ``f.imported_modules``.

>>> import numpy as np, polyopt as po
>>> A = po.placeholder((4,), name="A"); B = po.compute((4,), lambda i: A[i] + 1.0, name="B")
>>> f = po.build(po.create_schedule(B), [A, B], "llvm")
>>> timer = f.time_evaluator(f.entry_name, po.tvm.cpu(), number=3)
>>> result = timer(np.zeros(4, "float32"), np.zeros(4, "float32"))
>>> len(result.results), result.mean > 0
(1, True)
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from ..errors import InvalidArgumentError, PolyoptError


@dataclass(frozen=True)
class ProfileResult:
    """Seconds per call: ``mean`` over all repeats, ``results`` one mean per repeat."""

    mean: float
    median: float
    min: float
    max: float
    std: float
    results: tuple[float, ...]

    def __str__(self) -> str:
        return (f"mean {self.mean * 1e3:.4f} ms, median {self.median * 1e3:.4f} ms, "
                f"{len(self.results)} repeat(s)")


class SourceModule:
    """A device module as TVM's ``f.imported_modules[0]``: ``get_source()``."""

    def __init__(self, source: str, kind: str):
        self._source = source
        self.type_key = kind

    def get_source(self, fmt: str = "") -> str:
        return self._source


class ModuleAPI:
    """Mixed into every target's compiled function (which defines ``func`` and
    ``__call__``, and may define ``device_source``)."""

    device_source: str | None = None

    @property
    def entry_name(self) -> str:
        """The function's name (TVM's ``f.entry_name``): ``f[f.entry_name]`` is ``f``."""
        return self.func.name

    def __getitem__(self, name: str):
        return self.get_function(name)

    def get_function(self, name: str):
        if name != self.func.name:
            raise InvalidArgumentError(
                f"this module has one function, '{self.func.name}', not '{name}'")
        return self

    @property
    def imported_modules(self) -> list[SourceModule]:
        """The device code (OpenCL: ``imported_modules[0].get_source()`` is its C source)."""
        if self.device_source is None:
            return []
        return [SourceModule(self.device_source, "opencl")]

    def get_source(self, fmt: str = "") -> str:
        """The generated code: LLVM IR (``fmt="asm"``: assembly), or OpenCL C."""
        if fmt == "asm" and hasattr(self, "assembly"):
            return self.assembly
        text = getattr(self, "llvm_ir", None)
        return text if text is not None else str(self.device_source or self.func)

    def time_evaluator(self, func_name: str | None = None, dev=None, number: int = 10,
                       repeat: int = 1, min_repeat_ms: float = 0, **_ignored):
        """A function ``timer(*args)`` that calls this one ``number`` times per repeat
        (more to last ``min_repeat_ms``), ``repeat`` times, after one untimed call, and
        returns a :class:`ProfileResult` (seconds per call)."""
        if func_name not in (None, self.func.name):
            self.get_function(func_name)
        for label, value in (("number", number), ("repeat", repeat)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"time_evaluator: {label} must be an integer >= 1, "
                                           f"got {value!r}")

        def timer(*args, **kwargs) -> ProfileResult:
            self(*args, **kwargs)
            means = []
            for _ in range(repeat):
                calls, start = 0, time.perf_counter()
                while True:
                    for _ in range(number):
                        self(*args, **kwargs)
                    calls += number
                    elapsed = time.perf_counter() - start
                    if elapsed * 1e3 >= min_repeat_ms:
                        break
                means.append(elapsed / calls)
            return ProfileResult(statistics.fmean(means), statistics.median(means), min(means),
                                 max(means), statistics.pstdev(means), tuple(means))

        return timer

    def export_library(self, *args, **kwargs):
        raise PolyoptError(
            "export_library saves LLVM kernels (target 'llvm'); this target's kernels are "
            "compiled by its runtime in the process: keep the schedule's script "
            "(s.script()) and build again, or use f.source for the code")
