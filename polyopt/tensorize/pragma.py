"""TVM's ``s[C].pragma(loop, "import_llvm", ll_code)`` and ``"import_c"`` (C source):
code the stage's intrinsics call, linked into the module ``po.build`` makes for the
``llvm`` target (LLVM IR is linked in, so LLVM may inline it; C is compiled with the
system C compiler into a library loaded into the process).

The pragma is a recorded step (``s.script()``, ``replay`` and ``fork`` keep it) that
changes no loop, so it never makes a schedule illegal; the loop it names must exist.

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


@register("pragma", params={"axis": LOOP}, checked=False)
def pragma(state, stage: str, axis: str, pragma_type: str, pragma_value=None):
    """``s[C].pragma(x, "import_llvm", ll_code)`` (TVM's): link LLVM IR that the
    stage's intrinsics call into the built module; ``"import_c"`` takes C source,
    compiled when building (see :mod:`polyopt.tensorize.pragma`).  Recorded like a
    primitive; it changes no loop (the code is imported once: the same code given
    twice is linked once).  Other pragmas: the error says what to write."""
    make = IMPORTS.get(pragma_type)
    if make is None:
        raise UnknownPragmaError(pragma_type, tuple(IMPORTS), stage=stage)
    item = make(pragma_value)
    program = state.program
    if any(known.key == item.key for _, _, known in program.imports):
        return state, None
    return state.advanced(program.replace(imports=program.imports + ((stage, axis, item),))
                          ), None
