"""Compiled models as C libraries: ``m.export_library(folder)``, ``po.graph.load(folder)``.

:mod:`.export` writes the library, header, weights and manifest; :mod:`.plan` reads the
executor's plan; :mod:`.objects` finds the kernels' object code; :mod:`.csource` writes
the C text; ``runtime/*.c`` is the C runtime; :mod:`.loader` runs an export from Python.
See docs/deploy.md.
"""

from .. import graph  # noqa: F401  (first: it imports .loader, which needs .export whole)
from .export import export_model
from .plan import ExportError, execution_plan

__all__ = ["ExportError", "execution_plan", "export_model"]
