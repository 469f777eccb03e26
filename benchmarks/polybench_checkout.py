"""A user's PolyBench/C 4.2.1 checkout as kernels for ``bench_polybench.py --polybench DIR``.

PolyBench's files need its harness (``polybench.h``, timers, ``main``); the benchmark
only needs each kernel function.  Every ``<name>.c`` under ``DIR`` with a ``<name>.h``
beside it and a ``kernel_...`` function becomes one C text for ``po.from_c`` and gcc:

* a prelude standing in for ``polybench.h``: an array parameter
  ``DATA_TYPE POLYBENCH_2D(A, N, M, n, m)`` is ``double A[N][M]`` and a loop bound
  ``_PB_N`` is the parameter ``n``;
* the dataset and type chosen (``LARGE_DATASET`` and ``DATA_TYPE_IS_DOUBLE`` by
  default), then the kernel's header (its sizes and ``DATA_TYPE``);
* the ``.c`` file's own macros and typedefs, and the kernel function (made non-static).

The sizes are the values the preprocessor gives the header's macros (``cc -E -dM``).

>>> found = kernels_of("/nonexistent")
>>> found
[]
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from dataclasses import dataclass

PRELUDE = """#include <math.h>
#define POLYBENCH_1D(v, d1, dd1) v[d1]
#define POLYBENCH_2D(v, d1, d2, dd1, dd2) v[d1][d2]
#define POLYBENCH_3D(v, d1, d2, d3, dd1, dd2, dd3) v[d1][d2][d3]
#define POLYBENCH_4D(v, d1, d2, d3, d4, dd1, dd2, dd3, dd4) v[d1][d2][d3][d4]
#define POLYBENCH_LOOP_BOUND(x, y) y
"""

_KERNEL = re.compile(r"^[ \t]*(static[ \t]+)?void[ \t]+(kernel_\w+)[ \t]*\(", re.MULTILINE)
_OWN_LINES = re.compile(r"^[ \t]*(#[ \t]*define\b.*|typedef\b.*;)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class CheckoutKernel:
    """One kernel of a checkout: its name (``gemm``), C text and function name."""

    name: str
    text: str
    function: str


def kernels_of(root, dataset: str = "LARGE_DATASET") -> list[CheckoutKernel]:
    """The kernels under ``root`` (sorted by name); files without a header beside them or
    without a ``kernel_`` function (the utilities) are skipped."""
    found = []
    for path in sorted(pathlib.Path(root).rglob("*.c")):
        header = path.with_suffix(".h")
        if not header.is_file():
            continue
        source = path.read_text(errors="replace")
        match = _KERNEL.search(source)
        if match is None:
            continue
        body = _function_text(source, match.end())
        if body is None:
            continue
        own = "\n".join(m.group(1) for m in _OWN_LINES.finditer(source[:match.start()]))
        text = (f"#define {dataset}\n#define DATA_TYPE_IS_DOUBLE\n{PRELUDE}"
                f"{header.read_text(errors='replace')}\n{own}\n"
                f"void {match.group(2)}({body}\n")
        found.append(CheckoutKernel(path.stem, text, match.group(2)))
    return found


def _function_text(source: str, start: int) -> str | None:
    """From after ``kernel_x(`` to the brace closing the function's body."""
    depth, opened = 0, False
    for k in range(start, len(source)):
        ch = source[k]
        if ch == "{":
            depth, opened = depth + 1, True
        elif ch == "}":
            depth -= 1
            if opened and depth == 0:
                return source[start:k + 1]
    return None


def size_macros(text: str, defines: dict | None = None) -> dict[str, int]:
    """The integer macros the preprocessor defines for ``text`` (``{"NI": 1000, ...}``)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    flags = [f"-D{k}={v}" for k, v in (defines or {}).items()]
    own = re.sub(r"^\s*#\s*include\s*<[^>]*>.*$", "", text, flags=re.MULTILINE)
    result = subprocess.run([compiler, "-E", "-dM", "-x", "c", *flags, "-"], input=own,
                            text=True, capture_output=True, timeout=60, check=True)
    return {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^#define ([A-Z][A-Z0-9_]*) \(?(\d+)\)?$", result.stdout, re.MULTILINE)}
