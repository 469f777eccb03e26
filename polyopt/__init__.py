"""polyopt: tensor expressions to exact polyhedral programs, legal schedules and native code.

>>> import polyopt as po
>>> n = po.var("n")
>>> A = po.placeholder((n,), name="A")
>>> B = po.compute((n,), lambda i: A[i] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> print(po.lower(s, [A, B]))
void B_kernel(float32 A[n], float32 B[n]) {
  for (i = 0; i < n; i += 1)
    B[i] = A[i] * 2.0;
}
"""

from . import dtypes, errors
from . import deps  # callable: po.deps(s) gives a schedule's exact dependences
from .deps.dataflow import Dependence, Dependences, compute_dependences
from .deps.effort import check_effort
from .errors import *  # noqa: F401,F403
from .schedule_errors import *  # noqa: F401,F403
from .lowering_errors import *  # noqa: F401,F403
from .tensorize_errors import *  # noqa: F401,F403
from .te.tensor import (Tensor, all_of as all, any_of as any, abs_ as abs, compute, exp,
                        if_then_else, log, maximum, minimum, placeholder, reduce_axis,
                        reduce_max as max, reduce_min as min, reduce_sum as sum, sigmoid,
                        sqrt, tanh, var)
from .te import ops
from .te.compat import (const, indexdiv, indexmod, max_value, min_value, thread_axis)
from .te.extern import call_pure_extern, extern
from .te.reducers import comm_reducer
from .te.scan import scan
from .frontend.kernel import Kernel, kernel
from .frontend.c import from_c
from .frontend.types import f32, f64, i8, i32, i64, u8
from .transform.schedule import Schedule, create_schedule
from .transform.stage import Stage
from .schedules.auto import auto_schedule
from .schedules import templates
from .transform.handwritten import CheckReport, check
from . import tensorize
from .tensorize import decl_buffer, decl_tensor_intrin
from .lower import lower
from .machine import TargetInfo
from .build import build, build_cache
from .target.native import load_module
from .aot.library import load_library

__version__ = "0.1.0"
size_var = var  # TVM's name for a size (polyopt's vars are sizes)
from .te.compat import floordiv, floormod, popcount, power  # noqa: E402  (TVM's te.* names)
from .te.tags import tag_scope  # noqa: E402
from .te.tensor import ComputeOp, PlaceholderOp, TensorSlice  # noqa: E402
from .te.scan import ScanOp  # noqa: E402
from .te.expr import IterVar as _IterVar  # noqa: E402
from .te.extern import TensorBuffer as _Buffer  # noqa: E402
import types as _types  # noqa: E402
# TVM's te.tensor / te.schedule modules, for isinstance checks in TVM code
tensor = _types.SimpleNamespace(Tensor=Tensor, TensorSlice=TensorSlice,
                                PlaceholderOp=PlaceholderOp, ComputeOp=ComputeOp,
                                ScanOp=ScanOp)
from .transform import relations as _relations  # noqa: E402
schedule = _types.SimpleNamespace(Schedule=Schedule, Stage=Stage, Buffer=_Buffer,
                                  IterVar=_IterVar, create_schedule=create_schedule,
                                  Split=_relations.Split, Fuse=_relations.Fuse,
                                  Singleton=_relations.Singleton)


from . import tvm  # noqa: E402  (``from polyopt import tvm``: TVM's namespace on polyopt)


def __getattr__(name: str):
    """``po.graph`` (ONNX models, operator graphs) and ``po.tune`` (autotuning) are
    imported on first use: the loop optimizer and ``polyopt opt`` start without them
    (``po.graph`` is a fifth of polyopt's import time)."""
    if name in ("graph", "tune"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'polyopt' has no attribute '{name}'")
