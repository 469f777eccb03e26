"""The graph layer: models as operator graphs, fused into scheduled polyopt programs.

``po.graph.from_onnx(path_or_model)`` or :class:`GraphBuilder` make a :class:`Graph`;
``po.graph.compile(g, num_threads=N)`` folds constants and batch norms, fuses operators
by pattern kind, builds one scheduled kernel per fused group and plans the memory of the
intermediate tensors; ``m.run({"input": x})`` returns the outputs; ``po.graph.tune(g, budget=..., db=...)``
tunes its kernels and ``compile(g, db=...)`` uses the records.  See the README.
"""

from .executor import CompiledModel, compile
from .ir import Graph, GraphBuilder, OpNode, TensorInfo
from .memory import MemoryPlan, plan_memory
from .onnx_import import from_onnx
from . import operators  # noqa: F401  (registers every operator)
from .registry import OPS
from . import graph_errors
from .graph_errors import *  # noqa: F401,F403  (one class per way a model is refused)
from .passes import Group, fold_batch_norm, fold_constants, fuse, optimize
from .quantize import quantize
from .tuning import TuneReport, tune
from ..deploy.loader import LoadedModel, load

__all__ = ["CompiledModel", "Graph", "GraphBuilder", "Group",
           "LoadedModel", "MemoryPlan", "OPS", "OpNode", "TensorInfo",
           "TuneReport", "compile",
           "fold_batch_norm", "fold_constants", "from_onnx", "fuse", "load", "optimize",
           "plan_memory", "quantize", "tune", *graph_errors.__all__]
