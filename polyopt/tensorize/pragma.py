"""TVM's ``s[C].pragma(loop, "import_llvm", ll_code)`` and ``"import_c"`` (C source):
code the stage's intrinsics call, linked into the module ``po.build`` makes for the
``llvm`` target (LLVM IR is linked in, so LLVM may inline it; C is compiled with the
system C compiler into a library loaded into the process).

The pragma is a recorded step (``s.script()``, ``replay`` and ``fork`` keep it) that
changes no loop, so it never makes a schedule illegal; the loop it names must exist.
As in TVM, ``pragma(x, "unroll")`` and ``pragma(x, "vectorize")`` are ``s[C].unroll(x)``
and ``s[C].vectorize(x)``; a name TVM's passes give no meaning (``"pragma1"``) is
recorded with no effect, as TVM's attribute is (``iter_var_attrs[x].pragma_keys``);
the pragmas TVM's passes do read that polyopt does not do (:data:`NOT_DONE`) are refused
with what to write instead.

>>> import polyopt as po
>>> A = po.placeholder((4,), name="A")
>>> B = po.compute((4,), lambda i: A[i] * 2.0, name="B")
>>> s = po.create_schedule(B)
>>> s[B].pragma(B.op.axis[0], "import_llvm", "define i32 @one() { ret i32 1 }")
>>> [(stage, loop, item.language) for stage, loop, item in s.program.imports]
[('B', 'i', 'llvm')]
>>> print(s.script())
s["B"].pragma("i", "import_llvm", "define i32 @one() { ret i32 1 }")
"""

from __future__ import annotations

from ..schedule_errors import UnknownPragmaError
from ..transform.registry import LOOP, register
from .intrin import import_c, import_llvm

# the pragma types that import code, and how each makes an Import
IMPORTS = {"import_llvm": import_llvm, "import_c": import_c}
# the pragmas TVM's Stage.pragma turns into a primitive (same name)
PRIMITIVES = ("unroll", "vectorize")
# the pragmas TVM v0.12's passes read (UnrollLoop, SkipAssert, LoopPartition, the CPU
# code generator's parallel launch) that polyopt does not do: refused, not ignored
NOT_DONE = ("unroll_explicit", "auto_unroll_max_step", "debug_skip_region",
            "loop_partition_hint", "parallel_launch_point", "parallel_stride_pattern",
            "parallel_barrier_when_finish")


def _as_primitive(stage, step, axis, pragma_type, pragma_value=None):
    """``pragma(x, "unroll")`` / ``"vectorize"`` is the primitive (TVM's Stage.pragma)."""
    if isinstance(pragma_type, str) and pragma_type in PRIMITIVES:
        return getattr(stage, pragma_type)(axis)  # (checked, as the primitive is)
    return step(axis, pragma_type, pragma_value)


@register("pragma", params={"axis": LOOP}, checked=False, front=_as_primitive)
def pragma(state, stage: str, axis: str, pragma_type: str, pragma_value=None):
    """``s[C].pragma(x, "import_llvm", ll_code)`` (TVM's): link LLVM IR that the
    stage's intrinsics call into the built module; ``"import_c"`` takes C source,
    compiled when building (see :mod:`polyopt.tensorize.pragma`).  Recorded like a
    primitive; it changes no loop (the code is imported once: the same code given
    twice is linked once).  ``"unroll"``/``"vectorize"``: the primitives; a name TVM
    gives no meaning: recorded, no effect; TVM's pragmas polyopt does not do: refused."""
    if not isinstance(pragma_type, str) or pragma_type in NOT_DONE:
        raise UnknownPragmaError(pragma_type, tuple(IMPORTS) + PRIMITIVES, stage=stage)
    make = IMPORTS.get(pragma_type)
    if make is None:  # TVM: an attribute 'pragma_<name>' no pass reads
        return state, None
    item = make(pragma_value)
    program = state.program
    if any(known.key == item.key for _, _, known in program.imports):
        return state, None
    return state.advanced(program.replace(imports=program.imports + ((stage, axis, item),))
                          ), None
